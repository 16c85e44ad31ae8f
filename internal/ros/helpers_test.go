package ros

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_srvs"

	"github.com/ttmrobot/ttm/internal/rostest"
)

// argsFor parses a command line for a node talking to m (through
// ROS_MASTER_URI, as roslaunch would pass it).
func argsFor(t *testing.T, m *rostest.Master, name string, args ...string) *Args {
	t.Helper()
	a, err := ParseArgs(name, args, rostest.Env(map[string]string{"ROS_MASTER_URI": m.URI}))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// chatterNode is what a real node's Setup does: a publisher fed by a loop
// that outlives node re-creation, a latched private status topic, a
// subscriber and a service, all under names resolved by ROS rules.
type chatterNode struct {
	resolve  func(string) (string, error)
	pub      atomic.Pointer[Publisher]
	status   *Publisher
	sub      *Subscriber
	srv      *ServiceProvider
	received chan string
	stop     chan struct{}
	done     chan struct{}
}

func newChatterNode(a *Args) *chatterNode {
	c := &chatterNode{resolve: a.Resolve, received: make(chan string, 16), stop: make(chan struct{}), done: make(chan struct{})}
	go c.publishLoop()
	return c
}

// publishLoop writes a counter to the current publisher at 20 Hz; while the
// node is being re-created there is none and messages are skipped.
func (c *chatterNode) publishLoop() {
	defer close(c.done)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if p := c.pub.Load(); p != nil {
			p.Write(&std_msgs.String{Data: fmt.Sprintf("hello %d", i)})
		}
	}
}

func (c *chatterNode) close() {
	close(c.stop)
	<-c.done
}

func (c *chatterNode) setup(n *Node) error {
	names := map[string]string{}
	for _, name := range []string{"chatter", "~status", "cmd", "reset"} {
		r, err := c.resolve(name)
		if err != nil {
			return err
		}
		names[name] = r
	}
	pub, err := NewPublisher(PublisherConf{Node: n, Topic: names["chatter"], Msg: &std_msgs.String{}})
	if err != nil {
		return err
	}
	c.pub.Store(pub)
	c.status, err = NewPublisher(PublisherConf{Node: n, Topic: names["~status"], Msg: &std_msgs.String{}, Latch: true})
	if err != nil {
		return err
	}
	c.status.Write(&std_msgs.String{Data: "ready"})
	c.sub, err = NewSubscriber(SubscriberConf{Node: n, Topic: names["cmd"], Callback: func(m *std_msgs.String) {
		select {
		case c.received <- m.Data:
		default:
		}
	}})
	if err != nil {
		return err
	}
	c.srv, err = NewServiceProvider(ServiceProviderConf{Node: n, Name: names["reset"], Srv: &std_srvs.Trigger{},
		Callback: func(*std_srvs.TriggerReq) (*std_srvs.TriggerRes, bool) {
			return &std_srvs.TriggerRes{Success: true, Message: "reset done"}, true
		}})
	return err
}

func (c *chatterNode) teardown() {
	if p := c.pub.Swap(nil); p != nil {
		p.Close()
	}
	if c.status != nil {
		c.status.Close()
		c.status = nil
	}
	if c.sub != nil {
		c.sub.Close()
		c.sub = nil
	}
	if c.srv != nil {
		c.srv.Close()
		c.srv = nil
	}
}

// waitConnected waits until the supervisor reports a set-up node of at
// least the given generation.
func waitConnected(t *testing.T, s *Supervisor, generation int, timeout time.Duration) {
	t.Helper()
	rostest.WaitFor(t, timeout, fmt.Sprintf("node generation %d", generation), func() error {
		if st := s.Status(); !st.Connected || st.Generation < generation {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
}
