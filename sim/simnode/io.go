package simnode

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/robot"
	"github.com/ttmrobot/ttm/internal/ros"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/geometry_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/sensor_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_srvs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/tf2_msgs"
	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/sim"
)

// simIO connects the simulator to ROS: the headcam, proprioception,
// instruction, tf, joint_states and camera_info publishers, the action and episode_done subscribers and the
// reset_memory client. It outlives goroslib nodes: the Supervisor runs
// setup and teardown on every (re)creation, and publishing while no node
// exists is skipped.
type simIO struct {
	names map[string]string // default name -> resolved
	reset bool              // call the reset service at each episode start
	queue *actionQueue
	log   hclog.Logger
	// camInfo is the headcam's camera_info, unstamped; each frame sends a
	// stamped copy.
	camInfo sensor_msgs.CameraInfo

	pubs     atomic.Pointer[simPublishers]
	received atomic.Uint64 // action messages received

	instrMu sync.Mutex // instrMu guards instr and publishing it
	instr   string

	svcMu sync.Mutex // svcMu guards svc and every call through it
	svc   *ros.ServiceClient

	doneMu   sync.Mutex // doneMu guards doneLog
	doneLog  [8]doneMsg // the last episode_done messages, a ring
	doneNext int
	doneIn   chan struct{} // capacity 1: an episode_done message came

	// Owned by the supervisor goroutine (setup, teardown).
	created *simPublishers
	subs    []*ros.Subscriber
}

// doneMsg is one episode_done message and its arrival time.
type doneMsg struct {
	at   time.Time
	done bool
}

type simPublishers struct {
	image, instruction, proprio      *ros.Publisher
	tf, tfStatic, joints, cameraInfo *ros.Publisher
}

// all lists the publishers, nil for those not created; none for a nil p.
func (p *simPublishers) all() []*ros.Publisher {
	if p == nil {
		return nil
	}
	return []*ros.Publisher{p.image, p.proprio, p.instruction, p.tf, p.tfStatic, p.joints, p.cameraInfo}
}

// The simulator node's names, by default name: it publishes the headcam
// and its camera_info, the robot's proprioception, tf and joint states, and
// the instruction, subscribes to the policy's action and episode_done and
// calls the policy node's reset_memory service.
var simNames = []string{ros.TopicImage, ros.TopicCameraInfo, ros.TopicProprio, ros.TopicTF, ros.TopicTFStatic, ros.TopicJointStates,
	ros.TopicInstruction, ros.TopicAction, ros.TopicEpisodeDone, ros.ServiceResetMemory}

// cameraInfo is the headcam's camera_info for h x w frames (unstamped):
// sim.CameraIntrinsics, no distortion, R = I, P = [K | 0].
func cameraInfo(h, w int) sensor_msgs.CameraInfo {
	f, cx, cy := sim.CameraIntrinsics(h, w)
	return sensor_msgs.CameraInfo{Header: std_msgs.Header{FrameId: robot.FrameCameraOptical}, Height: uint32(h), Width: uint32(w),
		DistortionModel: "plumb_bob", D: make([]float64, 5),
		K: [9]float64{f, 0, cx, 0, f, cy, 0, 0, 1}, R: [9]float64{1, 0, 0, 0, 1, 0, 0, 0, 1}, P: [12]float64{f, 0, cx, 0, 0, f, cy, 0, 0, 0, 1, 0}}
}

// transformMsg is tr stamped at stamp.
func transformMsg(tr sim.Transform, stamp time.Time) geometry_msgs.TransformStamped {
	p, q := tr.T.Translation, tr.T.Rotation
	return geometry_msgs.TransformStamped{Header: std_msgs.Header{Stamp: stamp, FrameId: tr.Parent}, ChildFrameId: tr.Child,
		Transform: geometry_msgs.Transform{Translation: geometry_msgs.Vector3{X: p[0], Y: p[1], Z: p[2]},
			Rotation: geometry_msgs.Quaternion{X: q[0], Y: q[1], Z: q[2], W: q[3]}}}
}

// staticTF is the robot's fixed frames in one message, as
// static_transform_publisher sends them.
func staticTF(stamp time.Time) *tf2_msgs.TFMessage {
	st := sim.StaticTransforms()
	m := &tf2_msgs.TFMessage{Transforms: make([]geometry_msgs.TransformStamped, len(st))}
	for i, tr := range st {
		m.Transforms[i] = transformMsg(tr, stamp)
	}
	return m
}

// jointNames names the values of every joint_states message; goroslib
// only reads it.
var jointNames = []string{robot.JointGripper}

func (s *simIO) setup(n *ros.Node) error {
	p := &simPublishers{}
	s.created = p
	// The image, proprioception and instruction are latched: a policy node
	// that connects late (or again) gets the current frame at once instead
	// of after the action timeout. tf is not: tf listeners expect a stream.
	for _, pc := range []struct {
		pub   **ros.Publisher
		name  string
		msg   any
		latch bool
	}{
		{&p.image, ros.TopicImage, &sensor_msgs.Image{}, true},
		{&p.proprio, ros.TopicProprio, &std_msgs.Float32MultiArray{}, true},
		{&p.instruction, ros.TopicInstruction, &std_msgs.String{}, true},
		{&p.tf, ros.TopicTF, &tf2_msgs.TFMessage{}, false},
		{&p.tfStatic, ros.TopicTFStatic, &tf2_msgs.TFMessage{}, true},
		{&p.joints, ros.TopicJointStates, &sensor_msgs.JointState{}, true},
		{&p.cameraInfo, ros.TopicCameraInfo, &sensor_msgs.CameraInfo{}, true},
	} {
		pub, err := ros.NewPublisher(ros.PublisherConf{Node: n, Topic: s.names[pc.name], Msg: pc.msg, Latch: pc.latch})
		if err != nil {
			return fmt.Errorf("publish %s: %w", s.names[pc.name], err)
		}
		*pc.pub = pub
	}
	p.tfStatic.Write(staticTF(n.TimeNow()))
	s.instrMu.Lock()
	if s.instr != "" {
		p.instruction.Write(&std_msgs.String{Data: s.instr}) // latched again on the new node
	}
	s.pubs.Store(p)
	s.instrMu.Unlock()

	for _, sc := range []struct {
		name string
		cb   any
	}{
		{ros.TopicAction, s.onAction},
		{ros.TopicEpisodeDone, s.onDone},
	} {
		sub, err := ros.NewSubscriber(ros.SubscriberConf{Node: n, Topic: s.names[sc.name], Callback: sc.cb})
		if err != nil {
			return fmt.Errorf("subscribe %s: %w", s.names[sc.name], err)
		}
		s.subs = append(s.subs, sub)
	}
	if s.reset {
		c, err := ros.NewServiceClient(ros.ServiceClientConf{Node: n, Name: s.names[ros.ServiceResetMemory], Srv: &std_srvs.Trigger{}})
		if err != nil {
			return fmt.Errorf("service client %s: %w", s.names[ros.ServiceResetMemory], err)
		}
		s.svcMu.Lock()
		s.svc = c
		s.svcMu.Unlock()
	}
	return nil
}

func (s *simIO) teardown() {
	s.pubs.Store(nil)
	for _, sub := range s.subs {
		sub.Close()
	}
	s.subs = nil
	s.svcMu.Lock() // waits for a call in progress (bounded by its timeout)
	if s.svc != nil {
		s.svc.Close()
		s.svc = nil
	}
	s.svcMu.Unlock()
	for _, pub := range s.created.all() {
		pub.Close()
	}
	s.created = nil
}

// onAction runs on goroslib's goroutine for every action message: it
// checks the message and queues it; it never blocks.
func (s *simIO) onAction(m *std_msgs.Float32MultiArray) {
	s.received.Add(1)
	a := simAction{at: time.Now()}
	sizes := make([]uint32, len(m.Layout.Dim))
	for i, d := range m.Layout.Dim {
		sizes[i] = d.Size
	}
	if a.err = checkAction(m.Data, sizes, m.Layout.DataOffset); a.err == nil {
		a.data = slices.Clone(m.Data)
	}
	s.queue.push(a)
}

// onDone records an episode_done message.
func (s *simIO) onDone(m *std_msgs.Bool) {
	s.doneMu.Lock()
	s.doneLog[s.doneNext%len(s.doneLog)] = doneMsg{at: time.Now(), done: m.Data}
	s.doneNext++
	s.doneMu.Unlock()
	select {
	case s.doneIn <- struct{}{}:
	default:
	}
}

// doneNear returns the episode_done message that arrived nearest to t,
// within window either side.
func (s *simIO) doneNear(t time.Time, window time.Duration) (doneMsg, bool) {
	s.doneMu.Lock()
	defer s.doneMu.Unlock()
	var best doneMsg
	found := false
	for _, d := range s.doneLog {
		if d.at.IsZero() {
			continue
		}
		off := d.at.Sub(t).Abs()
		if off <= window && (!found || off < best.at.Sub(t).Abs()) {
			best, found = d, true
		}
	}
	return best, found
}

// setInstruction publishes the episode's instruction on the latched topic
// (and again on every re-created node).
func (s *simIO) setInstruction(text string) {
	s.instrMu.Lock()
	s.instr = text
	s.instrMu.Unlock()
	publish := func() {
		s.instrMu.Lock()
		defer s.instrMu.Unlock()
		if p := s.pubs.Load(); p != nil && s.instr == text {
			p.instruction.Write(&std_msgs.String{Data: text})
		}
	}
	if hook := testHookPublishInstruction; hook != nil {
		hook(text, publish)
		return
	}
	publish()
}

// testHookPublishInstruction, set by tests only, is called in place of
// publishing an episode's instruction, with the function that publishes it:
// a test delays the message to make it arrive after the reset_memory call.
var testHookPublishInstruction func(text string, publish func())

// publishFrame sends what the robot senses of itself in state st: its
// proprioception (action.ArmProprio's layout, labelled), tf (odom ->
// base_link, arm_mount -> hand) and joint_states; then the camera_info and
// an rgb8 frame of h x w, all stamped now with one stamp (new messages:
// goroslib encodes them later, on its own goroutines), so that a policy
// node has the readings when the frame arrives. It reports false when no
// node is registered.
func (s *simIO) publishFrame(img []byte, st *sim.State, proprio []float32, h, w int, seq uint32) bool {
	p := s.pubs.Load()
	if p == nil {
		return false
	}
	now := time.Now()
	p.proprio.Write(&std_msgs.Float32MultiArray{
		Layout: ros.LabelledLayout(strings.Join(action.ArmProprio, ";"), len(proprio)),
		Data:   slices.Clone(proprio),
	})
	moving := st.Transforms()
	tf := &tf2_msgs.TFMessage{Transforms: make([]geometry_msgs.TransformStamped, len(moving))}
	for i, tr := range moving {
		tf.Transforms[i] = transformMsg(tr, now)
	}
	p.tf.Write(tf)
	p.joints.Write(&sensor_msgs.JointState{Header: std_msgs.Header{Seq: seq, Stamp: now}, Name: jointNames, Position: []float64{st.GripperPosition()}})
	info := s.camInfo
	info.Header.Seq, info.Header.Stamp = seq, now
	p.cameraInfo.Write(&info)
	p.image.Write(&sensor_msgs.Image{
		Header: std_msgs.Header{Seq: seq, Stamp: now, FrameId: robot.FrameCameraOptical},
		Height: uint32(h), Width: uint32(w), Encoding: "rgb8", Step: uint32(3 * w), Data: slices.Clone(img),
	})
	return true
}

// callReset calls the policy node's reset_memory service and reports
// whether it answered that the reset was applied.
func (s *simIO) callReset(ctx context.Context, timeout time.Duration) (bool, string, error) {
	s.svcMu.Lock()
	defer s.svcMu.Unlock()
	if s.svc == nil {
		return false, "", fmt.Errorf("no ROS node registered")
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res std_srvs.TriggerRes
	if err := s.svc.CallContext(cctx, &std_srvs.TriggerReq{}, &res); err != nil {
		return false, "", err
	}
	return res.Success, res.Message, nil
}
