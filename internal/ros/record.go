package ros

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/sensor_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/tf2_msgs"
	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/internal/rosbag"
)

// RecordTopics are the topics Record takes by default: what an episode bag
// holds (the camera, raw and compressed, with its camera_info, what the
// robot senses of itself: proprioception, tf, tf_static and joint_states,
// the instruction, and the node's action and episode_done).
var RecordTopics = []string{TopicImage, TopicCompressed, TopicCameraInfo, TopicProprio, TopicTF, TopicTFStatic, TopicJointStates,
	TopicInstruction, TopicAction, TopicEpisodeDone}

// RecordConfig configures Record.
type RecordConfig struct {
	// Args is the recorder's ROS command line (ParseArgs): its namespace and
	// remaps resolve the topic names, as for the node. Required.
	Args *Args
	// Out is the bag file. Required.
	Out string
	// Topics are the default names of the topics to record, from
	// RecordTopics (others are an error). It defaults to RecordTopics.
	Topics []string
	// Duration stops the recording after this long; 0 records until ctx
	// ends.
	Duration time.Duration
	// Queue is how many messages may wait for the disk; when it is full the
	// newest message is dropped and counted. It defaults to 256.
	Queue int
	// Log defaults to a logger that discards everything.
	Log hclog.Logger
}

// RecordStats is what Record wrote.
type RecordStats struct {
	Messages map[string]int // resolved topic -> messages written
	Dropped  uint64         // messages dropped because the queue was full
	Start    time.Time      // the first message's record time
	End      time.Time
}

// recordMsg is one received message on its way to the bag.
type recordMsg struct {
	topic string
	at    time.Time
	msg   rosbag.Message
}

// Record subscribes to the policy node's topics and writes what arrives to a bag,
// like `rosbag record`: each message stamped with its arrival time (wall
// clock), with the exact ROS message definitions, so rosbag play and
// rostopic echo -b read it and sim.ReadEpisode / ttm replay replay it. The
// instruction's and tf_static's connections are marked latching, so
// rosbag play latches them.
// The bag is written atomically (rosbag.Create): it appears at Out when
// Record returns after ctx ends or Duration passes, or on an error; a
// crash leaves only Out.active.
//
// Callbacks hand messages to one writing goroutine through a queue of
// conf.Queue messages; a full queue drops the newest message and counts it.
func Record(ctx context.Context, conf RecordConfig) (RecordStats, error) {
	stats := RecordStats{Messages: map[string]int{}}
	if conf.Args == nil || conf.Out == "" {
		return stats, errors.New("ros: record: Args and Out are required")
	}
	if conf.Topics == nil {
		conf.Topics = RecordTopics
	}
	if conf.Queue <= 0 {
		conf.Queue = 256
	}
	if conf.Log == nil {
		conf.Log = hclog.NewNullLogger()
	}
	names := map[string]string{}
	for _, t := range conf.Topics {
		known := false
		for _, k := range RecordTopics {
			known = known || k == t
		}
		if !known {
			return stats, fmt.Errorf("ros: record: topic %q is not one of %v", t, RecordTopics)
		}
		r, err := conf.Args.Resolve(t)
		if err != nil {
			return stats, fmt.Errorf("ros: record: resolve %s: %w", t, err)
		}
		names[t] = r
	}

	w, err := rosbag.Create(conf.Out, rosbag.WriterOptions{})
	if err != nil {
		return stats, err
	}
	for def, mt := range map[string]rosbag.MessageType{TopicInstruction: rosbag.StringType, TopicTFStatic: rosbag.TFMessageType} {
		name, ok := names[def]
		if !ok {
			continue
		}
		if _, err := w.AddConnection(rosbag.Connection{Topic: name, Type: mt.Name, MD5Sum: mt.MD5Sum, MessageDefinition: mt.Definition, Latching: true}); err != nil {
			w.Abort()
			return stats, err
		}
	}

	queue := make(chan recordMsg, conf.Queue)
	var dropped atomic.Uint64
	put := func(topic string, m rosbag.Message) {
		select {
		case queue <- recordMsg{topic: topic, at: time.Now(), msg: m}:
		default:
			dropped.Add(1)
		}
	}
	var subs []*Subscriber
	setup := func(n *Node) error {
		for def, name := range names {
			var cb any
			switch def {
			case TopicImage:
				cb = func(m *sensor_msgs.Image) {
					put(name, &rosbag.Image{Header: bagHeader(m.Header), Height: m.Height, Width: m.Width, Encoding: m.Encoding,
						IsBigendian: m.IsBigendian, Step: m.Step, Data: m.Data})
				}
			case TopicCompressed:
				cb = func(m *sensor_msgs.CompressedImage) {
					put(name, &rosbag.CompressedImage{Header: bagHeader(m.Header), Format: m.Format, Data: m.Data})
				}
			case TopicInstruction:
				cb = func(m *std_msgs.String) { put(name, &rosbag.String{Data: m.Data}) }
			case TopicAction, TopicProprio:
				cb = func(m *std_msgs.Float32MultiArray) { put(name, bagArray(m)) }
			case TopicEpisodeDone:
				cb = func(m *std_msgs.Bool) { put(name, &rosbag.Bool{Data: m.Data}) }
			case TopicTF, TopicTFStatic:
				cb = func(m *tf2_msgs.TFMessage) { put(name, bagTF(m)) }
			case TopicJointStates:
				cb = func(m *sensor_msgs.JointState) {
					put(name, &rosbag.JointState{Header: bagHeader(m.Header), Name: m.Name, Position: m.Position, Velocity: m.Velocity, Effort: m.Effort})
				}
			case TopicCameraInfo:
				cb = func(m *sensor_msgs.CameraInfo) {
					r := m.Roi
					put(name, &rosbag.CameraInfo{Header: bagHeader(m.Header), Height: m.Height, Width: m.Width, DistortionModel: m.DistortionModel,
						D: m.D, K: m.K, R: m.R, P: m.P, BinningX: m.BinningX, BinningY: m.BinningY,
						ROI: rosbag.RegionOfInterest{XOffset: r.XOffset, YOffset: r.YOffset, Height: r.Height, Width: r.Width, DoRectify: r.DoRectify}})
				}
			}
			s, err := NewSubscriber(SubscriberConf{Node: n, Topic: name, Callback: cb})
			if err != nil {
				return fmt.Errorf("subscribe %s: %w", name, err)
			}
			subs = append(subs, s)
		}
		return nil
	}
	teardown := func() {
		for _, s := range subs {
			s.Close()
		}
		subs = nil
	}

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if conf.Duration > 0 {
		rctx, cancel = context.WithTimeout(rctx, conf.Duration)
		defer cancel()
	}
	sup, err := NewSupervisor(rctx, SupervisorConf{Args: conf.Args, Setup: setup, Teardown: teardown, Logger: conf.Log.Named("supervisor")})
	if err != nil {
		w.Abort()
		return stats, err
	}
	conf.Log.Info("recording", "out", conf.Out, "topics", fmt.Sprint(sortedValues(names)), "duration", conf.Duration)

	// This goroutine owns the writer.
	var werr error
	write := func(m recordMsg) {
		if werr != nil {
			return
		}
		t, err := rosbag.FromTime(m.at)
		if err == nil {
			err = w.Write(m.topic, t, m.msg)
		}
		if err != nil {
			werr = err
			cancel()
			return
		}
		if stats.Start.IsZero() {
			stats.Start = m.at
		}
		stats.End = m.at
		stats.Messages[m.topic]++
	}
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case m := <-queue:
			write(m)
		case <-tick.C:
			conf.Log.Debug("recording", "messages", fmt.Sprint(stats.Messages), "dropped", dropped.Load())
		case <-rctx.Done():
			break loop
		case <-sup.Done():
			if err := sup.Err(); err != nil && werr == nil {
				werr = err
			}
			break loop
		}
	}
	sup.Close() // no callback runs after this
	for len(queue) > 0 {
		write(<-queue)
	}
	stats.Dropped = dropped.Load()
	if werr != nil {
		w.Abort()
		return stats, fmt.Errorf("ros: record %s: %w", conf.Out, werr)
	}
	if err := w.Close(); err != nil {
		return stats, err
	}
	conf.Log.Info("recorded", "out", conf.Out, "messages", fmt.Sprint(stats.Messages), "dropped", stats.Dropped)
	return stats, nil
}

// bagArray converts a goroslib Float32MultiArray, its layout (labels)
// included.
func bagArray(m *std_msgs.Float32MultiArray) *rosbag.Float32MultiArray {
	a := &rosbag.Float32MultiArray{Layout: rosbag.MultiArrayLayout{DataOffset: m.Layout.DataOffset}, Data: m.Data}
	for _, d := range m.Layout.Dim {
		a.Layout.Dim = append(a.Layout.Dim, rosbag.MultiArrayDimension{Label: d.Label, Size: d.Size, Stride: d.Stride})
	}
	return a
}

// bagTF converts a goroslib TFMessage.
func bagTF(m *tf2_msgs.TFMessage) *rosbag.TFMessage {
	out := &rosbag.TFMessage{Transforms: make([]rosbag.TransformStamped, len(m.Transforms))}
	for i, t := range m.Transforms {
		p, q := t.Transform.Translation, t.Transform.Rotation
		out.Transforms[i] = rosbag.TransformStamped{Header: bagHeader(t.Header), ChildFrameID: t.ChildFrameId,
			Transform: rosbag.Transform{Translation: rosbag.Vector3{X: p.X, Y: p.Y, Z: p.Z}, Rotation: rosbag.Quaternion{X: q.X, Y: q.Y, Z: q.Z, W: q.W}}}
	}
	return out
}

// bagHeader converts a goroslib header; stamps out of ROS range become zero.
func bagHeader(h std_msgs.Header) rosbag.Header {
	t, _ := rosbag.FromTime(h.Stamp)
	return rosbag.Header{Seq: h.Seq, Stamp: t, FrameID: h.FrameId}
}

func sortedValues(m map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}
