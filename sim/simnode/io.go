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
	"github.com/ttmrobot/ttm/internal/ros"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/sensor_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_srvs"
	"github.com/hashicorp/go-hclog"
)

// simIO connects the simulator to ROS: the headcam, proprioception and
// instruction publishers, the action and episode_done subscribers and the
// reset_memory client. It outlives goroslib nodes: the Supervisor runs
// setup and teardown on every (re)creation, and publishing while no node
// exists is skipped.
type simIO struct {
	names map[string]string // default name -> resolved
	reset bool              // call the reset service at each episode start
	queue *actionQueue
	log   hclog.Logger

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
	image, instruction, proprio *ros.Publisher
}

// The simulator node's names, by default name: it publishes the headcam,
// the robot's proprioception and the instruction, subscribes to the policy's action and episode_done
// and calls the policy node's reset_memory service.
var simNames = []string{ros.TopicImage, ros.TopicProprio, ros.TopicInstruction, ros.TopicAction, ros.TopicEpisodeDone, ros.ServiceResetMemory}

func (s *simIO) setup(n *ros.Node) error {
	p := &simPublishers{}
	s.created = p
	var err error
	// Latched: a policy node that connects late (or again) gets the current
	// frame at once instead of after the action timeout.
	p.image, err = ros.NewPublisher(ros.PublisherConf{Node: n, Topic: s.names[ros.TopicImage], Msg: &sensor_msgs.Image{}, Latch: true})
	if err != nil {
		return fmt.Errorf("publish %s: %w", s.names[ros.TopicImage], err)
	}
	p.proprio, err = ros.NewPublisher(ros.PublisherConf{Node: n, Topic: s.names[ros.TopicProprio], Msg: &std_msgs.Float32MultiArray{}, Latch: true})
	if err != nil {
		return fmt.Errorf("publish %s: %w", s.names[ros.TopicProprio], err)
	}
	p.instruction, err = ros.NewPublisher(ros.PublisherConf{Node: n, Topic: s.names[ros.TopicInstruction], Msg: &std_msgs.String{}, Latch: true})
	if err != nil {
		return fmt.Errorf("publish %s: %w", s.names[ros.TopicInstruction], err)
	}
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
	if p := s.created; p != nil {
		for _, pub := range []*ros.Publisher{p.image, p.proprio, p.instruction} {
			if pub != nil {
				pub.Close()
			}
		}
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

// publishFrame sends the robot's proprioception (action.ArmProprio's
// layout, labelled) and then an rgb8 frame of h x w stamped now (copies:
// goroslib encodes messages later, on its own goroutines), so that a
// policy node has the reading when the frame arrives. It reports false when
// no node is registered.
func (s *simIO) publishFrame(img []byte, proprio []float32, h, w int, seq uint32) bool {
	p := s.pubs.Load()
	if p == nil {
		return false
	}
	p.proprio.Write(&std_msgs.Float32MultiArray{
		Layout: ros.LabelledLayout(strings.Join(action.ArmProprio, ";"), len(proprio)),
		Data:   slices.Clone(proprio),
	})
	p.image.Write(&sensor_msgs.Image{
		Header: std_msgs.Header{Seq: seq, Stamp: time.Now(), FrameId: "headcam"},
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
