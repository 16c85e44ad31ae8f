package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"
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
				if a[action.DimMode] == action.ModeArm {
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

// TestExpertArmUnderway checks the expert as a DAgger labeller: in a state
// where a learner has started the arm a little off the expert's parking
// pose, it carries on with the arm and still solves the task; beyond the
// arm's working tolerance, or with the arm still at home, it turns the
// base first.
func TestExpertArmUnderway(t *testing.T) {
	cases := []struct {
		name    string
		yaw     float64 // base turn after parking (rad)
		moveArm bool
		want    int // mode of the expert's next action
	}{
		{"arm moved, base a few degrees off", 0.08, true, action.ModeArm},
		{"arm moved, base the other way", -0.08, true, action.ModeArm},
		{"arm moved, base too far off", 0.2, true, action.ModeBase},
		{"arm at home, base a few degrees off", 0.08, false, action.ModeBase},
	}
	for _, c := range cases {
		for _, name := range []string{"pick", "drawer"} {
			task, err := TaskByName(name)
			if err != nil {
				t.Fatal(err)
			}
			for seed := uint64(1); seed <= 5; seed++ {
				ep, err := NewEpisode(task, seed, Options{})
				if err != nil {
					t.Fatal(err)
				}
				park := ep.Expert(ExpertOptions{})
				for a := park.Act(ep.State()); a[action.DimMode] != action.ModeArm; a = park.Act(ep.State()) {
					if _, err := ep.Step(a); err != nil {
						t.Fatal(err)
					}
				}
				turn := make([]float32, 11)
				turn[action.DimMode], turn[action.DimGripper] = action.ModeBase, -1
				turn[action.DimBaseYaw] = float32(c.yaw / StepSeconds)
				lift := make([]float32, 11)
				lift[action.DimMode], lift[action.DimGripper], lift[action.DimWorldZ] = action.ModeArm, -1, 0.5
				steps := [][]float32{turn}
				if c.moveArm {
					steps = append(steps, lift)
				}
				for _, a := range steps {
					if _, err := ep.Step(a); err != nil {
						t.Fatal(err)
					}
				}
				x := ep.Expert(ExpertOptions{}) // as in DAgger: it did not park the base itself
				if got := int(x.Act(ep.State())[action.DimMode]); got != c.want {
					t.Errorf("%s, %s seed %d: expert mode %d at base %+v, EE %v; want %d", c.name, name, seed, got, ep.State().Base, ep.State().EE, c.want)
				}
				for !ep.Done() {
					if _, err := ep.Step(x.Act(ep.State())); err != nil {
						t.Fatal(err)
					}
				}
				if !ep.Success() {
					t.Errorf("%s, %s seed %d: the expert failed from there", c.name, name, seed)
				}
				ep.Close()
			}
		}
	}
}

// TestKnockFollowsThrough: once the object falls, the expert carries the
// sweep on to its end at the sweep's height before it rises, so that near
// the object its labels are the sweep whether or not the object has
// fallen yet. The sweep it follows is read off how the object lies; it
// must be the one the expert planned while the object stood.
func TestKnockFollowsThrough(t *testing.T) {
	task, err := TaskByName("knock")
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(20) {
		ep, err := NewEpisode(task, seed, Options{})
		if err != nil {
			t.Fatal(err)
		}
		x := ep.Expert(ExpertOptions{})
		var planned Vec3
		fellAt, endAt, roseAt := -1, -1, -1
		for !ep.Done() {
			s := ep.State()
			o := &s.Objects[s.Goal.Object]
			if !o.Fallen {
				if sw := x.(*scripted).sweep; sw != (Vec3{}) {
					R := bodyRadius(o.Kind)
					planned = o.Pos.Add(sw.Scale(R + knockAfter))
					planned[2] = sweepZ(o.Bottom(), o.Top()-o.Bottom())
				}
			} else {
				_, end := knockedSweep(o)
				e := s.EEWorld()
				if fellAt < 0 {
					fellAt = ep.Steps()
					if d := end.Sub(planned).Norm(); d > 1e-9 {
						t.Errorf("seed %d: the sweep read off the fallen object ends %v, %.3g m from the planned %v", seed, end, d, planned)
					}
				}
				if endAt < 0 && e.DistXY(end) <= 2*reachTol && math.Abs(e[2]-end[2]) <= reachTol {
					endAt = ep.Steps()
				}
				if roseAt < 0 && e[2] > end[2]+0.015 {
					roseAt = ep.Steps()
				}
			}
			if _, err := ep.Step(x.Act(s)); err != nil {
				t.Fatal(err)
			}
		}
		if !ep.Success() || fellAt < 0 {
			t.Fatalf("seed %d: the expert did not knock the object over", seed)
		}
		if endAt < 0 || roseAt >= 0 && roseAt < endAt {
			t.Errorf("seed %d: fell at step %d, the hand at the sweep's end at step %d, above the sweep at step %d; want the end first", seed, fellAt, endAt, roseAt)
		}
		ep.Close()
	}
}

// TestExpertLabelsFollowTheState: DAgger labels the states a learner's
// rollout reaches with what the expert would do there, so the expert's
// action must follow from the state and from what it chose for the task
// (the base phase over, the knock's sweep direction, the move's drop
// spot), not from its own earlier commands, which the learner's actions
// replaced. Each step of these rollouts executes either the expert's
// action or a disobedient one (the gripper command inverted, the arm
// pushed aside); an expert that labelled the rollout from its start and a
// fresh one given only its choices label every state alike.
func TestExpertLabelsFollowTheState(t *testing.T) {
	for _, task := range Tasks() {
		t.Run(task.Name, func(t *testing.T) {
			disobeyed, compared := 0, 0
			for seed := range uint64(12) {
				ep, err := NewEpisode(task, seed, Options{})
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(seed, 77))
				watcher := ep.Expert(ExpertOptions{}).(*scripted)
				for !ep.Done() {
					s := ep.State()
					label := slices.Clone(watcher.Act(s))
					fresh := NewExpert(ExpertOptions{}).(*scripted)
					fresh.baseDone, fresh.sweep, fresh.spot, fresh.spotSet = watcher.baseDone, watcher.sweep, watcher.spot, watcher.spotSet
					if got := fresh.Act(s); !slices.Equal(got, label) {
						t.Fatalf("seed %d, step %d: the expert that watched the rollout labels %v, a fresh one %v", seed, ep.Steps(), label, got)
					}
					compared++
					a := label
					if int(label[action.DimMode]) == action.ModeArm && r.Float64() < 0.3 {
						disobeyed++
						if r.Float64() < 0.5 {
							a[action.DimGripper] = -a[action.DimGripper]
						} else {
							a[action.DimWorldX+r.IntN(3)] = float32(2*r.Float64() - 1)
						}
					}
					if _, err := ep.Step(a); err != nil {
						t.Fatal(err)
					}
				}
				ep.Close()
			}
			t.Logf("%d states compared, %d actions disobeyed", compared, disobeyed)
		})
	}
}
