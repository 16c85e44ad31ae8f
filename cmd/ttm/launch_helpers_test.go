package main

import (
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
