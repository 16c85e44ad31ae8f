package eval

import (
	"math"
	"sort"
	"testing"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
)

// TestPresetGeometryIsHeadcam: every preset with a target geometry carries
// the simulator's headcam calibration and worktop: a point on the worktop,
// projected by the renderer's camera (sim.ImagePoint) and back-projected by
// the preset's geometry, comes back to where it was in the base frame, for
// bases at several poses; and a point off the worktop (a drawer handle's
// height, in front of the counter) lies on its line of sight
// (vision.CameraGeometry.AtDepth) at its depth.
func TestPresetGeometryIsHeadcam(t *testing.T) {
	presets := policy.Presets()
	var names []string
	for name, spec := range presets {
		if spec.Policy.TargetGeometry != nil {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		t.Fatal("no preset has a target geometry")
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			g := presets[name].Policy.TargetGeometry
			if g.SurfaceZ != sim.TableHeight {
				t.Fatalf("surface at %v m, the worktop at %v", g.SurfaceZ, sim.TableHeight)
			}
			h, w := g.Height, g.Width
			for _, base := range []sim.Pose{{X: 0, Y: 0, Yaw: 0}, {X: 0.3, Y: -0.2, Yaw: 0.4}, {X: -0.1, Y: 0.5, Yaw: -0.3}} {
				s := &sim.State{Base: base}
				for _, p := range []sim.Vec3{{0.7, 0, 0}, {0.9, 0.25, 0}, {0.6, -0.3, 0}} {
					world := s.ToWorld(sim.Vec3{p[0], p[1], g.SurfaceZ})
					u, v, ok := sim.ImagePoint(s, h, w, world)
					if !ok || u < 0 || v < 0 || u >= float64(w) || v >= float64(h) {
						t.Fatalf("base %v point %v: not in view (%v, %v)", base, p, u, v)
					}
					x, y, ok := g.Backproject(float32(u/float64(w)), float32(v/float64(h)))
					if !ok || math.Abs(float64(x)-p[0]) > 1e-4 || math.Abs(float64(y)-p[1]) > 1e-4 {
						t.Errorf("base %v: point (%v, %v) back-projected to (%v, %v, %v)", base, p[0], p[1], x, y, ok)
					}
				}
				for _, p := range []sim.Vec3{{0.55, 0.1, 0.42}, {0.6, -0.2, 0.66}, {0.45, 0.25, 1.0}} {
					u, v, ok := sim.ImagePoint(s, h, w, s.ToWorld(p))
					if !ok || u < 0 || v < 0 || u >= float64(w) || v >= float64(h) {
						t.Fatalf("base %v point %v: not in view (%v, %v)", base, p, u, v)
					}
					y, z, ok := g.AtDepth(float32(u/float64(w)), float32(v/float64(h)), float32(p[0]))
					if !ok || math.Abs(float64(y)-p[1]) > 1e-4 || math.Abs(float64(z)-p[2]) > 1e-4 {
						t.Errorf("base %v: point %v's line of sight at x %v passes (%v, %v, %v)", base, p, p[0], y, z, ok)
					}
				}
			}
		})
	}
}
