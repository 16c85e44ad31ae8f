package sim

import (
	"math"
	"testing"
)

// headcamBackproject returns where the ray through image point (u, v)
// of the headcam's image of h rows and w columns meets the plane z =
// surface, in the base frame; u and v are fractions of the width and height
// (the keypoint convention: pixel column u·w, row v·h, pixel centres at
// integer coordinates). It is the pinhole model a policy's camera geometry
// uses, written from the headcam's calibration (cameraMount, cameraPitch,
// cameraVFOV), independently of the renderer's camera type.
func headcamBackproject(u, v float64, h, w int, surface float64) (x, y float64, ok bool) {
	sp, cp := math.Sincos(cameraPitch)
	fh, fw := float64(h), float64(w)
	f := fh / 2 / math.Tan(cameraVFOV/2)
	a := (u*fw - (fw-1)/2) / f
	b := (v*fh - (fh-1)/2) / f
	dx, dy, dz := cp-sp*b, -a, -sp-cp*b
	if dz >= 0 {
		return 0, 0, false
	}
	t := (surface - cameraMount[2]) / dz
	return cameraMount[0] + t*dx, cameraMount[1] + t*dy, true
}

// The headcam image size of the policies that read the target geometry.
const geometryHeight, geometryWidth = 128, 160

// TestHeadcamBackproject: a point on the worktop plane, projected by the
// renderer's camera (ImagePoint) and back-projected by the pinhole model,
// comes back to where it was in the base frame, for bases at several poses.
func TestHeadcamBackproject(t *testing.T) {
	h, w := geometryHeight, geometryWidth
	for _, base := range []Pose{{0, 0, 0}, {0.3, -0.2, 0.4}, {-0.1, 0.5, -0.3}} {
		s := &State{Base: base}
		for _, p := range []Vec3{{0.7, 0, 0}, {0.9, 0.25, 0}, {0.6, -0.3, 0}} {
			world := s.ToWorld(Vec3{p[0], p[1], TableHeight})
			u, v, ok := ImagePoint(s, h, w, world)
			if !ok || u < 0 || v < 0 || u >= float64(w) || v >= float64(h) {
				t.Fatalf("base %v point %v: not in view (%v, %v)", base, p, u, v)
			}
			x, y, ok := headcamBackproject(u/float64(w), v/float64(h), h, w, TableHeight)
			if !ok || math.Abs(x-p[0]) > 1e-4 || math.Abs(y-p[1]) > 1e-4 {
				t.Errorf("base %v: point (%v, %v) back-projected to (%v, %v, %v)", base, p[0], p[1], x, y, ok)
			}
		}
	}
}

// TestTargetLabelsBackproject: the target and destination labels, back-
// projected onto the worktop by the headcam's pinhole model, are where the
// goal's object and its destination stand in the base frame, over every
// task's expert episodes: objects standing, fallen or held, spots; a
// drawer goal's handle is labelled where the camera sees it. The
// destination is labelled only for the goals that have one, and neither
// point where the frame cannot show it (a memory task's cue gone).
func TestTargetLabelsBackproject(t *testing.T) {
	h, w := geometryHeight, geometryWidth
	labels := make([]float32, KeypointLabelLen)
	for _, task := range Tasks() {
		t.Run(task.Name, func(t *testing.T) {
			checked := [KeypointCount]int{}
			for seed := uint64(1); seed <= 4; seed++ {
				ep, err := NewEpisode(task, seed, Options{Height: h, Width: w})
				if err != nil {
					t.Fatal(err)
				}
				x := ep.Expert(ExpertOptions{})
				for step := 0; step < 120 && !ep.Done(); step++ {
					s := ep.State()
					KeypointLabels(labels, s, h, w)
					want := [KeypointCount]Vec3{1: s.Objects[s.Goal.Object].Pos}
					hasDest := false
					switch s.Goal.Kind {
					case GoalDrawer:
						want[1] = s.DrawerHandle(s.Goal.Drawer)
					case GoalMoveNear:
						want[2], hasDest = s.Objects[s.Goal.Other].Pos, true
					case GoalPutBack:
						want[2], hasDest = s.Goal.Spot, true
					}
					// What the frame cannot show: no destination, a cue
					// gone, put back's spot after the object left it.
					hidden := [KeypointCount]bool{1: s.Goal.Cue != CueNone && s.Step >= cueSteps,
						2: !hasDest || s.Goal.Kind == GoalPutBack && s.Step >= 2}
					for i := 1; i < KeypointCount; i++ {
						l := labels[i*keypointValues:]
						if hidden[i] && (l[0] != 0 || l[1] != 0 || l[2] != 0) {
							t.Fatalf("step %d: goal %v's %s is not in the frame, labelled %v", s.Step, s.Goal.Kind, KeypointNames[i], l[:3])
						}
						if l[2] == 0 {
							continue
						}
						checked[i]++
						if i == 1 && s.Goal.Kind == GoalDrawer { // the handle itself
							u, v, _ := ImagePoint(s, h, w, want[i])
							if math.Abs(float64(l[0])-u/float64(w)) > 1e-6 || math.Abs(float64(l[1])-v/float64(h)) > 1e-6 {
								t.Fatalf("step %d: the handle's label (%v, %v), it is seen at (%v, %v)", s.Step, l[0], l[1], u/float64(w), v/float64(h))
							}
							continue
						}
						bx, by, ok := headcamBackproject(float64(l[0]), float64(l[1]), h, w, TableHeight)
						p := s.ToBase(want[i])
						if !ok || math.Abs(bx-p[0]) > 1e-3 || math.Abs(by-p[1]) > 1e-3 {
							t.Fatalf("step %d, %s: label back-projected to (%v, %v, %v), it stands at (%.4f, %.4f)",
								s.Step, KeypointNames[i], bx, by, ok, p[0], p[1])
						}
					}
					if _, err := ep.Step(x.Act(s)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if checked[1] < 10 || hasDestination(task) && checked[2] < 5 {
				t.Errorf("only %v labels in view", checked)
			}
			t.Logf("checked %v labels", checked)
		})
	}
}

// hasDestination reports whether task's goal moves its object somewhere.
func hasDestination(task *Task) bool { return task.Name == "move" || task.Name == "put_back" }
