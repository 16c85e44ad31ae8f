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
	probe := func(dir string) map[string]float64 {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(dir, "ledger.json"))
		if err != nil {
			t.Fatal(err)
		}
		var l struct {
			Runs []struct {
				Name      string `json:"name"`
				PerFamily map[string]struct {
					Successes int `json:"successes"`
					GoalProbe *struct {
						Frames int     `json:"frames"`
						MeanCm float64 `json:"mean_cm"`
					} `json:"goal_probe"`
				} `json:"per_family"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		cm := map[string]float64{}
		for _, r := range l.Runs {
			st := r.PerFamily["pointed_drawer"]
			if st.GoalProbe == nil || st.GoalProbe.Frames == 0 {
				t.Fatalf("%s: no goal probe error after the cue", r.Name)
			}
			t.Logf("%s: %d successes, goal probe %.1f cm after the cue", r.Name, st.Successes, st.GoalProbe.MeanCm)
			cm[r.Name] = st.GoalProbe.MeanCm
		}
		return cm
	}
	out := t.TempDir()
	args := []string{"eval", "--tasks", "pointed_drawer", "--episodes", "6", "--seed", "5001"}
	mem, nomem := filepath.Join(out, "memory"), filepath.Join(out, "no-memory")
	if code, _, stderr := runCmd(t, append(args, "--policy", filepath.Join(twinsDir, "memory/policy.safetensors"), "--ablations", "knockout", "--out", mem)...); code != 0 {
		t.Fatalf("eval the memory twin: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCmd(t, append(args, "--policy", filepath.Join(twinsDir, "no-memory/policy.safetensors"), "--no-memory", "--out", nomem)...); code != 0 {
		t.Fatalf("eval the no-memory twin: exit %d: %s", code, stderr)
	}
	m, n := probe(mem), probe(nomem)
	if m["policy"] > 10 || m["policy+knockout"] < 14 || n["policy+nomem"] < 14 {
		t.Errorf("goal probe after the cue: memory twin %.1f cm (want under 10), knocked out %.1f cm, no-memory twin %.1f cm (want over 14)",
			m["policy"], m["policy+knockout"], n["policy+nomem"])
	}
}

// cueTwinsDir holds the committed cue twins of README "A memory prior:
// the memory says where, the frame says exactly where".
const cueTwinsDir = "../../launch/checkpoints/cue-twins"

// TestCommittedCueTwins runs the committed cue twins on a few held-out
// cue_pick scenes and reads where their target keypoints are after the
// ring is gone: the memory twin's keypoint stays on the cued object (4.2
// and 2.9 px off over 50 scenes of seeds 5001 and 7001), knocked out after
// the cue it does not (28.3, 42.2), nor does the twin trained without
// memory (29.0, 29.0): the objects stand tens of pixels apart. Success
// over six scenes is too noisy to assert.
func TestCommittedCueTwins(t *testing.T) {
	if testing.Short() {
		t.Skip("closed-loop episodes")
	}
	remembered := func(dir string) map[string]float64 {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(dir, "ledger.json"))
		if err != nil {
			t.Fatal(err)
		}
		var l struct {
			Runs []struct {
				Name      string `json:"name"`
				PerFamily map[string]struct {
					Successes     int `json:"successes"`
					KeypointError []struct {
						Point  string  `json:"point"`
						Frames int     `json:"frames"`
						MeanPx float64 `json:"mean_px"`
					} `json:"keypoint_error"`
				} `json:"per_family"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		px := map[string]float64{}
		for _, r := range l.Runs {
			st := r.PerFamily["cue_pick"]
			for _, e := range st.KeypointError {
				if e.Point == "remembered_target" && e.Frames > 0 {
					t.Logf("%s: %d successes, target keypoint %.1f px off after the cue", r.Name, st.Successes, e.MeanPx)
					px[r.Name] = e.MeanPx
				}
			}
			if _, ok := px[r.Name]; !ok {
				t.Fatalf("%s: no target keypoint error after the cue", r.Name)
			}
		}
		return px
	}
	out := t.TempDir()
	args := []string{"eval", "--tasks", "cue_pick", "--episodes", "6", "--seed", "5001"}
	mem, nomem := filepath.Join(out, "memory"), filepath.Join(out, "no-memory")
	if code, _, stderr := runCmd(t, append(args, "--policy", filepath.Join(cueTwinsDir, "memory/policy.safetensors"), "--ablations", "knockout", "--out", mem)...); code != 0 {
		t.Fatalf("eval the memory twin: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCmd(t, append(args, "--policy", filepath.Join(cueTwinsDir, "no-memory/policy.safetensors"), "--no-memory", "--out", nomem)...); code != 0 {
		t.Fatalf("eval the no-memory twin: exit %d: %s", code, stderr)
	}
	m, n := remembered(mem), remembered(nomem)
	if m["policy"] > 10 || m["policy+knockout"] < 15 || n["policy+nomem"] < 15 {
		t.Errorf("target keypoint after the cue: memory twin %.1f px (want under 10), knocked out %.1f px, no-memory twin %.1f px (want over 15)",
			m["policy"], m["policy+knockout"], n["policy+nomem"])
	}
}
