package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/imagetest"
	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
)

// ledgerOf reads the fields of a ledger.json that the issue names.
func ledgerOf(t *testing.T, dir string) (raw []byte, l struct {
	Overall struct {
		SuccessRate float64 `json:"success_rate"`
	} `json:"overall"`
	PerFamily map[string]struct {
		SuccessRate float64 `json:"success_rate"`
		Episodes    int     `json:"episodes"`
	} `json:"per_family"`
	Runs  []struct{ Name string } `json:"runs"`
	Setup struct {
		Height int `json:"height"`
		Width  int `json:"width"`
	} `json:"setup"`
}) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "ledger.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatal(err)
	}
	return raw, l
}

func TestEvalExpertShardsMerge(t *testing.T) {
	dir := t.TempDir()
	args := []string{"eval", "--expert", "--tasks", "pick,drawer,cue_pick", "--episodes", "3", "--seed", "2", "--size", "32x40"}
	whole := filepath.Join(dir, "whole")
	code, stdout, stderr := runCmd(t, append(args, "--out", whole, "--videos", "1")...)
	if code != 0 {
		t.Fatalf("eval: exit %d: %s", code, stderr)
	}
	raw, l := ledgerOf(t, whole)
	if l.Overall.SuccessRate != 1 || len(l.PerFamily) != 3 || l.PerFamily["cue_pick"].Episodes != 3 || l.PerFamily["pick"].SuccessRate != 1 {
		t.Errorf("expert ledger: %+v", l)
	}
	if !strings.Contains(stdout, "| family | expert |") || !strings.Contains(stderr, "progress") {
		t.Errorf("no table on stdout or no progress in the log:\n%s\n%s", stdout, stderr)
	}
	for _, f := range []string{"summary.md", "timing.json", "videos/expert/cue_pick-000.gif"} {
		if _, err := os.Stat(filepath.Join(whole, f)); err != nil {
			t.Error(err)
		}
	}
	imagetest.PNG(t, filepath.Join(whole, "success_per_family.png"))

	var shards []string
	for _, s := range []string{"0/2", "1/2"} {
		out := filepath.Join(dir, "shard"+s[:1])
		if code, _, stderr := runCmd(t, append(args, "--shard", s, "--out", out)...); code != 0 {
			t.Fatalf("shard %s: exit %d: %s", s, code, stderr)
		}
		shards = append(shards, out)
	}
	merged := filepath.Join(dir, "merged")
	if code, _, stderr := runCmd(t, append([]string{"eval", "merge", "--out", merged}, shards...)...); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	if got, _ := ledgerOf(t, merged); string(got) != string(raw) {
		t.Errorf("merged ledger differs from the single run's:\n%s\n---\n%s", got, raw)
	}
	if code, _, stderr := runCmd(t, "eval", "merge", "--out", merged, shards[0]); code != 1 || !strings.Contains(stderr, "shard") {
		t.Errorf("merge of one of two shards: exit %d: %s", code, stderr)
	}
}

// Two checkpoints side by side, with both ablations, through the command.
func TestEvalPolicies(t *testing.T) {
	dir := t.TempDir()
	spec := tinyPolicySpec(t)
	var ckpts []string
	for _, name := range []string{"a", "b"} {
		p := filepath.Join(dir, name, "tiny.safetensors")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := policy.Create(spec, 7, "", p, nil); err != nil {
			t.Fatal(err)
		}
		ckpts = append(ckpts, p)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCmd(t, "eval", "--policy", ckpts[0]+","+ckpts[1], "--ablations", "nomem,knockout",
		"--tasks", "pick,cue_pick", "--episodes", "1", "--out", out)
	if code != 0 {
		t.Fatalf("eval: exit %d: %s", code, stderr)
	}
	_, l := ledgerOf(t, out)
	if l.Setup.Height != 64 || l.Setup.Width != 80 {
		t.Errorf("frames %dx%d without --size, want the checkpoint's 64x80", l.Setup.Height, l.Setup.Width)
	}
	var names []string
	for _, r := range l.Runs {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, " "); got != "tiny tiny+nomem tiny+knockout tiny-2 tiny-2+nomem tiny-2+knockout" {
		t.Errorf("runs %s", got)
	}
	if !strings.Contains(stdout, "| family | tiny | tiny+nomem | tiny+knockout | tiny-2 |") {
		t.Errorf("table header:\n%s", stdout)
	}
}

func TestEvalErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--expert"}, 2, "--out is required"},
		{[]string{"--out", dir}, 2, "--policy or --expert"},
		{[]string{"--expert", "--out", dir, "--shard", "2/2"}, 2, "--shard"},
		{[]string{"--expert", "--out", dir, "--latency", "soon"}, 2, "--latency"},
		{[]string{"--expert", "--out", dir, "--ablations", "nomem,amnesia"}, 2, "amnesia"},
		{[]string{"--expert", "--out", dir, "--episodes", "0"}, 2, "--episodes"},
		{[]string{"--expert", "--out", dir, "--episodes", "2", "--videos", "3"}, 2, "--videos"},
		{[]string{"--expert", "--out", dir, "--tasks", "juggle"}, 2, "juggle"},
		{[]string{"--expert", "--out", dir, "--rate", "0"}, 2, "--rate"},
		{[]string{"--expert", "--out", dir, "--data", dir}, 2, "--data"},
		{[]string{"--policy", filepath.Join(dir, "none.safetensors"), "--out", dir}, 1, "none.safetensors"},
	} {
		code, _, stderr := runCmd(t, append([]string{"eval"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("eval %v: exit %d, %q; want exit %d mentioning %q", c.args, code, stderr, c.code, c.want)
		}
	}
	if code, _, stderr := runCmd(t, "eval", "merge", "--out", dir); code != 2 || !strings.Contains(stderr, "shards") {
		t.Errorf("merge without shards: exit %d, %s", code, stderr)
	}
}

// ttm eval --data scores a checkpoint on recorded episodes.
func TestEvalOffline(t *testing.T) {
	dir := t.TempDir()
	spec := tinyPolicySpec(t)
	ckpt := filepath.Join(dir, "tiny.safetensors")
	if err := policy.Create(spec, 7, "", ckpt, nil); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	os.MkdirAll(data, 0o755)
	task, _ := sim.TaskByName("drawer")
	ep, err := sim.NewEpisode(task, 3, sim.Options{Height: 48, Width: 64})
	if err != nil {
		t.Fatal(err)
	}
	file := sim.EpisodeFile("drawer", 3)
	res, err := sim.RecordEpisode(filepath.Join(data, file), ep, sim.ExpertAgent{Expert: ep.Expert(sim.ExpertOptions{})}, sim.RecordOptions{})
	ep.Close()
	if err != nil {
		t.Fatal(err)
	}
	ix := &sim.Index{Version: sim.IndexVersion, Height: 48, Width: 64,
		Episodes: []sim.IndexEntry{{File: file, Task: "drawer", Family: "drawer", Instruction: res.Instruction, Seed: 3, Steps: res.Steps, Success: res.Success}}}
	if err := sim.WriteIndex(data, ix); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCmd(t, "eval", "--policy", ckpt, "--data", data, "--out", out)
	if code != 0 {
		t.Fatalf("eval --data: exit %d: %s", code, stderr)
	}
	var l struct {
		Runs []struct {
			Overall struct {
				Steps int       `json:"steps"`
				MAE   []float64 `json:"mae"`
			} `json:"overall"`
			PerFamily map[string]json.RawMessage `json:"per_family"`
		} `json:"runs"`
	}
	b, err := os.ReadFile(filepath.Join(out, "offline.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Runs) != 1 || l.Runs[0].Overall.Steps != res.Steps || len(l.Runs[0].Overall.MAE) != 11 || l.Runs[0].PerFamily["drawer"] == nil {
		t.Errorf("offline ledger: %s", b)
	}
	if !strings.Contains(stdout, "# Offline evaluation") {
		t.Errorf("stdout: %s", stdout)
	}
}

// tinyPolicySpec is the small preset on 64x80 frames: cheap steps.
func tinyPolicySpec(t *testing.T) policy.Spec {
	t.Helper()
	spec, err := policy.Preset("small")
	if err != nil {
		t.Fatal(err)
	}
	spec.Vision.Preprocess.Height, spec.Vision.Preprocess.Width = 64, 80
	spec.Backbone.Height, spec.Backbone.Width = 64, 80
	if spec.Vision.Head.Positions > 0 { // one per map position, stride 16
		spec.Vision.Head.Positions = (64 / 16) * (80 / 16)
	}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return spec
}
