// Package rostest runs Debian's real ROS 1 tools for integration tests: a
// roscore on a free port, and rostopic, rosparam, rosservice, rosnode
// against it, each with a deadline.
//
// Nothing is skipped: when the tools are missing, the test fails and says to
// run `make setup`. The ROS scripts start with #!/usr/bin/python3 and run
// with PATH putting /usr/bin first (a pyenv python3 earlier on PATH cannot
// import rospy).
package rostest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/apimaster"
	"github.com/ttmrobot/ttm/internal/proctree"
)

// BinDir holds the ROS 1 tools (Debian ros-core).
const BinDir = "/usr/bin"

// StartTimeout bounds how long a roscore may take to come up (about 2 s
// here: port open after 1.5 s, /rosout registered after 2 s).
const StartTimeout = 20 * time.Second

const setupHint = "run `make setup` (it installs Debian's ros-core)"

// Tool returns the absolute path of a ROS tool, failing t when it is
// missing.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(BinDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("ROS tool %s not found at %s: %s", name, p, setupHint)
	}
	return p
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Master is a roscore started for a test. Its methods may be called from the
// test goroutine only.
type Master struct {
	t    testing.TB
	Port int
	URI  string // http://127.0.0.1:Port
	home string // ROS_HOME: logs stay in the test's temporary directory

	cmd *exec.Cmd
}

// NewMaster prepares a roscore on a free port without starting it (to test
// what happens before a master exists); call Start. It is killed when the
// test ends.
func NewMaster(t testing.TB) *Master {
	t.Helper()
	Tool(t, "roscore")
	port := FreePort(t)
	m := &Master{
		t:    t,
		Port: port,
		URI:  "http://127.0.0.1:" + strconv.Itoa(port),
		home: t.TempDir(),
	}
	t.Cleanup(m.Kill)
	return m
}

// StartMaster starts roscore on a free port, waits until /rosout is
// registered, and kills it (all of its processes) when the test ends.
func StartMaster(t testing.TB) *Master {
	t.Helper()
	m := NewMaster(t)
	m.Start()
	return m
}

// Env returns the environment for ROS processes that talk to this master:
// PATH with /usr/bin first, ROS_MASTER_URI, ROS_HOME, and none of
// ROS_NAMESPACE, ROS_IP, ROS_HOSTNAME.
func (m *Master) Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "ROS_MASTER_URI", "ROS_HOME", "ROS_LOG_DIR", "ROS_NAMESPACE", "ROS_IP", "ROS_HOSTNAME":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"PATH="+BinDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ROS_MASTER_URI="+m.URI,
		"ROS_HOME="+m.home,
		"ROS_LOG_DIR="+filepath.Join(m.home, "log"),
	)
}

// Start starts roscore on m.Port (again, after Kill) and waits until it is
// ready.
func (m *Master) Start() {
	m.t.Helper()
	if m.cmd != nil {
		m.t.Fatalf("roscore on port %d is already running", m.Port)
	}
	setSubreaper()
	// A file, not a buffer: os/exec then needs no copying goroutine, so a
	// running master adds no goroutine to the test process.
	out, err := os.OpenFile(filepath.Join(m.home, "roscore.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		m.t.Fatalf("roscore output file: %v", err)
	}
	defer out.Close()
	cmd := exec.Command(Tool(m.t, "roscore"), "-p", strconv.Itoa(m.Port))
	cmd.Env = m.Env()
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		m.t.Fatalf("start roscore: %v (%s)", err, setupHint)
	}
	m.cmd = cmd

	start := time.Now()
	client := apimaster.NewClient("127.0.0.1:"+strconv.Itoa(m.Port), "/rostest",
		&http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}})
	for {
		if _, err := client.LookupNode("/rosout"); err == nil {
			m.t.Logf("roscore ready on port %d after %v", m.Port, time.Since(start).Round(time.Millisecond))
			return
		}
		if proctree.Exited(cmd.Process.Pid) {
			m.Kill()
			m.t.Fatalf("roscore -p %d exited before it was ready:\n%s", m.Port, m.Output())
		}
		time.Sleep(50 * time.Millisecond)
		if time.Since(start) > StartTimeout {
			m.Kill()
			m.t.Fatalf("roscore -p %d not ready (no /rosout) after %v:\n%s", m.Port, StartTimeout, m.Output())
		}
	}
}

// Kill kills roscore and everything it started (rosmaster and rosout run in
// sessions of their own, so killing roscore's process group is not enough),
// reaps them, and waits until the port is closed. Calling it on a stopped
// master does nothing.
func (m *Master) Kill() {
	m.t.Helper()
	if m.cmd == nil {
		return
	}
	root := m.cmd.Process.Pid
	tree := proctree.Descendants(root)
	_ = syscall.Kill(-root, syscall.SIGKILL)
	for _, pid := range tree {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = m.cmd.Wait()
	for _, pid := range tree {
		// With the subreaper flag, orphans were re-parented to this process.
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
	}
	m.cmd = nil
	err := poll(5*time.Second, func() error {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(m.Port), 200*time.Millisecond)
		if err != nil {
			return nil
		}
		c.Close()
		return fmt.Errorf("port %d still accepts connections", m.Port)
	})
	if err != nil {
		m.t.Errorf("kill roscore: %v", err)
	}
}

// Restart kills the master and starts a new one on the same port.
func (m *Master) Restart() {
	m.t.Helper()
	m.Kill()
	m.Start()
}

// Output returns what roscore printed so far (all runs on this port).
func (m *Master) Output() string {
	b, err := os.ReadFile(filepath.Join(m.home, "roscore.out"))
	if err != nil {
		return fmt.Sprintf("(no roscore output: %v)", err)
	}
	return string(b)
}

// Run runs a ROS tool (rostopic, rosparam, rosservice, rosnode, ...)
// against this master with a deadline and returns its standard output. The
// error includes the standard error output. Run may be called from several
// goroutines at once.
func (m *Master) Run(timeout time.Duration, tool string, args ...string) (string, error) {
	path := filepath.Join(BinDir, tool)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("ROS tool %s not found at %s: %s", tool, path, setupHint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = m.Env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return stdout.String(), fmt.Errorf("%s %s: no result within %v; stderr: %s", tool, strings.Join(args, " "), timeout, strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w; stderr: %s", tool, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Result is the outcome of one command of RunParallel.
type Result struct {
	Cmd []string // tool and arguments
	Out string   // standard output
	Err error
}

// RunParallel runs several commands (each a tool followed by its arguments)
// at once, each with the deadline, and returns their results in order. The
// Python tools take most of a second each to start; running them together
// keeps tests short.
func (m *Master) RunParallel(timeout time.Duration, cmds ...[]string) []Result {
	res := make([]Result, len(cmds))
	var wg sync.WaitGroup
	for i, c := range cmds {
		res[i].Cmd = c
		if len(c) == 0 {
			res[i].Err = errors.New("empty command")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i].Out, res[i].Err = m.Run(timeout, c[0], c[1:]...)
		}()
	}
	wg.Wait()
	return res
}

// MustRun is Run that fails the test on error.
func (m *Master) MustRun(timeout time.Duration, tool string, args ...string) string {
	m.t.Helper()
	out, err := m.Run(timeout, tool, args...)
	if err != nil {
		m.t.Fatal(err)
	}
	return out
}

// Lines splits tool output into trimmed, non-empty lines.
func Lines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// Contains reports whether one of the lines of out equals line.
func Contains(out, line string) bool {
	for _, l := range Lines(out) {
		if l == line {
			return true
		}
	}
	return false
}

// WaitFor calls cond every 50 ms until it returns nil, and fails the test
// with cond's last error when that has not happened within timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := poll(timeout, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// poll calls cond every 50 ms until it returns nil or timeout passes; it
// returns cond's last error then.
func poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %v: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var subreaperOnce sync.Once

// setSubreaper makes this process the reaper of orphaned descendants, so the
// rosmaster and rosout that roscore leaves behind when killed can be reaped
// (here PID 1 does not reap). Linux only; failure only leaves zombies.
func setSubreaper() {
	subreaperOnce.Do(func() {
		const prSetChildSubreaper = 36
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	})
}
