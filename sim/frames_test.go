package sim

import (
	"math"
	"testing"
)

// rotate applies the unit quaternion q to v: v + 2w(u×v) + 2u×(u×v).
func rotate(q Quat, v Vec3) Vec3 {
	u := Vec3{q[0], q[1], q[2]}
	t := u.Cross(v).Scale(2)
	return v.Add(t.Scale(q[3])).Add(u.Cross(t))
}

// toParent maps a point of tr's child frame into its parent frame.
func toParent(tr Transform, p Vec3) Vec3 { return rotate(tr.Rotation, p).Add(tr.Translation) }

func TestQuatRPY(t *testing.T) {
	s := math.Sqrt2 / 2
	for _, tc := range []struct {
		name             string
		roll, pitch, yaw float64
		want             Quat
	}{
		{"identity", 0, 0, 0, Quat{0, 0, 0, 1}},
		{"yaw 90°", 0, 0, math.Pi / 2, Quat{0, 0, s, s}},
		{"pitch 90°", 0, math.Pi / 2, 0, Quat{0, s, 0, s}},
		{"roll 90°", math.Pi / 2, 0, 0, Quat{s, 0, 0, s}},
		{"optical", -math.Pi / 2, 0, -math.Pi / 2, Quat{-0.5, 0.5, -0.5, 0.5}}, // static_transform_publisher's
	} {
		got := QuatRPY(tc.roll, tc.pitch, tc.yaw)
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-12 {
				t.Errorf("%s: QuatRPY = %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}

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
		if got := rotate(st[1].Rotation, Vec3{1, 0, 0}); got.Sub(fwd).Norm() > 1e-12 {
			t.Errorf("camera link x in the base frame %v, want the camera's forward %v", got, fwd)
		}
	}
}
