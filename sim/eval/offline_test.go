package eval

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
)

// Hand-computed scores of two steps.
func TestErrorSums(t *testing.T) {
	space := action.RT1()
	s := newErrorSums(space)
	pred := make([]float32, 11)
	rec := make([]float32, 11)
	// Step 1: mode arm vs arm; x 0.5 vs 0.25 (|d| 0.25, bins 191 vs 159);
	// gripper 1 vs 3 (recorded value clamped to 1: no error, same bin).
	pred[action.DimMode], rec[action.DimMode] = 1, 1
	pred[action.DimWorldX], rec[action.DimWorldX] = 0.5, 0.25
	pred[action.DimGripper], rec[action.DimGripper] = 1, 3
	s.add(pred, rec)
	// Step 2: mode terminate vs base (|d| 2, other category); x 0.5 vs
	// 0.5, but a base step does not score the arm; gripper 1 vs 1; base y
	// 0.3 vs 0.
	pred[action.DimMode], rec[action.DimMode] = 0, 2
	rec[action.DimWorldX] = 0.5
	rec[action.DimGripper] = 1
	pred[action.DimBaseY] = 0.3
	s.add(pred, rec)
	// Step 3: arm vs arm; x 0.5 vs 0.5; base y not scored.
	pred[action.DimMode], rec[action.DimMode] = 1, 1
	s.add(pred, rec)
	e := s.result()
	if e.Steps != 3 {
		t.Fatalf("%d steps", e.Steps)
	}
	if want := []int{3, 2, 2, 2, 2, 2, 2, 3, 1, 1, 1}; !slices.Equal(e.DimSteps, want) {
		t.Errorf("steps scored per dimension %v, want %v", e.DimSteps, want)
	}
	check := func(dim int, mae, acc float64) {
		t.Helper()
		if math.Abs(e.MAE[dim]-mae) > 1e-7 || e.BinAccuracy[dim] == nil || math.Abs(*e.BinAccuracy[dim]-acc) > 1e-12 {
			t.Errorf("%s: MAE %g, accuracy %v; want %g and %g", space.Dims[dim].Name, e.MAE[dim], e.BinAccuracy[dim], mae, acc)
		}
	}
	check(action.DimMode, 2.0/3, 2.0/3) // (0 + 2 + 0)/3; 2 of 3 categories right
	check(action.DimWorldX, 0.125, 0.5) // (0.25 + 0)/2 over the arm steps; bins differ once
	check(action.DimGripper, 0, 1)      // clamped, equal
	check(action.DimBaseY, 0.3, 0)      // the base step alone
	if s.space.Dims[action.DimWorldX].Bin(0.5) == s.space.Dims[action.DimWorldX].Bin(0.25) {
		t.Fatal("test premise: 0.5 and 0.25 share a bin")
	}
}

// writeDataset records expert episodes with the sim's bag writer and
// indexes them.
func writeDataset(t *testing.T, dir string, spec map[string]int) *sim.Index {
	t.Helper()
	ix := &sim.Index{Version: sim.IndexVersion, Height: 64, Width: 80, Agent: "expert"}
	for _, name := range []string{"pick", "cue_pick", "drawer"} {
		n := spec[name]
		task, _ := sim.TaskByName(name)
		for seed := uint64(1); seed <= uint64(n); seed++ {
			ep, err := sim.NewEpisode(task, seed, sim.Options{Height: 64, Width: 80})
			if err != nil {
				t.Fatal(err)
			}
			file := sim.EpisodeFile(name, seed)
			_, err = sim.RecordEpisode(filepath.Join(dir, file), ep, sim.ExpertAgent{Expert: ep.Expert(sim.ExpertOptions{})},
				sim.RecordOptions{Start: time.Unix(1700000000, 0)})
			ep.Close()
			if err != nil {
				t.Fatal(err)
			}
			rec, err := sim.ReadEpisode(filepath.Join(dir, file), sim.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ix.Episodes = append(ix.Episodes, sim.IndexEntryFor(file, rec.Info))
		}
	}
	if err := sim.WriteIndex(dir, ix); err != nil {
		t.Fatal(err)
	}
	return ix
}

func TestOffline(t *testing.T) {
	data := t.TempDir()
	ix := writeDataset(t, data, map[string]int{"pick": 1, "cue_pick": 1, "drawer": 1})
	path := tinyCheckpoint(t, 5)
	runs, err := PolicyRuns("tiny", path, []Ablation{AblationNone, AblationNoMemory, AblationKnockout}, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := OfflineConfig{Data: data, Tasks: tasks(t, "pick,cue_pick"), Runs: runs, Workers: 2}
	led, err := EvaluateOffline(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, e := range ix.Episodes {
		if e.Task != "drawer" {
			want += e.Steps
		}
	}
	for _, r := range led.Runs {
		if r.Overall.Steps != want || len(r.Episodes) != 2 || len(r.PerFamily) != 2 {
			t.Errorf("%s: %d steps in %d episodes, families %v; want %d steps of pick and cue_pick", r.Name, r.Overall.Steps, len(r.Episodes), keys(r.PerFamily), want)
		}
		for i, m := range r.Overall.MAE {
			d := action.RT1().Dims[i]
			if m < 0 || m > d.High-d.Low || r.Overall.BinAccuracy[i] == nil || *r.Overall.BinAccuracy[i] < 0 || *r.Overall.BinAccuracy[i] > 1 {
				t.Errorf("%s %s: MAE %g, accuracy %v", r.Name, d.Name, m, r.Overall.BinAccuracy[i])
			}
		}
	}
	if a, b := led.Runs[0].Overall.MAE, led.Runs[1].Overall.MAE; equalFloats(a, b) {
		t.Error("the no-memory run scores exactly as the plain one: the ablation did nothing")
	}

	// The first episode by hand: teacher-forced steps of a fresh agent.
	p := loadTiny(t, 5)
	agent := NewPolicyAgent(p)
	rec, err := sim.ReadEpisode(filepath.Join(data, led.Runs[0].Episodes[0].File), sim.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	agent.Reset(rec.Info.Instruction)
	var absX float64
	modeHits, armSteps := 0, 0
	for k, st := range rec.Steps {
		pred, err := agent.Act(&sim.Observation{Image: st.Image, Height: 64, Width: 80, Step: k})
		if err != nil {
			t.Fatal(err)
		}
		if math.Round(float64(st.Action[action.DimMode])) == action.ModeArm {
			absX += math.Abs(float64(pred[action.DimWorldX]) - float64(st.Action[action.DimWorldX]))
			armSteps++
		}
		if math.Round(float64(pred[action.DimMode])) == math.Round(float64(st.Action[action.DimMode])) {
			modeHits++
		}
		copy(agent.State().Prev, st.Action)
	}
	got := led.Runs[0].Episodes[0].Error
	n := float64(len(rec.Steps))
	if armSteps == 0 || armSteps == len(rec.Steps) {
		t.Fatalf("test premise: %d of %d recorded steps in arm mode", armSteps, len(rec.Steps))
	}
	if math.Abs(got.MAE[action.DimWorldX]-absX/float64(armSteps)) > 1e-9 || math.Abs(*got.BinAccuracy[action.DimMode]-float64(modeHits)/n) > 1e-12 {
		t.Errorf("episode 0: x MAE %g, mode accuracy %g; by hand %g and %g", got.MAE[action.DimWorldX], *got.BinAccuracy[action.DimMode], absX/float64(armSteps), float64(modeHits)/n)
	}

	// Deterministic, and written.
	again, err := EvaluateOffline(context.Background(), OfflineConfig{Data: data, Tasks: cfg.Tasks, Runs: runs[2:], Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := json.Marshal(led.Runs[2])
	b2, _ := json.Marshal(again.Runs[0])
	if string(b1) != string(b2) {
		t.Error("two offline evaluations differ")
	}
	out := t.TempDir()
	if err := WriteOffline(out, led); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(out, SummaryFile))
	for _, want := range []string{"## tiny+nomem", "| cue_pick |", "world_vector/x", "bin accuracy per dimension"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("offline summary lacks %q", want)
		}
	}

	// A regressed arm scores on the same recordings: its arm has an error
	// and no bin accuracy, its binned dimensions keep theirs.
	spec := tinySpec(t)
	spec.Policy.ActionSpace = action.RT1ContinuousArm()
	contPath := filepath.Join(t.TempDir(), "continuous.safetensors")
	if err := policy.Create(spec, 5, "", contPath, nil); err != nil {
		t.Fatal(err)
	}
	contRuns, err := PolicyRuns("continuous", contPath, nil, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cont, err := EvaluateOffline(context.Background(), OfflineConfig{Data: data, Tasks: cfg.Tasks, Runs: contRuns, Workers: 1})
	if err != nil {
		t.Fatalf("a regressed arm offline: %v", err)
	}
	for i, d := range spec.Policy.ActionSpace.Dims {
		acc := cont.Runs[0].Overall.BinAccuracy[i]
		if (d.Bins == 0) != (acc == nil) || !(cont.Runs[0].Overall.MAE[i] >= 0) {
			t.Errorf("continuous %s: MAE %g, accuracy %v", d.Name, cont.Runs[0].Overall.MAE[i], acc)
		}
	}

	// Errors name what is wrong.
	for _, c := range []struct {
		cfg  OfflineConfig
		want string
	}{
		{OfflineConfig{Data: t.TempDir(), Runs: runs}, "index"},
		{OfflineConfig{Data: data, Tasks: tasks(t, "knock"), Runs: runs}, "no episodes"},
		{OfflineConfig{Data: data, Runs: []RunSpec{ExpertRun(sim.ExpertOptions{})}}, "not a policy"},
	} {
		if _, err := EvaluateOffline(context.Background(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

func equalFloats(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// The nomem ablation applies to ttm checkpoints only: for another sequence
// model it is left out of the runs, and asked for alone it is an error.
func TestPolicyRunsNoMemoryNeedsTTM(t *testing.T) {
	spec := tinySpec(t)
	spec.Policy.Model = "lstm"
	path := filepath.Join(t.TempDir(), "lstm.safetensors")
	if err := policy.Create(spec, 1, "", path, nil); err != nil {
		t.Fatal(err)
	}
	runs, err := PolicyRuns("lstm", path, []Ablation{AblationNone, AblationNoMemory, AblationKnockout}, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range runs {
		names = append(names, r.Name)
	}
	if want := []string{"lstm", "lstm+knockout"}; !slices.Equal(names, want) {
		t.Errorf("runs %v, want %v", names, want)
	}
	if _, err := PolicyRuns("lstm", path, []Ablation{AblationNoMemory}, policy.Options{}); err == nil || !strings.Contains(err.Error(), `runs "lstm"`) {
		t.Errorf("nomem alone on an lstm checkpoint: %v", err)
	}
	runs, err = PolicyRuns("tiny", tinyCheckpoint(t, 1), []Ablation{AblationNone, AblationNoMemory}, policy.Options{})
	if err != nil || len(runs) != 2 || runs[1].Name != "tiny+nomem" {
		t.Errorf("ttm checkpoint: runs %+v, %v", runs, err)
	}
}

// A checkpoint trained without memory runs without as it is: every run of
// it says so (Memory), its nomem variant is its plain run, and a
// checkpoint with memory keeps its runs as they were.
func TestPolicyRunsNoMemoryCheckpoint(t *testing.T) {
	spec := tinySpec(t)
	spec.TTM.NoMemory = true
	nomem := filepath.Join(t.TempDir(), "nomem.safetensors")
	if err := policy.Create(spec, 1, "", nomem, nil); err != nil {
		t.Fatal(err)
	}
	type run struct {
		Name     string
		Ablation Ablation
		Memory   string
	}
	for _, tc := range []struct {
		name     string
		path     string
		variants []Ablation
		want     []run
	}{
		{"no-memory checkpoint, every variant", nomem, []Ablation{AblationNone, AblationNoMemory, AblationKnockout},
			[]run{{"n", AblationNone, MemoryCheckpoint}, {"n+knockout", AblationKnockout, MemoryCheckpoint}}},
		{"no-memory checkpoint, nomem alone", nomem, []Ablation{AblationNoMemory},
			[]run{{"n", AblationNone, MemoryCheckpoint}}},
		{"no-memory checkpoint, nomem and knockout", nomem, []Ablation{AblationNoMemory, AblationKnockout},
			[]run{{"n", AblationNone, MemoryCheckpoint}, {"n+knockout", AblationKnockout, MemoryCheckpoint}}},
		{"memory checkpoint", tinyCheckpoint(t, 1), []Ablation{AblationNone, AblationNoMemory},
			[]run{{"n", AblationNone, ""}, {"n+nomem", AblationNoMemory, ""}}},
	} {
		runs, err := PolicyRuns("n", tc.path, tc.variants, policy.Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []run
		for _, r := range runs {
			got = append(got, run{r.Name, r.Ablation, r.Memory})
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: runs %v, want %v", tc.name, got, tc.want)
		}
	}
}
