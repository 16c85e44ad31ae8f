package sim

import (
	"math"
	"testing"

	"github.com/ttmrobot/ttm/policy"
)

// runExpert plays one episode of task with its scripted expert, without
// rendering, and returns whether it succeeded and the steps it took.
func runExpert(t testing.TB, task *Task, seed uint64, opts ExpertOptions) (bool, int) {
	t.Helper()
	ep, err := NewEpisode(task, seed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	x := ep.Expert(opts)
	for !ep.Done() {
		if _, err := ep.Step(x.Act(ep.State())); err != nil {
			t.Fatal(err)
		}
	}
	return ep.Success(), ep.Steps()
}

// TestExpertSuccess checks that every task's scripted expert succeeds on at
// least 95% of 100 seeded episodes, noiseless and with action noise and
// pauses.
func TestExpertSuccess(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 30
	}
	for _, cfg := range []struct {
		name string
		opts ExpertOptions
	}{
		{"clean", ExpertOptions{}},
		{"noisy", ExpertOptions{Seed: 7, Noise: 0.1, BaseNoise: 0.03, PauseProb: 0.05}},
	} {
		for _, task := range Tasks() {
			t.Run(cfg.name+"/"+task.Name, func(t *testing.T) {
				ok, maxSteps, total := 0, 0, 0
				var failed []uint64
				for seed := range uint64(seeds) {
					succ, steps := runExpert(t, task, seed, cfg.opts)
					if succ {
						ok++
					} else {
						failed = append(failed, seed)
					}
					maxSteps = max(maxSteps, steps)
					total += steps
				}
				t.Logf("%d/%d succeeded, mean %.1f steps, max %d (cap %d)", ok, seeds, float64(total)/float64(seeds), maxSteps, task.MaxSteps)
				if ok*100 < 95*seeds {
					t.Errorf("expert succeeded on %d of %d episodes, want at least 95%%; failed seeds %v", ok, seeds, failed)
				}
			})
		}
	}
}

// TestExpertBaseGoal checks where the noise-free expert parks the base
// before its first arm action: square to the counter at the task's distance
// (x 0.20, drawers -0.15) and sideways where the episode started, which the
// headcam cannot see.
func TestExpertBaseGoal(t *testing.T) {
	for _, task := range Tasks() {
		for seed := uint64(1); seed <= 10; seed++ {
			ep, err := NewEpisode(task, seed, Options{})
			if err != nil {
				t.Fatal(err)
			}
			startY := ep.State().Base.Y
			wantX := 0.20
			if ep.State().Goal.Kind == GoalDrawer {
				wantX = -0.15
			}
			x := ep.Expert(ExpertOptions{})
			for !ep.Done() {
				a := x.Act(ep.State())
				if a[policy.DimMode] == policy.ModeArm {
					b := ep.State().Base
					if math.Abs(b.X-wantX) > baseTol || math.Abs(b.Y-startY) > baseTol || math.Abs(b.Yaw) > baseYawTol {
						t.Errorf("%s seed %d: first arm action with the base at %+v; want x %.2f, y %.3f (the start), yaw 0",
							task.Name, seed, b, wantX, startY)
					}
					break
				}
				if _, err := ep.Step(a); err != nil {
					t.Fatal(err)
				}
			}
			ep.Close()
		}
	}
}
