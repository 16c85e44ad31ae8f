package node

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/bluenviron/goroslib/v2"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/geometry_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/sensor_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_srvs"
	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/language"
	"github.com/ttmrobot/ttm/vision"
)

// The node's topics and services, by their default names. Relative names
// resolve in the node's namespace; every name can be remapped (from:=to).
const (
	TopicImage         = "headcam/image_raw"            // sensor_msgs/Image, in
	TopicCompressed    = "headcam/image_raw/compressed" // sensor_msgs/CompressedImage, in
	TopicInstruction   = "instruction"                  // std_msgs/String, in
	TopicEmbedding     = "instruction_embedding"        // std_msgs/Float32MultiArray, in
	TopicEStop         = "e_stop"                       // std_msgs/Empty, in
	TopicEStopReset    = "e_stop_reset"                 // std_msgs/Empty, in
	TopicHeartbeat     = "heartbeat"                    // std_msgs/Empty, in
	TopicProprio       = "proprio"                      // std_msgs/Float32MultiArray, in (policies that read proprioception)
	TopicAction        = "action"                       // std_msgs/Float32MultiArray, out
	TopicCmdVel        = "cmd_vel"                      // geometry_msgs/Twist, out
	TopicArm           = "arm/command"                  // geometry_msgs/Twist, out
	TopicGripper       = "gripper/command"              // std_msgs/Float64, out
	TopicEpisodeDone   = "episode_done"                 // std_msgs/Bool, out
	TopicStatus        = "status"                       // std_msgs/String, out, latched
	TopicDiagnostics   = "/diagnostics"                 // diagnostic_msgs/DiagnosticArray, out
	ServiceResetMemory = "reset_memory"                 // std_srvs/Trigger
	ServiceEnable      = "enable"                       // std_srvs/SetBool
)

var allNames = []string{TopicImage, TopicCompressed, TopicInstruction, TopicEmbedding, TopicEStop, TopicEStopReset,
	TopicHeartbeat, TopicProprio, TopicAction, TopicCmdVel, TopicArm, TopicGripper, TopicEpisodeDone, TopicStatus, TopicDiagnostics,
	ServiceResetMemory, ServiceEnable}

// ResolveNames resolves every topic and service name of the node by ROS
// rules (namespace, remaps); the map goes from default name to resolved.
func ResolveNames(a *Args) (map[string]string, error) {
	out := make(map[string]string, len(allNames))
	for _, n := range allNames {
		r, err := a.Resolve(n)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", n, err)
		}
		out[n] = r
	}
	return out, nil
}

// ActionLabel is the label of the single dimension of the action topic's
// layout: the action space's dimension names in order, separated by
// semicolons ("mode;world_vector/x;...;base/y"), so a consumer can find
// each value. (Not commas: rostopic echo -p writes CSV.)
func ActionLabel(space action.Space) string {
	names := make([]string, len(space.Dims))
	for i, d := range space.Dims {
		names[i] = d.Name
	}
	return strings.Join(names, ";")
}

// labelledLayout is the layout of a Float32MultiArray of n values in one
// dimension whose label names them (ActionLabel's convention).
func labelledLayout(label string, n int) std_msgs.MultiArrayLayout {
	return std_msgs.MultiArrayLayout{Dim: []std_msgs.MultiArrayDimension{{Label: label, Size: uint32(n), Stride: uint32(n)}}}
}

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
	simClock  *simClock // nil unless /use_sim_time
	resetWait time.Duration

	pubs        atomic.Pointer[publishers]
	unpublished atomic.Uint64

	statusMu   sync.Mutex // statusMu guards statusText
	statusText string

	// Owned by the supervisor goroutine (Setup, Teardown).
	created *publishers
	subs    []*goroslib.Subscriber
	srvs    []*goroslib.ServiceProvider

	badFrames  throttle
	badEmb     throttle
	badProprio throttle
}

type publishers struct {
	action, cmdVel, arm, gripper, done, status, diag *goroslib.Publisher
}

func (p *publishers) all() []*goroslib.Publisher {
	return []*goroslib.Publisher{p.action, p.cmdVel, p.arm, p.gripper, p.done, p.status, p.diag}
}

func newROSIO(names map[string]string, in *Inputs, space action.Space, embWidth int, proprio []string, clock *simClock, resetWait time.Duration, log hclog.Logger) *rosIO {
	return &rosIO{
		names: names, in: in, embWidth: embWidth, proprio: proprio, log: log, simClock: clock, resetWait: resetWait,
		layout:     labelledLayout(ActionLabel(space), space.Len()),
		badFrames:  throttle{every: 10 * time.Second},
		badEmb:     throttle{every: 10 * time.Second},
		badProprio: throttle{every: 10 * time.Second},
	}
}

// setup creates the publishers, subscribers and services on a fresh node.
func (r *rosIO) setup(n *goroslib.Node) error {
	if r.simClock != nil {
		r.simClock.setNode(n)
	}
	p := &publishers{}
	r.created = p
	for _, pc := range []struct {
		dst   **goroslib.Publisher
		name  string
		msg   any
		latch bool
	}{
		{&p.action, TopicAction, &std_msgs.Float32MultiArray{}, false},
		{&p.cmdVel, TopicCmdVel, &geometry_msgs.Twist{}, false},
		{&p.arm, TopicArm, &geometry_msgs.Twist{}, false},
		{&p.gripper, TopicGripper, &std_msgs.Float64{}, false},
		{&p.done, TopicEpisodeDone, &std_msgs.Bool{}, false},
		{&p.status, TopicStatus, &std_msgs.String{}, true},
		{&p.diag, TopicDiagnostics, &diagnosticArray{}, false},
	} {
		pub, err := goroslib.NewPublisher(goroslib.PublisherConf{Node: n, Topic: r.names[pc.name], Msg: pc.msg, Latch: pc.latch})
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

	subs := []struct {
		name string
		cb   any
	}{
		{TopicImage, r.onImage},
		{TopicCompressed, r.onCompressed},
		{TopicInstruction, r.onInstruction},
		{TopicEmbedding, r.onEmbedding},
		{TopicEStop, r.onEStop},
		{TopicEStopReset, r.onEStopReset},
		{TopicHeartbeat, func(*std_msgs.Empty) { r.in.Heartbeat() }},
	}
	if len(r.proprio) > 0 {
		subs = append(subs, struct {
			name string
			cb   any
		}{TopicProprio, r.onProprio})
	}
	for _, sc := range subs {
		sub, err := goroslib.NewSubscriber(goroslib.SubscriberConf{Node: n, Topic: r.names[sc.name], Callback: sc.cb})
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
		{ServiceResetMemory, &std_srvs.Trigger{}, r.onResetMemory},
		{ServiceEnable, &std_srvs.SetBool{}, r.onEnable},
	} {
		sp, err := goroslib.NewServiceProvider(goroslib.ServiceProviderConf{Node: n, Name: r.names[sc.name], Srv: sc.srv, Callback: sc.cb})
		if err != nil {
			return fmt.Errorf("provide %s: %w", r.names[sc.name], err)
		}
		r.srvs = append(r.srvs, sp)
	}
	return nil
}

// teardown closes what setup created (also after a partial setup).
func (r *rosIO) teardown() {
	r.pubs.Store(nil)
	if r.simClock != nil {
		r.simClock.setNode(nil)
	}
	for _, s := range r.subs {
		s.Close()
	}
	for _, s := range r.srvs {
		s.Close()
	}
	r.subs, r.srvs = nil, nil
	if p := r.created; p != nil {
		for _, pub := range p.all() {
			if pub != nil {
				pub.Close()
			}
		}
	}
	r.created = nil
}

func (r *rosIO) onImage(m *sensor_msgs.Image) {
	img := &vision.Image{Height: m.Height, Width: m.Width, Encoding: m.Encoding, IsBigendian: m.IsBigendian, Step: m.Step, Data: m.Data}
	if err := r.in.PutImage(img, m.Header.Stamp); err != nil && r.badFrames.ok() {
		r.log.Warn("camera frame refused", "topic", r.names[TopicImage], "error", err, "refused_so_far", r.in.framesBad.Load())
	}
}

func (r *rosIO) onCompressed(m *sensor_msgs.CompressedImage) {
	if err := r.in.PutCompressed(&vision.CompressedImage{Format: m.Format, Data: m.Data}, m.Header.Stamp); err != nil && r.badFrames.ok() {
		r.log.Warn("camera frame refused", "topic", r.names[TopicCompressed], "error", err, "refused_so_far", r.in.framesBad.Load())
	}
}

func (r *rosIO) onInstruction(m *std_msgs.String) {
	text := strings.TrimSpace(m.Data)
	changed, err := r.in.SetInstruction(text)
	switch {
	case err != nil:
		r.log.Warn("instruction refused", "error", err)
	case changed:
		r.log.Info("new instruction", "instruction", text)
	}
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
			r.log.Warn("instruction embedding refused", "topic", r.names[TopicEmbedding], "error", err)
		}
		return
	}
	if r.in.SetEmbedding(e) {
		r.log.Info("new instruction embedding", "width", len(e))
	}
}

func (r *rosIO) onEStop(*std_msgs.Empty) {
	if !r.in.EStopped() {
		r.log.Warn("e-stop received: publishing only the stop action until e_stop_reset", "topic", r.names[TopicEStop])
	}
	r.in.EStop()
}

func (r *rosIO) onEStopReset(*std_msgs.Empty) {
	if r.in.EStopped() {
		r.log.Info("e-stop reset", "topic", r.names[TopicEStopReset])
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
	r.log.Info("memory reset by service", "service", r.names[ServiceResetMemory], "instruction", text)
	return &std_srvs.TriggerRes{Success: true, Message: resetAnswer(text, named)}, true
}

// The reset_memory service's answer names the instruction the new episode
// started with, so that a caller that has just published a new one (the
// simulator node, at each episode) can tell whether the policy node had
// received it: the instruction topic and the service are separate
// connections, and the answer may overtake the message.
const resetAnswerPrefix = "memory reset: a new episode started"

// resetAnswer is the reset_memory answer for an episode that started with
// instruction text (named false: none, or an upstream embedding).
func resetAnswer(text string, named bool) string {
	if !named {
		return resetAnswerPrefix
	}
	return resetAnswerPrefix + " with instruction " + strconv.Quote(text)
}

// parseResetAnswer returns the instruction a reset_memory answer names.
func parseResetAnswer(msg string) (text string, named bool) {
	rest, ok := strings.CutPrefix(msg, resetAnswerPrefix+" with instruction ")
	if !ok {
		return "", false
	}
	text, err := strconv.Unquote(rest)
	return text, err == nil
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
		r.log.Warn("proprioception refused", "topic", r.names[TopicProprio], "error", err, "refused_so_far", r.in.proprioBad.Load())
	}
}
