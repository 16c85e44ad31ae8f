package sim

import (
	"math"
	"testing"

	"github.com/ttmrobot/ttm/policy"
)

// TestTargetGeometryMatchesHeadcam: the small-geometry preset's camera
// calibration is the simulator's headcam: a point on the counter-height
// plane, projected by the renderer's camera (ImagePoint) and back-projected
// by the preset's geometry, comes back to where it was in the base frame,
// for bases at several poses.
func TestTargetGeometryMatchesHeadcam(t *testing.T) {
	spec, err := policy.Preset("small-geometry")
	if err != nil {
		t.Fatal(err)
	}
	g := spec.Policy.TargetGeometry
	if g.Mount != [3]float64{cameraMount[0], cameraMount[1], cameraMount[2]} || g.Pitch != cameraPitch || g.VFOV != cameraVFOV {
		t.Fatalf("preset camera %+v, the simulator's mount %v pitch %v vfov %v", g, cameraMount, cameraPitch, cameraVFOV)
	}
	h, w := g.Height, g.Width
	for _, base := range []Pose{{0, 0, 0}, {0.3, -0.2, 0.4}, {-0.1, 0.5, -0.3}} {
		s := &State{Base: base}
		for _, p := range []Vec3{{0.7, 0, 0}, {0.9, 0.25, 0}, {0.6, -0.3, 0}} {
			world := s.ToWorld(Vec3{p[0], p[1], g.SurfaceZ})
			u, v, ok := ImagePoint(s, h, w, world)
			if !ok || u < 0 || v < 0 || u >= float64(w) || v >= float64(h) {
				t.Fatalf("base %v point %v: not in view (%v, %v)", base, p, u, v)
			}
			x, y, ok := g.Backproject(float32(u/float64(w)), float32(v/float64(h)))
			if !ok || math.Abs(float64(x)-p[0]) > 1e-4 || math.Abs(float64(y)-p[1]) > 1e-4 {
				t.Errorf("base %v: point (%v, %v) back-projected to (%v, %v, %v)", base, p[0], p[1], x, y, ok)
			}
		}
	}
}

// TestTargetLabelsBackproject: the target and destination labels, back-
// projected by the small-geometry preset's camera geometry, are where the
// goal's object (a drawer goal: its handle) and its destination stand in
// the base frame, over every task's expert episodes: objects standing,
// fallen or held, handles, spots. The destination is labelled only for
// the goals that have one, and neither point where the frame cannot show
// it (a memory task's cue gone).
func TestTargetLabelsBackproject(t *testing.T) {
	spec, err := policy.Preset("small-geometry")
	if err != nil {
		t.Fatal(err)
	}
	g := spec.Policy.TargetGeometry
	if g.SurfaceZ != TableHeight {
		t.Fatalf("preset surface at %v m, the worktop at %v", g.SurfaceZ, TableHeight)
	}
	labels := make([]float32, KeypointLabelLen)
	for _, task := range Tasks() {
		t.Run(task.Name, func(t *testing.T) {
			checked := [KeypointCount]int{}
			for seed := uint64(1); seed <= 4; seed++ {
				ep, err := NewEpisode(task, seed, Options{Height: g.Height, Width: g.Width})
				if err != nil {
					t.Fatal(err)
				}
				x := ep.Expert(ExpertOptions{})
				for step := 0; step < 120 && !ep.Done(); step++ {
					s := ep.State()
					KeypointLabels(labels, s, g.Height, g.Width)
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
						bx, by, ok := g.Backproject(l[0], l[1])
						p := s.ToBase(want[i])
						if !ok || math.Abs(float64(bx)-p[0]) > 1e-3 || math.Abs(float64(by)-p[1]) > 1e-3 {
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
