package sim

// Keypoint labels: where, in a frame, the hand is and what it has to reach
// next, for the policy's keypoint supervision (vision.SuperviseKeypoints:
// per point its image coordinates as fractions of the width and the
// height, and a weight, 0 when the point is out of view). Recorded
// episodes carry them on the keypoints topic; a robot's episodes have
// none, and training without them is unchanged.

// KeypointCount is the number of labelled points: the hand (the palm's
// centre: the grasp point between the open fingers shows the background),
// the target.
const KeypointCount = 2

// KeypointNames names the labelled points, in label order.
var KeypointNames = [KeypointCount]string{"hand", "target"}

// keypointValues is the length of one point's label: u, v, weight.
const keypointValues = 3

// KeypointLabelLen is the length of one frame's labels (KeypointCount
// points of u, v, weight).
const KeypointLabelLen = keypointValues * KeypointCount

// KeypointLabels writes the labels of state s seen in an h x w frame into
// dst (KeypointLabelLen).
func KeypointLabels(dst []float32, s *State, h, w int) {
	for i, p := range [KeypointCount]Vec3{s.EEWorld().Add(Vec3{0, 0, palmLift}), s.Target()} {
		u, v, ok := ImagePoint(s, h, w, p)
		l := dst[keypointValues*i : keypointValues*(i+1)]
		if !ok || u < 0 || v < 0 || u >= float64(w) || v >= float64(h) {
			l[0], l[1], l[2] = 0, 0, 0
			continue
		}
		l[0], l[1], l[2] = float32(u/float64(w)), float32(v/float64(h)), 1
	}
}

// Target is the point the hand has to reach next for the goal: the goal
// object until it is held, then where it goes (move: the other object; put
// back: its spot); a drawer's handle. Other goals keep the goal object.
func (s *State) Target() Vec3 {
	g := &s.Goal
	if g.Kind == GoalDrawer {
		return s.DrawerHandle(g.Drawer)
	}
	if !s.Grasp.Holds(g.Object) {
		return s.Objects[g.Object].Pos
	}
	switch g.Kind {
	case GoalMoveNear:
		return s.Objects[g.Other].Pos
	case GoalPutBack:
		return g.Spot
	}
	return s.Objects[g.Object].Pos
}

// DrawerHandle is the centre of drawer i's handle bar, world frame.
func (s *State) DrawerHandle(i int) Vec3 { return handlePos(i, s.Drawers[i].Open) }
