package node

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/internal/tf"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/geometry_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/sensor_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_srvs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/tf2_msgs"
	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/language"
	"github.com/ttmrobot/ttm/vision"
)

// allNames are every topic and service name of the node.
var allNames = []string{ros.TopicImage, ros.TopicCompressed, ros.TopicInstruction, ros.TopicEmbedding, ros.TopicEStop, ros.TopicEStopReset,
	ros.TopicHeartbeat, ros.TopicProprio, ros.TopicTF, ros.TopicTFStatic, ros.TopicJointStates, ros.TopicCameraInfo, ros.TopicAction, ros.TopicCmdVel, ros.TopicArm, ros.TopicGripper, ros.TopicEpisodeDone, ros.TopicStatus, ros.TopicDiagnostics,
	ros.ServiceResetMemory, ros.ServiceEnable}

// rosIO connects the loop to ROS: the subscribers fill Inputs, the
// publishers are the loop's Sink. It outlives goroslib nodes: Setup and
// Teardown run on every (re)creation by the Supervisor, and publishing while
// no node exists is counted and skipped.
type rosIO struct {
	names     map[string]string
	in        *Inputs
	embWidth  int
	proprio   []string // the names the policy reads; nil: no proprio subscription
	log       hclog.Logger
	layout    std_msgs.MultiArrayLayout
	simClock  *ros.SimClock // nil unless /use_sim_time
	resetWait time.Duration

	pubs        atomic.Pointer[publishers]
	unpublished atomic.Uint64

	statusMu   sync.Mutex // statusMu guards statusText
	statusText string

	// Owned by the supervisor goroutine (Setup, Teardown).
	created *publishers
	subs    []*ros.Subscriber
	srvs    []*ros.ServiceProvider

	badFrames  throttle
	badEmb     throttle
	badProprio throttle
	badTF      throttle
	badJoint   throttle
	badInfo    throttle
	badInstr   throttle
	newInstr   throttle
	// wrongTypes are the publishers of another type the last audit found;
	// only the supervisor's audit goroutine touches it.
	wrongTypes map[ros.WrongType]bool
	// instrChanges counts instructions that started an episode; only the
	// subscriber's callback touches it.
	instrChanges uint64
}

type publishers struct {
	action, cmdVel, arm, gripper, done, status, diag *ros.Publisher
}

// all lists the publishers, nil for those not created; none for a nil p.
func (p *publishers) all() []*ros.Publisher {
	if p == nil {
		return nil
	}
	return []*ros.Publisher{p.action, p.cmdVel, p.arm, p.gripper, p.done, p.status, p.diag}
}

func newROSIO(names map[string]string, in *Inputs, space action.Space, embWidth int, proprio []string, clock *ros.SimClock, resetWait time.Duration, log hclog.Logger) *rosIO {
	return &rosIO{
		names: names, in: in, embWidth: embWidth, proprio: proprio, log: log, simClock: clock, resetWait: resetWait,
		layout:     ros.LabelledLayout(ros.ActionLabel(space), space.Len()),
		badFrames:  throttle{every: 10 * time.Second},
		badEmb:     throttle{every: 10 * time.Second},
		badProprio: throttle{every: 10 * time.Second},
		badTF:      throttle{every: 10 * time.Second},
		badJoint:   throttle{every: 10 * time.Second},
		badInfo:    throttle{every: 10 * time.Second},
		badInstr:   throttle{every: 10 * time.Second},
		newInstr:   throttle{every: time.Second},
	}
}

// setup creates the publishers, subscribers and services on a fresh node.
func (r *rosIO) setup(n *ros.Node) error {
	if r.simClock != nil {
		r.simClock.SetNode(n)
	}
	p := &publishers{}
	r.created = p
	for _, pc := range []struct {
		dst   **ros.Publisher
		name  string
		msg   any
		latch bool
	}{
		{&p.action, ros.TopicAction, &std_msgs.Float32MultiArray{}, false},
		{&p.cmdVel, ros.TopicCmdVel, &geometry_msgs.Twist{}, false},
		{&p.arm, ros.TopicArm, &geometry_msgs.Twist{}, false},
		{&p.gripper, ros.TopicGripper, &std_msgs.Float64{}, false},
		{&p.done, ros.TopicEpisodeDone, &std_msgs.Bool{}, false},
		{&p.status, ros.TopicStatus, &std_msgs.String{}, true},
		{&p.diag, ros.TopicDiagnostics, &diagnosticArray{}, false},
	} {
		pub, err := ros.NewPublisher(ros.PublisherConf{Node: n, Topic: r.names[pc.name], Msg: pc.msg, Latch: pc.latch})
		if err != nil {
			return fmt.Errorf("publish %s: %w", r.names[pc.name], err)
		}
		*pc.dst = pub
	}
	r.statusMu.Lock()
	if r.statusText != "" {
		p.status.Write(&std_msgs.String{Data: r.statusText})
	}
	r.pubs.Store(p)
	r.statusMu.Unlock()

	for _, sc := range r.inputs() {
		sub, err := ros.NewSubscriber(ros.SubscriberConf{Node: n, Topic: r.names[sc.name], Callback: sc.cb})
		if err != nil {
			return fmt.Errorf("subscribe %s: %w", r.names[sc.name], err)
		}
		r.subs = append(r.subs, sub)
	}

	for _, sc := range []struct {
		name string
		srv  any
		cb   any
	}{
		{ros.ServiceResetMemory, &std_srvs.Trigger{}, r.onResetMemory},
		{ros.ServiceEnable, &std_srvs.SetBool{}, r.onEnable},
	} {
		sp, err := ros.NewServiceProvider(ros.ServiceProviderConf{Node: n, Name: r.names[sc.name], Srv: sc.srv, Callback: sc.cb})
		if err != nil {
			return fmt.Errorf("provide %s: %w", r.names[sc.name], err)
		}
		r.srvs = append(r.srvs, sp)
	}
	return nil
}

// input is a topic the node subscribes to and its callback, whose argument
// is the message type it reads.
type input struct {
	name string
	cb   any
}

func (r *rosIO) inputs() []input {
	in := []input{
		{ros.TopicImage, r.onImage},
		{ros.TopicCompressed, r.onCompressed},
		{ros.TopicInstruction, r.onInstruction},
		{ros.TopicEmbedding, r.onEmbedding},
		{ros.TopicEStop, r.onEStop},
		{ros.TopicEStopReset, r.onEStopReset},
		{ros.TopicHeartbeat, func(*std_msgs.Empty) { r.in.Heartbeat() }},
	}
	if len(r.proprio) > 0 {
		in = append(in, input{ros.TopicProprio, r.onProprio})
	}
	proprio, camera := r.in.ReadsRobot()
	if proprio || camera {
		in = append(in, input{ros.TopicTF, r.onTF}, input{ros.TopicTFStatic, r.onTFStatic})
	}
	if proprio {
		in = append(in, input{ros.TopicJointStates, r.onJointState})
	}
	if camera {
		in = append(in, input{ros.TopicCameraInfo, r.onCameraInfo})
	}
	return in
}

func (r *rosIO) onTF(m *tf2_msgs.TFMessage)       { r.putTF(m, false) }
func (r *rosIO) onTFStatic(m *tf2_msgs.TFMessage) { r.putTF(m, true) }

func (r *rosIO) putTF(m *tf2_msgs.TFMessage, static bool) {
	for i := range m.Transforms {
		ts := &m.Transforms[i]
		p, q := ts.Transform.Translation, ts.Transform.Rotation
		t := tf.Transform{Translation: [3]float64{p.X, p.Y, p.Z}, Rotation: [4]float64{q.X, q.Y, q.Z, q.W}}
		jumped, err := r.in.PutTransform(ts.Header.FrameId, ts.ChildFrameId, ts.Header.Stamp, t, static)
		if jumped {
			r.log.Info("a transform far older than its frame's latest: ROS time jumped back; the dynamic transforms start afresh",
				"parent", ts.Header.FrameId, "child", ts.ChildFrameId, "stamp", ts.Header.Stamp)
		}
		if err != nil && r.badTF.ok() {
			r.log.Warn("transform refused", "static", static, "error", err, "refused_so_far", r.in.robot.tfBad.Load())
		}
	}
}

func (r *rosIO) onJointState(m *sensor_msgs.JointState) {
	if err := r.in.PutJointState(m.Name, m.Position, m.Header.Stamp); err != nil && r.badJoint.ok() {
		r.log.Warn("joint state refused", "topic", r.names[ros.TopicJointStates], "error", err, "refused_so_far", r.in.robot.jointBad.Load())
	}
}

func (r *rosIO) onCameraInfo(m *sensor_msgs.CameraInfo) {
	if err := r.in.PutCameraInfo(m.Header.FrameId, m.Height, m.Width, m.K, m.D, m.Header.Stamp); err != nil && r.badInfo.ok() {
		r.log.Warn("camera_info refused", "topic", r.names[ros.TopicCameraInfo], "error", err, "refused_so_far", r.in.robot.infoBad.Load())
	}
}

// inputTypes maps each resolved input topic onto the ROS type it is read
// as, for the supervisor's audit of publisher types.
func (r *rosIO) inputTypes() (map[string]string, error) {
	types := map[string]string{}
	for _, in := range r.inputs() {
		msg := reflect.Zero(reflect.TypeOf(in.cb).In(0).Elem()).Interface()
		t, err := ros.MessageType(msg)
		if err != nil {
			return nil, fmt.Errorf("the type of %s: %w", r.names[in.name], err)
		}
		types[r.names[in.name]] = t
	}
	return types, nil
}

// onWrongType takes the supervisor's audit: publishers on the node's
// inputs that send another type, whose messages goroslib drops. One on a
// safety topic stops the loop while it publishes, and one on e_stop also
// latches the e-stop (it may well be an e-stop of another convention,
// std_msgs/Bool). Each is logged when it appears and when it goes.
func (r *rosIO) onWrongType(wrong []ros.WrongType) {
	var all, safety []string
	now := map[ros.WrongType]bool{}
	for _, w := range wrong {
		now[w] = true
		all = append(all, w.String())
		switch w.Topic {
		case r.names[ros.TopicEStop]:
			safety = append(safety, w.String())
			if !r.in.EStopped() {
				r.log.Error("e-stop latched: a publisher on e_stop sends a type the node cannot read", "topic", w.Topic,
					"publisher", w.Publisher, "type", w.Type, "reads", w.Want)
			}
			r.in.EStop()
		case r.names[ros.TopicHeartbeat]:
			safety = append(safety, w.String())
		}
		if !r.wrongTypes[w] {
			r.log.Warn("a publisher sends a type the node cannot read; its messages are dropped", "topic", w.Topic,
				"publisher", w.Publisher, "type", w.Type, "reads", w.Want)
		}
	}
	for w := range r.wrongTypes {
		if !now[w] {
			r.log.Info("the publisher of another type has gone", "topic", w.Topic, "publisher", w.Publisher, "type", w.Type)
		}
	}
	r.wrongTypes = now
	r.in.SetWrongTypes(strings.Join(all, "; "), strings.Join(safety, "; "))
}

// teardown closes what setup created (also after a partial setup).
func (r *rosIO) teardown() {
	r.pubs.Store(nil)
	if r.simClock != nil {
		r.simClock.SetNode(nil)
	}
	for _, s := range r.subs {
		s.Close()
	}
	for _, s := range r.srvs {
		s.Close()
	}
	r.subs, r.srvs = nil, nil
	for _, pub := range r.created.all() {
		pub.Close()
	}
	r.created = nil
}

func (r *rosIO) onImage(m *sensor_msgs.Image) {
	img := &vision.Image{Height: m.Height, Width: m.Width, Encoding: m.Encoding, IsBigendian: m.IsBigendian, Step: m.Step, Data: m.Data}
	if err := r.in.PutImage(img, m.Header.Stamp); err != nil && r.badFrames.ok() {
		r.log.Warn("camera frame refused", "topic", r.names[ros.TopicImage], "error", err, "refused_so_far", r.in.framesBad.Load())
	}
}

func (r *rosIO) onCompressed(m *sensor_msgs.CompressedImage) {
	if err := r.in.PutCompressed(&vision.CompressedImage{Format: m.Format, Data: m.Data}, m.Header.Stamp); err != nil && r.badFrames.ok() {
		r.log.Warn("camera frame refused", "topic", r.names[ros.TopicCompressed], "error", err, "refused_so_far", r.in.framesBad.Load())
	}
}

func (r *rosIO) onInstruction(m *std_msgs.String) {
	text := strings.TrimSpace(m.Data)
	changed, err := r.in.SetInstruction(text)
	switch {
	case err != nil:
		if r.badInstr.ok() {
			r.log.Warn("instruction refused", "error", err, "refused_so_far", r.in.instructionsBad.Load())
		}
	case changed:
		r.instrChanges++
		if r.newInstr.ok() {
			r.log.Info("new instruction", "instruction", logText(text), "changes_so_far", r.instrChanges)
		}
	}
}

// logInstructionBytes bounds the instruction text one log line shows.
const logInstructionBytes = 200

// logText is text cut to logInstructionBytes (on a rune boundary) for a
// log line, with how much was left out.
func logText(text string) string {
	if len(text) <= logInstructionBytes {
		return text
	}
	cut := logInstructionBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", text[:cut], len(text))
}

func (r *rosIO) onEmbedding(m *std_msgs.Float32MultiArray) {
	msg := &language.Float32MultiArray{Layout: language.MultiArrayLayout{DataOffset: m.Layout.DataOffset}, Data: m.Data}
	for _, d := range m.Layout.Dim {
		msg.Layout.Dim = append(msg.Layout.Dim, language.MultiArrayDimension{Label: d.Label, Size: d.Size, Stride: d.Stride})
	}
	e, err := language.CheckEmbedding(msg, r.embWidth)
	if err != nil {
		r.in.badEmbedding()
		if r.badEmb.ok() {
			r.log.Warn("instruction embedding refused", "topic", r.names[ros.TopicEmbedding], "error", err)
		}
		return
	}
	if r.in.SetEmbedding(e) {
		r.log.Info("new instruction embedding", "width", len(e))
	}
}

func (r *rosIO) onEStop(*std_msgs.Empty) {
	if !r.in.EStopped() {
		r.log.Warn("e-stop received: publishing only the stop action until e_stop_reset", "topic", r.names[ros.TopicEStop])
	}
	r.in.EStop()
}

func (r *rosIO) onEStopReset(*std_msgs.Empty) {
	if r.in.EStopped() {
		r.log.Info("e-stop reset", "topic", r.names[ros.TopicEStopReset])
	}
	r.in.EStopReset()
}

// onResetMemory asks the loop for a new episode and waits until it is
// applied (at the next tick with no inference running).
func (r *rosIO) onResetMemory(*std_srvs.TriggerReq) (*std_srvs.TriggerRes, bool) {
	n := r.in.RequestReset()
	deadline := time.Now().Add(r.resetWait)
	for !r.in.ResetApplied(n) {
		if time.Now().After(deadline) {
			return &std_srvs.TriggerRes{Success: false, Message: fmt.Sprintf("memory reset requested but not applied within %v; it will be at the next free tick", r.resetWait)}, true
		}
		time.Sleep(2 * time.Millisecond)
	}
	text, named := r.in.EpisodeInstruction()
	r.log.Info("memory reset by service", "service", r.names[ros.ServiceResetMemory], "instruction", text)
	return &std_srvs.TriggerRes{Success: true, Message: ros.ResetAnswer(text, named)}, true
}

func (r *rosIO) onEnable(req *std_srvs.SetBoolReq) (*std_srvs.SetBoolRes, bool) {
	was := r.in.Enabled()
	r.in.SetEnabled(req.Data)
	msg := "enabled"
	if !req.Data {
		msg = "disabled: publishing the stop action"
	}
	if was != req.Data {
		r.log.Info("enable service", "enabled", req.Data)
	}
	return &std_srvs.SetBoolRes{Success: true, Message: msg}, true
}

// Action implements Sink: one tick's messages on every output topic.
// goroslib queues the message pointers and encodes them later on its own
// goroutines, so each tick needs fresh messages.
func (r *rosIO) Action(o *Output) {
	p := r.pubs.Load()
	if p == nil {
		r.unpublished.Add(1)
		return
	}
	a := o.Action
	p.action.Write(&std_msgs.Float32MultiArray{Layout: r.layout, Data: slices.Clone(a)})
	p.cmdVel.Write(&geometry_msgs.Twist{
		Linear:  geometry_msgs.Vector3{X: float64(a[action.DimBaseX]), Y: float64(a[action.DimBaseY])},
		Angular: geometry_msgs.Vector3{Z: float64(a[action.DimBaseYaw])},
	})
	p.arm.Write(&geometry_msgs.Twist{
		Linear:  geometry_msgs.Vector3{X: float64(a[action.DimWorldX]), Y: float64(a[action.DimWorldY]), Z: float64(a[action.DimWorldZ])},
		Angular: geometry_msgs.Vector3{X: float64(a[action.DimRoll]), Y: float64(a[action.DimPitch]), Z: float64(a[action.DimYaw])},
	})
	p.gripper.Write(&std_msgs.Float64{Data: float64(a[action.DimGripper])})
	p.done.Write(&std_msgs.Bool{Data: o.Done})
}

// Status implements Sink: the latched status topic.
func (r *rosIO) Status(text string, _ Reason) {
	r.statusMu.Lock()
	defer r.statusMu.Unlock()
	r.statusText = text
	if p := r.pubs.Load(); p != nil {
		p.status.Write(&std_msgs.String{Data: text})
	}
}

// publishDiagnostics sends one diagnostics message, if a node is up.
func (r *rosIO) publishDiagnostics(d *diagnosticArray) {
	if p := r.pubs.Load(); p != nil {
		p.diag.Write(d)
	}
}

// throttle lets one event through per period.
type throttle struct {
	mu    sync.Mutex // mu guards last
	last  time.Time
	every time.Duration
}

func (t *throttle) ok() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if !t.last.IsZero() && now.Sub(t.last) < t.every {
		return false
	}
	t.last = now
	return true
}

// onProprio offers a proprioception reading to the loop.
func (r *rosIO) onProprio(m *std_msgs.Float32MultiArray) {
	label := ""
	if len(m.Layout.Dim) > 0 {
		label = m.Layout.Dim[0].Label
	}
	if err := r.in.PutProprio(m.Data, label, r.proprio); err != nil && r.badProprio.ok() {
		r.log.Warn("proprioception refused", "topic", r.names[ros.TopicProprio], "error", err, "refused_so_far", r.in.proprioBad.Load())
	}
}
