package proctree

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		state      string
		ppid       int
		bad        bool
	}{
		{name: "plain", line: "123 (bash) S 45 123 123 0 -1", state: "S", ppid: 45},
		{name: "spaces and parentheses in the command", line: "7 (a (b) c) Z 1 7 7", state: "Z", ppid: 1},
		{name: "no command", line: "7 S 1", bad: true},
		{name: "no parent", line: "7 (x) R", bad: true},
		{name: "parent not a number", line: "7 (x) R ?", bad: true},
		{name: "negative parent", line: "7 (x) R -3", bad: true},
		{name: "empty", line: "", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, ppid, err := ParseStat([]byte(tc.line))
			if tc.bad {
				if err == nil {
					t.Fatalf("parsed %q as state %q, parent %d", tc.line, state, ppid)
				}
				return
			}
			if err != nil || state != tc.state || ppid != tc.ppid {
				t.Fatalf("%q: state %q, parent %d, %v; want %q, %d", tc.line, state, ppid, err, tc.state, tc.ppid)
			}
		})
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("123 (bash) S 45 123 123 0 -1"))
	f.Add([]byte("7 (a (b) c) Z 1 7 7"))
	f.Add([]byte(")"))
	f.Fuzz(func(t *testing.T, b []byte) {
		state, ppid, err := ParseStat(b)
		if err == nil && (state == "" || ppid < 0) {
			t.Fatalf("accepted %q as state %q, parent %d", b, state, ppid)
		}
	})
}

// TestDescendants starts sh, which starts sleep, and finds both below this
// process and the sleep below sh; this process's own state is running.
func TestDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, pid := range Descendants(cmd.Process.Pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	var below []int
	for range 500 { // until sh has started sleep: at most 5 s
		if below = Descendants(cmd.Process.Pid); len(below) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(below) != 1 {
		t.Fatalf("below sh: %v, want the one sleep", below)
	}
	if _, ppid, err := Stat(below[0]); err != nil || ppid != cmd.Process.Pid {
		t.Fatalf("the sleep's parent %d (%v), want sh %d", ppid, err, cmd.Process.Pid)
	}
	mine := Descendants(os.Getpid())
	if !slices.Contains(mine, cmd.Process.Pid) || !slices.Contains(mine, below[0]) {
		t.Fatalf("below this process %v, want sh %d and its sleep %d", mine, cmd.Process.Pid, below[0])
	}
	if Exited(os.Getpid()) {
		t.Fatal("this process reads as exited")
	}
}
