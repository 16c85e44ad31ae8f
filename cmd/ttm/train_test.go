package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/imagetest"
	"github.com/ttmrobot/ttm/internal/safetensors"
	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
)

// recordTinyDataset records n expert episodes of pick at the small
// preset's image size with the real bag recorder, and indexes them.
func recordTinyDataset(t *testing.T, dir string, n int) {
	t.Helper()
	spec, err := policy.Preset("small")
	if err != nil {
		t.Fatal(err)
	}
	h, w := spec.Vision.Preprocess.Height, spec.Vision.Preprocess.Width
	task, err := sim.TaskByName("pick")
	if err != nil {
		t.Fatal(err)
	}
	ix := &sim.Index{Version: sim.IndexVersion, Height: h, Width: w}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		ep, err := sim.NewEpisode(task, seed, sim.Options{Height: h, Width: w})
		if err != nil {
			t.Fatal(err)
		}
		file := sim.EpisodeFile(task.Name, seed)
		res, err := sim.RecordEpisode(filepath.Join(dir, file), ep, sim.ExpertAgent{Expert: ep.Expert(sim.ExpertOptions{})}, sim.RecordOptions{})
		ep.Close()
		if err != nil {
			t.Fatal(err)
		}
		ix.Episodes = append(ix.Episodes, sim.IndexEntry{File: file, Task: task.Name, Family: task.Name, Instruction: res.Instruction,
			Seed: seed, Steps: res.Steps, Success: res.Success})
	}
	if err := sim.WriteIndex(dir, ix); err != nil {
		t.Fatal(err)
	}
}

// TestTrainCommand trains a fresh small policy for a few updates on
// recorded bags, checks the files it writes, then extends the run: the
// second invocation resumes from the state file instead of starting over,
// and reuses the feature cache.
func TestTrainCommand(t *testing.T) {
	data, out := t.TempDir(), t.TempDir()
	recordTinyDataset(t, data, 2)
	ckpt := filepath.Join(out, "p.safetensors")
	args := func(steps string) []string {
		return []string{"train", "--data", data, "--preset", "small", "--out", ckpt, "--steps", steps, "--batch", "2",
			"--window", "4", "--log-every", "2", "--checkpoint-every", "2"}
	}
	code, _, stderr := runCmd(t, args("4")...)
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	files := newTrainFiles(ckpt)
	for _, f := range []string{files.ckpt, files.backbone, files.state, files.log, files.curve} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("train did not write %s", f)
		}
	}
	var lg trainLog
	b, _ := os.ReadFile(files.log)
	if err := json.Unmarshal(b, &lg); err != nil {
		t.Fatalf("JSON log: %v", err)
	}
	if len(lg.History) != 2 || lg.History[1].Step != 4 || lg.Episodes != 2 {
		t.Errorf("JSON log %+v: want 2 records ending at update 4 over 2 episodes", lg)
	}
	imagetest.PNG(t, files.curve)
	// The simulator's bags carry keypoint labels, and the feature cache
	// keeps them.
	cached, _ := filepath.Glob(filepath.Join(data, ".features", "*", "*.safetensors"))
	if len(cached) != 2 {
		t.Fatalf("feature cache holds %v, want 2 episodes", cached)
	}
	for _, path := range cached {
		f, err := safetensors.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := f.Tensors["keypoints"]; !ok || len(k.Shape) != 2 || k.Shape[1] != sim.KeypointLabelLen {
			t.Errorf("%s: keypoint labels %v, want [steps %d]", path, k.Shape, sim.KeypointLabelLen)
		}
	}
	// The checkpoint loads with its backbone, as the node would load it,
	// and records the rate of its demonstrations.
	if p, err := policy.Load(ckpt, policy.Options{}); err != nil {
		t.Fatalf("trained checkpoint: %v", err)
	} else {
		if want := 1 / sim.StepPeriod.Seconds(); p.Rate() != want {
			t.Errorf("trained checkpoint records %v Hz, want the demonstrations' %v", p.Rate(), want)
		}
		p.Close()
	}

	code, _, stderr = runCmd(t, args("6")...)
	if code != 0 {
		t.Fatalf("resumed train: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"resumed", "update=4", "encoded=0"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("resumed run's log lacks %q:\n%s", want, stderr)
		}
	}
	b, _ = os.ReadFile(files.log)
	if err := json.Unmarshal(b, &lg); err != nil || len(lg.History) != 3 || lg.History[2].Step != 6 {
		t.Errorf("after resuming, JSON log has %d records (err %v), want 3 ending at update 6", len(lg.History), err)
	}
}

// TestTrainTasks: --tasks keeps the named tasks' episodes of a dataset and
// leaves the others out, counted; with none left the run stops with an
// error that says why; an unknown task is a usage error.
func TestTrainTasks(t *testing.T) {
	data, out := t.TempDir(), t.TempDir()
	recordTinyDataset(t, data, 2) // two pick episodes
	args := func(tasks string) []string {
		return []string{"train", "--data", data, "--preset", "small", "--out", filepath.Join(out, tasks, "p.safetensors"), "--steps", "1", "--batch", "2",
			"--window", "4", "--tasks", tasks}
	}
	if code, _, stderr := runCmd(t, args("pick,knock")...); code != 0 || !strings.Contains(stderr, "episodes=2") || !strings.Contains(stderr, "other_tasks=0") {
		t.Fatalf("--tasks pick,knock: exit %d:\n%s", code, stderr)
	}
	code, _, stderr := runCmd(t, args("knock")...)
	if code != 1 || !strings.Contains(stderr, "other_tasks=2") || !strings.Contains(stderr, "of the tasks asked for") {
		t.Errorf("--tasks knock on a pick dataset: exit %d:\n%s", code, stderr)
	}
	if code, _, _ := runCmd(t, args("juggle")...); code != 2 {
		t.Errorf("--tasks juggle: exit %d, want 2 (usage)", code)
	}
}

func TestTrainUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"train", "--out", "x.safetensors"},
		{"train", "--data", "d"},
		{"train", "--data", "d", "--out", "x.safetensors", "--batch", "0"},
		{"train", "--data", "d", "--out", "x.safetensors", "--window", "100"},
		{"train", "--data", "d", "--out", "x.safetensors", "--keypoint-weight", "-1"},
		{"train", "--data", "d", "--out", "x.safetensors", "--geometry-own", "2"},
		{"train", "--data", "d", "--out", "x.safetensors", "--lr", "0"},
		{"train", "--data", "d", "--out", "x.safetensors", "--goal-weight", "-1"},
	} {
		if code, _, _ := runCmd(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
}

// TestTrainGoalProbe trains the small-goal-probe preset's goal probe on
// recorded bags: each episode's start goal comes from the simulator and
// its loss is logged; a preset without a probe refuses the weight.
func TestTrainGoalProbe(t *testing.T) {
	data, out := t.TempDir(), t.TempDir()
	if code, _, stderr := runCmd(t, "record", "--experts", "--tasks", "pick,cue_pick", "--episodes", "1", "--size", "128x160", "--out", data); code != 0 {
		t.Fatalf("record: exit %d: %s", code, stderr)
	}
	ckpt := filepath.Join(out, "probe.safetensors")
	code, _, stderr := runCmd(t, "train", "--data", data, "--preset", "small-goal-probe", "--goal-weight", "1", "--out", ckpt,
		"--steps", "2", "--batch", "2", "--window", "4", "--log-every", "1")
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	// The memory task's episode has the probe's label; pick, whose goal
	// stays in view, has none.
	if !strings.Contains(stderr, "goal probe") || !strings.Contains(stderr, "episodes_with_goal=1 episodes=2") {
		t.Errorf("log does not report the goal probe on the memory task's episode only:\n%s", stderr)
	}
	var lg trainLog
	b, _ := os.ReadFile(newTrainFiles(ckpt).log)
	if err := json.Unmarshal(b, &lg); err != nil || len(lg.History) != 2 {
		t.Fatalf("JSON log: %v, %d records", err, len(lg.History))
	}
	for _, r := range lg.History {
		if !(r.GoalLoss > 0) {
			t.Errorf("update %d: goal loss %v, want > 0", r.Step, r.GoalLoss)
		}
	}
	code, _, stderr = runCmd(t, "train", "--data", data, "--preset", "small", "--goal-weight", "1", "--out", filepath.Join(out, "plain.safetensors"),
		"--steps", "1", "--batch", "2", "--window", "4")
	if code != 1 || !strings.Contains(stderr, "goal probe") {
		t.Errorf("--goal-weight for the small preset: exit %d:\n%s", code, stderr)
	}
	families := t.TempDir()
	recordTinyDataset(t, families, 2)
	code, _, stderr = runCmd(t, "train", "--data", families, "--preset", "small-goal-probe", "--goal-weight", "1", "--out", filepath.Join(out, "fam.safetensors"),
		"--steps", "1", "--batch", "2", "--window", "4")
	if code != 1 || !strings.Contains(stderr, "no episode has a start goal") {
		t.Errorf("the goal probe on pick episodes only: exit %d:\n%s", code, stderr)
	}
}

// TestTrainKeypoints trains the small-keypoints preset on recorded bags,
// with the keypoint supervision its keypoint token gets by default: the
// labels travel from the recorder through the feature cache to the loss,
// logged beside it.
func TestTrainKeypoints(t *testing.T) {
	data, out := t.TempDir(), t.TempDir()
	recordTinyDataset(t, data, 2)
	ckpt := filepath.Join(out, "kp.safetensors")
	code, _, stderr := runCmd(t, "train", "--data", data, "--preset", "small-keypoints", "--out", ckpt,
		"--steps", "2", "--batch", "2", "--window", "4", "--log-every", "1")
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "keypoint supervision") || !strings.Contains(stderr, "labelled_episodes=2") {
		t.Errorf("log does not report the keypoint supervision:\n%s", stderr)
	}
	var lg trainLog
	b, _ := os.ReadFile(newTrainFiles(ckpt).log)
	if err := json.Unmarshal(b, &lg); err != nil || len(lg.History) != 2 {
		t.Fatalf("JSON log: %v, %d records", err, len(lg.History))
	}
	for _, r := range lg.History {
		if !(r.KeypointLoss > 0) {
			t.Errorf("update %d: keypoint loss %v, want > 0", r.Step, r.KeypointLoss)
		}
	}
	// The preset feeds the action tokens zeros.
	p, err := policy.Load(ckpt, policy.Options{NoBackbone: true})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Spec().Policy.BlindActions {
		t.Error("small-keypoints is not blind")
	}
	p.Close()
	// Without a keypoint token the supervision is refused.
	code, _, stderr = runCmd(t, "train", "--data", data, "--preset", "small", "--keypoint-weight", "1", "--out", filepath.Join(out, "plain.safetensors"),
		"--steps", "1", "--batch", "2", "--window", "4")
	if code == 0 || !strings.Contains(stderr, "keypoint token") {
		t.Errorf("small preset with --keypoint-weight: exit %d, log:\n%s", code, stderr)
	}
}
