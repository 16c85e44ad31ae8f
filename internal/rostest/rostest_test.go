package rostest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/proctree"
)

func TestLinesAndContains(t *testing.T) {
	out := "  /rosout \n\n/a/b\n  \n/c"
	want := []string{"/rosout", "/a/b", "/c"}
	got := Lines(out)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Lines = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		line string
		want bool
	}{{"/rosout", true}, {"/a/b", true}, {"/a", false}, {"", false}} {
		if got := Contains(out, tc.line); got != tc.want {
			t.Errorf("Contains(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

func TestPoll(t *testing.T) {
	calls := 0
	err := poll(2*time.Second, func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("poll = %v after %d calls, want nil after 3", err, calls)
	}
	start := time.Now()
	err = poll(120*time.Millisecond, func() error { return errors.New("never ready") })
	if err == nil || !strings.Contains(err.Error(), "never ready") {
		t.Fatalf("poll error = %v, want the condition's last error", err)
	}
	if d := time.Since(start); d < 120*time.Millisecond {
		t.Fatalf("poll gave up after %v, before its timeout", d)
	}
}

// fatalRecorder captures Fatalf and ends the goroutine like testing.T does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestMissingToolSaysMakeSetup(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Tool(rec, "no_such_ros_tool")
	}()
	<-done
	if !strings.Contains(rec.msg, "make setup") || !strings.Contains(rec.msg, "no_such_ros_tool") {
		t.Fatalf("missing tool message = %q, want the tool's name and `make setup`", rec.msg)
	}
}

// TestMasterLifecycle starts a real roscore, talks to it with rosnode, kills
// it and checks every process it started is gone and the port is free, then
// starts it again on the same port.
func TestMasterLifecycle(t *testing.T) {
	m := StartMaster(t)
	if out := m.MustRun(10*time.Second, "rosnode", "list"); !Contains(out, "/rosout") {
		t.Fatalf("rosnode list = %q, want /rosout", out)
	}
	tree := proctree.Descendants(m.cmd.Process.Pid)
	if len(tree) < 2 {
		t.Fatalf("roscore has %d descendants, want rosmaster and rosout at least", len(tree))
	}
	root := m.cmd.Process.Pid
	m.Kill()
	for _, pid := range append(tree, root) {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			state, _, _ := proctree.Stat(pid)
			t.Errorf("process %d (state %s) of the killed roscore still exists", pid, state)
		}
	}
	if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(m.Port)); err == nil {
		c.Close()
		t.Fatalf("port %d still open after Kill", m.Port)
	}
	if _, err := m.Run(5*time.Second, "rosnode", "list"); err == nil {
		t.Fatalf("rosnode list succeeded with the master killed")
	}

	m.Start()
	if out := m.MustRun(10*time.Second, "rosparam", "get", "/run_id"); strings.TrimSpace(out) == "" {
		t.Fatalf("rosparam get /run_id after restart printed nothing")
	}

	// Run enforces its deadline: echo waits for a message nobody publishes.
	start := time.Now()
	_, err := m.Run(time.Second, "rostopic", "echo", "-n", "1", "/nothing")
	if err == nil || !strings.Contains(err.Error(), "no result within") {
		t.Fatalf("Run error = %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Run returned after %v, want about its 1 s deadline", d)
	}
}
