package sim

import (
	"fmt"
	"math"
)

// farAway bounds every coordinate of a usable state, in metres.
const farAway = 100

// Check reports the first thing in s the simulator cannot work with: a
// non-finite or far-off pose, an unknown object kind, a grasp of something
// that does not exist, a drawer beyond its travel, or a goal naming a
// missing object or drawer. States made by NewEpisode always pass; Render,
// Step, Success and the experts check hand-built ones.
func (s *State) Check() error {
	ok := func(v ...float64) bool {
		for _, x := range v {
			if math.IsNaN(x) || math.Abs(x) > farAway {
				return false
			}
		}
		return true
	}
	switch {
	case !ok(s.Base.X, s.Base.Y, s.Base.Yaw):
		return fmt.Errorf("sim: state: base pose %+v is not finite", s.Base)
	case !ok(s.EE[:]...) || !ok(s.Rot[:]...):
		return fmt.Errorf("sim: state: end-effector %v, rotation %v: not finite", s.EE, s.Rot)
	case !(s.Grip >= 0 && s.Grip <= 1):
		return fmt.Errorf("sim: state: gripper closedness %v outside [0, 1]", s.Grip)
	case len(s.Objects) >= maxGroups:
		return fmt.Errorf("sim: state: %d objects, at most %d", len(s.Objects), maxGroups-1)
	}
	for i := range s.Objects {
		o := &s.Objects[i]
		if o.Kind >= numKinds {
			return fmt.Errorf("sim: state: object %d has unknown kind %d", i, o.Kind)
		}
		if !ok(o.Pos[:]...) || !ok(o.Yaw) {
			return fmt.Errorf("sim: state: object %d (%s) at %v, yaw %v: not finite", i, o.Kind, o.Pos, o.Yaw)
		}
	}
	for i, d := range s.Drawers {
		if !(d.Open >= 0 && d.Open <= MaxDrawerOpen) {
			return fmt.Errorf("sim: state: drawer %d open %v outside [0, %g]", i, d.Open, MaxDrawerOpen)
		}
	}
	g := s.Grasp
	switch {
	case g.Kind == GraspObject && (g.Index < 0 || g.Index >= len(s.Objects)):
		return fmt.Errorf("sim: state: grasp of object %d, have %d objects", g.Index, len(s.Objects))
	case g.Kind == GraspDrawer && (g.Index < 0 || g.Index >= NumDrawers):
		return fmt.Errorf("sim: state: grasp of drawer %d", g.Index)
	case g.Kind > GraspDrawer:
		return fmt.Errorf("sim: state: unknown grasp kind %d", g.Kind)
	case !ok(g.Offset[:]...):
		return fmt.Errorf("sim: state: grasp offset %v is not finite", g.Offset)
	}
	goal := &s.Goal
	inRange := func(i int) bool { return i >= 0 && i < len(s.Objects) }
	switch goal.Kind {
	case 0:
	case GoalPick, GoalKnock, GoalUpright, GoalPutBack:
		if !inRange(goal.Object) {
			return fmt.Errorf("sim: state: goal object %d, have %d objects", goal.Object, len(s.Objects))
		}
	case GoalMoveNear:
		if !inRange(goal.Object) || !inRange(goal.Other) || goal.Object == goal.Other {
			return fmt.Errorf("sim: state: goal objects %d and %d, have %d objects", goal.Object, goal.Other, len(s.Objects))
		}
	case GoalDrawer:
		if goal.Drawer < 0 || goal.Drawer >= NumDrawers {
			return fmt.Errorf("sim: state: goal drawer %d", goal.Drawer)
		}
	default:
		return fmt.Errorf("sim: state: unknown goal kind %d", goal.Kind)
	}
	if goal.Cue > CueArrow {
		return fmt.Errorf("sim: state: unknown cue kind %d", goal.Cue)
	}
	if goal.Kind == GoalPutBack && (!ok(goal.Spot[:]...) || !ok(goal.SlideTo[:]...)) {
		return fmt.Errorf("sim: state: put-back spots %v, %v: not finite", goal.Spot, goal.SlideTo)
	}
	return nil
}
