package simnode

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/sensor_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_srvs"
	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/sim"
)

// episodeInstruction is the instruction of task's episode of seed.
func episodeInstruction(t *testing.T, task *sim.Task, seed uint64) string {
	t.Helper()
	ep, err := sim.NewEpisode(task, seed, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	return ep.Instruction()
}

// fakePolicy stands in for the policy node with the part of its ROS
// interface the simulator node uses: a new instruction starts a new episode
// (the node's ~reset_on_instruction), reset_memory starts one with the
// instruction received last and answers as the node does (ros.ResetAnswer),
// and once a frame has come it publishes an arm action at 10 Hz.
type fakePolicy struct {
	sup   *ros.Supervisor
	frame atomic.Bool
	pub   atomic.Pointer[ros.Publisher]

	mu      sync.Mutex // mu guards instr and episode
	instr   string     // the last instruction received
	episode string     // the instruction the current episode started with

	// Owned by the supervisor goroutine.
	subs []*ros.Subscriber
	srv  *ros.ServiceProvider

	stop, done chan struct{}
}

func startFakePolicy(t *testing.T, a *ros.Args, log hclog.Logger) *fakePolicy {
	t.Helper()
	names, err := a.ResolveNames([]string{ros.TopicImage, ros.TopicInstruction, ros.TopicAction, ros.ServiceResetMemory})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePolicy{stop: make(chan struct{}), done: make(chan struct{})}
	setup := func(n *ros.Node) error {
		pub, err := ros.NewPublisher(ros.PublisherConf{Node: n, Topic: names[ros.TopicAction], Msg: &std_msgs.Float32MultiArray{}})
		if err != nil {
			return err
		}
		f.pub.Store(pub)
		for _, sc := range []struct {
			name string
			cb   any
		}{
			{ros.TopicImage, func(*sensor_msgs.Image) { f.frame.Store(true) }},
			{ros.TopicInstruction, func(m *std_msgs.String) {
				f.mu.Lock()
				if m.Data != f.instr {
					f.instr, f.episode = m.Data, m.Data
				}
				f.mu.Unlock()
			}},
		} {
			s, err := ros.NewSubscriber(ros.SubscriberConf{Node: n, Topic: names[sc.name], Callback: sc.cb})
			if err != nil {
				return err
			}
			f.subs = append(f.subs, s)
		}
		f.srv, err = ros.NewServiceProvider(ros.ServiceProviderConf{Node: n, Name: names[ros.ServiceResetMemory], Srv: &std_srvs.Trigger{},
			Callback: func(*std_srvs.TriggerReq) (*std_srvs.TriggerRes, bool) {
				f.mu.Lock()
				defer f.mu.Unlock()
				f.episode = f.instr
				return &std_srvs.TriggerRes{Success: true, Message: ros.ResetAnswer(f.instr, f.instr != "")}, true
			}})
		return err
	}
	teardown := func() {
		if p := f.pub.Swap(nil); p != nil {
			p.Close()
		}
		for _, s := range f.subs {
			s.Close()
		}
		f.subs = nil
		if f.srv != nil {
			f.srv.Close()
			f.srv = nil
		}
	}
	f.sup, err = ros.NewSupervisor(t.Context(), ros.SupervisorConf{Args: a, Setup: setup, Teardown: teardown, Logger: log, PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go f.act()
	t.Cleanup(func() {
		close(f.stop)
		<-f.done
		f.sup.Close()
	})
	return f
}

// act publishes an arm action every 100 ms once a frame has come.
func (f *fakePolicy) act() {
	defer close(f.done)
	space := action.RT1()
	layout := ros.LabelledLayout(ros.ActionLabel(space), space.Len())
	tk := time.NewTicker(100 * time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tk.C:
		}
		if p := f.pub.Load(); p != nil && f.frame.Load() {
			p.Write(&std_msgs.Float32MultiArray{Layout: layout, Data: []float32{1, 0.5, 0, 0, 0, 0, 0, -1, 0, 0, 0}})
		}
	}
}

// episodeInstruction returns the instruction the current episode started
// with, and whether there is one.
func (f *fakePolicy) episodeInstruction() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.episode, f.episode != ""
}
