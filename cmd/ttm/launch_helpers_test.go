package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/proctree"
	"github.com/ttmrobot/ttm/internal/rostest"
)

// rosTool prepares a ROS command-line tool (roslaunch, rostopic) against
// master m as a robot runs it: roslaunch finds this repository's launch/
// package and runs this test binary as ttm (TTM_BIN), and the tool gets a
// process group of its own for killGroup.
func rosTool(t *testing.T, m *rostest.Master, tool string, args ...string) *exec.Cmd {
	t.Helper()
	launchDir, err := filepath.Abs("../../launch")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(rostest.Tool(t, tool), args...)
	cmd.Env = append(m.Env(), "ROS_PACKAGE_PATH="+launchDir, "TTM_BIN="+self, runAsMain+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second // a node that outlives roslaunch must not hold Wait on its output
	return cmd
}

// killGroup kills a started rosTool's process group and every process
// below it: roslaunch's nodes run in process groups of their own.
func killGroup(cmd *exec.Cmd) {
	for _, pid := range proctree.Descendants(cmd.Process.Pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// startTool runs a ROS tool (a rostopic pub) against m until the test
// ends, its output discarded.
func startTool(t *testing.T, m *rostest.Master, tool string, args ...string) {
	t.Helper()
	c := rosTool(t, m, tool, args...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		killGroup(c)
		_ = c.Wait()
	})
}

// launch is a roslaunch of this repository's launch package, started by
// startLaunch.
type launch struct {
	cmd    *exec.Cmd
	log    lockedBuffer // roslaunch's output and its nodes'
	exited chan error   // roslaunch's exit, sent once
	done   bool         // the exit was received
}

// startLaunch runs `roslaunch ttm args...` against m, with env added to its
// environment. When the test ends it kills roslaunch's tree unless the test
// saw it exit, and logs its output if the test failed.
func startLaunch(t *testing.T, m *rostest.Master, env []string, args ...string) *launch {
	t.Helper()
	l := &launch{cmd: rosTool(t, m, "roslaunch", append([]string{"ttm"}, args...)...), exited: make(chan error, 1)}
	l.cmd.Env = append(l.cmd.Env, env...)
	l.cmd.Stdout, l.cmd.Stderr = &l.log, &l.log
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { l.exited <- l.cmd.Wait() }()
	t.Cleanup(func() {
		if !l.done {
			killGroup(l.cmd)
			<-l.exited
		}
		if t.Failed() {
			t.Logf("roslaunch output:\n%s", l.log.String())
		}
	})
	return l
}

// running is nil while roslaunch runs and an error once it has exited, for
// the checks of rostest.WaitFor.
func (l *launch) running() error {
	select {
	case err := <-l.exited:
		l.exited <- err
		return fmt.Errorf("roslaunch exited: %v", err)
	default:
		return nil
	}
}

// wait waits up to d for roslaunch to exit and returns its exit status; it
// fails t if roslaunch still runs.
func (l *launch) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-l.exited:
		l.done = true
		return err
	case <-time.After(d):
		t.Fatalf("roslaunch still running after %v", d)
		return nil
	}
}

// interrupt sends roslaunch SIGINT, as Ctrl-C does (it passes it on to its
// nodes), and waits up to d for it to exit.
func (l *launch) interrupt(t *testing.T, d time.Duration) error {
	t.Helper()
	_ = syscall.Kill(-l.cmd.Process.Pid, syscall.SIGINT)
	return l.wait(t, d)
}
