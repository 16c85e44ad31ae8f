package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/sim"
)

// checkDataset checks that dir holds exactly the bags its index lists,
// each readable and agreeing with its entry, and no .active file.
func checkDataset(t *testing.T, dir string) *sim.Index {
	t.Helper()
	ix, err := sim.ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if active, _ := filepath.Glob(filepath.Join(dir, "*.active")); len(active) != 0 {
		t.Errorf("left behind: %v", active)
	}
	bags, _ := filepath.Glob(filepath.Join(dir, "*.bag"))
	if len(bags) != len(ix.Episodes) {
		t.Errorf("%d bags in the folder, %d in the index", len(bags), len(ix.Episodes))
	}
	for _, e := range ix.Episodes {
		ep, err := sim.ReadEpisode(filepath.Join(dir, e.File), sim.ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", e.File, err)
		}
		if got := sim.IndexEntryFor(e.File, ep.Info); got != e || e.File != sim.EpisodeFile(e.Task, e.Seed) || ep.Info.Height != ix.Height || ep.Info.Width != ix.Width {
			t.Errorf("index entry %+v, bag %+v", e, got)
		}
	}
	return ix
}

func TestRecordDataset(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	args := []string{"record", "--experts", "--tasks", "pick,drawer", "--episodes", "2", "--seed", "5", "--size", "64x80", "--noise", "0.02", "--out", dir}
	code, stdout, stderr := runCmd(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ix := checkDataset(t, dir)
	var files []string
	for _, e := range ix.Episodes {
		files = append(files, e.File)
	}
	if want := "pick-000005.bag pick-000006.bag drawer-000005.bag drawer-000006.bag"; strings.Join(files, " ") != want {
		t.Errorf("episodes %v, want %s", files, want)
	}
	if ix.Height != 64 || ix.Width != 80 || ix.Agent != "expert noise=0.02 base_noise=0 pause=0" {
		t.Errorf("index %+v", ix)
	}
	for _, want := range []string{"task", "pick", "drawer"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "done=4 total=4") || !strings.Contains(stderr, "eta=") || !strings.Contains(stderr, "episodes_per_s=") {
		t.Errorf("no progress in the log:\n%s", stderr)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "pick-000005.bag"))

	// A rerun records nothing and changes nothing.
	code, _, stderr = runCmd(t, args...)
	if code != 0 || !strings.Contains(stderr, "recorded_now=0") {
		t.Fatalf("rerun: exit %d:\n%s", code, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "pick-000005.bag")); !bytes.Equal(before, after) {
		t.Error("the rerun rewrote a finished bag")
	}

	// A bag renamed in place but not yet indexed (the run stopped between
	// the two) is indexed, not recorded again.
	ix.Episodes = ix.Episodes[:3]
	if err := sim.WriteIndex(dir, ix); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCmd(t, args...)
	if code != 0 || !strings.Contains(stderr, "indexed a bag the last run finished") || !strings.Contains(stderr, "recorded_now=0") {
		t.Fatalf("adopting: exit %d:\n%s", code, stderr)
	}
	checkDataset(t, dir)

	// A rerun with other settings is refused, naming both.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--size", "32x40"}, "holds 64x80 frames, this run would record 32x40"},
		{[]string{"--noise", "0.5"}, `recorded by "expert noise=0.02 base_noise=0 pause=0", this run would record "expert noise=0.5`},
	} {
		a := append(append([]string{}, args...), tc.args...)
		if code, _, stderr := runCmd(t, a...); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %s", tc.args, code, stderr)
		}
	}
}

func TestRecordUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no out", []string{"record", "--experts"}, "--out is required"},
		{"no agent", []string{"record", "--out", dir}, "exactly one of --experts, --policy and --ros"},
		{"both agents", []string{"record", "--experts", "--policy", "x.safetensors", "--out", dir}, "exactly one"},
		{"ros with tasks", []string{"record", "--ros", "--tasks", "pick", "--out", "x.bag"}, "--tasks does not apply to --ros"},
		{"remap without ros", []string{"record", "--experts", "--out", dir, "a:=b"}, "need --ros"},
		{"episodes", []string{"record", "--experts", "--episodes", "0", "--out", dir}, "--episodes 0"},
		{"tasks", []string{"record", "--experts", "--tasks", "fly", "--out", dir}, `unknown task "fly"`},
		{"noise for a policy", []string{"record", "--policy", "x.safetensors", "--noise", "1", "--out", dir}, "are for --experts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, stderr := runCmd(t, tc.args...); code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %s; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

// A SIGINT to ttm record mid-run leaves complete, readable bags and a valid
// index, the process exits non-zero, and a rerun completes the dataset.
func TestRecordSIGINT(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ds")
	args := []string{"record", "--experts", "--tasks", "all", "--episodes", "40", "--size", "96x120", "--out", dir}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), runAsMain+"=1")
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ix, err := sim.ReadIndex(dir); err == nil && len(ix.Episodes) >= 3 {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("ttm record exited before the interrupt: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no 3 episodes after 60 s:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var exitErr *exec.ExitError
	select {
	case err := <-exited:
		if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
			t.Fatalf("after SIGINT: %v, want exit status 1\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("ttm record did not stop within 30 s of SIGINT:\n%s", out.String())
	}
	log := out.String()
	if !strings.Contains(log, "interrupted") || !strings.Contains(log, "rerun the same command to resume") {
		t.Errorf("no interruption in the log:\n%s", log)
	}
	ix := checkDataset(t, dir)
	kept := len(ix.Episodes)
	if kept >= 8*40 {
		t.Fatalf("all %d episodes were done before the interrupt", kept)
	}
	t.Logf("interrupted after %d episodes", kept)

	// The rerun (fewer episodes per task, to be quick) keeps those and adds
	// the rest.
	args[5] = "3"
	if code, _, stderr := runCmd(t, args...); code != 0 {
		t.Fatalf("rerun: exit %d:\n%s", code, stderr)
	}
	ix = checkDataset(t, dir)
	if len(ix.Episodes) < 8*3 {
		t.Errorf("after the rerun %d episodes, want at least %d", len(ix.Episodes), 8*3)
	}
}

// TestRecordMemoryLabels: --memory-labels records cue_pick's target in the
// frames after the cue, where a plain recording of the same episode leaves
// it unlabelled, and says so in the index's agent.
func TestRecordMemoryLabels(t *testing.T) {
	targetFrames := func(dir string, extra ...string) (after, total int, agent string) {
		args := append([]string{"record", "--experts", "--tasks", "cue_pick", "--episodes", "1", "--seed", "3", "--size", "64x80", "--out", dir}, extra...)
		if code, _, stderr := runCmd(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, stderr)
		}
		ix := checkDataset(t, dir)
		ep, err := sim.ReadEpisode(filepath.Join(dir, ix.Episodes[0].File), sim.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k, s := range ep.Steps {
			if len(s.Keypoints) != sim.KeypointLabelLen {
				t.Fatalf("step %d: %d keypoint label values", k, len(s.Keypoints))
			}
			if s.Keypoints[5] > 0 && k >= 3 {
				after++
			}
		}
		return after, len(ep.Steps), ix.Agent
	}
	plain, n, agent := targetFrames(filepath.Join(t.TempDir(), "plain"))
	mem, m, memAgent := targetFrames(filepath.Join(t.TempDir(), "memory"), "--memory-labels")
	if n != m || plain != 0 || mem < n/2 {
		t.Errorf("target labelled after the cue in %d of %d frames plainly, %d of %d with --memory-labels", plain, n, mem, m)
	}
	if strings.Contains(agent, "memory_labels") || !strings.HasSuffix(memAgent, " memory_labels") {
		t.Errorf("agents %q and %q", agent, memAgent)
	}
}
