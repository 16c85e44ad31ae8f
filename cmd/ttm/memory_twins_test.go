package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// twinsDir holds the committed memory twins of README "The memory
// matters".
const twinsDir = "../../launch/checkpoints/memory-twins"

// cueTwinsDir holds the committed cue twins of README "A memory prior:
// the memory says where, the frame says exactly where".
const cueTwinsDir = "../../launch/checkpoints/cue-twins"

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

// evalTwins runs the twins under dir (memory/ and no-memory/) on six
// held-out scenes of task, the memory twin with its memory knocked out
// after the cue too and the other without memory, as each was trained,
// and returns task's results per run: "policy", "policy+knockout" and
// "policy+nomem".
func evalTwins(t *testing.T, dir, task string) map[string]twinFamily {
	t.Helper()
	out := t.TempDir()
	args := []string{"eval", "--tasks", task, "--episodes", "6", "--seed", "5001"}
	mem, nomem := filepath.Join(out, "memory"), filepath.Join(out, "no-memory")
	if code, _, stderr := runCmd(t, append(args, "--policy", filepath.Join(dir, "memory/policy.safetensors"), "--ablations", "knockout", "--out", mem)...); code != 0 {
		t.Fatalf("eval the memory twin: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCmd(t, append(args, "--policy", filepath.Join(dir, "no-memory/policy.safetensors"), "--no-memory", "--out", nomem)...); code != 0 {
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
				PerFamily map[string]twinFamily `json:"per_family"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		for _, r := range l.Runs {
			runs[r.Name] = r.PerFamily[task]
		}
	}
	return runs
}

// TestCommittedMemoryTwins runs the committed twins on a few held-out
// pointed_drawer scenes and reads what their goal probes hold after the
// arrow is gone: the memory twin knows which drawer it pointed at (6.1
// and 6.2 cm over 50 scenes of seeds 5001 and 7001; 3.2 cm over these 6),
// its memory knocked out after the cue does not (21.7, 22.2; 26.0), nor
// does the twin trained without memory (19.2, 17.0; 21.6): the two
// handles are 24 cm apart. Success over six scenes is too noisy to assert
// (it was 6, 0 and 1).
func TestCommittedMemoryTwins(t *testing.T) {
	if testing.Short() {
		t.Skip("closed-loop episodes")
	}
	cm := map[string]float64{}
	for name, f := range evalTwins(t, twinsDir, "pointed_drawer") {
		if f.GoalProbe == nil || f.GoalProbe.Frames == 0 {
			t.Fatalf("%s: no goal probe error after the cue", name)
		}
		t.Logf("%s: %d successes, goal probe %.1f cm after the cue", name, f.Successes, f.GoalProbe.MeanCm)
		cm[name] = f.GoalProbe.MeanCm
	}
	if cm["policy"] > 10 || cm["policy+knockout"] < 14 || cm["policy+nomem"] < 14 {
		t.Errorf("goal probe after the cue: memory twin %.1f cm (want under 10), knocked out %.1f cm, no-memory twin %.1f cm (want over 14)",
			cm["policy"], cm["policy+knockout"], cm["policy+nomem"])
	}
}

// TestCommittedCueTwins runs the committed cue twins on a few held-out
// cue_pick scenes and reads where their target keypoints are after the
// ring is gone: the memory twin's keypoint stays on the cued object (4.2
// and 2.9 px off over 50 scenes of seeds 5001 and 7001; 3.5 px over these
// 6), knocked out after the cue it does not (28.3, 42.2; 35.1), nor does
// the twin trained without memory (29.0, 29.0; 25.4): the objects stand
// tens of pixels apart. Success over six scenes is too noisy to assert
// (it was 3, 0 and 1).
func TestCommittedCueTwins(t *testing.T) {
	if testing.Short() {
		t.Skip("closed-loop episodes")
	}
	px := map[string]float64{}
	for name, f := range evalTwins(t, cueTwinsDir, "cue_pick") {
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
	if px["policy"] > 10 || px["policy+knockout"] < 15 || px["policy+nomem"] < 15 {
		t.Errorf("target keypoint after the cue: memory twin %.1f px (want under 10), knocked out %.1f px, no-memory twin %.1f px (want over 15)",
			px["policy"], px["policy+knockout"], px["policy+nomem"])
	}
}
