package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/diagnostic_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/rosgraph_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/sensor_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/internal/rostest"
	"github.com/ttmrobot/ttm/vision"
)

// topicPublisher is a publisher on one topic from a node of its own, kept
// by a Supervisor so that it survives roscore restarts; Load is nil while
// the node is not registered.
type topicPublisher struct {
	atomic.Pointer[ros.Publisher]
	sup *ros.Supervisor
}

func newTopicPublisher(t testing.TB, master, node, topic string, msg any, log hclog.Logger) *topicPublisher {
	t.Helper()
	a, err := ros.ParseArgs(node, nil, rostest.Env(map[string]string{"ROS_MASTER_URI": master}))
	if err != nil {
		t.Fatal(err)
	}
	tp := &topicPublisher{}
	tp.sup, err = ros.NewSupervisor(context.Background(), ros.SupervisorConf{Args: a, Logger: log, PollInterval: 200 * time.Millisecond,
		RetryMin: 100 * time.Millisecond, RetryMax: 500 * time.Millisecond,
		Setup: func(n *ros.Node) error {
			p, err := ros.NewPublisher(ros.PublisherConf{Node: n, Topic: topic, Msg: msg})
			if err != nil {
				return err
			}
			tp.Store(p)
			return nil
		},
		Teardown: func() {
			if p := tp.Swap(nil); p != nil {
				p.Close()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func (tp *topicPublisher) close() { tp.sup.Close() }

// testCamera publishes rgb8 sensor_msgs/Image frames with fresh stamps at a
// fixed rate, through a Supervisor so it survives roscore restarts. Pause
// stalls it.
type testCamera struct {
	pub    *topicPublisher
	paused atomic.Bool
	sent   atomic.Uint64
	frames []*vision.Image
	stop   chan struct{}
	done   chan struct{}
}

func startCamera(t testing.TB, master, topic string, height, width int, rate float64, log hclog.Logger) *testCamera {
	t.Helper()
	c := &testCamera{stop: make(chan struct{}), done: make(chan struct{})}
	for i := range 4 {
		c.frames = append(c.frames, SyntheticImage(height, width, 16*i))
	}
	c.pub = newTopicPublisher(t, master, "test_camera", topic, &sensor_msgs.Image{}, log)
	go c.run(time.Duration(float64(time.Second) / rate))
	t.Cleanup(c.close)
	return c
}

func (c *testCamera) run(period time.Duration) {
	defer close(c.done)
	tk := time.NewTicker(period)
	defer tk.Stop()
	for i := 0; ; i++ {
		select {
		case <-c.stop:
			return
		case <-tk.C:
		}
		p := c.pub.Load()
		if p == nil || c.paused.Load() {
			continue
		}
		f := c.frames[i%len(c.frames)]
		p.Write(&sensor_msgs.Image{Header: std_msgs.Header{Seq: uint32(i), Stamp: time.Now(), FrameId: "headcam"},
			Height: f.Height, Width: f.Width, Encoding: f.Encoding, Step: f.Step, Data: f.Data})
		c.sent.Add(1)
	}
}

func (c *testCamera) close() {
	select {
	case <-c.stop:
		return
	default:
	}
	close(c.stop)
	<-c.done
	c.pub.close()
}

// received is one message a watcher got, with its arrival time.
type received[T any] struct {
	at  time.Time
	msg *T
}

// watcher subscribes in Go to the node's action and the diagnostics.
type watcher struct {
	sup     *ros.Supervisor
	mu      sync.Mutex // mu guards actions, diags
	actions []received[std_msgs.Float32MultiArray]
	diags   []received[diagnostic_msgs.DiagnosticArray]
	subs    []*ros.Subscriber
}

func startWatcher(t testing.TB, master, actionTopic string, log hclog.Logger) *watcher {
	t.Helper()
	a, err := ros.ParseArgs("test_watcher", nil, rostest.Env(map[string]string{"ROS_MASTER_URI": master}))
	if err != nil {
		t.Fatal(err)
	}
	w := &watcher{}
	w.sup, err = ros.NewSupervisor(context.Background(), ros.SupervisorConf{Args: a, Logger: log, PollInterval: 200 * time.Millisecond,
		Setup: func(n *ros.Node) error {
			s1, err := ros.NewSubscriber(ros.SubscriberConf{Node: n, Topic: actionTopic, Callback: func(m *std_msgs.Float32MultiArray) {
				w.mu.Lock()
				w.actions = append(w.actions, received[std_msgs.Float32MultiArray]{time.Now(), m})
				w.mu.Unlock()
			}})
			if err != nil {
				return err
			}
			w.subs = append(w.subs, s1)
			s2, err := ros.NewSubscriber(ros.SubscriberConf{Node: n, Topic: "/diagnostics", Callback: func(m *diagnostic_msgs.DiagnosticArray) {
				w.mu.Lock()
				w.diags = append(w.diags, received[diagnostic_msgs.DiagnosticArray]{time.Now(), m})
				w.mu.Unlock()
			}})
			if err != nil {
				return err
			}
			w.subs = append(w.subs, s2)
			return nil
		},
		Teardown: func() {
			for _, s := range w.subs {
				s.Close()
			}
			w.subs = nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.sup.Close)
	return w
}

// actionsSince returns the actions received after t.
func (w *watcher) actionsSince(t time.Time) []received[std_msgs.Float32MultiArray] {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []received[std_msgs.Float32MultiArray]
	for _, a := range w.actions {
		if a.at.After(t) {
			out = append(out, a)
		}
	}
	return out
}

// lastDiagnostics returns the values of the newest diagnostics message from
// the status named name.
func (w *watcher) lastDiagnostics(name string) (map[string]string, *diagnostic_msgs.DiagnosticStatus) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.diags) - 1; i >= 0; i-- {
		for _, s := range w.diags[i].msg.Status {
			if s.Name == name {
				kv := map[string]string{}
				for _, v := range s.Values {
					kv[v.Key] = v.Value
				}
				return kv, &s
			}
		}
	}
	return nil, nil
}

// echoCSV is `rostopic echo -p` output: a header of field names and rows.
type echoCSV struct {
	fields []string
	rows   [][]string
}

func parseEchoCSV(out string) (echoCSV, error) {
	lines := rostest.Lines(out)
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "%time") {
		return echoCSV{}, fmt.Errorf("not rostopic echo -p output: %q", out)
	}
	c := echoCSV{fields: strings.Split(lines[0], ",")}
	for _, l := range lines[1:] {
		row := strings.Split(l, ",")
		if len(row) != len(c.fields) {
			return echoCSV{}, fmt.Errorf("row %q has %d fields, the header %d", l, len(row), len(c.fields))
		}
		c.rows = append(c.rows, row)
	}
	return c, nil
}

// column returns the values of a field as floats; an unparsable value is
// an error.
func (c echoCSV) column(field string) ([]float64, error) {
	k := -1
	for i, f := range c.fields {
		if f == field {
			k = i
		}
	}
	if k < 0 {
		return nil, fmt.Errorf("no field %s in %v", field, c.fields)
	}
	out := make([]float64, len(c.rows))
	for i, r := range c.rows {
		v, err := strconv.ParseFloat(r[k], 64)
		if err != nil {
			return nil, fmt.Errorf("%s row %d: %w", field, i, err)
		}
		out[i] = v
	}
	return out, nil
}

// actionRows returns the action values (field.data0..N) of each row, and
// fails on a NaN or Inf.
func (c echoCSV) actionRows(t testing.TB, n int) [][]float64 {
	t.Helper()
	rows := make([][]float64, len(c.rows))
	for j := range n {
		col, err := c.column(fmt.Sprintf("field.data%d", j))
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range col {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("rostopic echo: action %d value %d is %v", i, j, v)
			}
			rows[i] = append(rows[i], v)
		}
	}
	return rows
}

// echoRate is the rate of rostopic echo -p rows by their receive times (the
// %time column, rospy's clock in ns): the least-squares slope of time over
// message index, so that the jitter of single arrivals (each action goes out
// when its inference ends) does not weigh as it would in (last - first).
func (c echoCSV) echoRate() (float64, error) {
	ts, err := c.column("%time")
	if err != nil {
		return 0, err
	}
	return slopeRate(ts)
}

// slopeRate fits t_i = a + b*i (t in ns) and returns 1/b in Hz.
func slopeRate(ts []float64) (float64, error) {
	n := float64(len(ts))
	if len(ts) < 3 {
		return 0, fmt.Errorf("%d samples", len(ts))
	}
	var si, st, sii, sit float64
	for i, v := range ts {
		x, y := float64(i), (v-ts[0])/1e9
		si, st, sii, sit = si+x, st+y, sii+x*x, sit+x*y
	}
	b := (n*sit - si*st) / (n*sii - si*si)
	if !(b > 0) {
		return 0, fmt.Errorf("times do not increase")
	}
	return 1 / b, nil
}

// testClock publishes rosgraph_msgs/Clock: the time set last (set), at
// once and again every 20 ms of wall time, so that a subscriber that
// connects late gets it too. It publishes nothing until the first set;
// ROS time moves only when the test sets it.
type testClock struct {
	pub  *topicPublisher
	now  atomic.Int64  // Unix nanoseconds to publish; 0: nothing yet
	sent atomic.Uint64 // messages published
	set1 chan struct{} // set's wake-up of the publishing goroutine
	stop chan struct{}
	done chan struct{}
}

// set makes t the time the clock publishes, from now on.
func (c *testClock) set(t time.Time) {
	c.now.Store(t.UnixNano())
	select {
	case c.set1 <- struct{}{}:
	default:
	}
}

// waitSent waits until the clock has published n more messages.
func (c *testClock) waitSent(t testing.TB, n uint64) {
	t.Helper()
	target := c.sent.Load() + n
	rostest.WaitFor(t, 10*time.Second, fmt.Sprintf("%d /clock messages", n), func() error {
		if c.sent.Load() < target {
			return errors.New("not yet published")
		}
		return nil
	})
}

func startClock(t testing.TB, master string, log hclog.Logger) *testClock {
	t.Helper()
	c := &testClock{set1: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	c.pub = newTopicPublisher(t, master, "test_clock", "/clock", &rosgraph_msgs.Clock{}, log)
	go func() {
		defer close(c.done)
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-tk.C:
			case <-c.set1:
			}
			now := c.now.Load()
			if p := c.pub.Load(); p != nil && now != 0 {
				p.Write(&rosgraph_msgs.Clock{Clock: time.Unix(0, now)})
				c.sent.Add(1)
			}
		}
	}()
	t.Cleanup(func() {
		close(c.stop)
		<-c.done
		c.pub.close()
	})
	return c
}

// startProprio publishes a fixed std_msgs/Float32MultiArray reading (the
// action.ArmProprio layout) on topic at rate, for a policy that reads
// proprioception; it stops with the test.
func startProprio(t testing.TB, master, topic string, reading []float32, rate float64, log hclog.Logger) {
	t.Helper()
	pub := newTopicPublisher(t, master, "test_proprio", topic, &std_msgs.Float32MultiArray{}, log)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			if p := pub.Load(); p != nil {
				p.Write(&std_msgs.Float32MultiArray{Layout: std_msgs.MultiArrayLayout{Dim: []std_msgs.MultiArrayDimension{{Label: strings.Join(action.ArmProprio, ";"), Size: uint32(len(reading)), Stride: uint32(len(reading))}}}, Data: reading})
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		pub.close()
	})
}
