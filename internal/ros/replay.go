package ros

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/sensor_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
	"github.com/hashicorp/go-hclog"
)

// ReplayFrame is one frame of a recorded episode to republish.
type ReplayFrame struct {
	// At is the frame's time from the episode's first frame.
	At            time.Duration
	Height, Width int
	RGB           []byte // (Height, Width, 3) rgb8
	// Proprio is the robot's proprioception when the frame was taken,
	// published on TopicProprio just before the frame; nil: none.
	Proprio []float32
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
// wall clock when it is sent, so the node's max_image_age accepts it (for
// a node on /use_sim_time, play the bag with `rosbag play --clock`
// instead). A frame's proprioception, if any, goes out on TopicProprio
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
	for _, t := range []string{TopicImage, TopicProprio, TopicInstruction, TopicAction} {
		r, err := conf.Args.Resolve(t)
		if err != nil {
			return stats, fmt.Errorf("ros: replay: resolve %s: %w", t, err)
		}
		names[t] = r
	}

	var (
		mu                  sync.Mutex // mu guards img, proprio, instr, node
		img, proprio, instr *Publisher
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
		if sub != nil {
			sub.Close()
		}
		img, proprio, instr, sub, node = nil, nil, nil, nil, nil
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
	for i, f := range conf.Frames {
		due := start.Add(time.Duration(float64(f.At) / conf.Speed))
		if d := time.Until(due); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				stats.Actions = int(actions.Load() - before)
				return stats, ctx.Err()
			}
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
			img.Write(&sensor_msgs.Image{Header: std_msgs.Header{Seq: uint32(i), Stamp: time.Now(), FrameId: "headcam"},
				Height: uint32(f.Height), Width: uint32(f.Width), Encoding: "rgb8", Step: uint32(3 * f.Width), Data: f.RGB})
			stats.Frames++
		}
		mu.Unlock()
	}
	time.Sleep(200 * time.Millisecond) // the node's action for the last frame
	stats.Actions = int(actions.Load() - before)
	conf.Log.Info("replayed", "frames", stats.Frames, "late", stats.Late, "node_actions", stats.Actions, "elapsed", time.Since(start).Round(time.Millisecond))
	return stats, nil
}
