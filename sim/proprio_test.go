package sim

import (
	"math"
	"testing"

	"github.com/ttmrobot/ttm/policy"
)

// TestTargetGeometryMatchesHeadcam: the small-target preset's camera
// calibration is the simulator's headcam: a point on the counter-height
// plane, projected by the renderer's camera (ImagePoint) and back-projected
// by the preset's geometry, comes back to where it was in the base frame,
// for bases at several poses.
func TestTargetGeometryMatchesHeadcam(t *testing.T) {
	spec, err := policy.Preset("small-target")
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
