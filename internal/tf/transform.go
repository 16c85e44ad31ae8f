package tf

import "math"

// Transform is a rigid transform: p' = R(Rotation)·p + Translation.
// Rotation is a unit quaternion (x, y, z, w); the methods assume it is unit
// and do not renormalise.
type Transform struct {
	Translation [3]float64
	Rotation    [4]float64 // unit quaternion x, y, z, w
}

// Identity returns the transform that maps every point to itself:
// translation 0, rotation (0, 0, 0, 1).
func Identity() Transform {
	return Transform{Rotation: [4]float64{0, 0, 0, 1}}
}

// Mul returns the composition a∘b, which applies b first, then a:
// R = R_a·R_b (q = q_a ⊗ q_b, Hamilton product) and t = R_a·t_b + t_a.
// If b is the pose of frame c in frame b and a the pose of b in frame a,
// a.Mul(b) is the pose of c in a.
func (a Transform) Mul(b Transform) Transform {
	return Transform{
		Translation: add(rotate(a.Rotation, b.Translation), a.Translation),
		Rotation:    qmul(a.Rotation, b.Rotation),
	}
}

// Inverse returns T⁻¹, with T⁻¹·T = T·T⁻¹ = Identity:
// q' = q* (the conjugate) and t' = -R(q*)·t.
func (a Transform) Inverse() Transform {
	q := conj(a.Rotation)
	t := rotate(q, a.Translation)
	return Transform{Translation: [3]float64{-t[0], -t[1], -t[2]}, Rotation: q}
}

// Apply returns R·p + t, the point p of the transform's child frame
// expressed in its parent frame.
func (a Transform) Apply(p [3]float64) [3]float64 {
	return add(rotate(a.Rotation, p), a.Translation)
}

// RPY returns the rotation as roll, pitch and yaw about the fixed axes X, Y
// and Z, applied in that order: R = Rz(yaw)·Ry(pitch)·Rx(roll), as tf2's
// Matrix3x3::getRPY. roll and yaw are in [-π, π], pitch in [-π/2, π/2].
// At pitch = ±π/2 (gimbal lock) yaw is 0 and roll carries the whole
// rotation about the vertical.
func (a Transform) RPY() (roll, pitch, yaw float64) {
	x, y, z, w := a.Rotation[0], a.Rotation[1], a.Rotation[2], a.Rotation[3]
	m20 := 2 * (x*z - w*y)
	switch {
	case m20 <= -1:
		return math.Atan2(2*(x*y-w*z), 2*(x*z+w*y)), math.Pi / 2, 0
	case m20 >= 1:
		return math.Atan2(-2*(x*y-w*z), -2*(x*z+w*y)), -math.Pi / 2, 0
	}
	roll = math.Atan2(2*(y*z+w*x), 1-2*(x*x+y*y))
	pitch = -math.Asin(m20)
	yaw = math.Atan2(2*(x*y+w*z), 1-2*(y*y+z*z))
	return roll, pitch, yaw
}

// FromRPY returns the unit quaternion (x, y, z, w) of
// R = Rz(yaw)·Ry(pitch)·Rx(roll), as tf2's Quaternion::setRPY:
// q = q_z(yaw) ⊗ q_y(pitch) ⊗ q_x(roll).
func FromRPY(roll, pitch, yaw float64) [4]float64 {
	sr, cr := math.Sincos(roll / 2)
	sp, cp := math.Sincos(pitch / 2)
	sy, cy := math.Sincos(yaw / 2)
	return [4]float64{
		sr*cp*cy - cr*sp*sy,
		cr*sp*cy + sr*cp*sy,
		cr*cp*sy - sr*sp*cy,
		cr*cp*cy + sr*sp*sy,
	}
}

// Interpolate returns the transform a fraction frac of the way from a to b,
// as tf2 interpolates between two stamps: the translation is
// (1-frac)·t_a + frac·t_b and the rotation the spherical linear
// interpolation along the shortest arc (b's quaternion is negated when
// q_a·q_b < 0):
//
//	q = sin((1-frac)·θ)/sin θ · q_a + sin(frac·θ)/sin θ · q_b,  cos θ = |q_a·q_b|.
//
// frac 0 gives a and frac 1 gives b (up to the sign of b's quaternion).
func Interpolate(a, b Transform, frac float64) Transform {
	var r Transform
	for i := range r.Translation {
		r.Translation[i] = (1-frac)*a.Translation[i] + frac*b.Translation[i]
	}
	r.Rotation = slerp(a.Rotation, b.Rotation, frac)
	return r
}

// slerp interpolates unit quaternions along the shortest arc. The angle is
// θ = 2·atan2(|q1-q0|, |q1+q0|), accurate near 0 where acos(q0·q1) is not;
// below 1e-6 rad the normalised lerp differs from slerp by less than 1e-18.
func slerp(q0, q1 [4]float64, f float64) [4]float64 {
	if dot(q0, q1) < 0 {
		q1 = [4]float64{-q1[0], -q1[1], -q1[2], -q1[3]}
	}
	var d, s [4]float64
	for i := range d {
		d[i] = q1[i] - q0[i]
		s[i] = q1[i] + q0[i]
	}
	theta := 2 * math.Atan2(math.Sqrt(dot(d, d)), math.Sqrt(dot(s, s)))
	var w0, w1 float64
	if theta < 1e-6 {
		w0, w1 = 1-f, f
	} else {
		st := math.Sin(theta)
		w0, w1 = math.Sin((1-f)*theta)/st, math.Sin(f*theta)/st
	}
	var q [4]float64
	for i := range q {
		q[i] = w0*q0[i] + w1*q1[i]
	}
	if theta < 1e-6 {
		n := math.Sqrt(dot(q, q))
		for i := range q {
			q[i] /= n
		}
	}
	return q
}

// qmul is the Hamilton product a ⊗ b of quaternions stored (x, y, z, w).
func qmul(a, b [4]float64) [4]float64 {
	return [4]float64{
		a[3]*b[0] + a[0]*b[3] + a[1]*b[2] - a[2]*b[1],
		a[3]*b[1] - a[0]*b[2] + a[1]*b[3] + a[2]*b[0],
		a[3]*b[2] + a[0]*b[1] - a[1]*b[0] + a[2]*b[3],
		a[3]*b[3] - a[0]*b[0] - a[1]*b[1] - a[2]*b[2],
	}
}

func conj(q [4]float64) [4]float64 { return [4]float64{-q[0], -q[1], -q[2], q[3]} }

// rotate returns R(q)·v for a unit quaternion q = (u, w):
// v + w·t + u×t with t = 2·u×v.
func rotate(q [4]float64, v [3]float64) [3]float64 {
	u := [3]float64{q[0], q[1], q[2]}
	t := cross(u, v)
	for i := range t {
		t[i] *= 2
	}
	c := cross(u, t)
	return [3]float64{v[0] + q[3]*t[0] + c[0], v[1] + q[3]*t[1] + c[1], v[2] + q[3]*t[2] + c[2]}
}

func cross(a, b [3]float64) [3]float64 {
	return [3]float64{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
}

func add(a, b [3]float64) [3]float64 { return [3]float64{a[0] + b[0], a[1] + b[1], a[2] + b[2]} }

func dot(a, b [4]float64) float64 { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] + a[3]*b[3] }

// finite reports whether every component of t is finite.
func (a Transform) finite() bool {
	for _, v := range a.Translation {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	for _, v := range a.Rotation {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
