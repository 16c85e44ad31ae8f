package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	if f, err := os.Open(files.curve); err == nil {
		if _, err := png.Decode(f); err != nil {
			t.Errorf("learning curve: %v", err)
		}
		f.Close()
	}
	// The checkpoint loads with its backbone, as the node would load it.
	p, err := policy.Load(ckpt, policy.Options{})
	if err != nil {
		t.Fatalf("trained checkpoint: %v", err)
	}
	p.Close()

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

func TestTrainUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"train", "--out", "x.safetensors"},
		{"train", "--data", "d"},
		{"train", "--data", "d", "--out", "x.safetensors", "--batch", "0"},
		{"train", "--data", "d", "--out", "x.safetensors", "--window", "100"},
	} {
		if code, _, _ := runCmd(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
}
