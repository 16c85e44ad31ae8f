package sim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"
)

// armAct returns an arm-mode action: displacement (x, y, z) and gripper g.
func armAct(x, y, z, g float32) []float32 {
	a := make([]float32, 11)
	a[action.DimMode] = action.ModeArm
	a[action.DimWorldX], a[action.DimWorldY], a[action.DimWorldZ] = x, y, z
	a[action.DimGripper] = g
	return a
}

// baseAct returns a base-mode action: velocities vx, vy (m/s), yaw rate w.
func baseAct(vx, vy, w float32) []float32 {
	a := make([]float32, 11)
	a[action.DimMode] = action.ModeBase
	a[action.DimBaseX], a[action.DimBaseY], a[action.DimBaseYaw] = vx, vy, w
	return a
}

// resting returns an object of kind k resting on the surface at (x, y).
func resting(k Kind, x, y float64, fallen bool) Object {
	o := Object{Kind: k, Pos: Vec3{x, y, 0}, Fallen: fallen}
	rest(&o)
	return o
}

// newTestState returns a state with the base at the world origin facing
// +x (so base frame = world frame), the hand at p and the gripper open.
func newTestState(p Vec3, objs ...Object) *State {
	return &State{EE: p, Objects: objs}
}

func steps(s *State, n int, a []float32) {
	r := rand.New(rand.NewPCG(1, 2))
	for range n {
		s.apply(a, r)
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func nearVec(a, b Vec3, tol float64) bool {
	return near(a[0], b[0], tol) && near(a[1], b[1], tol) && near(a[2], b[2], tol)
}

func TestArmDisplacementInBaseFrame(t *testing.T) {
	s := &State{Base: Pose{X: 0.1, Y: -0.2, Yaw: math.Pi / 2}, EE: Vec3{0.5, 0, 1.1}}
	w0 := s.EEWorld()
	// Base at (0.1, -0.2) turned 90°: base +x is world +y. Hand at base
	// (0.5, 0, 1.1) is at world (0.1, 0.3, 1.1).
	if !nearVec(w0, Vec3{0.1, 0.3, 1.1}, 1e-12) {
		t.Fatalf("hand in world = %v, want (0.1, 0.3, 1.1)", w0)
	}
	steps(s, 1, armAct(1, -0.5, 0.2, -1))
	if !nearVec(s.EE, Vec3{0.55, -0.025, 1.11}, 1e-9) {
		t.Errorf("hand in base frame = %v, want (0.55, -0.025, 1.11) after (1, -0.5, 0.2)·5 cm", s.EE)
	}
	if d := s.EEWorld().Sub(w0); !nearVec(d, Vec3{0.025, 0.05, 0.01}, 1e-9) {
		t.Errorf("world displacement = %v, want (0.025, 0.05, 0.01)", d)
	}
}

func TestArmWorkspaceClamp(t *testing.T) {
	s := newTestState(Vec3{0.4, 0, 1.2})
	steps(s, 30, armAct(1, 1, 1, -1))
	if s.EE != armMax {
		t.Errorf("hand = %v after pushing out of the workspace, want its corner %v", s.EE, armMax)
	}
}

func TestModeSelectsDimensions(t *testing.T) {
	all := make([]float32, 11)
	for i := range all {
		all[i] = 0.5
	}
	t.Run("arm ignores base", func(t *testing.T) {
		s := newTestState(Vec3{0.4, 0, 1.1})
		a := append([]float32(nil), all...)
		a[action.DimMode] = action.ModeArm
		steps(s, 1, a)
		if s.Base != (Pose{}) {
			t.Errorf("base moved in arm mode: %+v", s.Base)
		}
		if !nearVec(s.EE, Vec3{0.425, 0.025, 1.125}, 1e-9) {
			t.Errorf("hand = %v, want (0.425, 0.025, 1.125)", s.EE)
		}
	})
	t.Run("base ignores arm", func(t *testing.T) {
		s := newTestState(Vec3{0.4, 0, 1.1})
		a := append([]float32(nil), all...)
		a[action.DimMode] = action.ModeBase
		steps(s, 1, a)
		if s.EE != (Vec3{0.4, 0, 1.1}) || s.Grip != 0 || s.Rot != (Vec3{}) {
			t.Errorf("arm changed in base mode: hand %v grip %v rot %v", s.EE, s.Grip, s.Rot)
		}
		// 0.5 m/s forward and left for 1/3 s, turning 0.5 rad/s: the
		// displacement uses the heading before the step.
		want := Pose{X: 0.5 / 3, Y: 0.5 / 3, Yaw: 0.5 / 3}
		if !near(s.Base.X, want.X, 1e-9) || !near(s.Base.Y, want.Y, 1e-9) || !near(s.Base.Yaw, want.Yaw, 1e-9) {
			t.Errorf("base = %+v, want %+v", s.Base, want)
		}
	})
	t.Run("terminate moves nothing", func(t *testing.T) {
		s := newTestState(Vec3{0.4, 0, 1.1})
		a := append([]float32(nil), all...)
		a[action.DimMode] = action.ModeTerminate
		r := rand.New(rand.NewPCG(1, 1))
		if !s.apply(a, r) || !s.Terminated {
			t.Error("terminate did not end the episode")
		}
		if s.Base != (Pose{}) || s.EE != (Vec3{0.4, 0, 1.1}) || s.Grip != 0 {
			t.Error("terminate moved the robot")
		}
	})
}

func TestBaseMotion(t *testing.T) {
	s := &State{Base: Pose{X: -0.5, Y: 0, Yaw: math.Pi / 2}, EE: armHome}
	steps(s, 1, baseAct(0.3, 0, 0))
	// Facing +y, 0.3 m/s forward for 1/3 s: 0.1 m along world +y.
	if !near(s.Base.X, -0.5, 1e-12) || !near(s.Base.Y, 0.1, 1e-7) { // float32 0.3
		t.Errorf("base = %+v, want (-0.5, 0.1)", s.Base)
	}
	// The counter stops the base: from x = 0.2 facing it, a full-speed
	// step would reach x = 0.53; the base drives until it touches the
	// counter's front (its radius short of it) and still turns.
	s = &State{Base: Pose{X: 0.2}, EE: armHome}
	steps(s, 1, baseAct(1, 0, 0.3))
	if touch := CounterFront - baseRadius; s.Base.X > touch || s.Base.X < touch-1e-6 {
		t.Errorf("base stopped at x = %v, want the counter's touch point %v", s.Base.X, touch)
	}
	if !near(s.Base.Yaw, 0.1, 1e-7) {
		t.Errorf("base blocked by the counter turned to %v, want 0.1", s.Base.Yaw)
	}
	// Sideways along the counter's front nothing is in the way.
	s = &State{Base: Pose{X: 0.2}, EE: armHome}
	steps(s, 1, baseAct(0, 0.3, 0))
	if !near(s.Base.Y, 0.1, 1e-7) || s.Base.X != 0.2 {
		t.Errorf("base along the counter went to %+v, want (0.2, 0.1)", s.Base)
	}
	// Yaw wraps into (-π, π].
	s = &State{Base: Pose{X: -0.5, Yaw: 3}, EE: armHome}
	steps(s, 1, baseAct(0, 0, 3))
	if want := 3 + 1.0 - 2*math.Pi; !near(s.Base.Yaw, want, 1e-6) {
		t.Errorf("yaw = %v, want %v", s.Base.Yaw, want)
	}
}

func TestGraspLiftRelease(t *testing.T) {
	can := resting(CokeCan, 0.8, 0, false) // centre z = 0.8 + 0.061
	s := newTestState(can.Pos, can)
	steps(s, 1, armAct(0, 0, 0, 1))
	if s.Grip != 0.5 || s.Grasp.Kind != GraspNone {
		t.Fatalf("after one closing step: grip %v, grasp %v; want 0.5 and nothing", s.Grip, s.Grasp)
	}
	steps(s, 1, armAct(0, 0, 0, 1))
	if !s.Grasp.Holds(0) {
		t.Fatalf("closed gripper at the can's centre does not hold it: %+v", s.Grasp)
	}
	steps(s, 2, armAct(0, 0, 1, 1))
	if !near(s.Lift(0), 0.10, 1e-9) || s.Resting(0) {
		t.Errorf("lifted can: lift %v resting %v, want 0.10 and false", s.Lift(0), s.Resting(0))
	}
	steps(s, 1, armAct(0, 0, 0, -1))
	if !s.Grasp.Holds(0) {
		t.Error("half-open gripper (0.5) let go; it lets go below 0.5")
	}
	steps(s, 1, armAct(0, 0, 0, -1))
	if s.Grasp.Kind != GraspNone || !s.Objects[0].Fallen || !s.Resting(0) {
		t.Errorf("can dropped from 10 cm: grasp %v fallen %v resting %v; want released, fallen, resting",
			s.Grasp, s.Objects[0].Fallen, s.Resting(0))
	}
}

func TestPlaceUpright(t *testing.T) {
	can := resting(PepsiCan, 0.8, 0.1, false)
	s := newTestState(can.Pos, can)
	steps(s, 2, armAct(0, 0, 0, 1))
	steps(s, 1, armAct(0, 0, 0.4, 1)) // 2 cm up
	steps(s, 2, armAct(0, 0, 0, -1))
	if s.Grasp.Kind != GraspNone || s.Objects[0].Fallen || !s.OnTable(0) {
		t.Errorf("can set down from 2 cm: grasp %v fallen %v on table %v; want upright on the table",
			s.Grasp, s.Objects[0].Fallen, s.OnTable(0))
	}
}

func TestGraspNeedsReachAndOpening(t *testing.T) {
	can := resting(CokeCan, 0.8, 0, false)
	s := newTestState(can.Pos.Add(Vec3{0, 0.05, 0}), can)
	steps(s, 2, armAct(0, 0, 0, 1))
	if s.Grasp.Kind != GraspNone {
		t.Errorf("grasped a can 5 cm away: %+v", s.Grasp)
	}
	// Already closed: moving onto the can and commanding closed again
	// does not grasp (the fingers never closed around it).
	steps(s, 1, armAct(0, -1, 0, 1))
	if s.Grasp.Kind != GraspNone {
		t.Errorf("closed gripper grasped without closing: %+v", s.Grasp)
	}
}

func TestHeldObjectStaysAboveTable(t *testing.T) {
	can := resting(CokeCan, 0.8, 0, false)
	s := newTestState(can.Pos, can)
	steps(s, 2, armAct(0, 0, 0, 1))
	steps(s, 3, armAct(0, 0, -1, 1))
	if !near(s.Objects[0].Bottom(), TableHeight, 1e-9) {
		t.Errorf("held can pushed into the worktop: bottom at %v, want %v", s.Objects[0].Bottom(), TableHeight)
	}
}

func TestFallenObjectHangsUprightWhenLifted(t *testing.T) {
	b := resting(WaterBottle, 0.8, 0, true) // lying along +x
	s := newTestState(b.Pos, b)
	steps(s, 2, armAct(0, 0, 0, 1))
	if !s.Grasp.Holds(0) {
		t.Fatal("did not grasp the fallen bottle at its middle")
	}
	steps(s, 1, armAct(0, 0, 1, 1)) // hand 0.835 + 0.05: too low to hang (needs 0.8 + 0.11 + 0.02)
	if !s.Objects[0].Fallen {
		t.Error("bottle swung upright with its end still in the worktop")
	}
	steps(s, 1, armAct(0, 0, 1, 1)) // 0.935
	if s.Objects[0].Fallen || s.Objects[0].Pos != s.EEWorld() {
		t.Errorf("lifted bottle: fallen %v centre %v hand %v; want upright, centred on the hand",
			s.Objects[0].Fallen, s.Objects[0].Pos, s.EEWorld())
	}
}

func TestKnockOver(t *testing.T) {
	can := resting(SevenUpCan, 0.8, 0, false)
	s := newTestState(Vec3{0.66, 0, 0.87}, can)
	steps(s, 1, armAct(1, 0, 0, -1)) // 0.66 -> 0.71: passes 9 cm from the axis
	if s.Objects[0].Fallen {
		t.Fatal("knocked over from 9 cm away")
	}
	steps(s, 1, armAct(1, 0, 0, -1)) // 0.71 -> 0.76: 4 cm < 3.3 + 1.5 cm
	o := s.Objects[0]
	want := Vec3{0.8 + 0.122/2, 0, TableHeight + 0.033}
	if !o.Fallen || !nearVec(o.Pos, want, 1e-9) || !near(o.Yaw, 0, 1e-12) {
		t.Errorf("swept can: fallen %v centre %v yaw %v; want fallen along +x at %v", o.Fallen, o.Pos, o.Yaw, want)
	}
}

func TestSlowOrHighSweepDoesNotKnock(t *testing.T) {
	for _, c := range []struct {
		name  string
		start Vec3
		act   []float32
		n     int
	}{
		{"slow", Vec3{0.72, 0, 0.87}, armAct(0.5, 0, 0, -1), 6}, // 2.5 cm per step
		{"above", Vec3{0.66, 0, 0.95}, armAct(1, 0, 0, -1), 5},  // over the can's top
		{"beside", Vec3{0.66, 0.06, 0.87}, armAct(1, 0, 0, -1), 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			can := resting(SevenUpCan, 0.8, 0, false)
			s := newTestState(c.start, can)
			steps(s, c.n, c.act)
			if s.Objects[0].Fallen || s.Objects[0].Pos != can.Pos {
				t.Errorf("can moved: %+v", s.Objects[0])
			}
		})
	}
}

func TestPushAside(t *testing.T) {
	sp := resting(Sponge, 0.8, 0, false)
	s := newTestState(Vec3{0.66, 0, 0.83}, sp)
	steps(s, 3, armAct(1, 0, 0, -1)) // hand ends at 0.81
	o := s.Objects[0]
	need := bodyRadius(Sponge) + eeRadius
	if o.Fallen || !near(o.Pos[0], 0.81+need, 1e-9) || o.Pos[1] != 0 || !s.OnTable(0) {
		t.Errorf("pushed sponge at %v fallen %v, want x = %v on the table", o.Pos, o.Fallen, 0.81+need)
	}
}

func TestDrawerPullAndPush(t *testing.T) {
	h := handlePos(DrawerTop, 0) // (0.52, 0, 0.66)
	s := newTestState(h)
	steps(s, 2, armAct(0, 0, 0, 1))
	if s.Grasp.Kind != GraspDrawer || s.Grasp.Index != DrawerTop {
		t.Fatalf("closing on the top handle: grasp %+v", s.Grasp)
	}
	steps(s, 3, armAct(-1, 0, 0, 1))
	if !near(s.Drawers[DrawerTop].Open, 0.15, 1e-9) {
		t.Errorf("pulled 15 cm: drawer open %v", s.Drawers[DrawerTop].Open)
	}
	steps(s, 3, armAct(-1, 0, 0, 1))
	if s.Drawers[DrawerTop].Open != MaxDrawerOpen || !near(s.EE[0], CounterFront-handleOut-MaxDrawerOpen, 1e-9) {
		t.Errorf("pulled past the stop: open %v hand x %v; want %v and the hand held at the handle",
			s.Drawers[DrawerTop].Open, s.EE[0], MaxDrawerOpen)
	}
	if s.Drawers[DrawerBottom].Open != 0 {
		t.Error("the bottom drawer moved")
	}
	steps(s, 2, armAct(0, 0, 0, -1))
	if s.Grasp.Kind != GraspNone {
		t.Fatal("opening the gripper did not let go of the handle")
	}
	// Push the open drawer shut from its front, beside the handle.
	s.EE = Vec3{0.20, 0.14, 0.66}
	steps(s, 2, armAct(1, 0, 0, -1)) // hand 0.30: its edge 0.315 is 1.5 cm into the front at 0.30
	if want := CounterFront - (0.30 + eeRadius); !near(s.Drawers[DrawerTop].Open, want, 1e-9) {
		t.Errorf("pushed drawer open %v, want %v", s.Drawers[DrawerTop].Open, want)
	}
	steps(s, 6, armAct(1, 0, 0, -1))
	if s.Drawers[DrawerTop].Open != 0 || !near(s.EE[0], CounterFront-eeRadius, 1e-9) {
		t.Errorf("after pushing home: open %v hand x %v; want 0 and the hand at the cabinet", s.Drawers[DrawerTop].Open, s.EE[0])
	}
}

func TestHandStaysOutOfCounter(t *testing.T) {
	s := newTestState(Vec3{0.8, 0, 0.9})
	steps(s, 4, armAct(0, 0, -1, -1))
	if !near(s.EE[2], TableHeight+eeRadius, 1e-12) {
		t.Errorf("hand went down to %v over the worktop, want %v", s.EE[2], TableHeight+eeRadius)
	}
	s = newTestState(Vec3{0.40, -0.4, 0.5})
	steps(s, 4, armAct(1, 0, 0, -1))
	if !near(s.EE[0], CounterFront-eeRadius, 1e-12) {
		t.Errorf("hand went into the cabinet to x = %v, want %v", s.EE[0], CounterFront-eeRadius)
	}
}

func TestBaseCannotPushHandIntoCounter(t *testing.T) {
	// Hand low in front of the cabinet: driving forward would put it inside.
	s := &State{Base: Pose{X: -0.2}, EE: Vec3{0.70, 0, 0.5}}
	steps(s, 1, baseAct(0.6, 0, 0))
	if s.Base.X != -0.2 {
		t.Errorf("base moved to %v and pushed the hand into the cabinet", s.Base.X)
	}
}

// TestImagePoint: the point on the camera's optical axis lands on the image
// centre, a point to the robot's left lands left of it and one higher up
// lands above it, and a point behind the camera is not in the image.
func TestImagePoint(t *testing.T) {
	var s State
	s.Base = Pose{X: 0.1, Y: -0.2, Yaw: 0.3}
	const h, w = 128, 160
	var c camera
	c.set(&s, h, w)
	ahead := c.pos.Add(c.fwd.Scale(1.5))
	u, v, ok := ImagePoint(&s, h, w, ahead)
	if !ok || math.Abs(u-(w-1)/2.0) > 1e-9 || math.Abs(v-(h-1)/2.0) > 1e-9 {
		t.Fatalf("optical axis at (%v, %v, %v), want the centre", u, v, ok)
	}
	left := ahead.Add(rotZ(Vec3{0, 0.1, 0}, s.Base.Yaw))
	if ul, _, _ := ImagePoint(&s, h, w, left); ul >= u {
		t.Errorf("a point to the left at column %v, the centre is %v", ul, u)
	}
	if _, vu, _ := ImagePoint(&s, h, w, ahead.Add(Vec3{0, 0, 0.1})); vu >= v {
		t.Errorf("a higher point at row %v, the centre is %v", vu, v)
	}
	if _, _, ok := ImagePoint(&s, h, w, c.pos.Sub(c.fwd)); ok {
		t.Error("a point behind the camera is in the image")
	}
}
