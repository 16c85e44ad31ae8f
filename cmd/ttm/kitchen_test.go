package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/sim/eval"
)

// kitchenDir and kitchenTwinDir hold the committed kitchen policy and its
// no-memory twin, the same recipe trained without memory (README
// "Results").
const (
	kitchenDir     = "../../launch/checkpoints/kitchen"
	kitchenTwinDir = "../../launch/checkpoints/kitchen-nomem"
)

// twinFamily is what the committed twins' tests read of one family in a
// ledger.
type twinFamily struct {
	Successes int `json:"successes"`
	GoalProbe *struct {
		Frames int     `json:"frames"`
		MeanCm float64 `json:"mean_cm"`
	} `json:"goal_probe"`
	KeypointError []struct {
		Point  string  `json:"point"`
		Frames int     `json:"frames"`
		MeanPx float64 `json:"mean_px"`
	} `json:"keypoint_error"`
}

// evalTwins runs the kitchen policy and its no-memory twin on six
// held-out scenes of task, each as it is (the twin's checkpoint says it
// runs without memory), the policy with its memory knocked out after the
// cue too, and returns task's results per run: "policy",
// "policy+knockout" and "no-memory twin".
func evalTwins(t *testing.T, task string) map[string]twinFamily {
	t.Helper()
	out := t.TempDir()
	args := []string{"eval", "--tasks", task, "--episodes", "6", "--seed", "5001"}
	mem, nomem := filepath.Join(out, "memory"), filepath.Join(out, "no-memory")
	if code, _, stderr := runCmd(t, append(args, "--policy", filepath.Join(kitchenDir, "policy.safetensors"), "--ablations", "knockout", "--out", mem)...); code != 0 {
		t.Fatalf("eval the kitchen policy: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCmd(t, append(args, "--policy", filepath.Join(kitchenTwinDir, "policy.safetensors"), "--out", nomem)...); code != 0 {
		t.Fatalf("eval the no-memory twin: exit %d: %s", code, stderr)
	}
	runs := map[string]twinFamily{}
	for _, ledger := range []string{mem, nomem} {
		raw, err := os.ReadFile(filepath.Join(ledger, "ledger.json"))
		if err != nil {
			t.Fatal(err)
		}
		var l struct {
			Runs []struct {
				Name      string                `json:"name"`
				Ablation  string                `json:"ablation"`
				Memory    string                `json:"memory"`
				PerFamily map[string]twinFamily `json:"per_family"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		for _, r := range l.Runs {
			name := r.Name
			if ledger == nomem {
				if r.Ablation != "none" || r.Memory != "none (checkpoint)" {
					t.Fatalf("the no-memory twin's run %s: ablation %q, memory %q; want none, and none (checkpoint)", r.Name, r.Ablation, r.Memory)
				}
				name = "no-memory twin"
			} else if r.Memory != "" {
				t.Fatalf("the kitchen policy's run %s: memory %q, want none given", r.Name, r.Memory)
			}
			runs[name] = r.PerFamily[task]
		}
	}
	return runs
}

// TestCommittedKitchenRemembersTheSpot runs the kitchen policy and its
// twin on a few held-out put_back scenes and reads what their goal probes
// hold once the object has slid away: the policy knows the spot it stood
// on (6.6 cm off over 50 scenes of seeds 30001; 5.3 over these 6),
// knocked out after the slide it does not (40.1; 27.8), nor does the twin
// trained without memory (27.3; 23.5). Success over six scenes is too
// noisy to assert.
func TestCommittedKitchenRemembersTheSpot(t *testing.T) {
	if testing.Short() {
		t.Skip("closed-loop episodes")
	}
	cm := map[string]float64{}
	for name, f := range evalTwins(t, "put_back") {
		if f.GoalProbe == nil || f.GoalProbe.Frames == 0 {
			t.Fatalf("%s: no goal probe error after the cue", name)
		}
		t.Logf("%s: %d successes, goal probe %.1f cm after the slide", name, f.Successes, f.GoalProbe.MeanCm)
		cm[name] = f.GoalProbe.MeanCm
	}
	if cm["policy"] > 12 || cm["policy+knockout"] < 18 || cm["no-memory twin"] < 18 {
		t.Errorf("goal probe after the slide: policy %.1f cm (want under 12), knocked out %.1f cm, no-memory twin %.1f cm (want over 18)",
			cm["policy"], cm["policy+knockout"], cm["no-memory twin"])
	}
}

// TestCommittedKitchenRemembersTheRing runs the kitchen policy and its twin
// on a few held-out cue_pick scenes and reads where their target keypoints
// are after the ring is gone: the policy's stays on the cued object (1.2
// px off over 50 scenes of seeds 30001; 1.4 over these 6), knocked out
// after the cue it does not (26.7; 31.2), nor does the twin's (25.5;
// 28.4): the objects stand tens of pixels apart. Success over six scenes
// is too noisy to assert.
func TestCommittedKitchenRemembersTheRing(t *testing.T) {
	if testing.Short() {
		t.Skip("closed-loop episodes")
	}
	px := map[string]float64{}
	for name, f := range evalTwins(t, "cue_pick") {
		for _, e := range f.KeypointError {
			if e.Point == "remembered_target" && e.Frames > 0 {
				t.Logf("%s: %d successes, target keypoint %.1f px off after the cue", name, f.Successes, e.MeanPx)
				px[name] = e.MeanPx
			}
		}
		if _, ok := px[name]; !ok {
			t.Fatalf("%s: no target keypoint error after the cue", name)
		}
	}
	if px["policy"] > 10 || px["policy+knockout"] < 15 || px["no-memory twin"] < 15 {
		t.Errorf("target keypoint after the cue: policy %.1f px (want under 10), knocked out %.1f px, no-memory twin %.1f px (want over 15)",
			px["policy"], px["policy+knockout"], px["no-memory twin"])
	}
}

// actionRecorder is a sim.Agent that keeps every action its agent takes.
type actionRecorder struct {
	sim.Agent
	actions [][]float32
}

func (r *actionRecorder) Act(o *sim.Observation) ([]float32, error) {
	a, err := r.Agent.Act(o)
	if err == nil {
		r.actions = append(r.actions, append([]float32(nil), a...))
	}
	return a, err
}

// twinActions plays one cue_pick episode with the checkpoint at path,
// loaded as every consumer loads it, after setup (nil: none), and returns
// its actions.
func twinActions(t *testing.T, path string, setup func(*policy.Policy) error) [][]float32 {
	t.Helper()
	p, err := policy.Load(path, policy.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if setup != nil {
		if err := setup(p); err != nil {
			t.Fatal(err)
		}
	}
	task, err := sim.TaskByName("cue_pick")
	if err != nil {
		t.Fatal(err)
	}
	pre := p.Spec().Vision.Preprocess
	ep, err := sim.NewEpisode(task, 5001, sim.Options{Height: pre.Height, Width: pre.Width})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	rec := &actionRecorder{Agent: eval.NewPolicyAgent(p)}
	if _, err := sim.Run(ep, rec, nil); err != nil {
		t.Fatal(err)
	}
	return rec.actions
}

// sameActions reports whether a and b are the same actions, bit for bit.
func sameActions(a, b [][]float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
				return false
			}
		}
	}
	return true
}

// TestCommittedNoMemoryTwinRunsWithoutMemory loads the committed
// no-memory twin as the node, ttm eval, ttm sim and ttm replay do, with no
// flag: its checkpoint says it was trained without memory, so it acts
// exactly as with the no-memory ablation switched on, and not as the same
// weights with the memory switched back on.
func TestCommittedNoMemoryTwinRunsWithoutMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("closed-loop episodes")
	}
	path := filepath.Join(kitchenTwinDir, "policy.safetensors")
	asIs := twinActions(t, path, nil)
	ablated := twinActions(t, path, func(p *policy.Policy) error { return p.SetNoMemory(true) })
	withMemory := twinActions(t, path, func(p *policy.Policy) error { return p.SetNoMemory(false) })
	if len(asIs) < 2 {
		t.Fatalf("%d steps: too short an episode to tell", len(asIs))
	}
	if !sameActions(asIs, ablated) {
		t.Errorf("as loaded, the twin's %d actions differ from its %d with the no-memory ablation", len(asIs), len(ablated))
	}
	if sameActions(asIs, withMemory) {
		t.Errorf("as loaded, the twin's %d actions are those it takes with its memory switched on", len(asIs))
	}
}
