package sim

import (
	"math"
	"strings"
	"testing"
)

// held returns object o lifted by dz in a closed gripper, with the state's
// hand at its centre.
func heldState(goal Goal, o Object, dz float64, others ...Object) *State {
	o.Pos[2] += dz
	s := &State{EE: o.Pos, Grip: 1, Objects: append([]Object{o}, others...), Goal: goal}
	s.Grasp = Grasp{Kind: GraspObject, Index: 0}
	return s
}

func TestSuccessDetectors(t *testing.T) {
	can := resting(CokeCan, 0.8, 0, false)
	bottle := resting(WaterBottle, 0.9, 0.2, false)
	fallenBottle := resting(WaterBottle, 0.9, 0.2, true)
	apple := resting(Apple, 0.8, -0.2, false)
	sponge := resting(Sponge, 0.9, -0.1, false) // 14.1 cm from the apple
	farSponge := resting(Sponge, 1.0, 0.1, false)
	onFloor := resting(WaterBottle, 0.4, 0, false)
	pick := Goal{Kind: GoalPick}
	drawer := func(i int, open bool, top, bottom float64, excl bool) *State {
		s := &State{Goal: Goal{Kind: GoalDrawer, Drawer: i, Open: open, Exclusive: excl}}
		s.Drawers[DrawerTop].Open, s.Drawers[DrawerBottom].Open = top, bottom
		return s
	}
	movedAt := func(p Vec3, moved bool) *State {
		o := resting(Apple, p[0], p[1], false)
		return &State{Objects: []Object{o}, Goal: Goal{Kind: GoalPutBack, Spot: resting(Apple, 0.8, 0, false).Pos, Moved: moved}}
	}
	cases := []struct {
		name string
		s    *State
		want bool
	}{
		{"pick: can lifted 10 cm in the gripper", heldState(pick, can, 0.10), true},
		{"pick: can lifted 2 cm", heldState(pick, can, 0.02), false},
		{"pick: can on the table", &State{Objects: []Object{can}, Goal: pick}, false},
		{"pick: the other object lifted", heldState(Goal{Kind: GoalPick, Object: 1}, can, 0.10, bottle), false},
		{"knock: bottle fallen", &State{Objects: []Object{fallenBottle}, Goal: Goal{Kind: GoalKnock}}, true},
		{"knock: bottle standing", &State{Objects: []Object{bottle}, Goal: Goal{Kind: GoalKnock}}, false},
		{"knock: fallen bottle held", heldState(Goal{Kind: GoalKnock}, fallenBottle, 0.0), false},
		{"upright: bottle standing on the table", &State{Objects: []Object{bottle}, Goal: Goal{Kind: GoalUpright}}, true},
		{"upright: bottle lying", &State{Objects: []Object{fallenBottle}, Goal: Goal{Kind: GoalUpright}}, false},
		{"upright: bottle upright in the gripper", heldState(Goal{Kind: GoalUpright}, bottle, 0.05), false},
		{"upright: bottle standing on the floor", &State{Objects: []Object{onFloor}, Goal: Goal{Kind: GoalUpright}}, false},
		{"move: apple 14 cm from the sponge", &State{Objects: []Object{apple, sponge}, Goal: Goal{Kind: GoalMoveNear, Object: 0, Other: 1}}, true},
		{"move: apple 36 cm from the sponge", &State{Objects: []Object{apple, farSponge}, Goal: Goal{Kind: GoalMoveNear, Object: 0, Other: 1}}, false},
		{"move: apple near but still held", heldState(Goal{Kind: GoalMoveNear, Object: 0, Other: 1}, apple, 0.03, sponge), false},
		{"move: object near itself", &State{Objects: []Object{apple, sponge}, Goal: Goal{Kind: GoalMoveNear, Object: 0, Other: 0}}, false},
		{"open: top drawer out 20 cm", drawer(DrawerTop, true, 0.20, 0, false), true},
		{"open: top drawer out 10 cm", drawer(DrawerTop, true, 0.10, 0, false), false},
		{"open: the other drawer out", drawer(DrawerTop, true, 0, 0.25, false), false},
		{"close: bottom drawer 2 cm out", drawer(DrawerBottom, false, 0.2, 0.02, false), true},
		{"close: bottom drawer 10 cm out", drawer(DrawerBottom, false, 0, 0.10, false), false},
		{"pointed: target open, other closed", drawer(DrawerBottom, true, 0.01, 0.2, true), true},
		{"pointed: both open", drawer(DrawerBottom, true, 0.2, 0.2, true), false},
		{"put back: back on its spot", movedAt(Vec3{0.83, 0.02}, true), true},
		{"put back: 8 cm off its spot", movedAt(Vec3{0.88, 0}, true), false},
		{"put back: never moved away", movedAt(Vec3{0.8, 0}, false), false},
		{"no goal", &State{Objects: []Object{can}}, false},
		{"goal object out of range", &State{Objects: []Object{can}, Goal: Goal{Kind: GoalKnock, Object: 3}}, false},
		{"drawer out of range", drawer(5, true, 0.2, 0.2, false), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Success(c.s); got != c.want {
				t.Errorf("Success = %v, want %v", got, c.want)
			}
		})
	}
}

func TestPutBackSlide(t *testing.T) {
	task, _ := TaskByName("put_back")
	ep, err := NewEpisode(task, 4, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := ep.State().Goal
	start := ep.State().Objects[g.Object].Pos
	if start != g.Spot || Success(ep.State()) {
		t.Fatalf("at the start the object is at %v (spot %v), success %v; want on its spot and no success", start, g.Spot, Success(ep.State()))
	}
	hold := armAct(0, 0, 0, -1)
	var xs []float64
	for range 6 {
		if _, err := ep.Step(hold); err != nil {
			t.Fatal(err)
		}
		xs = append(xs, ep.State().Objects[g.Object].Pos.DistXY(start))
	}
	total := g.SlideTo.DistXY(start)
	// SlideStart 2, SlideSteps 3: after steps 1..6 (the frames of steps
	// 1..6) the object is 0, 1/3, 2/3, all, all, all of the way.
	want := []float64{0, total / 3, 2 * total / 3, total, total, total}
	for i := range want {
		if !near(xs[i], want[i], 1e-9) {
			t.Errorf("after step %d the object is %.4f from its spot, want %.4f", i+1, xs[i], want[i])
		}
	}
	if !ep.State().Goal.Moved || Success(ep.State()) {
		t.Error("after the slide: Moved should be set and the task not yet solved")
	}
}

// TestBrokenStates feeds hand-built states the simulator cannot use to
// everything that takes a state: each reports an error or refuses, none
// panics.
func TestBrokenStates(t *testing.T) {
	good := func() *State {
		return &State{EE: armHome, Objects: []Object{resting(CokeCan, 0.8, 0, false), resting(Apple, 0.9, 0.2, false)},
			Goal: Goal{Kind: GoalMoveNear, Object: 0, Other: 1}}
	}
	if err := good().Check(); err != nil {
		t.Fatalf("a good state fails Check: %v", err)
	}
	nan := math.NaN()
	cases := map[string]func(s *State){
		"unknown kind":       func(s *State) { s.Objects[1].Kind = 200 },
		"NaN object":         func(s *State) { s.Objects[0].Pos[2] = nan },
		"far object":         func(s *State) { s.Objects[0].Pos[0] = 1e300 },
		"NaN base":           func(s *State) { s.Base.Yaw = nan },
		"Inf hand":           func(s *State) { s.EE[1] = math.Inf(1) },
		"grip above 1":       func(s *State) { s.Grip = 2 },
		"drawer beyond stop": func(s *State) { s.Drawers[1].Open = 0.5 },
		"grasp of object 7":  func(s *State) { s.Grasp = Grasp{Kind: GraspObject, Index: 7} },
		"grasp of drawer -1": func(s *State) { s.Grasp = Grasp{Kind: GraspDrawer, Index: -1} },
		"goal object 5":      func(s *State) { s.Goal.Object = 5 },
		"goal near itself":   func(s *State) { s.Goal.Other = 0 },
		"goal drawer 2":      func(s *State) { s.Goal = Goal{Kind: GoalDrawer, Drawer: 2} },
		"unknown goal":       func(s *State) { s.Goal.Kind = 99 },
		"too many objects":   func(s *State) { s.Objects = make([]Object, maxGroups) },
	}
	r, _ := NewRenderer(16, 16)
	defer r.Close()
	img := make([]byte, 16*16*3)
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			s := good()
			spoil(s)
			if s.Check() == nil {
				t.Fatal("Check accepted it")
			}
			if err := r.Render(img, s); err == nil {
				t.Error("Render accepted it")
			}
			if Success(s) {
				t.Error("Success reported it solved")
			}
			if a := NewExpert(ExpertOptions{}).Act(s); a[0] != 0 {
				t.Errorf("expert acted (mode %v) instead of terminating", a[0])
			}
		})
	}
	task, _ := TaskByName("pick")
	ep, _ := NewEpisode(task, 1, Options{})
	ep.State().Objects[0].Kind = 99
	if _, err := ep.Step(armAct(0, 0, 0, 0)); err == nil || !strings.Contains(err.Error(), "unknown kind") {
		t.Errorf("Step on a spoiled live state: %v", err)
	}
}
