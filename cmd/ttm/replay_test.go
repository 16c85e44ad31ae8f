package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/sim"
)

func replayJSON(t *testing.T, args ...string) replayReport {
	t.Helper()
	code, stdout, stderr := runCmd(t, append([]string{"replay", "--json", "--threads", "2"}, args...)...)
	if code != 0 {
		t.Fatalf("replay %v: exit %d: %s", args, code, stderr)
	}
	var rep replayReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("replay output: %v\n%s", err, stdout)
	}
	return rep
}

// A policy's own rollout, recorded and replayed through the same policy,
// gives back exactly the recorded actions; replaying twice gives
// bit-identical actions and memory hashes.
func TestReplayPolicyRollout(t *testing.T) {
	ckpt := smallPolicy(t) // arm mode: it acts until the step cap
	dir := filepath.Join(t.TempDir(), "ds")
	if code, _, stderr := runCmd(t, "record", "--policy", ckpt, "--tasks", "drawer", "--episodes", "1", "--max-steps", "12", "--out", dir); code != 0 {
		t.Fatalf("record --policy: exit %d: %s", code, stderr)
	}
	ix, err := sim.ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Height != 128 || ix.Width != 160 || !strings.HasPrefix(ix.Agent, "policy:") || !strings.HasSuffix(ix.Agent, "max_steps=12") {
		t.Fatalf("index %+v: the policy's size and name", ix)
	}
	bag := filepath.Join(dir, ix.Episodes[0].File)
	a := replayJSON(t, bag, "--policy", ckpt)
	b := replayJSON(t, "--policy", ckpt, bag)
	if a.Steps != ix.Episodes[0].Steps || a.Compared != a.Steps || a.Steps != 12 {
		t.Fatalf("%d steps, %d compared, the index says %d", a.Steps, a.Compared, ix.Episodes[0].Steps)
	}
	for k := range a.PerStep {
		x, y := a.PerStep[k], b.PerStep[k]
		if !reflect.DeepEqual(x.Action, y.Action) || x.MemoryHash != y.MemoryHash {
			t.Fatalf("step %d: two replays differ: %v %s / %v %s", k, x.Action, x.MemoryHash, y.Action, y.MemoryHash)
		}
		if !reflect.DeepEqual(x.Raw, x.Recorded) {
			t.Fatalf("step %d: replayed %v, the rollout recorded %v", k, x.Raw, x.Recorded)
		}
	}
	if a.FinalHash != b.FinalHash || a.FinalHash != a.PerStep[len(a.PerStep)-1].MemoryHash {
		t.Errorf("final hashes %s %s", a.FinalHash, b.FinalHash)
	}
	seen := map[string]bool{}
	for _, s := range a.PerStep {
		seen[s.MemoryHash] = true
	}
	if len(seen) != len(a.PerStep) {
		t.Errorf("%d distinct memory hashes over %d steps: the memory does not change", len(seen), len(a.PerStep))
	}
	for _, d := range a.Dims {
		if d.MAE != 0 || d.BinAccuracy == nil || *d.BinAccuracy != 1 {
			t.Errorf("%s: MAE %v, bin accuracy %v; want 0 and 1", d.Name, d.MAE, d.BinAccuracy)
		}
	}
	// The ablation changes the memory, so the hashes.
	c := replayJSON(t, bag, "--policy", ckpt, "--no-memory")
	if !c.NoMemory || c.FinalHash == a.FinalHash {
		t.Errorf("--no-memory: final hash %s, with memory %s", c.FinalHash, a.FinalHash)
	}
}

// Against an expert's bag the errors are those of the per-step actions.
func TestReplayExpertErrors(t *testing.T) {
	ckpt := smallPolicy(t)
	dir := filepath.Join(t.TempDir(), "ds")
	if code, _, stderr := runCmd(t, "record", "--experts", "--tasks", "knock", "--episodes", "1", "--size", "128x160", "--max-steps", "15", "--out", dir); code != 0 {
		t.Fatalf("record: exit %d: %s", code, stderr)
	}
	bag := filepath.Join(dir, sim.EpisodeFile("knock", 1))
	space := action.RT1()
	for _, raw := range []bool{false, true} {
		args := []string{bag, "--policy", ckpt}
		if raw {
			args = append(args, "--raw")
		}
		rep := replayJSON(t, args...)
		if rep.Gated == raw {
			t.Errorf("--raw %v: gated %v", raw, rep.Gated)
		}
		var acc float64
		for i, d := range space.Dims {
			var sum float64
			same := 0
			for _, s := range rep.PerStep {
				got, want := s.Raw[i], s.Recorded[i]
				if !raw { // RT-1's mode gating, by hand
					got, want = gated(s.Raw, i), gated(s.Recorded, i)
				}
				if got != s.Action[i] {
					t.Fatalf("step %d dimension %d: compared %v, the raw output gives %v", s.Step, i, s.Action[i], got)
				}
				sum += math.Abs(float64(got) - float64(want))
				if d.Bin(got) == d.Bin(want) {
					same++
				}
			}
			mae, ba := sum/float64(len(rep.PerStep)), float64(same)/float64(len(rep.PerStep))
			acc += ba
			if got := rep.Dims[i]; got.Name != d.Name || math.Abs(got.MAE-mae) > 1e-12 || *got.BinAccuracy != ba {
				t.Errorf("%s: reported MAE %v bin accuracy %v, per-step actions give %v, %v", d.Name, got.MAE, *got.BinAccuracy, mae, ba)
			}
		}
		if math.Abs(rep.MeanBinAccuracy-acc/11) > 1e-12 {
			t.Errorf("mean bin accuracy %v, want %v", rep.MeanBinAccuracy, acc/11)
		}
		if rep.Dims[action.DimMode].MAE == 0 {
			t.Error("an untrained policy matches the expert's modes exactly")
		}
	}
	rep := replayJSON(t, bag, "--policy", ckpt)
	// The text report.
	code, stdout, stderr := runCmd(t, "replay", bag, "--policy", ckpt)
	if code != 0 || !strings.Contains(stdout, "world_vector/x") || !strings.Contains(stdout, "final memory hash "+rep.FinalHash) {
		t.Errorf("text report: exit %d\n%s%s", code, stdout, stderr)
	}
}

// gated is dimension i of a after RT-1's mode gating: arm mode keeps the
// arm and gripper, base mode the base and gripper, terminate the gripper.
func gated(a []float32, i int) float32 {
	mode := int(math.Round(float64(a[action.DimMode])))
	switch {
	case i == action.DimMode || i == action.DimGripper:
		return a[i]
	case i >= action.DimWorldX && i <= action.DimYaw && mode == action.ModeArm:
		return a[i]
	case i >= action.DimBaseYaw && i <= action.DimBaseY && mode == action.ModeBase:
		return a[i]
	}
	return 0
}

func TestReplayRejects(t *testing.T) {
	ckpt := smallPolicy(t)
	dir := filepath.Join(t.TempDir(), "ds")
	if code, _, stderr := runCmd(t, "record", "--experts", "--tasks", "pick", "--episodes", "1", "--size", "64x80", "--out", dir); code != 0 {
		t.Fatalf("record: exit %d: %s", code, stderr)
	}
	bag := filepath.Join(dir, sim.EpisodeFile("pick", 1))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"image size", []string{"replay", bag, "--policy", ckpt}, 1, "the policy takes 128x160 frames, the bag's are 64x80"},
		{"no bag", []string{"replay", "--policy", ckpt}, 2, "want one EPISODE.bag, got 0"},
		{"two bags", []string{"replay", bag, bag, "--policy", ckpt}, 2, "got 2 arguments"},
		{"no policy", []string{"replay", bag}, 2, "exactly one of --policy and --ros"},
		{"remap offline", []string{"replay", bag, "--policy", ckpt, "a:=b"}, 2, "ROS arguments need --ros"},
		{"missing bag", []string{"replay", filepath.Join(dir, "none.bag"), "--policy", ckpt}, 1, "none.bag"},
		{"wrong namespace", []string{"replay", bag, "--policy", ckpt, "--ns", "/robot"}, 1, "/robot/headcam/image_raw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, stderr := runCmd(t, tc.args...); code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %s; want %d and %q", code, stderr, tc.code, tc.want)
			}
		})
	}
}
