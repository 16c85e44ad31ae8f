package sim

// Keypoint labels: where, in a frame, the hand is and what it has to reach
// next, for the policy's keypoint supervision (vision.SuperviseKeypoints:
// per point its image coordinates as fractions of the width and the
// height, and a weight, 0 when the point is out of view). Recorded
// episodes carry them on the keypoints topic; a robot's episodes have
// none, and training without them is unchanged.

// KeypointCount is the number of labelled points: the hand (the palm's
// centre: the grasp point between the open fingers shows the background),
// the target (the goal's object, held or not; a drawer's handle) and its
// destination (move: the other object; put back: its spot; other goals
// have none, weight 0).
//
// A label marks what its frame shows: in a memory task, the target picked
// out by a cue (a ring, an arrow) only in the frames that show the cue,
// and put back's spot only in the frames before the object slides away
// from it. Later frames leave them to the policy's memory (weight 0).
//
// The target and the destination are labelled at their footprint: the
// point of the worktop (TableHeight) under them, which a calibrated
// camera back-projects exactly to where they stand (policy.Config's
// TargetGeometry). Their centres would land behind them, by a quarter of
// the distance for a bottle. A drawer's handle is labelled at itself: it
// does not stand on the worktop, and its footprint is the other drawer's
// handle's too; its line of sight passes it (policy.Config's
// GeometrySightline).
const KeypointCount = 3

// KeypointNames names the labelled points, in label order.
var KeypointNames = [KeypointCount]string{"hand", "target", "destination"}

// keypointValues is the length of one point's label: u, v, weight.
const keypointValues = 3

// KeypointLabelLen is the length of one frame's labels (KeypointCount
// points of u, v, weight).
const KeypointLabelLen = keypointValues * KeypointCount

// KeypointLabels writes the labels of state s seen in an h x w frame into
// dst (KeypointLabelLen).
func KeypointLabels(dst []float32, s *State, h, w int) { keypointLabels(dst, s, h, w, false) }

// MemoryKeypointLabels is KeypointLabels with a memory task's target and
// put back's spot labelled in every frame that shows where they are, also
// after the cue: what a policy that remembers the cue can find.
func MemoryKeypointLabels(dst []float32, s *State, h, w int) { keypointLabels(dst, s, h, w, true) }

func keypointLabels(dst []float32, s *State, h, w int, remembered bool) {
	g := &s.Goal
	dest, hasDest := s.destination()
	target := s.goalPoint()
	if g.Kind != GoalDrawer {
		target = onWorktop(target)
	}
	points := [KeypointCount]Vec3{s.EEWorld().Add(Vec3{0, 0, palmLift}), target, onWorktop(dest)}
	shown := [KeypointCount]bool{
		true,
		remembered || g.Cue == CueNone || s.Step < g.CueSteps,
		hasDest && (remembered || g.Kind != GoalPutBack || s.Step < g.SlideStart),
	}
	for i, p := range points {
		u, v, ok := ImagePoint(s, h, w, p)
		l := dst[keypointValues*i : keypointValues*(i+1)]
		if !shown[i] || !ok || u < 0 || v < 0 || u >= float64(w) || v >= float64(h) {
			l[0], l[1], l[2] = 0, 0, 0
			continue
		}
		l[0], l[1], l[2] = float32(u/float64(w)), float32(v/float64(h)), 1
	}
}

// NoLyingLabel is TargetLying's label of a frame it says nothing about.
const NoLyingLabel = -1

// TargetLying labels how the goal's object lies in a frame whose keypoint
// labels are kp (KeypointLabelLen, from KeypointLabels of the same
// state): 1 on its side, 0 standing, NoLyingLabel where the frame's
// target label is empty (out of view, or a memory task's target after its
// cue) and for a drawer, which does not lie. A training-only label, of the
// vision head's lying probe (vision.SuperviseLying).
func TargetLying(s *State, kp []float32) float32 {
	if s.Goal.Kind == GoalDrawer || kp[keypointValues+2] == 0 {
		return NoLyingLabel
	}
	if s.Objects[s.Goal.Object].Fallen {
		return 1
	}
	return 0
}

// onWorktop is the point of the worktop's plane under p: its footprint.
func onWorktop(p Vec3) Vec3 { return Vec3{p[0], p[1], TableHeight} }

// goalPoint is the goal's object (where it is, held or not), or a drawer
// goal's handle.
func (s *State) goalPoint() Vec3 {
	if g := &s.Goal; g.Kind == GoalDrawer {
		return s.DrawerHandle(g.Drawer)
	}
	return s.Objects[s.Goal.Object].Pos
}

// destination is where the goal's object goes, for the goals that move it
// somewhere: move near (the other object) and put back (its spot).
func (s *State) destination() (Vec3, bool) {
	switch g := &s.Goal; g.Kind {
	case GoalMoveNear:
		return s.Objects[g.Other].Pos, true
	case GoalPutBack:
		return g.Spot, true
	}
	return Vec3{}, false
}

// Target is the point the hand has to reach next for the goal: the goal
// object until it is held, then where it goes (move: the other object; put
// back: its spot); a drawer's handle. Other goals keep the goal object.
func (s *State) Target() Vec3 {
	if g := &s.Goal; g.Kind != GoalDrawer && s.Grasp.Holds(g.Object) {
		if d, ok := s.destination(); ok {
			return d
		}
	}
	return s.goalPoint()
}

// DrawerHandle is the centre of drawer i's handle bar, world frame.
func (s *State) DrawerHandle(i int) Vec3 { return handlePos(i, s.Drawers[i].Open) }
