package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/policy/dataset"
	"github.com/ttmrobot/ttm/sim"
)

// stepLog is an agent wrapper keeping each executed action and, for a
// DAgger agent, checking its label against a twin expert stepped along the
// same states.
type stepLog struct {
	agent sim.Agent
	twin  sim.Expert // nil: no label check
	acts  [][]float32
	bad   []int // steps whose label differs from the twin's action
}

func (s *stepLog) Reset(ins string) { s.agent.Reset(ins) }
func (s *stepLog) Act(o *sim.Observation) ([]float32, error) {
	a, err := s.agent.Act(o)
	if err != nil {
		return nil, err
	}
	s.acts = append(s.acts, slices.Clone(a))
	if s.twin != nil {
		if want := s.twin.Act(o.State); !slices.Equal(s.agent.(sim.Labeler).Label(), want) {
			s.bad = append(s.bad, o.Step)
		}
	}
	return a, nil
}

// With beta = 0 a real (untrained, arm-mode: it acts until the step cap)
// small policy drives the world exactly as it does alone, while the steps are labelled with what a noise-free expert
// says on the states the policy reached.
func TestDAggerPolicyBetaZero(t *testing.T) {
	p, err := policy.Load(smallPolicy(t), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	agent := newPolicyAgent(p)
	task, _ := sim.TaskByName("pick")
	play := func(dagger bool) (sim.Result, *stepLog) {
		ep, err := sim.NewEpisode(task, 4, sim.Options{Height: 128, Width: 160})
		if err != nil {
			t.Fatal(err)
		}
		defer ep.Close()
		log := &stepLog{agent: agent}
		if dagger {
			if log.agent, err = sim.NewEpisodeDAgger(ep, agent, 0); err != nil {
				t.Fatal(err)
			}
			log.twin = ep.Expert(sim.ExpertOptions{})
		}
		res, err := sim.Run(ep, log, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res, log
	}
	want, alone := play(false)
	got, dag := play(true)
	if got != want || !slices.EqualFunc(dag.acts, alone.acts, slices.Equal) {
		t.Fatalf("beta 0: %+v over %d actions; the policy alone: %+v over %d", got, len(dag.acts), want, len(alone.acts))
	}
	if len(dag.bad) > 0 {
		t.Errorf("labels differ from a fresh expert's actions at steps %v", dag.bad)
	}
	t.Logf("policy alone and beta 0: %d steps, success %v", got.Steps, got.Success)
}

// ttm record --label expert --beta 1 records what ttm record --experts
// records: the expert's action is executed at every step.
func TestRecordDAggerBetaOne(t *testing.T) {
	ckpt := smallPolicy(t)
	root := t.TempDir()
	experts, dagger := filepath.Join(root, "experts"), filepath.Join(root, "dagger")
	common := []string{"--tasks", "drawer", "--episodes", "1", "--seed", "3", "--size", "128x160"}
	if code, _, stderr := runCmd(t, append([]string{"record", "--experts", "--out", experts}, common...)...); code != 0 {
		t.Fatalf("record --experts: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCmd(t, append([]string{"record", "--policy", ckpt, "--label", "expert", "--beta", "1", "--out", dagger}, common...)...); code != 0 {
		t.Fatalf("record --label expert --beta 1: exit %d: %s", code, stderr)
	}
	a, b := checkDataset(t, experts), checkDataset(t, dagger)
	if b.Agent != "dagger:small.safetensors:beta=1" || b.Episodes[0].Label != sim.LabelExpert || a.Episodes[0].Label != "" {
		t.Errorf("dagger index %+v, expert index %+v", b, a)
	}
	ea, eb := a.Episodes[0], b.Episodes[0]
	if eb.Label = ""; ea != eb || !ea.Success {
		t.Fatalf("beta 1 episode %+v, expert episode %+v", b.Episodes[0], ea)
	}
	x, err := sim.ReadEpisode(filepath.Join(experts, ea.File), sim.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	y, err := sim.ReadEpisode(filepath.Join(dagger, ea.File), sim.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k := range x.Steps {
		xs, ys := x.Steps[k], y.Steps[k]
		if !bytes.Equal(xs.Image, ys.Image) || !slices.Equal(xs.Action, ys.Action) || !slices.Equal(xs.Keypoints, ys.Keypoints) ||
			!slices.Equal(xs.Proprio, ys.Proprio) || len(ys.Keypoints) == 0 || len(ys.Proprio) == 0 {
			t.Fatalf("step %d differs: expert's action %v, keypoints %v, proprioception %v; dagger's %v, %v, %v", k, xs.Action, xs.Keypoints, xs.Proprio, ys.Action, ys.Keypoints, ys.Proprio)
		}
	}
	if y.Info.Label != sim.LabelExpert || y.Info.Agent != b.Agent {
		t.Errorf("bag info %+v", y.Info)
	}
}

// ttm record --experts --noise X --label expert (DART): the frames are
// those of the noisy expert's episode, the recorded actions the noise-free
// expert's on each state it reached, and they differ from the executed
// ones wherever the noise moved the arm.
func TestRecordDART(t *testing.T) {
	dir := t.TempDir()
	args := []string{"record", "--experts", "--noise", "0.3", "--base-noise", "0.1", "--label", "expert",
		"--tasks", "pick,knock", "--episodes", "2", "--size", "64x80", "--out", dir}
	if code, _, stderr := runCmd(t, args...); code != 0 {
		t.Fatalf("record: exit %d: %s", code, stderr)
	}
	ix := checkDataset(t, dir)
	if want := "expert noise=0.3 base_noise=0.1 pause=0 label=expert"; ix.Agent != want {
		t.Errorf("index agent %q, want %q", ix.Agent, want)
	}
	noisy := sim.ExpertOptions{Noise: 0.3, BaseNoise: 0.1}
	relabelled := 0
	for _, e := range ix.Episodes {
		if e.Label != sim.LabelExpert {
			t.Errorf("%s: label %q", e.File, e.Label)
		}
		rec, err := sim.ReadEpisode(filepath.Join(dir, e.File), sim.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		task, _ := sim.TaskByName(e.Task)
		ep, err := sim.NewEpisode(task, e.Seed, sim.Options{Height: 64, Width: 80})
		if err != nil {
			t.Fatal(err)
		}
		actor, labeler := ep.Expert(noisy), ep.Expert(sim.ExpertOptions{})
		img := make([]byte, 64*80*3)
		for k, st := range rec.Steps {
			if err := ep.Render(img); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(img, st.Image) {
				t.Fatalf("%s step %d: the frame is not the noisy expert's", e.File, k)
			}
			a := slices.Clone(actor.Act(ep.State()))
			if want := labeler.Act(ep.State()); !slices.Equal(st.Action, want) {
				t.Fatalf("%s step %d: recorded %v, the noise-free expert says %v", e.File, k, st.Action, want)
			}
			if !slices.Equal(st.Action, a) {
				relabelled++
			}
			if _, err := ep.Step(a); err != nil {
				t.Fatal(err)
			}
		}
		ep.Close()
	}
	if relabelled == 0 {
		t.Error("no recorded action differs from the executed one: the noise did not act")
	}
	t.Logf("%d steps labelled differently from what was executed", relabelled)
}

// The DAgger loop's data step: expert episodes, DAgger episodes of an
// untrained small policy (failed rollouts, kept for their expert labels) and a plain policy
// rollout (failed, skipped), trained on together with --data A,B,C; the
// run's log counts what each dataset gave. Resuming with the datasets in
// another order is refused.
func TestTrainDAggerDatasets(t *testing.T) {
	ckpt := smallPolicy(t)
	root := t.TempDir()
	experts, dagger, rollouts := filepath.Join(root, "experts"), filepath.Join(root, "dagger"), filepath.Join(root, "rollouts")
	for _, args := range [][]string{
		{"record", "--experts", "--tasks", "pick", "--episodes", "2", "--size", "128x160", "--out", experts},
		// 12 steps are too few to pick anything: the rollouts fail.
		{"record", "--policy", ckpt, "--label", "expert", "--beta", "0.5", "--tasks", "pick", "--episodes", "2", "--max-steps", "12", "--size", "128x160", "--out", dagger},
		{"record", "--policy", ckpt, "--tasks", "pick", "--episodes", "1", "--max-steps", "12", "--out", rollouts},
	} {
		if code, _, stderr := runCmd(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	ix := map[string]*sim.Index{}
	for _, d := range []string{experts, dagger, rollouts} {
		ix[d] = checkDataset(t, d)
	}
	if want := "dagger:small.safetensors:beta=0.5 max_steps=12"; ix[dagger].Agent != want {
		t.Errorf("dagger index agent %q, want %q", ix[dagger].Agent, want)
	}
	steps := func(d string) int {
		n := 0
		for _, e := range ix[d].Episodes {
			n += e.Steps
		}
		return n
	}
	for _, e := range ix[dagger].Episodes {
		if e.Label != sim.LabelExpert || e.Success || e.Steps != 12 {
			t.Fatalf("dagger entry %+v: want a failed 12-step expert-labelled episode", e)
		}
	}
	for _, e := range ix[experts].Episodes {
		if !e.Success {
			t.Fatalf("expert entry %+v failed", e)
		}
	}
	if e := ix[rollouts].Episodes[0]; e.Success || e.Label != "" {
		t.Fatalf("rollout entry %+v: want a failed, unlabelled episode", e)
	}

	out := filepath.Join(t.TempDir(), "round1", "p.safetensors") // a folder --init must create
	data := experts + "," + dagger + "," + rollouts
	args := []string{"train", "--data", data, "--init", ckpt, "--out", out, "--steps", "2", "--batch", "2", "--window", "4",
		"--log-every", "1", "--checkpoint-every", "2"}
	code, _, stderr := runCmd(t, args...)
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	var lg trainLog
	b, err := os.ReadFile(newTrainFiles(out).log)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &lg); err != nil {
		t.Fatalf("JSON log: %v", err)
	}
	rate := 1 / sim.StepPeriod.Seconds()
	want := []dataset.Use{
		{Dir: experts, Indexed: 2, Episodes: 2, Steps: steps(experts), Rate: rate},
		{Dir: dagger, Indexed: 2, Episodes: 2, Steps: 24, ExpertLabelled: 2, FailedKept: 2, Rate: rate},
		{Dir: rollouts, Indexed: 1, Skipped: 1},
	}
	if lg.Data != data || !slices.Equal(lg.Datasets, want) || lg.Episodes != 4 || lg.Steps != steps(experts)+24 || len(lg.History) != 2 {
		t.Errorf("JSON log: data %q, datasets %+v, %d episodes, %d steps, %d records;\nwant datasets %+v, 4 episodes, %d steps, 2 records",
			lg.Data, lg.Datasets, lg.Episodes, lg.Steps, len(lg.History), want, steps(experts)+24)
	}
	for _, w := range []string{"episodes=4", "expert_labelled=2", "failed_kept=2", "skipped=1"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("train log lacks %q:\n%s", w, stderr)
		}
	}
	// Each dataset keeps its own feature cache.
	for _, d := range []string{experts, dagger} {
		if got, _ := filepath.Glob(filepath.Join(d, ".features", "*", "*.safetensors")); len(got) != 2 {
			t.Errorf("%s: feature cache holds %v, want 2 episodes", d, got)
		}
	}

	// One shared --cache folder: a subfolder per dataset, so the two
	// datasets' pick-000001 never share a cache file.
	cache := filepath.Join(root, "cache")
	shared := []string{"train", "--data", experts + "," + dagger, "--init", ckpt, "--out", filepath.Join(t.TempDir(), "q.safetensors"),
		"--cache", cache, "--steps", "1", "--batch", "2", "--window", "4"}
	if code, _, stderr := runCmd(t, shared...); code != 0 || !strings.Contains(stderr, "episodes=4") {
		t.Fatalf("train --cache: exit %d: %s", code, stderr)
	}
	for _, d := range []string{experts, dagger} {
		if got, _ := filepath.Glob(filepath.Join(cache, dataset.CacheName(d), "*", "*.safetensors")); len(got) != 2 {
			t.Errorf("shared cache for %s holds %v, want 2 episodes", d, got)
		}
	}

	// The state file resumes only on the same episodes in the same order.
	more := slices.Clone(args)
	more[slices.Index(more, "--steps")+1] = "4"
	swapped := slices.Clone(more)
	swapped[2] = dagger + "," + experts + "," + rollouts
	if code, _, stderr := runCmd(t, swapped...); code != 1 || !strings.Contains(stderr, "made on other episodes") {
		t.Errorf("resume with the datasets swapped: exit %d: %s", code, stderr)
	}
	// A copy of a dataset in another folder has the same bag names and
	// lengths, but it is another dataset.
	copied := filepath.Join(root, "experts-copy")
	if err := os.CopyFS(copied, os.DirFS(experts)); err != nil {
		t.Fatal(err)
	}
	other := slices.Clone(more)
	other[2] = copied + "," + dagger + "," + rollouts
	if code, _, stderr := runCmd(t, other...); code != 1 || !strings.Contains(stderr, "made on other episodes") {
		t.Errorf("resume with a copy of a dataset: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCmd(t, more...); code != 0 || !strings.Contains(stderr, "resumed") || !strings.Contains(stderr, "encoded=0") {
		t.Errorf("resume with the same datasets: exit %d: %s", code, stderr)
	}
}

func TestRecordDAggerUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"other label", []string{"record", "--policy", "x.safetensors", "--label", "human", "--out", dir}, `--label "human"`},
		{"beta for experts", []string{"record", "--experts", "--label", "expert", "--beta", "0.5", "--out", dir}, "--beta is for --policy"},
		{"beta without label", []string{"record", "--policy", "x.safetensors", "--beta", "0.3", "--out", dir}, "--beta needs --label expert"},
		{"beta above 1", []string{"record", "--policy", "x.safetensors", "--label", "expert", "--beta", "1.5", "--out", dir}, "--beta 1.5"},
		{"negative beta", []string{"record", "--policy", "x.safetensors", "--label", "expert", "--beta", "-0.1", "--out", dir}, "--beta -0.1"},
		{"label with ros", []string{"record", "--ros", "--label", "expert", "--out", "x.bag"}, "--label does not apply to --ros"},
		{"expert noise", []string{"record", "--policy", "x.safetensors", "--label", "expert", "--noise", "0.1", "--out", dir}, "are for --experts"},
		{"pause for a policy", []string{"record", "--policy", "x.safetensors", "--pause", "0.3", "--out", dir}, "are for --experts"},
		{"pause with ros", []string{"record", "--ros", "--pause", "0.3", "--out", "x.bag"}, "--pause does not apply to --ros"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, stderr := runCmd(t, tc.args...); code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %s; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
	if code, _, stderr := runCmd(t, "record", "-h"); code != 0 || !strings.Contains(stderr, "--label expert [--beta B]") || !strings.Contains(stderr, "DAgger") {
		t.Errorf("record -h: exit %d, no DAgger synopsis:\n%s", code, stderr)
	}
}

func TestTrainDataUsage(t *testing.T) {
	for _, tc := range []struct {
		data, want string
	}{
		{"a,,b", "an empty folder name"},
		{"a,", "an empty folder name"},
		{"a,b,a", "twice"},
		{"a,./a", "twice"},
	} {
		if code, _, stderr := runCmd(t, "train", "--data", tc.data, "--out", "x.safetensors"); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("--data %s: exit %d, %s; want 2 and %q", tc.data, code, stderr, tc.want)
		}
	}
}

// splitDataFlag never panics; what it accepts is the flag's folders in
// order, none empty, none twice.
func FuzzSplitDataFlag(f *testing.F) {
	for _, s := range []string{"data", "a,b", "a,,b", ",", "a,./a", "/x/y,z/", " a , b ", "a,b,a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		dirs, err := splitDataFlag(data)
		if err != nil {
			if dirs != nil || !errors.Is(err, errUsage) {
				t.Fatalf("%q: %v, %v; want a usage error alone", data, dirs, err)
			}
			return
		}
		if strings.Join(dirs, ",") != data {
			t.Fatalf("%q split into %q", data, dirs)
		}
		seen := map[string]bool{}
		for _, d := range dirs {
			if strings.TrimSpace(d) == "" || seen[mustAbs(d)] {
				t.Fatalf("%q: accepted %q", data, dirs)
			}
			seen[mustAbs(d)] = true
		}
	})
}
