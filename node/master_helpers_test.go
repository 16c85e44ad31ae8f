package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/goroslib/v2"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_srvs"
	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/internal/rostest"
)

// logBuffer collects a JSON hclog log; tests look entries up by message.
type logBuffer struct {
	mu sync.Mutex // mu guards b
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// entries returns the log entries whose message starts with msg.
func (l *logBuffer) entries(msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(l.String(), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		if m, _ := e["@message"].(string); strings.HasPrefix(m, msg) {
			out = append(out, e)
		}
	}
	return out
}

// newTestLogger returns a debug-level JSON logger into a buffer that is
// printed when the test fails.
func newTestLogger(t *testing.T) (hclog.Logger, *logBuffer) {
	buf := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("supervisor log:\n%s", buf.String())
		}
	})
	return hclog.New(&hclog.LoggerOptions{Name: "test", Output: buf, JSONFormat: true, Level: hclog.Debug}), buf
}

// argsFor parses a command line for a node talking to m (through
// ROS_MASTER_URI, as roslaunch would pass it).
func argsFor(t *testing.T, m *rostest.Master, name string, args ...string) *Args {
	t.Helper()
	a, err := ParseArgs(name, args, envOf(map[string]string{"ROS_MASTER_URI": m.URI}))
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
	pub      atomic.Pointer[goroslib.Publisher]
	status   *goroslib.Publisher
	sub      *goroslib.Subscriber
	srv      *goroslib.ServiceProvider
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

func (c *chatterNode) setup(n *goroslib.Node) error {
	names := map[string]string{}
	for _, name := range []string{"chatter", "~status", "cmd", "reset"} {
		r, err := c.resolve(name)
		if err != nil {
			return err
		}
		names[name] = r
	}
	pub, err := goroslib.NewPublisher(goroslib.PublisherConf{Node: n, Topic: names["chatter"], Msg: &std_msgs.String{}})
	if err != nil {
		return err
	}
	c.pub.Store(pub)
	c.status, err = goroslib.NewPublisher(goroslib.PublisherConf{Node: n, Topic: names["~status"], Msg: &std_msgs.String{}, Latch: true})
	if err != nil {
		return err
	}
	c.status.Write(&std_msgs.String{Data: "ready"})
	c.sub, err = goroslib.NewSubscriber(goroslib.SubscriberConf{Node: n, Topic: names["cmd"], Callback: func(m *std_msgs.String) {
		select {
		case c.received <- m.Data:
		default:
		}
	}})
	if err != nil {
		return err
	}
	c.srv, err = goroslib.NewServiceProvider(goroslib.ServiceProviderConf{Node: n, Name: names["reset"], Srv: &std_srvs.Trigger{},
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

// checkNoGoroutineLeak waits until the goroutine count is back to baseline
// and fails with the stacks of the extra goroutines otherwise.
//
// goroslib calls the master through http.DefaultTransport, and rosmaster
// answers HTTP/1.1 with keep-alive, so one idle connection (two goroutines)
// stays in that process-wide pool after the node closes, until the master
// closes it or 90 s pass. The pool is not the node's; it is emptied first.
func checkNoGoroutineLeak(t *testing.T, baseline int) {
	t.Helper()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			var b bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), baseline, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// requireOK fails the test on any failed command.
func requireOK(t *testing.T, res []rostest.Result) {
	t.Helper()
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
}
