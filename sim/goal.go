package sim

import "math"

// GoalKind is what a task asks for; it selects the success detector and
// the scripted expert.
type GoalKind uint8

const (
	// GoalPick: Goal.Object held and lifted at least LiftHeight.
	GoalPick GoalKind = iota + 1
	// GoalKnock: Goal.Object lying on its side, not held.
	GoalKnock
	// GoalUpright: Goal.Object standing upright on the worktop, not held.
	GoalUpright
	// GoalMoveNear: Goal.Object resting on the worktop within NearDistance
	// of Goal.Other (centres, horizontally).
	GoalMoveNear
	// GoalDrawer: Goal.Drawer open by at least DrawerOpenDistance
	// (Goal.Open) or closed to at most DrawerClosedDistance. With
	// Goal.Exclusive, the other drawer must also stay closed.
	GoalDrawer
	// GoalPutBack: Goal.Object, after it was moved away (Goal.Moved), standing
	// on the worktop within PutBackDistance of Goal.Spot, not held.
	GoalPutBack
)

// Success thresholds.
const (
	LiftHeight           = 0.05 // metres above the surface, for pick
	NearDistance         = 0.20 // metres between centres, for move
	DrawerOpenDistance   = 0.15 // metres pulled out, for open
	DrawerClosedDistance = 0.03 // metres pulled out at most, for close
	PutBackDistance      = 0.05 // metres from the starting spot, for put back
)

// Success reports whether s satisfies its goal: the success detector of
// every task, computed from the privileged state. A state that fails Check
// is not a success.
func Success(s *State) bool {
	if s.Check() != nil {
		return false
	}
	g := &s.Goal
	valid := func(i int) bool { return i >= 0 && i < len(s.Objects) }
	switch g.Kind {
	case GoalPick:
		return valid(g.Object) && s.Grasp.Holds(g.Object) && s.Lift(g.Object) >= LiftHeight
	case GoalKnock:
		return valid(g.Object) && s.Objects[g.Object].Fallen && !s.Grasp.Holds(g.Object)
	case GoalUpright:
		return valid(g.Object) && !s.Objects[g.Object].Fallen && s.OnTable(g.Object)
	case GoalMoveNear:
		return valid(g.Object) && valid(g.Other) && g.Object != g.Other && s.OnTable(g.Object) &&
			s.Objects[g.Object].Pos.DistXY(s.Objects[g.Other].Pos) <= NearDistance
	case GoalDrawer:
		if g.Drawer < 0 || g.Drawer >= NumDrawers {
			return false
		}
		if g.Exclusive && s.Drawers[1-g.Drawer].Open > DrawerClosedDistance {
			return false
		}
		if g.Open {
			return s.Drawers[g.Drawer].Open >= DrawerOpenDistance
		}
		return s.Drawers[g.Drawer].Open <= DrawerClosedDistance
	case GoalPutBack:
		return valid(g.Object) && g.Moved && !s.Objects[g.Object].Fallen && s.OnTable(g.Object) &&
			s.Objects[g.Object].Pos.DistXY(g.Spot) <= PutBackDistance
	}
	return false
}

// slide moves a put-back object along its scripted path once s.Step steps
// have been taken (see Goal.Spot). A held object is not moved, and the
// slide is over for it.
func (s *State) slide() {
	g := &s.Goal
	if g.Kind != GoalPutBack || g.Moved || g.SlideSteps <= 0 || s.Step < g.SlideStart {
		return
	}
	p := math.Min(float64(s.Step-g.SlideStart+1)/float64(g.SlideSteps), 1)
	if s.Grasp.Holds(g.Object) {
		g.Moved = true
		return
	}
	o := &s.Objects[g.Object]
	o.Pos[0] = g.Spot[0] + p*(g.SlideTo[0]-g.Spot[0])
	o.Pos[1] = g.Spot[1] + p*(g.SlideTo[1]-g.Spot[1])
	rest(o)
	if p >= 1 {
		g.Moved = true
	}
}
