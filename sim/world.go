package sim

import (
	"math"
	"math/rand/v2"

	"github.com/ttmrobot/ttm/internal/action"
)

// The kinematic rules of one step. Nothing here is dynamics: positions are
// set, not integrated from forces.
//
// Arm mode: the end-effector moves by ArmScale·world_vector in the base
// frame, clamped to the arm's workspace; it cannot enter the counter or a
// drawer (it stops at their faces, and pushes an open drawer in when it
// comes at its front from the robot's side). The rotation deltas add to the
// gripper's orientation. The gripper dimension is the closedness target
// (-1 open .. 1 closed), approached by at most GripRate per step. A gripper
// that closes past graspClosed grasps the nearest object or drawer handle
// within reach; one that opens below releaseClosed lets go. A released object
// drops onto the surface under it, and a can or bottle dropped from more than
// dropTipHeight lands on its side.
//
// Base mode: the base moves by its velocities (m/s and rad/s) for
// StepSeconds; it does not move if it would hit the counter, an open drawer
// or the edge of the floor area, or push the end-effector into the counter.
//
// In both modes a held object follows the end-effector (a fallen can or
// bottle swings upright once lifted high enough to hang), a held drawer
// follows the end-effector along x, and an end-effector that sweeps at
// least knockMove sideways through an upright object knocks it over along
// the motion (cans and bottles) or pushes it out of the way (the others).
const (
	graspXY        = 0.03 // end-effector to an object's axis for a grasp
	knockMove      = 0.03 // smallest horizontal sweep in one step that knocks (9 cm/s)
	dropTipHeight  = 0.05
	uprightClear   = 0.02 // a held fallen object swings upright with this much room below
	collisionSlack = 1e-9
)

var rt1 = action.RT1()

// apply runs one step of action a (11 values, finite, within bounds). It
// reports whether the action terminates the episode.
func (s *State) apply(a []float32, r *rand.Rand) (terminate bool) {
	switch rt1.Dims[action.DimMode].Bin(a[action.DimMode]) {
	case action.ModeTerminate:
		s.Terminated = true
		return true
	case action.ModeArm:
		s.armStep(a, r)
	case action.ModeBase:
		s.baseStep(a, r)
	}
	return false
}

func (s *State) armStep(a []float32, r *rand.Rand) {
	prev := s.EEWorld()
	d := Vec3{float64(a[action.DimWorldX]), float64(a[action.DimWorldY]), float64(a[action.DimWorldZ])}.Scale(ArmScale)
	s.EE = clampBox(s.EE.Add(d), armMin, armMax)
	for k, dim := range [3]int{action.DimRoll, action.DimPitch, action.DimYaw} {
		s.Rot[k] = clamp(s.Rot[k]+float64(a[dim]), -math.Pi/2, math.Pi/2)
	}
	target := (float64(a[action.DimGripper]) + 1) / 2
	prevGrip := s.Grip
	s.Grip = clamp(target, s.Grip-GripRate, s.Grip+GripRate)
	s.Grip = clamp(s.Grip, 0, 1)

	w := s.resolveCollisions(prev, s.EEWorld())
	s.settle(prev, w)
	s.updateGrasp(prevGrip, r)
	s.carry()
}

func (s *State) baseStep(a []float32, r *rand.Rand) {
	prev := s.EEWorld()
	v := rotZ(Vec3{float64(a[action.DimBaseX]), float64(a[action.DimBaseY]), 0}, s.Base.Yaw).Scale(StepSeconds)
	next := Pose{s.Base.X + v[0], s.Base.Y + v[1], wrapAngle(s.Base.Yaw + float64(a[action.DimBaseYaw])*StepSeconds)}
	if !s.baseFree(next) {
		f := s.baseFreeFraction(v)
		next.X, next.Y = s.Base.X+f*v[0], s.Base.Y+f*v[1]
	}
	old := s.Base
	s.Base = next
	w := s.EEWorld()
	if s.insideFurniture(w) {
		s.Base = old
		return
	}
	s.settle(prev, w)
	s.carry()
}

// settle applies the constraints of what the gripper holds to the
// end-effector's new world position w, stores it, and lets the sweep from
// prev knock or push objects.
func (s *State) settle(prev, w Vec3) {
	switch s.Grasp.Kind {
	case GraspDrawer:
		i := s.Grasp.Index
		h := handlePos(i, s.Drawers[i].Open)
		if math.Abs(w[2]-h[2]) > handleSlipZ || math.Abs(w[1]) > handleSlipY {
			s.Grasp = Grasp{}
			break
		}
		open := clamp(CounterFront-handleOut-w[0], 0, s.drawerLimit())
		s.Drawers[i].Open = open
		w[0] = CounterFront - handleOut - open
	case GraspObject:
		o := &s.Objects[s.Grasp.Index]
		off := s.Grasp.Offset
		low := surfaceZ(w[0]+off[0], w[1]+off[1]) + halfHeight(o.Kind, o.Fallen) - off[2]
		w[2] = max(w[2], low)
	}
	if w != s.EEWorld() { // write back only what a constraint moved: no round-off otherwise
		s.EE = clampBox(s.ToBase(w), armMin, armMax)
	}
	s.sweep(prev, s.EEWorld())
}

// drawerLimit is how far a drawer may open before it hits the base.
func (s *State) drawerLimit() float64 {
	lim := MaxDrawerOpen
	if math.Abs(s.Base.Y) < drawerHalfWidth+baseRadius {
		lim = min(lim, CounterFront-(s.Base.X+baseRadius))
	}
	return max(lim, 0)
}

// resolveCollisions keeps the end-effector, moving from prev to w (world),
// out of the counter and the drawers, pushing a drawer in when it comes at
// the drawer's front.
func (s *State) resolveCollisions(prev, w Vec3) Vec3 {
	const r = eeRadius
	for i := range s.Drawers {
		d := s.Drawers[i].Open
		if d <= 0 {
			continue
		}
		z0, z1 := drawerZ(i)
		lo := Vec3{CounterFront - d - r, -drawerHalfWidth - r, z0 - r}
		hi := Vec3{CounterFront, drawerHalfWidth + r, z1 + r}
		if !inBox(w, lo, hi) {
			continue
		}
		if prev[0] <= lo[0]+collisionSlack && !(s.Grasp.Kind == GraspDrawer && s.Grasp.Index == i) {
			s.Drawers[i].Open = max(0, CounterFront-(w[0]+r))
			continue
		}
		w = pushOut(prev, w, lo, hi)
	}
	lo := Vec3{CounterFront - r, -counterHalfWidth - r, -1}
	hi := Vec3{counterBack + r, counterHalfWidth + r, TableHeight + r}
	if inBox(w, lo, hi) {
		w = pushOut(prev, w, lo, hi)
	}
	return w
}

// insideFurniture reports whether an end-effector at w (world) would be
// inside the counter or an open drawer.
func (s *State) insideFurniture(w Vec3) bool {
	const r = eeRadius
	if inBox(w, Vec3{CounterFront - r, -counterHalfWidth - r, -1}, Vec3{counterBack + r, counterHalfWidth + r, TableHeight + r - collisionSlack}) {
		return true
	}
	for i := range s.Drawers {
		d := s.Drawers[i].Open
		z0, z1 := drawerZ(i)
		if d > 0 && inBox(w, Vec3{CounterFront - d - r + collisionSlack, -drawerHalfWidth - r, z0 - r}, Vec3{CounterFront, drawerHalfWidth + r, z1 + r}) {
			return true
		}
	}
	return false
}

// pushOut moves w, which lies inside the box [lo, hi], back out through the
// face that prev (outside) was beyond; if prev was inside too, through the
// nearest face.
func pushOut(prev, w, lo, hi Vec3) Vec3 {
	switch {
	case prev[2] >= hi[2]-collisionSlack:
		w[2] = hi[2]
	case prev[0] <= lo[0]+collisionSlack:
		w[0] = lo[0]
	case prev[1] <= lo[1]+collisionSlack:
		w[1] = lo[1]
	case prev[1] >= hi[1]-collisionSlack:
		w[1] = hi[1]
	case prev[2] <= lo[2]+collisionSlack:
		w[2] = lo[2]
	case prev[0] >= hi[0]-collisionSlack:
		w[0] = hi[0]
	default:
		k, best, val := 0, math.Inf(1), 0.0
		for j := range 3 {
			if d := w[j] - lo[j]; d < best {
				k, best, val = j, d, lo[j]
			}
			if d := hi[j] - w[j]; d < best {
				k, best, val = j, d, hi[j]
			}
		}
		w[k] = val
	}
	return w
}

// baseFreeFraction is the largest fraction of the displacement v (world)
// that the base can drive before it would touch the counter, an open
// drawer or the edge of its floor area, to within a micrometre: the base
// stops at an obstacle, as a bumper stops a real one. It is round, so
// turning never collides.
func (s *State) baseFreeFraction(v Vec3) float64 {
	lo, hi := 0.0, 1.0
	for range 20 {
		mid := (lo + hi) / 2
		if s.baseFree(Pose{s.Base.X + mid*v[0], s.Base.Y + mid*v[1], s.Base.Yaw}) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// baseFree reports whether the base may stand at p.
func (s *State) baseFree(p Pose) bool {
	if p.X < baseMinX || p.X > baseMaxX || math.Abs(p.Y) > baseMaxY {
		return false
	}
	if circleHitsRect(p.X, p.Y, baseRadius, CounterFront, -counterHalfWidth, counterBack, counterHalfWidth) {
		return false
	}
	for i := range s.Drawers {
		if d := s.Drawers[i].Open; d > 0 && circleHitsRect(p.X, p.Y, baseRadius, CounterFront-d, -drawerHalfWidth, CounterFront, drawerHalfWidth) {
			return false
		}
	}
	return true
}

func circleHitsRect(cx, cy, r, x0, y0, x1, y1 float64) bool {
	dx := cx - clamp(cx, x0, x1)
	dy := cy - clamp(cy, y0, y1)
	return dx*dx+dy*dy < r*r-collisionSlack
}

func inBox(p, lo, hi Vec3) bool {
	return p[0] > lo[0] && p[0] < hi[0] && p[1] > lo[1] && p[1] < hi[1] && p[2] > lo[2] && p[2] < hi[2]
}

func clampBox(p, lo, hi Vec3) Vec3 {
	return Vec3{clamp(p[0], lo[0], hi[0]), clamp(p[1], lo[1], hi[1]), clamp(p[2], lo[2], hi[2])}
}

// sweep knocks over or pushes the upright objects that the end-effector ran
// through sideways on its way from prev to cur (world).
func (s *State) sweep(prev, cur Vec3) {
	m := prev.DistXY(cur)
	if m < knockMove {
		return
	}
	dir := Vec3{(cur[0] - prev[0]) / m, (cur[1] - prev[1]) / m, 0}
	for i := range s.Objects {
		o := &s.Objects[i]
		if o.Fallen || s.Grasp.Holds(i) {
			continue
		}
		R := bodyRadius(o.Kind)
		t, dist := segmentPointXY(prev, cur, o.Pos)
		z := prev[2] + t*(cur[2]-prev[2])
		if dist >= R+eeRadius || z <= o.Bottom()+0.005 || z >= o.Top()+eeRadius/2 {
			continue
		}
		if o.Kind.Info().Tippable {
			knockOver(o, dir)
		} else {
			pushAside(o, cur, dir, R+eeRadius)
		}
	}
}

// knockOver lays o on its side, falling along dir about its bottom edge.
func knockOver(o *Object, dir Vec3) {
	h := catalogue[o.Kind].Height
	o.Fallen = true
	o.Yaw = math.Atan2(dir[1], dir[0])
	o.Pos[0] += dir[0] * h / 2
	o.Pos[1] += dir[1] * h / 2
	rest(o)
}

// pushAside moves o along dir until its centre is need away from the
// end-effector at e.
func pushAside(o *Object, e, dir Vec3, need float64) {
	c := Vec3{o.Pos[0] - e[0], o.Pos[1] - e[1], 0}
	along := c.Dot(dir)
	perp := c.Sub(dir.Scale(along)).Norm()
	if perp >= need {
		return
	}
	if a := math.Sqrt(need*need - perp*perp); along < a {
		o.Pos[0] += dir[0] * (a - along)
		o.Pos[1] += dir[1] * (a - along)
	}
	rest(o)
}

// rest puts o down on the surface under its centre.
func rest(o *Object) {
	o.Pos[2] = surfaceZ(o.Pos[0], o.Pos[1]) + halfHeight(o.Kind, o.Fallen)
}

// updateGrasp grasps or releases after the gripper moved from prevGrip.
func (s *State) updateGrasp(prevGrip float64, r *rand.Rand) {
	switch {
	case s.Grasp.Kind != GraspNone && s.Grip < releaseClosed:
		s.release(r)
	case s.Grasp.Kind == GraspNone && prevGrip < graspClosed && s.Grip >= graspClosed:
		s.grasp()
	}
}

// grasp takes the nearest drawer handle or object within reach of the
// end-effector.
func (s *State) grasp() {
	w := s.EEWorld()
	best, g := math.Inf(1), Grasp{}
	for i := range s.Drawers {
		h := handlePos(i, s.Drawers[i].Open)
		a, b := h, h
		a[1], b[1] = -handleHalfLength, handleHalfLength
		if d := segmentPoint(a, b, w); d <= handleGraspRadius && d < best {
			best, g = d, Grasp{Kind: GraspDrawer, Index: i}
		}
	}
	for i := range s.Objects {
		o := &s.Objects[i]
		if d := graspDistance(o, w); d <= graspXY && d < best {
			best, g = d, Grasp{Kind: GraspObject, Index: i, Offset: o.Pos.Sub(w)}
		}
	}
	s.Grasp = g
}

// graspDistance is how far a hand at w is from grasping o: the distance to
// a fallen object's axis, or sideways to a standing object's axis when the
// hand is between its bottom and just over its top (else +Inf). A closing
// gripper grasps within graspXY.
func graspDistance(o *Object, w Vec3) float64 {
	if o.Fallen {
		h := catalogue[o.Kind].Height / 2
		ax := Vec3{math.Cos(o.Yaw) * h, math.Sin(o.Yaw) * h, 0}
		return segmentPoint(o.Pos.Sub(ax), o.Pos.Add(ax), w)
	}
	if w[2] < o.Bottom() || w[2] > o.Top()+0.01 {
		return math.Inf(1)
	}
	return w.DistXY(o.Pos)
}

// release lets go of what the gripper holds.
func (s *State) release(r *rand.Rand) {
	if s.Grasp.Kind == GraspObject {
		o := &s.Objects[s.Grasp.Index]
		if catalogue[o.Kind].Tippable && !o.Fallen && o.Bottom()-surfaceZ(o.Pos[0], o.Pos[1]) > dropTipHeight {
			o.Fallen = true
			o.Yaw = 2 * math.Pi * r.Float64()
		}
		rest(o)
	}
	s.Grasp = Grasp{}
}

// carry moves a held object with the end-effector.
func (s *State) carry() {
	if s.Grasp.Kind != GraspObject {
		return
	}
	o := &s.Objects[s.Grasp.Index]
	w := s.EEWorld()
	if o.Fallen && w[2]-surfaceZ(w[0], w[1]) >= catalogue[o.Kind].Height/2+uprightClear {
		o.Fallen = false
		s.Grasp.Offset = Vec3{}
	}
	o.Pos = w.Add(s.Grasp.Offset)
}
