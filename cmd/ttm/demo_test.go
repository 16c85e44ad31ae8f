package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/imagetest"
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/internal/rostest"
)

// TestDemo runs `ttm demo` end to end. With no master at ROS_MASTER_URI it
// starts roscore, runs the policy node (this test binary as `ttm node`)
// and the simulator node, prints the episodes' table and the node's
// summary, writes a strip and a GIF per episode, and stops roscore at the
// end. With a master running it uses it and leaves it running; without
// --policy it writes a fresh small policy.
func TestDemo(t *testing.T) {
	t.Setenv(runAsMain, "1") // the policy node it starts is this binary acting as ttm
	t.Setenv("ROS_HOME", t.TempDir())

	t.Run("StartsRoscore", func(t *testing.T) {
		uri := fmt.Sprintf("http://127.0.0.1:%d", rostest.FreePort(t))
		t.Setenv("ROS_MASTER_URI", uri)
		dir := t.TempDir()
		code, stdout, stderr := runCmd(t, "demo", "--dir", dir, "--policy", smallPolicy(t), "--rate", "3", "--threads", "2",
			"--tasks", "pick", "--episodes", "2", "--max-steps", "4")
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s\nnode log:\n%s", code, stdout, stderr, tail(filepath.Join(dir, "node.log"), 30))
		}
		if !strings.Contains(stderr, "no ROS master was running: started roscore") {
			t.Errorf("no roscore start reported:\n%s", stderr)
		}
		if n := strings.Count(stderr, "episode done"); n != 2 {
			t.Errorf("%d episodes reported on the terminal, want 2", n)
		}
		var row []string
		for _, l := range strings.Split(stdout, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == "pick" {
				row = f
			}
		}
		if len(row) < 7 || row[2] != "2" || row[6] != "4.0" {
			t.Errorf("table row %q, want pick with 2 episodes of 4 steps:\n%s", row, stdout)
		}
		for _, want := range []string{"policy node:", "warm-up done", "node stopped", "headcam strips (PNG) and rollouts (GIF): " + filepath.Join(dir, "episodes")} {
			if !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout)
			}
		}
		checkEpisodeFiles(t, filepath.Join(dir, "episodes"), []string{"01-pick-seed1", "02-pick-seed2"}, 5)
		if pid, err := ros.MasterPID(context.Background(), uri, time.Second); err == nil {
			t.Errorf("the roscore the demo started still answers (pid %d)", pid)
		}
	})

	t.Run("UsesRunningMaster", func(t *testing.T) {
		m := rostest.StartMaster(t)
		t.Setenv("ROS_MASTER_URI", m.URI)
		dir := t.TempDir()
		// 1.5 Hz: a period longer than the node's default max_image_age, which
		// the demo must raise or every lockstep frame is stale.
		code, stdout, stderr := runCmd(t, "demo", "--dir", dir, "--rate", "1.5", "--threads", "2", "--tasks", "drawer", "--max-steps", "3")
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s\nnode log:\n%s", code, stdout, stderr, tail(filepath.Join(dir, "node.log"), 30))
		}
		if !strings.Contains(stderr, "using the running ROS master") || strings.Contains(stderr, "started roscore") {
			t.Errorf("the running master was not used:\n%s", stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "small-policy.safetensors")); err != nil {
			t.Errorf("no fresh policy written: %v", err)
		}
		if _, err := ros.MasterPID(context.Background(), m.URI, time.Second); err != nil {
			t.Errorf("the running master was stopped: %v", err)
		}
		if !strings.Contains(stdout, "drawer") {
			t.Errorf("no drawer row:\n%s", stdout)
		}
		// After the last episode the simulator stops publishing and the
		// policy node rightly calls its last frame stale if the shutdown
		// takes longer than max_image_age; only refusals while episodes ran
		// count.
		end := logTime(t, lastLine(stderr, "all episodes done"))
		var stale []string
		for _, l := range grepLines(filepath.Join(dir, "node.log"), "camera frame too old") {
			if logTime(t, l).Before(end) {
				stale = append(stale, l)
			}
		}
		if len(stale) > 0 {
			t.Errorf("the policy node refused lockstep frames as stale:\n%s\nnode log:\n%s", strings.Join(stale, "\n"), tail(filepath.Join(dir, "node.log"), 30))
		}
	})
}

// lastLine is the last line of text that contains sub, or "".
func lastLine(text, sub string) string {
	var last string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			last = l
		}
	}
	return last
}

// logTime is the timestamp hclog put at the start of line.
func logTime(t *testing.T, line string) time.Time {
	t.Helper()
	f := strings.Fields(line)
	if len(f) == 0 {
		t.Fatalf("no log line to take a time from")
	}
	at, err := time.Parse("2006-01-02T15:04:05.000Z0700", f[0])
	if err != nil {
		t.Fatalf("log line %q: %v", line, err)
	}
	return at
}

// checkEpisodeFiles decodes each episode's strip and GIF; the GIF has
// frames frames at most (fewer when the policy terminated).
func checkEpisodeFiles(t *testing.T, dir string, names []string, frames int) {
	t.Helper()
	for _, name := range names {
		imagetest.PNG(t, filepath.Join(dir, name+".png"))
		if n := len(imagetest.GIF(t, filepath.Join(dir, name+".gif")).Image); n != frames {
			t.Errorf("%s.gif has %d frames, want %d", name, n, frames)
		}
	}
}
