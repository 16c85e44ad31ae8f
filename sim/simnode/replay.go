package simnode

import (
	"github.com/ttmrobot/ttm/internal/ros"
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
		frames = append(frames, ros.ReplayFrame{At: s.Stamp.Sub(t0), Height: ep.Info.Height, Width: ep.Info.Width, RGB: s.Image, Proprio: s.Proprio})
	}
	return frames
}
