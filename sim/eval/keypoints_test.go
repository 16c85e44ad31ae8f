package eval

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
)

// pointer holds still and reports the simulator's labelled points, the
// hand's moved by (3, 4) pixels, and a cued target where it is after the
// cue too: by construction its keypoint error is 5 px for the hand and 0
// for the target, remembered or not. It is privileged (it reads the state
// to know the labels) and counts the frames that showed each point. With
// alternate, every second frame that shows the hand moves it by (6, 8):
// 10 px.
type pointer struct {
	act            [11]float32
	labels, memory [sim.KeypointLabelLen]float32
	h, w           int
	shown          *[sim.KeypointCount]int
	alternate, far bool
}

func (*pointer) Reset(string) {}

func (a *pointer) Act(o *sim.Observation) ([]float32, error) {
	sim.KeypointLabels(a.labels[:], o.State, o.Height, o.Width)
	sim.MemoryKeypointLabels(a.memory[:], o.State, o.Height, o.Width)
	a.h, a.w = o.Height, o.Width
	const per = sim.KeypointLabelLen / sim.KeypointCount
	for i := range sim.KeypointCount {
		if a.labels[i*per+2] > 0 {
			a.shown[i]++
		}
	}
	a.far = a.alternate && a.labels[2] > 0 && a.shown[0]%2 == 0
	HoldAction(a.act[:])
	return a.act[:], nil
}

func (a *pointer) Keypoint(i int) (u, v float32, ok bool) {
	const per = sim.KeypointLabelLen / sim.KeypointCount
	if i >= sim.KeypointCount {
		return 0, 0, false
	}
	u, v = a.memory[i*per], a.memory[i*per+1]
	if i == 0 {
		k := float32(1)
		if a.far {
			k = 2
		}
		u, v = u+3*k/float32(a.w), v+4*k/float32(a.h)
	}
	return u, v, true
}

func TestKeypointError(t *testing.T) {
	var shown [sim.KeypointCount]int
	run := RunSpec{Name: "pointer", Agent: "test", Ablation: AblationNone, NewPlayer: func() (Player, error) {
		return agentPlayer{newAgent: func() sim.Agent { return &pointer{shown: &shown} }, privileged: true}, nil
	}}
	quitter := customRun("quitter", func() sim.Agent { return &terminator{} })
	cfg := Config{Tasks: tasks(t, "pick,knock,cue_pick,pointed_drawer"), Episodes: 2, Seed: 3, Height: 64, Width: 80, Workers: 1,
		Runs: []RunSpec{run, quitter}}
	led, _, err := Evaluate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := led.PerFamily["pointed_drawer"].KeypointError; len(r) == sim.KeypointCount+1 && (r[3].Frames == 0 || r[3].MeanPx > 1e-3) {
		t.Errorf("pointed_drawer's keypoint_error %+v, want the handle remembered after the arrow", r)
	}
	got := led.Overall.KeypointError
	if len(got) != sim.KeypointCount+1 {
		t.Fatalf("overall keypoint_error %+v, want %d points and the remembered target", got, sim.KeypointCount)
	}
	if d := got[2]; d.Point != "destination" || d.Frames != 0 || shown[2] != 0 {
		t.Errorf("pick, knock, cue_pick and pointed_drawer have no destination, got %+v over %d shown frames", d, shown[2])
	}
	if r := got[3]; r.Point != RememberedTarget || r.Frames == 0 || r.MeanPx > 1e-3 {
		t.Errorf("remembered target %+v, want 0 px over the frames after cue_pick's and pointed_drawer's cues", r)
	}
	for i, want := range []float64{5, 0} {
		pe := got[i]
		if pe.Point != sim.KeypointNames[i] || pe.Frames != shown[i] || pe.Frames == 0 || math.Abs(pe.MeanPx-want) > 1e-3 {
			t.Errorf("point %d: %+v, want %s over %d frames at %v px", i, pe, sim.KeypointNames[i], shown[i], want)
		}
	}
	for f, st := range led.PerFamily {
		want := sim.KeypointCount
		if f == "cue_pick" || f == "pointed_drawer" {
			want++
		}
		if len(st.KeypointError) != want || math.Abs(st.KeypointError[0].MeanPx-5) > 1e-3 {
			t.Errorf("per_family.%s keypoint_error %+v, want %d points, the hand at 5 px", f, st.KeypointError, want)
		}
	}
	if q := led.Run("quitter"); len(q.Overall.KeypointError) != 0 || len(q.Episodes[0].KeypointError) != 0 {
		t.Errorf("an agent without keypoints has keypoint errors %+v", q.Overall.KeypointError)
	}
	sum := Summary(led, nil)
	if !strings.Contains(sum, "## Keypoint error") || !strings.Contains(sum, "| **overall** | 5.0 / 0.0 / – / 0.0 | – |") {
		t.Errorf("summary lacks the keypoint table:\n%s", sum)
	}
	led.Runs = led.Runs[1:]
	if strings.Contains(Summary(led, nil), "Keypoint error") {
		t.Error("summary of agents without keypoints has a keypoint table")
	}
}

// A point's near frames are those within 8 px of its label: the pointer's
// hand alternates between 5 and 10 px off.
func TestKeypointNear(t *testing.T) {
	var shown [sim.KeypointCount]int
	run := RunSpec{Name: "pointer", Agent: "test", Ablation: AblationNone, NewPlayer: func() (Player, error) {
		return agentPlayer{newAgent: func() sim.Agent { return &pointer{shown: &shown, alternate: true} }, privileged: true}, nil
	}}
	cfg := Config{Tasks: tasks(t, "pick,cue_pick"), Episodes: 2, Seed: 3, Height: 64, Width: 80, Workers: 1, Runs: []RunSpec{run}}
	led, _, err := Evaluate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	hand, target := led.Overall.KeypointError[0], led.Overall.KeypointError[1]
	near, far := (shown[0]+1)/2, shown[0]/2
	if far == 0 || hand.Frames != shown[0] || hand.Near != near || math.Abs(hand.NearMeanPx-5) > 1e-3 ||
		math.Abs(hand.MeanPx-float64(5*near+10*far)/float64(shown[0])) > 1e-3 {
		t.Errorf("hand %+v, want %d frames at 5 px near and %d at 10 px", hand, near, far)
	}
	if target.Near != target.Frames || target.Frames == 0 || target.NearMeanPx > 1e-3 {
		t.Errorf("target %+v, want every frame near, at 0 px", target)
	}
	if r := led.Overall.KeypointError[3]; r.Point != RememberedTarget || r.Near != r.Frames || r.Frames == 0 {
		t.Errorf("remembered target %+v, want every frame near", r)
	}
	if sum := Summary(led, nil); !strings.Contains(sum, fmt.Sprintf("| **overall** | 5.0 (%.0f %%) / 0.0 (100 %%) / – / 0.0 (100 %%) |", 100*float64(near)/float64(shown[0]))) {
		t.Errorf("summary lacks the precision table:\n%s", sum)
	}
}

// The pooled error weighs each episode by its frames.
func TestPoolPointErrors(t *testing.T) {
	pe := func(point string, frames int, meanPx float64, onOther, near int, nearPx float64) PointError {
		return PointError{Point: point, Frames: frames, MeanPx: meanPx, OnOther: onOther, Near: near, NearMeanPx: nearPx}
	}
	es := []EpisodeResult{
		{KeypointError: []PointError{pe("hand", 1, 2, 0, 1, 2), pe("target", 0, 0, 0, 0, 0)}},
		{KeypointError: []PointError{pe("hand", 3, 5, 0, 2, 3), pe("target", 2, 1, 1, 2, 1)}},
		{KeypointError: []PointError{pe("hand", 0, 0, 0, 0, 0), pe("target", 3, 4, 2, 1, 6)}},
		{}, // an agent without keypoints in the mix adds nothing
	}
	got := poolPointErrors(es)
	want := []PointError{pe("hand", 4, (2+3*5)/4.0, 0, 3, (2+2*3)/3.0), pe("target", 5, (2*1+3*4)/5.0, 3, 3, (2*1+6)/3.0)}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("pooled %+v, want %+v", got, want)
	}
	if poolPointErrors(es[3:]) != nil {
		t.Error("episodes without keypoints pooled into errors")
	}
}

// swapper holds still and reports the target keypoint on the
// destination's label and the destination keypoint on the target's, as a
// policy does that cannot tell "move the X near the Y" from "move the Y
// near the X". It counts the frames in which both points show and their
// labels lie more than 8 px apart: there each of its two points marks the
// other object.
type swapper struct {
	act     [11]float32
	labels  [sim.KeypointLabelLen]float32
	swapped *int
}

func (*swapper) Reset(string) {}

func (a *swapper) Act(o *sim.Observation) ([]float32, error) {
	const per = sim.KeypointLabelLen / sim.KeypointCount
	sim.KeypointLabels(a.labels[:], o.State, o.Height, o.Width)
	t, d := a.labels[per:2*per], a.labels[2*per:]
	if t[2] > 0 && d[2] > 0 && math.Hypot(float64(t[0]-d[0])*float64(o.Width), float64(t[1]-d[1])*float64(o.Height)) > 8 {
		*a.swapped++
	}
	HoldAction(a.act[:])
	return a.act[:], nil
}

func (a *swapper) Keypoint(i int) (u, v float32, ok bool) {
	const per = sim.KeypointLabelLen / sim.KeypointCount
	src := [sim.KeypointCount]int{0, 2, 1}
	if i >= sim.KeypointCount {
		return 0, 0, false
	}
	return a.labels[src[i]*per], a.labels[src[i]*per+1], true
}

func TestKeypointOnOther(t *testing.T) {
	var swapped, shown [sim.KeypointCount]int
	runs := []RunSpec{
		{Name: "swapper", Agent: "test", Ablation: AblationNone, NewPlayer: func() (Player, error) {
			return agentPlayer{newAgent: func() sim.Agent { return &swapper{swapped: &swapped[0]} }, privileged: true}, nil
		}},
		{Name: "pointer", Agent: "test", Ablation: AblationNone, NewPlayer: func() (Player, error) {
			return agentPlayer{newAgent: func() sim.Agent { return &pointer{shown: &shown} }, privileged: true}, nil
		}},
	}
	cfg := Config{Tasks: tasks(t, "move"), Episodes: 2, Seed: 5, Height: 64, Width: 80, Workers: 1, Runs: runs}
	led, _, err := Evaluate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if swapped[0] == 0 {
		t.Fatal("no frame showed the target and the destination apart; the test shows nothing")
	}
	got := led.Run("swapper").Overall.KeypointError
	if got[0].OnOther != 0 || got[1].OnOther != swapped[0] || got[2].OnOther != swapped[0] {
		t.Errorf("swapped points %+v, want the target and destination on the other in %d frames, the hand never", got, swapped[0])
	}
	for _, pe := range led.Run("pointer").Overall.KeypointError {
		if pe.OnOther != 0 {
			t.Errorf("faithful points marked the other object: %+v", pe)
		}
	}
	if sum := Summary(led, nil); !strings.Contains(sum, "% on the other)") {
		t.Errorf("summary does not show the swapped share:\n%s", sum)
	}
}

// prober holds still and reports a goal estimate off the goal's start
// position (read from the state at its first frame) by 5 cm in the frames
// that show a cue and by 12 cm after: its goal probe error is that, by
// construction.
type prober struct {
	act   [11]float32
	start sim.Vec3
	est   []float32
}

func (a *prober) Reset(string) { a.est = nil }

func (a *prober) Act(o *sim.Observation) ([]float32, error) {
	s := o.State
	if o.Step == 0 {
		a.start = s.Objects[s.Goal.Object].Pos
		if s.Goal.Kind == sim.GoalDrawer {
			a.start = s.DrawerHandle(s.Goal.Drawer)
		}
		a.start = s.ToBase(a.start)
	}
	off := sim.Vec3{0.03, 0.04, 0}
	if s.Goal.Cue == sim.CueNone || o.Step >= s.Goal.CueSteps {
		off = sim.Vec3{0, 0, -0.12}
	}
	a.est = make([]float32, policy.GoalLen)
	for i := range a.est {
		a.est[i] = float32((a.start[i] + off[i]) / policy.GoalUnit)
	}
	HoldAction(a.act[:])
	return a.act[:], nil
}

func (a *prober) GoalEstimate() []float32 { return a.est }

func TestGoalProbeError(t *testing.T) {
	run := RunSpec{Name: "prober", Agent: "test", Ablation: AblationNone, NewPlayer: func() (Player, error) {
		return agentPlayer{newAgent: func() sim.Agent { return &prober{} }, privileged: true}, nil
	}}
	quitter := customRun("quitter", func() sim.Agent { return &terminator{} })
	cfg := Config{Tasks: tasks(t, "pick,cue_pick,pointed_drawer"), Episodes: 2, Seed: 3, Height: 64, Width: 80, Workers: 1,
		Runs: []RunSpec{run, quitter}}
	led, _, err := Evaluate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range led.Run("prober").Episodes {
		g := e.GoalProbe
		cue := 0
		if e.Task != "pick" {
			cue = e.CueSteps
		}
		if g == nil || g.CueFrames != cue || g.Frames != e.Decisions-cue || math.Abs(g.MeanCm-12) > 1e-3 || cue > 0 && math.Abs(g.CueMeanCm-5) > 1e-3 {
			t.Errorf("%s seed %d (%d decisions, cue %d): goal probe %+v, want 12 cm after the cue and 5 cm with it", e.Task, e.Seed, e.Decisions, cue, g)
		}
	}
	if g := led.Overall.GoalProbe; g == nil || math.Abs(g.MeanCm-12) > 1e-3 || math.Abs(g.CueMeanCm-5) > 1e-3 {
		t.Errorf("overall goal probe %+v, want 12 cm and 5 cm", g)
	}
	if q := led.Run("quitter"); q.Overall.GoalProbe != nil || q.Episodes[0].GoalProbe != nil {
		t.Errorf("an agent without a probe has a goal probe error %+v", q.Overall.GoalProbe)
	}
	if sum := Summary(led, nil); !strings.Contains(sum, "## Goal probe error") || !strings.Contains(sum, "12.0 (5.0)") {
		t.Errorf("the summary does not show the goal probe error:\n%s", sum)
	}
}
