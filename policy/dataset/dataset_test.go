package dataset

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
)

// recordPick records n expert episodes of pick at the small preset's
// image size with the real bag recorder into dir, and indexes them.
func recordPick(t *testing.T, dir string, n int) *sim.Index { return recordPickAt(t, dir, n, 0) }

// recordPickAt records n pick episodes at period (0: sim.StepSeconds);
// the index gives the period of the first only, so that the others' come
// from their bags, as an index written before it kept them.
func recordPickAt(t *testing.T, dir string, n int, period time.Duration) *sim.Index {
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ix := &sim.Index{Version: sim.IndexVersion, Height: h, Width: w}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		ep, err := sim.NewEpisode(task, seed, sim.Options{Height: h, Width: w})
		if err != nil {
			t.Fatal(err)
		}
		file := sim.EpisodeFile(task.Name, seed)
		res, err := sim.RecordEpisode(filepath.Join(dir, file), ep, sim.ExpertAgent{Expert: ep.Expert(sim.ExpertOptions{})}, sim.RecordOptions{Period: period})
		ep.Close()
		if err != nil {
			t.Fatal(err)
		}
		ix.Episodes = append(ix.Episodes, sim.IndexEntry{File: file, Task: task.Name, Family: task.Name, Instruction: res.Instruction,
			Seed: seed, Steps: res.Steps, Success: res.Success})
		if seed == 1 {
			ix.Episodes[0].Period = periodOf(period).Seconds()
		}
	}
	if err := sim.WriteIndex(dir, ix); err != nil {
		t.Fatal(err)
	}
	return ix
}

// periodOf is the time between the frames sim.RecordEpisode stamps at
// period.
func periodOf(period time.Duration) time.Duration {
	if period == 0 {
		return sim.StepPeriod
	}
	return period
}

// smallPolicy is a fresh small policy with its seeded backbone.
func smallPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	spec, err := policy.Preset("small")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "small.safetensors")
	if err := policy.Create(spec, 1, "", path, nil); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(path, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func cached(t *testing.T, dir string) int {
	t.Helper()
	got, err := filepath.Glob(filepath.Join(dir, "*", "*.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return len(got)
}

// TestLoad reads two datasets of the same base name: each episode once,
// through the cache of its own dataset; failed episodes only with all;
// the tasks asked for only; and episodes named by their dataset when there
// are several.
func TestLoad(t *testing.T) {
	p := smallPolicy(t)
	root := t.TempDir()
	a, b := filepath.Join(root, "a", "data"), filepath.Join(root, "b", "data")
	ixA, ixB := recordPick(t, a, 2), recordPick(t, b, 1)
	steps := ixA.Episodes[0].Steps + ixA.Episodes[1].Steps
	rate := 1 / periodOf(0).Seconds() // 3 Hz

	eps, total, uses, err := Load(nil, p, []string{a}, "", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 2 || total != steps || len(uses) != 1 || uses[0] != (Use{Dir: a, Indexed: 2, Episodes: 2, Steps: steps, Rate: rate}) {
		t.Fatalf("%d episodes, %d steps, uses %+v; want 2, %d, one dataset", len(eps), total, uses, steps)
	}
	if n := cached(t, filepath.Join(a, ".features")); n != 2 {
		t.Errorf("the feature cache holds %d episodes, want 2", n)
	}
	if eps[0].Name != strings.TrimSuffix(ixA.Episodes[0].File, filepath.Ext(ixA.Episodes[0].File)) {
		t.Errorf("one dataset's episode is named %q, want its bag's name", eps[0].Name)
	}

	// A failed episode is skipped unless all.
	ixA.Episodes[0].Success = false
	if err := sim.WriteIndex(a, ixA); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		all  bool
		want Use
	}{
		{false, Use{Dir: a, Indexed: 2, Episodes: 1, Steps: ixA.Episodes[1].Steps, Skipped: 1, Rate: rate}},
		{true, Use{Dir: a, Indexed: 2, Episodes: 2, Steps: steps, Rate: rate}},
	} {
		_, _, uses, err := Load(nil, p, []string{a}, "", nil, c.all)
		if err != nil || len(uses) != 1 || uses[0] != c.want {
			t.Errorf("all %v: uses %+v, %v; want %+v", c.all, uses, err, c.want)
		}
	}

	// Other tasks' episodes are left out; none left is an error.
	if _, _, _, err := Load(nil, p, []string{a}, "", []string{"knock"}, true); err == nil || !strings.Contains(err.Error(), "no successful") {
		t.Errorf("only knock's episodes: %v", err)
	}

	// Several datasets in one cache folder: a subfolder each, episodes
	// named by their folder.
	shared := filepath.Join(root, "cache")
	eps, _, uses, err = Load(nil, p, []string{a, b}, shared, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if CacheName(a) == CacheName(b) {
		t.Fatalf("datasets %s and %s share the cache folder %s", a, b, CacheName(a))
	}
	for dir, n := range map[string]int{a: 2, b: 1} {
		if got := cached(t, filepath.Join(shared, CacheName(dir))); got != n {
			t.Errorf("%s: the shared cache holds %d of its episodes, want %d", dir, got, n)
		}
	}
	if len(eps) != 3 || len(uses) != 2 || uses[1].Episodes != len(ixB.Episodes) {
		t.Fatalf("%d episodes, uses %+v; want 3 over two datasets", len(eps), uses)
	}
	if want := filepath.Join(b, strings.TrimSuffix(ixB.Episodes[0].File, filepath.Ext(ixB.Episodes[0].File))); eps[2].Name != want {
		t.Errorf("an episode of several datasets is named %q, want %q", eps[2].Name, want)
	}
}

// TestLoadRate: a dataset's rate is its episodes' (from the index, or
// from the bag when the index does not say), and datasets or episodes
// recorded at different rates are refused.
func TestLoadRate(t *testing.T) {
	p := smallPolicy(t)
	root := t.TempDir()
	slow, fast := filepath.Join(root, "slow"), filepath.Join(root, "fast")
	recordPickAt(t, slow, 2, 0)
	ixFast := recordPickAt(t, fast, 2, 100*time.Millisecond)
	_, _, uses, err := Load(nil, p, []string{fast}, "", nil, true)
	if err != nil || math.Abs(uses[0].Rate-10) > 1e-9 {
		t.Fatalf("10 Hz dataset: uses %+v, %v", uses, err)
	}
	_, _, _, err = Load(nil, p, []string{slow, fast}, filepath.Join(root, "cache"), nil, true)
	if err == nil || !strings.Contains(err.Error(), "recorded at 3 and 10 Hz") {
		t.Errorf("3 and 10 Hz datasets together: %v", err)
	}
	ixFast.Episodes[0].Period = 0.2 // the index disagrees with its other episode's bag
	if err := sim.WriteIndex(fast, ixFast); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = Load(nil, p, []string{fast}, "", nil, true)
	if err == nil || !strings.Contains(err.Error(), "episodes recorded at 5 to 10 Hz") {
		t.Errorf("episodes at 5 and 10 Hz: %v", err)
	}
}

// TestStartGoal: the goal probe's label is where sim.StartGoal puts the
// goal, in policy.GoalUnit, for a memory task and the drawer, and none for
// the other families.
func TestStartGoal(t *testing.T) {
	for _, task := range sim.Tasks() {
		t.Run(task.Name, func(t *testing.T) {
			got, err := startGoal(sim.IndexEntry{File: task.Name + ".bag", Task: task.Name, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			if !task.Memory && task.Name != "drawer" {
				if got != nil {
					t.Fatalf("label %v for a task without a memory cue, want none", got)
				}
				return
			}
			g, err := sim.StartGoal(task, 7)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != policy.GoalLen {
				t.Fatalf("label %v, want %d values", got, policy.GoalLen)
			}
			for i, v := range got {
				if want := float32(g[i] / policy.GoalUnit); v != want {
					t.Errorf("label[%d] = %v, want %v", i, v, want)
				}
			}
		})
	}
	if _, err := startGoal(sim.IndexEntry{File: "x.bag", Task: "juggle"}); err == nil {
		t.Error("an unknown task's label: no error")
	}
}
