package eval

import (
	"context"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/sim"
)

// TestFailureCause: each cause is named by the decisions that make it,
// and the first that fits wins.
func TestFailureCause(t *testing.T) {
	const arm, base, stop = action.ModeArm, action.ModeBase, action.ModeTerminate
	open, closed := float32(-1), float32(1)
	free := &sim.State{}
	holding := &sim.State{Grip: 1, Grasp: sim.Grasp{Kind: sim.GraspObject}}
	closedEmpty := &sim.State{Grip: 1}
	type decision struct {
		s             *sim.State
		agent, expert []float32
	}
	armEarly := decision{free, rt1Action(arm, 1, 0, 0, open), rt1Action(base, 0, 0, 0, open)}
	drop := decision{holding, rt1Action(arm, 0, 0, 1, open), rt1Action(arm, 0, 0, 1, closed)}
	quit := decision{free, rt1Action(stop, 0, 0, 0, open), rt1Action(arm, 0, 0, -1, open)}
	miss := decision{closedEmpty, rt1Action(arm, 0, 0, 0, closed), rt1Action(arm, 0, 0, 0, open)}
	hover := decision{free, rt1Action(arm, 0, 0, 0, open), rt1Action(arm, 0, 0, 0, closed)}
	agree := decision{free, rt1Action(arm, 0, 0, -1, open), rt1Action(arm, 0, 0, -1, open)}
	for _, tc := range []struct {
		name      string
		decisions []decision
		targetOff []bool // per frame showing the target: the keypoint off it
		want      string
	}{
		{"nothing wrong", []decision{agree, agree}, nil, FailOther},
		{"arm twice before the base: not enough", []decision{armEarly, armEarly, agree}, nil, FailOther},
		{"arm three times before the base", []decision{armEarly, armEarly, armEarly, agree}, nil, FailArmBeforeBase},
		{"opened on what it held", []decision{agree, drop}, nil, FailLetGo},
		{"terminated where the expert goes on", []decision{agree, quit}, nil, FailStoppedEarly},
		{"a terminate label that was not the last decision", []decision{quit, agree}, nil, FailOther},
		{"closed on nothing", []decision{agree, miss}, nil, FailMissedGrasp},
		{"closed on nothing, then stopped", []decision{miss, quit}, nil, FailMissedGrasp},
		{"never closed, then stopped", []decision{hover, quit}, nil, FailNeverClosed},
		{"closed on nothing, then held", []decision{miss, drop}, nil, FailLetGo},
		{"never closed", []decision{hover, hover}, nil, FailNeverClosed},
		{"target off in 2 of 3 frames", []decision{agree}, []bool{true, false, true}, FailTarget},
		{"target off in half the frames", []decision{agree}, []bool{true, false}, FailOther},
		{"the target first", []decision{armEarly, armEarly, armEarly, drop}, []bool{true}, FailTarget},
		{"the base before a drop", []decision{armEarly, armEarly, armEarly, drop}, nil, FailArmBeforeBase},
		{"a drop before a stop", []decision{drop, quit}, nil, FailLetGo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f failureTally
			for _, d := range tc.decisions {
				f.add(d.s, d.agent, d.expert)
			}
			for _, off := range tc.targetOff {
				px := 2.0
				if off {
					px = 16
				}
				f.addTarget(px, free)
			}
			// Frames without the target, or while holding, do not count.
			f.addTarget(-1, free)
			f.addTarget(90, holding)
			if got := f.cause(); got != tc.want {
				t.Errorf("cause %q, want %q", got, tc.want)
			}
		})
	}
}

// butterfingers acts as the expert but, whenever it holds something,
// opens the gripper instead of moving. Unlike shadow it reports no
// keypoints.
type butterfingers struct{ x shadow }

type butterfingersPlayer struct{}

func (butterfingersPlayer) Begin(ep *sim.Episode) (sim.Agent, bool, error) {
	return &butterfingers{shadow{ep: ep, x: ep.Expert(sim.ExpertOptions{})}}, false, nil
}
func (butterfingersPlayer) Close() error { return nil }

func (a *butterfingers) Reset(instruction string) { a.x.Reset(instruction) }

func (a *butterfingers) Act(obs *sim.Observation) ([]float32, error) {
	act, err := a.x.Act(obs)
	if a.x.ep.State().Grasp.Kind != sim.GraspNone {
		act[action.DimGripper] = -1
		act[action.DimWorldX], act[action.DimWorldY], act[action.DimWorldZ] = 0, 0, 0
	}
	return act, err
}

// cornerQuitter quits at once, its keypoints in the frame's corner, far
// from any labelled point.
type cornerQuitter struct{ terminator }

func (*cornerQuitter) Keypoint(i int) (u, v float32, ok bool) { return 0, 0, i < sim.KeypointCount }

// TestFailuresClosedLoop: the ledger names the cause of every failed
// episode, counts them per family, and the summary tables them; a
// successful agent has none.
func TestFailuresClosedLoop(t *testing.T) {
	cfg := Config{Tasks: tasks(t, "pick"), Episodes: 2, Seed: 5, Height: 64, Width: 80, Workers: 1,
		Runs: []RunSpec{
			{Name: "shadow", Agent: "test", Ablation: AblationNone, NewPlayer: func() (Player, error) { return shadowPlayer{}, nil }},
			{Name: "butterfingers", Agent: "test", Ablation: AblationNone, NewPlayer: func() (Player, error) { return butterfingersPlayer{}, nil }},
			customRun("quitter", func() sim.Agent { return &terminator{} }),
			customRun("corner", func() sim.Agent { return &cornerQuitter{} }),
		}}
	led, _, err := Evaluate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"", FailLetGo, FailStoppedEarly, FailTarget} {
		r := led.Runs[i]
		for _, e := range r.Episodes {
			if e.Failure != want {
				t.Errorf("%s episode %d (success %v): failure %q, want %q", r.Name, e.Index, e.Success, e.Failure, want)
			}
		}
		if want == "" {
			if r.Overall.Failures != nil {
				t.Errorf("%s: failures %v, want none", r.Name, r.Overall.Failures)
			}
			continue
		}
		if n := r.PerFamily["pick"].Failures[want]; n != 2 {
			t.Errorf("%s: %d pick failures %s, want 2 (%v)", r.Name, n, want, r.PerFamily["pick"].Failures)
		}
	}
	s := Summary(led, nil)
	if !strings.Contains(s, "## Why episodes failed") || !strings.Contains(s, "let_go 2") || !strings.Contains(s, "stopped_early 2") {
		t.Errorf("summary without the failure table:\n%s", s)
	}
}
