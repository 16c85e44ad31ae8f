package simnode

import (
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/internal/rosbag"
	"github.com/ttmrobot/ttm/sim"
)

// ReplayFrames returns the frames of a recorded episode to republish
// (ros.Replay), each with the proprioception recorded with it and its time
// from the first step. Steps that share a frame (several actions on one
// frame, as sim.ReadEpisode gives them) send it once.
func ReplayFrames(ep *sim.RecordedEpisode) []ros.ReplayFrame {
	var frames []ros.ReplayFrame
	var last []byte
	t0 := ep.Steps[0].Stamp
	for _, s := range ep.Steps {
		if len(last) > 0 && &last[0] == &s.Image[0] {
			continue // several actions on one frame: it was sent once
		}
		last = s.Image
		frames = append(frames, ros.ReplayFrame{At: s.Stamp.Sub(t0), Height: ep.Info.Height, Width: ep.Info.Width, RGB: s.Image, Proprio: s.Proprio,
			Stamp: s.Stamp})
	}
	return frames
}

// ReplayRobot returns what the robot published of itself in a recorded
// episode, for ros.Replay: its static frames (nil: none) and its tf,
// joint_states and camera_info messages, each at its record time from the
// first step's stamp.
func ReplayRobot(ep *sim.RecordedEpisode) (static *rosbag.TFMessage, msgs []ros.ReplayMessage) {
	t0 := ep.Steps[0].Stamp
	for _, m := range ep.Robot {
		msgs = append(msgs, ros.ReplayMessage{At: m.Time.Sub(t0), Msg: m.Msg})
	}
	return ep.TFStatic, msgs
}
