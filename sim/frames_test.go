package sim

import (
	"testing"

	"github.com/ttmrobot/ttm/internal/tf"
)

// toParent maps a point of tr's child frame into its parent frame.
func toParent(tr Transform, p Vec3) Vec3 { return tr.T.Apply(p) }

// The camera's frames, composed from odom, put the optical frame's axes
// on the simulator camera's right, down and forward directions, and its
// origin on the camera.
func TestCameraFrames(t *testing.T) {
	st := StaticTransforms()
	for _, base := range []Pose{{}, {X: 0.3, Y: -0.7, Yaw: 2.1}, {X: -1, Y: 0.5, Yaw: -0.4}} {
		s := &State{Base: base}
		odomBase := s.Transforms()[0]
		// optical frame -> camera link -> base -> odom (the world)
		world := func(p Vec3) Vec3 { return toParent(odomBase, toParent(st[1], toParent(st[2], p))) }
		var c camera
		c.set(s, 48, 64)
		o := world(Vec3{})
		for _, tc := range []struct {
			name string
			axis Vec3
			want Vec3
		}{{"x (right)", Vec3{1, 0, 0}, c.right}, {"y (down)", Vec3{0, 1, 0}, c.down}, {"z (forward)", Vec3{0, 0, 1}, c.fwd}, {"origin", Vec3{}, Vec3{}}} {
			got := world(tc.axis).Sub(o)
			if tc.name == "origin" {
				got, tc.want = o, c.pos
			}
			if got.Sub(tc.want).Norm() > 1e-12 {
				t.Errorf("base %+v: optical %s in the world %v, the camera's %v", base, tc.name, got, tc.want)
			}
		}
		// The camera link's x axis is the optical axis.
		fwd := rotZ(c.fwd, -base.Yaw) // in the base frame
		if got := Vec3((tf.Transform{Rotation: st[1].T.Rotation}).Apply(Vec3{1, 0, 0})); got.Sub(fwd).Norm() > 1e-12 {
			t.Errorf("camera link x in the base frame %v, want the camera's forward %v", got, fwd)
		}
	}
}
