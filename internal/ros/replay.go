package ros

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/geometry_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/sensor_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/tf2_msgs"
	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/internal/robot"
	"github.com/ttmrobot/ttm/internal/rosbag"
)

// rosHeader converts a recorded header, its stamp mapped by restamp.
func rosHeader(h rosbag.Header, restamp func(time.Time) time.Time) std_msgs.Header {
	return std_msgs.Header{Seq: h.Seq, Stamp: restamp(h.Stamp.Time()), FrameId: h.FrameID}
}

// rosTF converts a recorded TFMessage, its stamps mapped by restamp.
func rosTF(m *rosbag.TFMessage, restamp func(time.Time) time.Time) *tf2_msgs.TFMessage {
	out := &tf2_msgs.TFMessage{Transforms: make([]geometry_msgs.TransformStamped, len(m.Transforms))}
	for i, t := range m.Transforms {
		p, q := t.Transform.Translation, t.Transform.Rotation
		out.Transforms[i] = geometry_msgs.TransformStamped{Header: rosHeader(t.Header, restamp), ChildFrameId: t.ChildFrameID,
			Transform: geometry_msgs.Transform{Translation: geometry_msgs.Vector3{X: p.X, Y: p.Y, Z: p.Z}, Rotation: geometry_msgs.Quaternion{X: q.X, Y: q.Y, Z: q.Z, W: q.W}}}
	}
	return out
}

// ReplayFrame is one frame of a recorded episode to republish.
type ReplayFrame struct {
	// At is the frame's time from the episode's first frame.
	At            time.Duration
	Height, Width int
	RGB           []byte // (Height, Width, 3) rgb8
	// Proprio is the robot's proprioception when the frame was taken,
	// published on TopicProprio just before the frame; nil: none.
	Proprio []float32
	// Stamp is the frame's recorded header stamp; the first frame's maps
	// the recorded stamps of ReplayConfig.Robot to the replay's.
	Stamp time.Time
}

// ReplayMessage is a message the robot published of itself, recorded with
// the episode.
type ReplayMessage struct {
	// At is its record time from the first frame's stamp.
	At time.Duration
	// Msg is a *rosbag.TFMessage (TopicTF), *rosbag.JointState
	// (TopicJointStates) or *rosbag.CameraInfo (TopicCameraInfo).
	Msg rosbag.Message
}

// ReplayConfig configures Replay.
type ReplayConfig struct {
	// Args is the replayer's ROS command line (ParseArgs); its namespace
	// and remaps resolve the node's topic names. Required.
	Args        *Args
	Instruction string
	Frames      []ReplayFrame
	// ProprioLabel labels the frames' proprioception (layout.dim[0].label,
	// as recorded: "hand_x;hand_y;hand_z;gripper" for action.ArmProprio);
	// "" sends it unlabelled.
	ProprioLabel string
	// TFStatic, if not nil, goes out latched on TopicTFStatic.
	TFStatic *rosbag.TFMessage
	// Robot are the episode's tf, joint_states and camera_info messages,
	// sorted by At; each goes out at its time, restamped as the frames are
	// (a message stamped as a recorded frame gets that frame's new stamp),
	// before a frame due at the same time.
	Robot []ReplayMessage
	// Speed multiplies the recorded rate; it defaults to 1.
	Speed float64
	// Wait is how long to wait for a subscriber on the image topic before
	// publishing (a node still warming up); it defaults to 30 s.
	Wait time.Duration
	Log  hclog.Logger
}

// ReplayStats is what Replay published and saw.
type ReplayStats struct {
	Frames  int // frames published
	Actions int // actions the node published while the frames were sent
	Late    int // frames sent more than a period after their time
}

// Replay republishes a recorded episode to a live node at its recorded
// rate: the instruction (latched) on TopicInstruction, then each frame as
// an rgb8 sensor_msgs/Image on TopicImage at its time, stamped with the
// wall clock time it is due (start + At/Speed), so the node's
// max_image_age accepts it (for a node on /use_sim_time, play the bag with
// `rosbag play --clock` instead). The robot's static frames go out
// latched on TopicTFStatic, its tf, joint_states and camera_info at their
// times, restamped on the same clock. A frame's proprioception, if any, goes out on TopicProprio
// (latched, as `ttm sim --ros` sends it) just before the frame, so a
// policy that reads it has the reading when the frame arrives. It waits
// up to conf.Wait for the node to subscribe to the image topic, and counts
// the actions the node publishes on TopicAction meanwhile.
func Replay(ctx context.Context, conf ReplayConfig) (ReplayStats, error) {
	var stats ReplayStats
	if conf.Args == nil || len(conf.Frames) == 0 || conf.Instruction == "" {
		return stats, errors.New("ros: replay: Args, an instruction and frames are required")
	}
	if conf.Speed == 0 {
		conf.Speed = 1
	}
	if !(conf.Speed > 0) {
		return stats, fmt.Errorf("ros: replay: speed %v must be positive", conf.Speed)
	}
	if conf.Wait <= 0 {
		conf.Wait = 30 * time.Second
	}
	if conf.Log == nil {
		conf.Log = hclog.NewNullLogger()
	}
	proprioLen := 0
	for i, f := range conf.Frames {
		if f.Height <= 0 || f.Width <= 0 || len(f.RGB) != 3*f.Height*f.Width {
			return stats, fmt.Errorf("ros: replay: frame %d: %d bytes for %dx%d rgb8", i, len(f.RGB), f.Height, f.Width)
		}
		switch {
		case f.Proprio == nil:
		case len(f.Proprio) == 0 || (proprioLen > 0 && len(f.Proprio) != proprioLen):
			return stats, fmt.Errorf("ros: replay: frame %d: proprioception of %d values, the frames before had %d", i, len(f.Proprio), proprioLen)
		default:
			proprioLen = len(f.Proprio)
		}
	}
	names := map[string]string{}
	if len(conf.Robot) > 0 && conf.Frames[0].Stamp.IsZero() {
		return stats, errors.New("ros: replay: robot messages need the first frame's recorded stamp")
	}
	for i, m := range conf.Robot {
		switch m.Msg.(type) {
		case *rosbag.TFMessage, *rosbag.JointState, *rosbag.CameraInfo:
		default:
			return stats, fmt.Errorf("ros: replay: robot message %d is a %T, want a TFMessage, JointState or CameraInfo", i, m.Msg)
		}
		if i > 0 && m.At < conf.Robot[i-1].At {
			return stats, fmt.Errorf("ros: replay: robot message %d at %v comes before the one before it", i, m.At)
		}
	}
	for _, t := range []string{TopicImage, TopicProprio, TopicInstruction, TopicAction, TopicTF, TopicTFStatic, TopicJointStates, TopicCameraInfo} {
		r, err := conf.Args.Resolve(t)
		if err != nil {
			return stats, fmt.Errorf("ros: replay: resolve %s: %w", t, err)
		}
		names[t] = r
	}

	hasRobot := map[string]bool{TopicTFStatic: conf.TFStatic != nil}
	for _, m := range conf.Robot {
		switch m.Msg.(type) {
		case *rosbag.TFMessage:
			hasRobot[TopicTF] = true
		case *rosbag.JointState:
			hasRobot[TopicJointStates] = true
		case *rosbag.CameraInfo:
			hasRobot[TopicCameraInfo] = true
		}
	}
	var (
		mu                  sync.Mutex // mu guards img, proprio, instr, robotPubs, node
		img, proprio, instr *Publisher
		robotPubs           map[string]*Publisher // TopicTF, TopicTFStatic, ... -> publisher, those the episode has
		node                *Node
		actions             atomic.Int64
		sub                 *Subscriber
		connected           = make(chan struct{})
		connectOnce         sync.Once
	)
	setup := func(n *Node) error {
		var err error
		mu.Lock()
		defer mu.Unlock()
		if img, err = NewPublisher(PublisherConf{Node: n, Topic: names[TopicImage], Msg: &sensor_msgs.Image{}}); err != nil {
			return err
		}
		if proprioLen > 0 {
			if proprio, err = NewPublisher(PublisherConf{Node: n, Topic: names[TopicProprio], Msg: &std_msgs.Float32MultiArray{}, Latch: true}); err != nil {
				return err
			}
		}
		if instr, err = NewPublisher(PublisherConf{Node: n, Topic: names[TopicInstruction], Msg: &std_msgs.String{}, Latch: true}); err != nil {
			return err
		}
		instr.Write(&std_msgs.String{Data: conf.Instruction})
		robotPubs = map[string]*Publisher{}
		for _, rt := range []struct {
			topic string
			msg   any
			latch bool
		}{{TopicTFStatic, &tf2_msgs.TFMessage{}, true}, {TopicTF, &tf2_msgs.TFMessage{}, false},
			{TopicJointStates, &sensor_msgs.JointState{}, false}, {TopicCameraInfo, &sensor_msgs.CameraInfo{}, false}} {
			if !hasRobot[rt.topic] {
				continue
			}
			if robotPubs[rt.topic], err = NewPublisher(PublisherConf{Node: n, Topic: names[rt.topic], Msg: rt.msg, Latch: rt.latch}); err != nil {
				return err
			}
		}
		if conf.TFStatic != nil {
			robotPubs[TopicTFStatic].Write(rosTF(conf.TFStatic, func(t time.Time) time.Time { return t }))
		}
		if sub, err = NewSubscriber(SubscriberConf{Node: n, Topic: names[TopicAction],
			Callback: func(*std_msgs.Float32MultiArray) { actions.Add(1) }}); err != nil {
			return err
		}
		node = n
		connectOnce.Do(func() { close(connected) })
		return nil
	}
	teardown := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range []*Publisher{img, proprio, instr} {
			if p != nil {
				p.Close()
			}
		}
		for _, p := range robotPubs {
			p.Close()
		}
		if sub != nil {
			sub.Close()
		}
		img, proprio, instr, robotPubs, sub, node = nil, nil, nil, nil, nil, nil
	}
	sup, err := NewSupervisor(ctx, SupervisorConf{Args: conf.Args, Setup: setup, Teardown: teardown, Logger: conf.Log.Named("supervisor")})
	if err != nil {
		return stats, err
	}
	defer sup.Close()

	// Wait for the node: registered, then a subscriber on the image topic.
	deadline := time.NewTimer(conf.Wait)
	defer deadline.Stop()
	select {
	case <-connected:
	case <-deadline.C:
		return stats, fmt.Errorf("ros: replay: no ROS master at %s within %v", conf.Args.MasterURI, conf.Wait)
	case <-ctx.Done():
		return stats, ctx.Err()
	}
	for {
		mu.Lock()
		n := node
		mu.Unlock()
		if n != nil {
			if subs, err := n.Subscribers(names[TopicImage]); err == nil && subs > 0 {
				break
			}
		}
		select {
		case <-deadline.C:
			return stats, fmt.Errorf("ros: replay: nothing subscribed to %s within %v", names[TopicImage], conf.Wait)
		case <-ctx.Done():
			return stats, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	time.Sleep(200 * time.Millisecond) // let the subscriber's connection and the latched instruction arrive, as rosbag play does
	conf.Log.Info("replaying", "frames", len(conf.Frames), "image", names[TopicImage], "instruction", conf.Instruction, "speed", conf.Speed,
		"proprio_values", proprioLen)
	proprioLayout := LabelledLayout(conf.ProprioLabel, proprioLen)

	start := time.Now()
	before := actions.Load()
	dueAt := func(at time.Duration) time.Time { return start.Add(time.Duration(float64(at) / conf.Speed)) }
	// restamp maps a recorded stamp to the replay's clock, as the frames'.
	t0 := conf.Frames[0].Stamp
	restamp := func(t time.Time) time.Time { return dueAt(t.Sub(t0)) }
	wait := func(due time.Time) error {
		if d := time.Until(due); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				stats.Actions = int(actions.Load() - before)
				return ctx.Err()
			}
		}
		return nil
	}
	next := 0 // the next robot message
	sendRobot := func(until time.Duration, all bool) error {
		for ; next < len(conf.Robot) && (all || conf.Robot[next].At <= until); next++ {
			m := conf.Robot[next]
			if err := wait(dueAt(m.At)); err != nil {
				return err
			}
			mu.Lock()
			if robotPubs != nil {
				switch m := m.Msg.(type) {
				case *rosbag.TFMessage:
					robotPubs[TopicTF].Write(rosTF(m, restamp))
				case *rosbag.JointState:
					robotPubs[TopicJointStates].Write(&sensor_msgs.JointState{Header: rosHeader(m.Header, restamp), Name: m.Name, Position: m.Position,
						Velocity: m.Velocity, Effort: m.Effort})
				case *rosbag.CameraInfo:
					r := m.ROI
					robotPubs[TopicCameraInfo].Write(&sensor_msgs.CameraInfo{Header: rosHeader(m.Header, restamp), Height: m.Height, Width: m.Width,
						DistortionModel: m.DistortionModel, D: m.D, K: m.K, R: m.R, P: m.P, BinningX: m.BinningX, BinningY: m.BinningY,
						Roi: sensor_msgs.RegionOfInterest{XOffset: r.XOffset, YOffset: r.YOffset, Height: r.Height, Width: r.Width, DoRectify: r.DoRectify}})
				}
			}
			mu.Unlock()
		}
		return nil
	}
	for i, f := range conf.Frames {
		if err := sendRobot(f.At, false); err != nil {
			return stats, err
		}
		due := dueAt(f.At)
		if err := wait(due); err != nil {
			return stats, err
		}
		var period time.Duration
		if i+1 < len(conf.Frames) {
			period = time.Duration(float64(conf.Frames[i+1].At-f.At) / conf.Speed)
		}
		if period > 0 && time.Since(due) > period {
			stats.Late++
		}
		mu.Lock()
		if img != nil {
			if proprio != nil && f.Proprio != nil {
				proprio.Write(&std_msgs.Float32MultiArray{Layout: proprioLayout, Data: f.Proprio})
			}
			img.Write(&sensor_msgs.Image{Header: std_msgs.Header{Seq: uint32(i), Stamp: due, FrameId: robot.FrameCameraOptical},
				Height: uint32(f.Height), Width: uint32(f.Width), Encoding: "rgb8", Step: uint32(3 * f.Width), Data: f.RGB})
			stats.Frames++
		}
		mu.Unlock()
	}
	if err := sendRobot(0, true); err != nil {
		return stats, err
	}
	time.Sleep(200 * time.Millisecond) // the node's action for the last frame
	stats.Actions = int(actions.Load() - before)
	conf.Log.Info("replayed", "frames", stats.Frames, "late", stats.Late, "node_actions", stats.Actions, "elapsed", time.Since(start).Round(time.Millisecond))
	return stats, nil
}
