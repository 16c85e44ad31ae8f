package sim

import (
	"math"
	"math/rand/v2"

	"github.com/ttmrobot/ttm/internal/action"
)

// Expert is a scripted controller that solves a task from the privileged
// state. Act returns the next RT-1 action; the slice is the expert's own and
// is overwritten by the next call. For a state that fails Check it returns
// a terminate action.
type Expert interface {
	Act(s *State) []float32
}

// ExpertOptions configures a scripted expert's imperfections.
type ExpertOptions struct {
	// Seed seeds the noise.
	Seed uint64
	// Noise is the standard deviation of Gaussian noise added to each arm
	// displacement dimension (world_vector x, y, z), in action units (one
	// unit is ArmScale metres); the result is clamped to the bounds.
	Noise float64
	// BaseNoise is the same for the base velocities x, y (m/s) and the yaw
	// rate (rad/s).
	BaseNoise float64
	// PauseProb is the chance, each step, that the expert starts a pause:
	// 1..MaxPause steps holding still (zero motion, gripper held).
	PauseProb float64
	// MaxPause is the longest pause; it defaults to 3.
	MaxPause int
}

// NewExpert returns a scripted expert. It is stateful: use one per episode.
func NewExpert(opts ExpertOptions) Expert {
	if opts.MaxPause <= 0 {
		opts.MaxPause = 3
	}
	x := &scripted{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, 0x5eed5eed)), grip: -1}
	return x
}

// The expert's plan parameters (metres).
const (
	safeZ      = TableHeight + 0.27 // travel height over the worktop
	reachTol   = 0.008              // waypoint reached (per axis)
	lowXYTol   = 0.03               // descend onto a point within this sideways
	riseXYTol  = 0.06               // low and farther than this sideways: rise before travelling
	lowStep    = 0.015              // largest sideways move per step among the objects
	placeClear = 0.003              // a placed object's bottom above the worktop
	baseTol    = 0.02
	baseYawTol = 0.02
	// armBaseTol and armBaseYawTol bound the base poses the arm carries on
	// from once it has left home (see armUnderway).
	armBaseTol    = 0.06
	armBaseYawTol = 0.12
	knockBefore   = 0.07 // sweep start before the object's edge
	knockAfter    = 0.05 // sweep end past its edge
	sweepHeight   = 0.6  // a sweep's height, as a share of the object's
)

// scripted is the expert for every goal kind. It is closed loop: each step
// it reads the state, decides the first unmet subgoal and acts towards it.
// What it remembers is only what it chose (the knock's sweep direction, the
// move's drop spot) or what its state shows (the base phase is over), never
// what it commanded: in a DAgger rollout the learner's action is executed
// in its place, and a label that depended on the expert's own last command
// ("keep letting go", "the sweep is under way") would be wrong for the
// state the learner produced. Whether the gripper is closing or opening is
// read from its closedness instead (see letting and closing).
type scripted struct {
	opts  ExpertOptions
	rng   *rand.Rand
	act   [11]float32
	grip  float32 // last gripper command
	pause int

	baseDone bool
	sweep    Vec3 // knock: sweep direction, zero until planned
	spot     Vec3 // move: where to put the object down
	spotSet  bool
}

func (x *scripted) Act(s *State) []float32 {
	if s.Check() != nil {
		x.terminate(x.grip) // nothing sensible to do in a broken state
		return x.act[:]
	}
	if x.pause > 0 {
		x.pause--
		x.hold(s)
		return x.act[:]
	}
	if x.opts.PauseProb > 0 && x.rng.Float64() < x.opts.PauseProb {
		x.pause = x.rng.IntN(x.opts.MaxPause)
		x.hold(s)
		return x.act[:]
	}
	x.plan(s)
	switch rt1.Dims[action.DimMode].Bin(x.act[action.DimMode]) {
	case action.ModeArm:
		x.noise(x.opts.Noise, action.DimWorldX, action.DimWorldY, action.DimWorldZ)
	case action.ModeBase:
		x.noise(x.opts.BaseNoise, action.DimBaseX, action.DimBaseY, action.DimBaseYaw)
	}
	for i, d := range rt1.Dims {
		x.act[i] = d.Clamp(x.act[i])
	}
	return x.act[:]
}

// noise adds Gaussian noise of standard deviation sigma to three dimensions.
func (x *scripted) noise(sigma float64, a, b, c int) {
	if sigma <= 0 {
		return
	}
	for _, i := range [3]int{a, b, c} {
		x.act[i] += float32(sigma * x.rng.NormFloat64())
	}
}

// hold sets an arm action that moves nothing and keeps the gripper where
// it is.
func (x *scripted) hold(s *State) {
	x.act = [11]float32{}
	x.act[action.DimMode] = action.ModeArm
	x.act[action.DimGripper] = keepGrip(s)
}

// terminate sets the terminate action with gripper command grip.
func (x *scripted) terminate(grip float32) {
	x.act = [11]float32{}
	x.act[action.DimMode] = action.ModeTerminate
	x.act[action.DimGripper] = grip
}

// keepGrip is the gripper command that keeps its closedness in s: the
// command of a gripper the expert is not moving, read from the state
// rather than from the expert's last command (see scripted).
func keepGrip(s *State) float32 { return float32(2*s.Grip - 1) }

// plan sets x.act for state s.
func (x *scripted) plan(s *State) {
	g := &s.Goal
	if !x.baseDone {
		if !armUnderway(s) && x.baseTo(s, baseGoal(s)) {
			return
		}
		x.baseDone = true
	}
	if Success(s) && x.finished(s) {
		x.terminate(keepGrip(s))
		return
	}
	switch g.Kind {
	case GoalPick:
		x.pick(s)
	case GoalKnock:
		x.knock(s)
	case GoalUpright:
		x.placeAt(s, g.Object, Vec3{}, false)
	case GoalMoveNear:
		if !x.spotSet {
			x.spot, x.spotSet = x.nearSpot(s), true
		}
		x.placeAt(s, g.Object, x.spot, true)
	case GoalPutBack:
		if !g.Moved {
			x.release(s) // wait, open, for the object to be slid away
			return
		}
		x.placeAt(s, g.Object, g.Spot, true)
	case GoalDrawer:
		if g.Open {
			x.openDrawer(s, g.Drawer)
		} else {
			x.closeDrawer(s, g.Drawer)
		}
	default:
		x.terminate(keepGrip(s))
	}
}

// baseGoal is where the expert parks the base before using the arm: square
// to the counter (yaw 0) at a fixed distance from its front, and sideways
// where the base is now. The sideways position is left free because
// nothing in the headcam's view marks it (the counter looks the same along
// its length), so a policy could not see how far a sideways move should
// go, nor when it is done; distance and heading show in the counter's
// edge. A sideways drift (base noise, or a learner's rollout that DAgger
// labels) is therefore not undone.
func baseGoal(s *State) Pose {
	goal := Pose{X: 0.20, Y: s.Base.Y}
	if s.Goal.Kind == GoalDrawer {
		goal.X = -0.15
	}
	return goal
}

// armUnderway reports whether the arm phase has begun in a state the
// expert did not drive itself (a DAgger rollout): the arm has left home
// and the base stands within the arm's working tolerance of baseGoal. The
// expert itself parks to baseTol and baseYawTol before moving the arm, but
// a learner starts its arm a few degrees off square. The arm works in the
// base frame and reaches the goal from there just as well; labelling every
// such state with a small base turn, which the frames barely show, taught
// the learner to stall (measured: 295 of 548 steps of a pick checkpoint's
// rollouts were labelled so, against 83 arm labels).
func armUnderway(s *State) bool {
	d, dyaw := baseOffset(s, baseGoal(s))
	return s.EE.Sub(armHome).Norm() > 0.01 &&
		math.Abs(d[0]) < armBaseTol && math.Abs(d[1]) < armBaseTol && math.Abs(dyaw) < armBaseYawTol
}

// baseOffset is where pose p lies from the base: its position in the base
// frame and the turn to its heading.
func baseOffset(s *State, p Pose) (d Vec3, dyaw float64) {
	return rotZ(Vec3{p.X - s.Base.X, p.Y - s.Base.Y, 0}, -s.Base.Yaw), wrapAngle(p.Yaw - s.Base.Yaw)
}

// finished reports whether, with the goal met, the expert may terminate:
// the hand has let go and moved clear where that matters.
func (x *scripted) finished(s *State) bool {
	e := s.EEWorld()
	switch s.Goal.Kind {
	case GoalPick:
		return true
	case GoalDrawer:
		return s.Grasp.Kind == GraspNone && e[0] <= handlePos(s.Goal.Drawer, s.Drawers[s.Goal.Drawer].Open)[0]-0.06
	default:
		return s.Grasp.Kind == GraspNone && e[2] >= safeZ-0.01
	}
}

// baseTo drives the base towards p; it returns false once the base is there.
func (x *scripted) baseTo(s *State, p Pose) bool {
	d, dyaw := baseOffset(s, p)
	if math.Abs(d[0]) < baseTol && math.Abs(d[1]) < baseTol && math.Abs(dyaw) < baseYawTol {
		return false
	}
	x.act = [11]float32{}
	x.act[action.DimMode] = action.ModeBase
	x.act[action.DimGripper] = keepGrip(s)
	x.act[action.DimBaseX] = float32(d[0] / StepSeconds)
	x.act[action.DimBaseY] = float32(d[1] / StepSeconds)
	x.act[action.DimBaseYaw] = float32(dyaw / StepSeconds)
	return true
}

// moveTo sets an arm action towards world point t with gripper command
// grip; among the objects (below safeZ) the sideways step is limited to
// lowStep unless fast. It reports whether the end-effector is already at t.
func (x *scripted) moveTo(s *State, t Vec3, grip float32, fast bool) bool {
	x.grip = grip
	x.act = [11]float32{}
	x.act[action.DimMode] = action.ModeArm
	x.act[action.DimGripper] = grip
	e := s.EEWorld()
	dw := t.Sub(e)
	if math.Abs(dw[0]) < reachTol && math.Abs(dw[1]) < reachTol && math.Abs(dw[2]) < reachTol {
		return true
	}
	if !fast && e[2] < safeZ-0.01 {
		if h := math.Hypot(dw[0], dw[1]); h > lowStep {
			dw[0], dw[1] = dw[0]*lowStep/h, dw[1]*lowStep/h
		}
	}
	db := rotZ(dw, -s.Base.Yaw)
	for k := range 3 {
		x.act[action.DimWorldX+k] = float32(clamp(db[k]/ArmScale, -1, 1))
	}
	return false
}

// reach moves to world point t through the air: it rises to safeZ before
// travelling sideways and descends onto t from above, correcting sideways
// slowly on the way down. It reports arrival.
func (x *scripted) reach(s *State, t Vec3, grip float32) bool {
	e := s.EEWorld()
	low := e[2] < safeZ-0.01
	if d := e.DistXY(t); !low && d > lowXYTol || low && d > riseXYTol {
		if low {
			x.rise(s, grip)
		} else {
			x.moveTo(s, Vec3{t[0], t[1], max(safeZ, t[2])}, grip, true)
		}
		return false
	}
	return x.moveTo(s, t, grip, false)
}

// rise lifts the hand straight up to safeZ with gripper command grip.
func (x *scripted) rise(s *State, grip float32) {
	e := s.EEWorld()
	x.moveTo(s, Vec3{e[0], e[1], safeZ}, grip, false)
}

// grasp goes for object i: open, over it, down to its centre, close. A
// closed gripper that missed is opened again.
func (x *scripted) grasp(s *State, i int) {
	o := &s.Objects[i]
	aim, tol := o.Pos, graspXY/2
	switch {
	case s.Grip > 0.99: // closed and holding nothing: missed, open again
		x.release(s)
	case closing(s) && graspDistance(o, s.EEWorld()) < 0.8*graspXY: // still in reach
		x.close(s)
	case (x.reach(s, aim, -1) || x.within(s, aim, tol, 0.015)) && s.Grip < 0.01:
		x.close(s)
	}
}

// closing reports whether the gripper, holding nothing, is half closed:
// one closing step from a grasp (GripRate 0.5), which is what the expert
// finishes when the hand is still in reach. (It is also where a gripper
// opening after a miss passes, with the hand out of reach.)
func closing(s *State) bool { return s.Grasp.Kind == GraspNone && s.Grip > 0.01 && s.Grip < 0.99 }

// letting reports whether the gripper, holding something, has opened below
// the closedness at which it grasps: the release is under way.
func letting(s *State) bool { return s.Grasp.Kind != GraspNone && s.Grip < graspClosed }

// within reports whether the hand is within xy sideways and z vertically
// of world point t: close enough for the kinematic rules, if not at t.
func (x *scripted) within(s *State, t Vec3, xy, z float64) bool {
	e := s.EEWorld()
	return e.DistXY(t) <= xy && math.Abs(e[2]-t[2]) <= z
}

// close closes the gripper without moving.
func (x *scripted) close(s *State) {
	x.moveTo(s, s.EEWorld(), 1, false)
	x.zeroMotion()
}

// zeroMotion clears the arm displacement of the current action.
func (x *scripted) zeroMotion() {
	x.act[action.DimWorldX], x.act[action.DimWorldY], x.act[action.DimWorldZ] = 0, 0, 0
}

// release opens the gripper without moving.
func (x *scripted) release(s *State) {
	x.moveTo(s, s.EEWorld(), -1, false)
	x.zeroMotion()
}

func (x *scripted) pick(s *State) {
	i := s.Goal.Object
	switch {
	case s.Grasp.Holds(i):
		x.rise(s, 1)
	case s.Grasp.Kind != GraspNone:
		x.release(s)
	default:
		x.grasp(s, i)
	}
}

// placeAt picks object i and puts it down standing, at spot's x, y if
// useSpot, else straight below where it hangs; then lets go and rises.
func (x *scripted) placeAt(s *State, i int, spot Vec3, useSpot bool) {
	o := &s.Objects[i]
	switch {
	case s.Grasp.Holds(i):
		if o.Fallen { // lift until it swings upright
			x.rise(s, 1)
			return
		}
		e := s.EEWorld()
		t := Vec3{e[0], e[1], 0}
		if useSpot {
			t = Vec3{spot[0], spot[1], 0}
		}
		t[2] = TableHeight + halfHeight(o.Kind, false) + placeClear - s.Grasp.Offset[2]
		t[0] -= s.Grasp.Offset[0]
		t[1] -= s.Grasp.Offset[1]
		// Let go at the spot, or keep letting go while the object is
		// low enough to land standing (and near the spot).
		low := s.Lift(i) < dropTipHeight/2 && (!useSpot || o.Pos.DistXY(spot) < 0.025)
		if letting(s) && low || x.reach(s, t, 1) || x.within(s, t, 0.015, 0.012) {
			x.release(s)
		}
	case s.Grasp.Kind != GraspNone:
		x.release(s)
	case Success(s):
		x.rise(s, -1)
	default:
		x.grasp(s, i)
	}
}

// nearSpot chooses where to put the goal's object down next to the other
// one: on the worktop, clear of the rest, on the side it comes from.
func (x *scripted) nearSpot(s *State) Vec3 {
	g := &s.Goal
	o, ref := &s.Objects[g.Object], &s.Objects[g.Other]
	fp := footprint(o.Kind, false)
	d := fp + footprint(ref.Kind, ref.Fallen) + 0.035
	a0 := math.Atan2(o.Pos[1]-ref.Pos[1], o.Pos[0]-ref.Pos[0])
	best, bestClear := Vec3{}, math.Inf(-1)
	for k := range 16 {
		a := a0 + float64((k+1)/2)*math.Pi/8*float64(1-2*(k%2))
		p := Vec3{ref.Pos[0] + d*math.Cos(a), ref.Pos[1] + d*math.Sin(a), 0}
		if p[0] < CounterFront+0.08 || p[0] > counterBack-0.08 || math.Abs(p[1]) > counterHalfWidth-0.08 {
			continue
		}
		clear := math.Inf(1)
		for j := range s.Objects {
			if j == g.Object || j == g.Other {
				continue
			}
			q := &s.Objects[j]
			clear = min(clear, p.DistXY(q.Pos)-fp-footprint(q.Kind, q.Fallen))
		}
		if clear >= 0.03 {
			return p
		}
		if clear > bestClear {
			best, bestClear = p, clear
		}
	}
	return best
}

func (x *scripted) knock(s *State) {
	i := s.Goal.Object
	o := &s.Objects[i]
	switch {
	case o.Fallen:
		if s.Grasp.Kind != GraspNone {
			x.release(s)
			return
		}
		if start, end := knockedSweep(o); onSweep(s, start, end) && !x.moveTo(s, end, -1, true) {
			return // follow through to the sweep's end
		}
		x.rise(s, -1)
		return
	case s.Grasp.Kind != GraspNone:
		x.release(s)
		return
	}
	if x.sweep == (Vec3{}) {
		x.sweep = x.sweepDir(s, i)
	}
	start, end := sweepEnds(o.Pos, x.sweep, bodyRadius(o.Kind), sweepZ(o.Bottom(), o.Top()-o.Bottom()))
	if !onSweep(s, start, end) && !x.reach(s, start, -1) && !x.within(s, start, 0.02, 0.015) {
		return
	}
	if x.moveTo(s, end, -1, true) { // at the end and still standing: again
		x.sweep = Vec3{}
		x.rise(s, -1)
	}
}

// knockedSweep is the sweep that knocked o over, read off how it lies: it
// fell along its yaw about its bottom edge, half its height on.
func knockedSweep(o *Object) (start, end Vec3) {
	d := Vec3{math.Cos(o.Yaw), math.Sin(o.Yaw), 0}
	h, R := catalogue[o.Kind].Height, bodyRadius(o.Kind)
	p := o.Pos.Sub(d.Scale(h / 2))
	return sweepEnds(p, d, R, sweepZ(surfaceZ(p[0], p[1]), h))
}

// sweepZ is the height of a sweep through a body of height h standing on
// bottom.
func sweepZ(bottom, h float64) float64 { return bottom + sweepHeight*h }

// sweepEnds returns where a sweep along unit d through a body of radius R
// at p starts and ends, at height z.
func sweepEnds(p, d Vec3, R, z float64) (start, end Vec3) {
	start, end = p.Sub(d.Scale(R+knockBefore)), p.Add(d.Scale(R+knockAfter))
	start[2], end[2] = z, z
	return start, end
}

// onSweep reports whether the hand is on the sweep from start to end:
// within 2 cm of the segment sideways and 1.5 cm of its height, the
// tolerances of reaching its start. The sweep is under way there whoever
// brought the hand to it.
func onSweep(s *State, start, end Vec3) bool {
	e := s.EEWorld()
	_, side := segmentPointXY(start, end, e)
	return side <= 0.02 && math.Abs(e[2]-start[2]) <= 0.015
}

// sweepDir chooses the direction to sweep through object i: the first of
// 16 directions, from straight ahead outwards, whose start, path and
// landing spot are clear and within reach.
func (x *scripted) sweepDir(s *State, i int) Vec3 {
	o := &s.Objects[i]
	R, h := bodyRadius(o.Kind), catalogue[o.Kind].Height
	for k := range 16 {
		a := float64((k+1)/2) * math.Pi / 8 * float64(1-2*(k%2))
		d := Vec3{math.Cos(a), math.Sin(a), 0}
		start, end := sweepEnds(o.Pos, d, R, o.Pos[2])
		land := o.Pos.Add(d.Scale(h/2 + 0.04))
		if !onCounter(land[0], land[1]) || !x.reachable(s, start) || !x.reachable(s, end) {
			continue
		}
		ok := true
		for j := range s.Objects {
			if j == i {
				continue
			}
			q := &s.Objects[j]
			_, dist := segmentPointXY(start, end, q.Pos)
			if dist < footprint(q.Kind, q.Fallen)+eeRadius+0.03 {
				ok = false
				break
			}
		}
		if ok {
			return d
		}
	}
	return Vec3{1, 0, 0}
}

// reachable reports whether world point p is inside the arm's workspace
// with a margin.
func (x *scripted) reachable(s *State, p Vec3) bool {
	b := s.ToBase(p)
	return b[0] > armMin[0]+0.02 && b[0] < armMax[0]-0.02 && b[1] > armMin[1]+0.02 && b[1] < armMax[1]-0.02
}

func (x *scripted) openDrawer(s *State, i int) {
	d := s.Drawers[i].Open
	h := handlePos(i, d)
	switch {
	case s.Grasp.Kind == GraspDrawer && s.Grasp.Index == i:
		if d >= DrawerOpenDistance+0.05 || letting(s) || Success(s) && d >= s.drawerLimit()-0.01 {
			x.release(s)
			return
		}
		x.moveTo(s, handlePos(i, DrawerOpenDistance+0.07), 1, true)
	case s.Grasp.Kind != GraspNone:
		x.release(s)
	case d >= DrawerOpenDistance:
		x.moveTo(s, h.Add(Vec3{-0.10, 0, 0.03}), -1, true) // back off
	case s.Grip > 0.99:
		x.release(s) // missed the handle
	default:
		e := s.EEWorld()
		tol := handleGraspRadius / 2
		pre := h.Add(Vec3{-0.08, 0, 0})
		// In line with the handle bar (14 cm wide, grasped within 3 cm).
		inLine := math.Abs(e[1]-h[1]) < 0.04 && math.Abs(e[2]-h[2]) < 0.015 && e[0] >= pre[0]-0.02 && e[0] <= h[0]+0.01
		switch {
		case closing(s) && e.Sub(h).Norm() < 0.8*handleGraspRadius: // still in reach
			x.close(s)
		case !inLine:
			x.moveTo(s, pre, -1, true)
		case (x.moveTo(s, h, -1, true) || e.Sub(h).Norm() < tol) && s.Grip < 0.01:
			x.close(s)
		}
	}
}

func (x *scripted) closeDrawer(s *State, i int) {
	d := s.Drawers[i].Open
	z0, z1 := drawerZ(i)
	y, z := 0.14, (z0+z1)/2
	switch {
	case s.Grasp.Kind != GraspNone:
		x.release(s)
	case d <= DrawerClosedDistance:
		x.moveTo(s, Vec3{CounterFront - 0.16, y, z + 0.03}, -1, true) // back off
	default:
		e := s.EEWorld()
		pre := Vec3{CounterFront - d - 0.08, y, z}
		// In front of the panel (44 x 20 cm), clear of the handle.
		inLine := math.Abs(e[1]-y) < 0.05 && math.Abs(e[2]-z) < 0.05 && e[0] >= pre[0]-0.02
		if !inLine {
			x.moveTo(s, pre, -1, true)
			return
		}
		x.moveTo(s, Vec3{CounterFront - eeRadius, y, z}, -1, true)
	}
}
