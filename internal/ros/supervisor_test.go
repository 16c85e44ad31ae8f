package ros

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"

	"github.com/ttmrobot/ttm/internal/rostest"
)

// TestWithMaster runs the checks that can share one real roscore.
func TestWithMaster(t *testing.T) {
	m := rostest.StartMaster(t)
	t.Run("Conventions", func(t *testing.T) { testConventions(t, m) })
	t.Run("KilledNodeStops", func(t *testing.T) { testKilledNodeStops(t, m) })
	t.Run("NameTakenStops", func(t *testing.T) { testNameTakenStops(t, m) })
	t.Run("SetupErrorIsPermanent", func(t *testing.T) { testSetupErrorIsPermanent(t, m) })
	t.Run("Params", func(t *testing.T) { testParams(t, m) }) // last: sets /use_sim_time
}

// testConventions starts a node the way roslaunch would and checks with the
// ROS tools that name, namespace, remap and private parameters land where
// ROS says they should.
func testConventions(t *testing.T, m *rostest.Master) {
	log, logs := rostest.Logger(t)
	a := argsFor(t, m, "default_name", "--policy", "X", "__name:=ttm_test", "__ns:=/robot",
		"chatter:=/remapped", "_rate:=7.5", "_gains:=[1, 2.5]", "_mode:=fast", "__log:=/tmp/x.log")
	if !reflect.DeepEqual(a.Rest, []string{"--policy", "X"}) {
		t.Fatalf("Rest = %q", a.Rest)
	}
	// goroslib lets ROS_NAMESPACE override its configured namespace; __ns:=
	// must still win, as in rospy and roscpp.
	t.Setenv("ROS_NAMESPACE", "/elsewhere")
	c := newChatterNode(a)
	defer c.close()
	s, err := NewSupervisor(context.Background(), SupervisorConf{Args: a, Setup: c.setup, Teardown: c.teardown, Logger: log, PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitConnected(t, s, 1, 10*time.Second)

	res := m.RunParallel(rostest.ToolTimeout,
		[]string{"rosnode", "list"},
		[]string{"rostopic", "list"},
		[]string{"rosparam", "get", "/robot/ttm_test/rate"},
		[]string{"rosparam", "get", "/robot/ttm_test/gains"},
		[]string{"rosparam", "get", "/robot/ttm_test/mode"},
		[]string{"rosservice", "call", "/robot/reset"},
		[]string{"rostopic", "echo", "-n", "1", "/remapped"},
		[]string{"rostopic", "echo", "-n", "1", "/robot/ttm_test/status"},
		[]string{"rostopic", "pub", "-1", "/robot/cmd", "std_msgs/String", "data: go"},
	)
	rostest.RequireOK(t, res)
	if !rostest.Contains(res[0].Out, "/robot/ttm_test") {
		t.Errorf("rosnode list = %q, want /robot/ttm_test", res[0].Out)
	}
	for _, topic := range []string{"/remapped", "/robot/ttm_test/status", "/robot/cmd"} {
		if !rostest.Contains(res[1].Out, topic) {
			t.Errorf("rostopic list = %q, want %s", res[1].Out, topic)
		}
	}
	for _, topic := range []string{"/robot/chatter", "/chatter"} {
		if rostest.Contains(res[1].Out, topic) {
			t.Errorf("rostopic list = %q: %s should have been remapped away", res[1].Out, topic)
		}
	}
	for i, want := range []string{"7.5", "- 1\n- 2.5", "fast"} { // rosparam prints YAML
		if got := strings.TrimSpace(res[2+i].Out); got != want {
			t.Errorf("%v = %q, want %q", res[2+i].Cmd, got, want)
		}
	}
	if !strings.Contains(res[5].Out, "reset done") {
		t.Errorf("rosservice call /robot/reset = %q, want the node's answer", res[5].Out)
	}
	if !strings.Contains(res[6].Out, `data: "hello`) {
		t.Errorf("rostopic echo /remapped = %q, want a chatter message", res[6].Out)
	}
	if !strings.Contains(res[7].Out, `data: "ready"`) {
		t.Errorf("rostopic echo latched status = %q, want ready", res[7].Out)
	}
	select {
	case got := <-c.received:
		if got != "go" {
			t.Errorf("subscriber on cmd received %q, want go", got)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("subscriber on /robot/cmd received nothing from rostopic pub")
	}

	// A second reader with no command-line override sees the server value.
	p := NewParams(argsFor(t, m, "ttm_test", "__ns:=/robot"), 0)
	key, v, src, found, err := p.Lookup(context.Background(), "~rate")
	if err != nil || !found || key != "/robot/ttm_test/rate" || v != 7.5 || src != SourceServer {
		t.Errorf("Lookup(~rate) = %q, %v, %v, %v, %v; want /robot/ttm_test/rate 7.5 from the server", key, v, src, found, err)
	}
	if len(logs.Entries("node registered")) != 1 {
		t.Errorf("want one \"node registered\" log entry")
	}
}

// testKilledNodeStops: `rosnode kill` shuts a ROS node down; the supervisor
// must stop with ErrNodeShutdown rather than re-register.
func testKilledNodeStops(t *testing.T, m *rostest.Master) {
	log, logs := rostest.Logger(t)
	a := argsFor(t, m, "ttm_kill")
	s, err := NewSupervisor(context.Background(), SupervisorConf{Args: a, Setup: func(*Node) error { return nil }, Logger: log, PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitConnected(t, s, 1, 10*time.Second)
	m.MustRun(rostest.ToolTimeout, "rosnode", "kill", "/ttm_kill")
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("supervisor still running after rosnode kill; status %+v", s.Status())
	}
	if err := s.Err(); !errors.Is(err, ErrNodeShutdown) {
		t.Fatalf("Err = %v, want ErrNodeShutdown", err)
	}
	if len(logs.Entries("got shutdown request")) == 0 {
		t.Errorf("goroslib's shutdown request was not logged")
	}
	if st := s.Status(); st.Connected || st.Generation != 1 {
		t.Errorf("status after kill = %+v, want disconnected after one generation", st)
	}
}

// testNameTakenStops: when another node registers under the same name, ROS
// tells the old one to exit; the old supervisor stops instead of fighting.
func testNameTakenStops(t *testing.T, m *rostest.Master) {
	log, _ := rostest.Logger(t)
	noop := func(*Node) error { return nil }
	first, err := NewSupervisor(context.Background(), SupervisorConf{Args: argsFor(t, m, "twin"), Setup: noop, Logger: log.Named("first"), PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	waitConnected(t, first, 1, 10*time.Second)
	second, err := NewSupervisor(context.Background(), SupervisorConf{Args: argsFor(t, m, "twin"), Setup: noop, Logger: log.Named("second"), PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	waitConnected(t, second, 1, 10*time.Second)
	select {
	case <-first.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("first supervisor still running after its name was taken")
	}
	if err := first.Err(); !errors.Is(err, ErrNodeShutdown) {
		t.Fatalf("first.Err = %v, want ErrNodeShutdown", err)
	}
	time.Sleep(300 * time.Millisecond) // three polls: the survivor stays put
	if st := second.Status(); !st.Connected || st.Generation != 1 {
		t.Fatalf("second supervisor status %+v, want connected, generation 1", st)
	}
}

func testSetupErrorIsPermanent(t *testing.T, m *rostest.Master) {
	log, _ := rostest.Logger(t)
	calls, teardowns := 0, 0
	s, err := NewSupervisor(context.Background(), SupervisorConf{
		Args:     argsFor(t, m, "ttm_bad_setup"),
		Setup:    func(*Node) error { calls++; return errors.New("no such message type") },
		Teardown: func() { teardowns++ },
		Logger:   log, RetryMin: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("supervisor still retrying a setup that cannot succeed")
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "setup: no such message type") {
		t.Fatalf("Err = %v, want the setup error", err)
	}
	if calls != 1 || teardowns != 1 {
		t.Fatalf("setup ran %d times, teardown %d times; want 1 and 1", calls, teardowns)
	}
}

// testParams loads parameters of every type with rosparam and reads them
// back through Params' typed getters.
func testParams(t *testing.T, m *rostest.Master) {
	yaml := filepath.Join(t.TempDir(), "params.yaml")
	err := os.WriteFile(yaml, []byte(`use_sim_time: true
robot:
  ptest:
    f: 2.5
    i: 4
    b: true
    s: hello
    list: [1, 2.5, 3]
    names: [a, b]
    mixed: [1, x]
    override: 1
    tree: {kp: 1.5, enabled: false}
  shared: 12
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	m.MustRun(rostest.ToolTimeout, "rosparam", "load", yaml, "/")
	a := argsFor(t, m, "ptest", "__ns:=/robot", "_override:=3", "_cl_bad:=abc", "alias:=~i")
	p := NewParams(a, 0)
	ctx := context.Background()

	check := func(name string, got, want any, err error) {
		t.Helper()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, %v; want %#v", name, got, err, want)
		}
	}
	f, err := p.Float64(ctx, "~f", 0)
	check("Float64(~f)", f, 2.5, err)
	f, err = p.Float64(ctx, "~i", 0)
	check("Float64(~i), an int", f, 4.0, err)
	i, err := p.Int(ctx, "~i", 0)
	check("Int(~i)", i, 4, err)
	i, err = p.Int(ctx, "shared", 0) // relative: /robot/shared
	check("Int(shared)", i, 12, err)
	i, err = p.Int(ctx, "alias", 0) // remapped to ~i
	check("Int(alias)", i, 4, err)
	i, err = p.Int(ctx, "~override", 0) // the command line wins over the server
	check("Int(~override)", i, 3, err)
	b, err := p.Bool(ctx, "~b", false)
	check("Bool(~b)", b, true, err)
	s, err := p.String(ctx, "~s", "")
	check("String(~s)", s, "hello", err)
	l, err := p.Float64s(ctx, "~list", nil)
	check("Float64s(~list)", l, []float64{1, 2.5, 3}, err)
	n, err := p.Strings(ctx, "~names", nil)
	check("Strings(~names)", n, []string{"a", "b"}, err)
	f, err = p.Float64(ctx, "~missing", 9.5)
	check("Float64(~missing) default", f, 9.5, err)
	sim, err := p.UseSimTime(ctx)
	check("UseSimTime", sim, true, err)
	_, v, src, found, err := p.Lookup(ctx, "~tree")
	check("Lookup(~tree)", v, map[string]any{"kp": 1.5, "enabled": false}, err)
	if !found || src != SourceServer {
		t.Errorf("Lookup(~tree) found=%v source=%v", found, src)
	}

	for _, tc := range []struct {
		get     func() error
		wantErr string
	}{
		{func() error { _, err := p.Int(ctx, "~f", 0); return err }, "parameter /robot/ptest/f (from the parameter server): want int, got float 2.5"},
		{func() error { _, err := p.Bool(ctx, "~i", false); return err }, "want bool, got int 4"},
		{func() error { _, err := p.Float64s(ctx, "~mixed", nil); return err }, "want list of floats, got list [1 x]"},
		{func() error { _, err := p.String(ctx, "~list", ""); return err }, "want string, got list"},
		{func() error { _, err := p.Int(ctx, "~cl_bad", 0); return err }, `parameter /robot/ptest/cl_bad (from the command line): want int, got string "abc"`},
		{func() error { _, err := p.Int(ctx, "bad name", 0); return err }, `parameter "bad name"`},
	} {
		err := tc.get()
		var te *ParamTypeError
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("error = %v, want one containing %q", err, tc.wantErr)
		} else if !strings.Contains(tc.wantErr, "bad name") && !errors.As(err, &te) {
			t.Errorf("error %v is not a *ParamTypeError", err)
		}
	}

	dead := NewParams(argsFor(t, m, "ptest", "__master:=http://127.0.0.1:1/"), time.Second)
	if _, err := dead.Float64(ctx, "~f", 0); err == nil || !strings.Contains(err.Error(), "get parameter /ptest/f") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("Float64 with no master = %v, want an error naming the key and the master", err)
	}
}

// TestSupervisorReRegistersAfterMasterRestart kills roscore under a running
// node and starts it again on the same port: the publisher's topic must
// reappear and carry messages again, the private parameter must be back,
// and the log must say what happened.
func TestSupervisorReRegistersAfterMasterRestart(t *testing.T) {
	m := rostest.StartMaster(t)
	baseline := runtime.NumGoroutine()
	log, logs := rostest.Logger(t)
	a := argsFor(t, m, "ttm_restart", "_rate:=7.5")
	c := newChatterNode(a)
	s, err := NewSupervisor(context.Background(), SupervisorConf{
		Args: a, Setup: c.setup, Teardown: c.teardown, Logger: log,
		PollInterval: 200 * time.Millisecond, RetryMin: 100 * time.Millisecond, RetryMax: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	waitConnected(t, s, 1, 10*time.Second)
	res := m.RunParallel(rostest.ToolTimeout, []string{"rostopic", "list"}, []string{"rostopic", "echo", "-n", "1", "/chatter"})
	rostest.RequireOK(t, res)
	if !rostest.Contains(res[0].Out, "/chatter") || !strings.Contains(res[1].Out, `data: "hello`) {
		t.Fatalf("before the restart: rostopic list = %q, echo = %q", res[0].Out, res[1].Out)
	}
	pid1 := s.Status().MasterPID

	m.Restart()
	ready := time.Now()
	waitConnected(t, s, 2, 15*time.Second)
	t.Logf("node re-registered %v after the new roscore was ready (poll interval 200 ms)", time.Since(ready).Round(time.Millisecond))
	res = m.RunParallel(rostest.ToolTimeout,
		[]string{"rostopic", "list"},
		[]string{"rostopic", "echo", "-n", "1", "/chatter"},
		[]string{"rosparam", "get", "/ttm_restart/rate"},
		[]string{"rosnode", "list"},
	)
	rostest.RequireOK(t, res)
	if !rostest.Contains(res[0].Out, "/chatter") || !rostest.Contains(res[0].Out, "/ttm_restart/status") {
		t.Errorf("after the restart: rostopic list = %q, want /chatter and /ttm_restart/status", res[0].Out)
	}
	if !strings.Contains(res[1].Out, `data: "hello`) {
		t.Errorf("after the restart: rostopic echo /chatter = %q", res[1].Out)
	}
	if got := strings.TrimSpace(res[2].Out); got != "7.5" {
		t.Errorf("after the restart: rosparam get /ttm_restart/rate = %q, want 7.5", got)
	}
	if !rostest.Contains(res[3].Out, "/ttm_restart") {
		t.Errorf("after the restart: rosnode list = %q", res[3].Out)
	}

	st := s.Status()
	if st.MasterPID == pid1 || st.Generation != 2 {
		t.Errorf("status %+v: want generation 2 with a new master pid (old %d)", st, pid1)
	}
	restarted := logs.Entries("ROS master restarted")
	if len(restarted) != 1 {
		t.Fatalf("%d \"ROS master restarted\" log entries, want 1", len(restarted))
	}
	if old, _ := restarted[0]["old_pid"].(float64); int(old) != pid1 {
		t.Errorf("restart log old_pid = %v, want %d", restarted[0]["old_pid"], pid1)
	}
	if nw, _ := restarted[0]["new_pid"].(float64); int(nw) != st.MasterPID {
		t.Errorf("restart log new_pid = %v, want %d", restarted[0]["new_pid"], st.MasterPID)
	}
	if len(logs.Entries("ROS master unreachable")) != 1 {
		t.Errorf("want one \"ROS master unreachable\" entry while roscore was down")
	}
	if reg := logs.Entries("node registered"); len(reg) != 2 || reg[1]["generation"] != 2.0 {
		t.Errorf("\"node registered\" entries = %v, want generations 1 and 2", reg)
	}

	s.Close()
	c.close()
	if err := s.Err(); err != nil {
		t.Errorf("Err after Close = %v, want nil", err)
	}
	rostest.CheckNoGoroutineLeak(t, baseline)
}

// TestSupervisorWaitsForMaster: like rospy and roscpp, the node waits for a
// master that is not up yet, and registers as soon as it is.
func TestSupervisorWaitsForMaster(t *testing.T) {
	m := rostest.NewMaster(t) // port chosen, roscore not running
	baseline := runtime.NumGoroutine()
	log, logs := rostest.Logger(t)
	a := argsFor(t, m, "ttm_early", "chatter:=/early")
	c := newChatterNode(a)
	s, err := NewSupervisor(context.Background(), SupervisorConf{
		Args: a, Setup: c.setup, Teardown: c.teardown, Logger: log,
		PollInterval: 200 * time.Millisecond, RetryMin: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	rostest.WaitFor(t, 5*time.Second, "a \"waiting for the ROS master\" log entry", func() error {
		if len(logs.Entries("waiting for the ROS master")) == 0 {
			return errors.New("not logged yet")
		}
		return nil
	})
	if st := s.Status(); st.Connected || st.Generation != 0 {
		t.Fatalf("status %+v with no master", st)
	}
	m.Start()
	ready := time.Now()
	waitConnected(t, s, 1, 10*time.Second)
	t.Logf("node registered %v after roscore was ready (retry backoff 50..200 ms)", time.Since(ready).Round(time.Millisecond))
	if out := m.MustRun(rostest.ToolTimeout, "rostopic", "list"); !rostest.Contains(out, "/early") {
		t.Errorf("rostopic list = %q, want /early", out)
	}
	reg := logs.Entries("node registered")
	if len(reg) != 1 || reg[0]["attempts"].(float64) < 2 {
		t.Errorf("\"node registered\" entries = %v, want one after several attempts", reg)
	}
	s.Close()
	c.close()
	rostest.CheckNoGoroutineLeak(t, baseline)
}

// TestSupervisorCloseWhileWaiting: Close returns promptly while the master
// is absent and leaves no goroutine behind; so does cancelling the context.
func TestSupervisorCloseWhileWaiting(t *testing.T) {
	a, err := ParseArgs("ttm_lonely", []string{"__master:=http://127.0.0.1:1/"}, rostest.Env(nil))
	if err != nil {
		t.Fatal(err)
	}
	baseline := runtime.NumGoroutine()
	for _, viaContext := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := NewSupervisor(ctx, SupervisorConf{Args: a, Setup: func(*Node) error { return nil }, RetryMin: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		if viaContext {
			cancel()
			<-s.Done()
		} else {
			s.Close()
		}
		cancel()
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("stopping took %v while waiting for the master", d)
		}
		if s.Err() != nil || s.Status().Generation != 0 {
			t.Errorf("Err = %v, status %+v; want nil and no node", s.Err(), s.Status())
		}
	}
	rostest.CheckNoGoroutineLeak(t, baseline)
}

func TestNewSupervisorConfErrors(t *testing.T) {
	a, err := ParseArgs("n", nil, rostest.Env(nil))
	if err != nil {
		t.Fatal(err)
	}
	setup := func(*Node) error { return nil }
	for _, tc := range []struct {
		conf    SupervisorConf
		wantErr string
	}{
		{SupervisorConf{Setup: setup}, "Args is nil"},
		{SupervisorConf{Args: a}, "Setup is nil"},
		{SupervisorConf{Args: a, Setup: setup, RetryMin: time.Second, RetryMax: time.Millisecond}, "RetryMax"},
		{SupervisorConf{Args: a, Setup: setup, Inputs: map[string]string{"/a": "std_msgs/Empty"}}, "OnWrongType"},
	} {
		if _, err := NewSupervisor(context.Background(), tc.conf); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("NewSupervisor = %v, want error containing %q", err, tc.wantErr)
		}
	}
}

// goroslib matches os.Args remaps literally; the supervisor refuses the two
// cases where that departs from ROS.
func TestCheckGoroslibRemaps(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"chatter:=/remapped", "_rate:=1", "__name:=n"}, ""},
		{[]string{"/a:=/b", "/c:=/d"}, ""},
		{[]string{"/a:=/b", "/b:=/c"}, "remap chain"},
		{[]string{"a:=b", "/b:=/c"}, "remap chain"},
		{[]string{"n:=/x"}, `rename the node "n"`},
	} {
		a, err := ParseArgs("n", tc.args, rostest.Env(nil))
		if err != nil {
			t.Fatal(err)
		}
		err = checkGoroslibRemaps(tc.args, a)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("checkGoroslibRemaps(%q) = %v, want %q", tc.args, err, tc.wantErr)
		}
	}
}

// TestPublisherGoneIsNotAnError: when a publisher ends (rostopic pub -1
// exits), goroslib reports its closed connection to our subscriber as an
// error; the supervisor logs it as the ordinary event it is, naming the
// topic, and nothing at error level.
func TestPublisherGoneIsNotAnError(t *testing.T) {
	m := rostest.StartMaster(t)
	log, logs := rostest.Logger(t)
	got := make(chan string, 4)
	var sub *Subscriber
	s, err := NewSupervisor(context.Background(), SupervisorConf{
		Args: argsFor(t, m, "ttm_gone"), Logger: log,
		PollInterval: 200 * time.Millisecond, RetryMin: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond,
		Setup: func(n *Node) error {
			var err error
			sub, err = NewSubscriber(SubscriberConf{Node: n, Topic: "/gone", Callback: func(msg *std_msgs.String) {
				select {
				case got <- msg.Data:
				default:
				}
			}})
			return err
		},
		Teardown: func() {
			if sub != nil {
				sub.Close()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitConnected(t, s, 1, 10*time.Second)
	m.MustRun(rostest.ToolTimeout, "rostopic", "pub", "-1", "/gone", "std_msgs/String", "data: bye")
	select {
	case d := <-got:
		if d != "bye" {
			t.Fatalf("received %q", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the message never arrived")
	}
	// The publisher's end reaches goroslib one of two ways: its socket
	// closes first (goroslib's "got an error: EOF", which the supervisor
	// logs at info), or the master's publisherUpdate comes first and goroslib
	// drops the connection itself, reading no EOF.
	rostest.WaitFor(t, 10*time.Second, "the publisher's end seen", func() error {
		for _, e := range logs.Entries("a publisher closed its connection") {
			if e["topic"] == "/gone" {
				return nil
			}
		}
		if len(logs.Entries("subscriber '/gone' doesn't have publisher")) > 0 {
			return nil
		}
		return errors.New("not seen yet")
	})
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"@level":"error"`) {
			t.Errorf("logged at error level: %s", line)
		}
	}
}
