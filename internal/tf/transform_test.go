package tf

import (
	"math"
	"math/rand/v2"
	"testing"
)

const s2 = math.Sqrt2 / 2 // sin 45° = cos 45°

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func nearVec(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	for i := range got {
		if !near(got[i], want[i], tol) {
			t.Errorf("%s = %v, want %v (±%g)", what, got, want, tol)
			return
		}
	}
}

// nearQuat compares rotations: q and -q are the same rotation.
func nearQuat(t *testing.T, what string, got, want [4]float64, tol float64) {
	t.Helper()
	if dot(got, want) < 0 {
		want = [4]float64{-want[0], -want[1], -want[2], -want[3]}
	}
	nearVec(t, what, got[:], want[:], tol)
}

func nearTransform(t *testing.T, what string, got, want Transform, tol float64) {
	t.Helper()
	nearVec(t, what+" translation", got.Translation[:], want.Translation[:], tol)
	nearQuat(t, what+" rotation", got.Rotation, want.Rotation, tol)
}

func randTransform(r *rand.Rand) Transform {
	var q [4]float64
	for i := range q {
		q[i] = r.NormFloat64()
	}
	n := math.Sqrt(dot(q, q))
	for i := range q {
		q[i] /= n
	}
	return Transform{
		Translation: [3]float64{r.NormFloat64() * 3, r.NormFloat64() * 3, r.NormFloat64() * 3},
		Rotation:    q,
	}
}

// matrix is the naive reference for rotations: the 3×3 matrix of a unit
// quaternion, row-major.
func matrix(q [4]float64) [3][3]float64 {
	x, y, z, w := q[0], q[1], q[2], q[3]
	return [3][3]float64{
		{1 - 2*(y*y+z*z), 2 * (x*y - w*z), 2 * (x*z + w*y)},
		{2 * (x*y + w*z), 1 - 2*(x*x+z*z), 2 * (y*z - w*x)},
		{2 * (x*z - w*y), 2 * (y*z + w*x), 1 - 2*(x*x+y*y)},
	}
}

func matApply(m [3][3]float64, t [3]float64, p [3]float64) [3]float64 {
	var r [3]float64
	for i := range r {
		r[i] = m[i][0]*p[0] + m[i][1]*p[1] + m[i][2]*p[2] + t[i]
	}
	return r
}

func TestHandComputed(t *testing.T) {
	rz90 := [4]float64{0, 0, s2, s2}
	rx90 := [4]float64{s2, 0, 0, s2}
	a := Transform{Translation: [3]float64{1, 0, 0}, Rotation: rz90}
	b := Transform{Translation: [3]float64{0, 2, 0}, Rotation: rx90}
	cases := []struct {
		name      string
		got, want [3]float64
	}{
		{"Rz90·x", Transform{Rotation: rz90}.Apply([3]float64{1, 0, 0}), [3]float64{0, 1, 0}},
		{"Rx90·z", Transform{Rotation: rx90}.Apply([3]float64{0, 0, 1}), [3]float64{0, -1, 0}},
		{"b·z", b.Apply([3]float64{0, 0, 1}), [3]float64{0, 1, 0}},
		{"a·b·z", a.Mul(b).Apply([3]float64{0, 0, 1}), [3]float64{0, 0, 0}},
		{"(a∘b).t", a.Mul(b).Translation, [3]float64{-1, 0, 0}},
		{"a⁻¹.t", Transform{Translation: [3]float64{1, 2, 3}, Rotation: rz90}.Inverse().Translation, [3]float64{-2, 1, -3}},
		{"a⁻¹·a·p", a.Inverse().Apply(a.Apply([3]float64{4, 5, 6})), [3]float64{4, 5, 6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { nearVec(t, c.name, c.got[:], c.want[:], 1e-14) })
	}
	// Rz90 ⊗ Rx90 is the 120° turn about (1,1,1): x → y → z → x.
	nearQuat(t, "(a∘b).q", a.Mul(b).Rotation, [4]float64{0.5, 0.5, 0.5, 0.5}, 1e-15)
	nearQuat(t, "a⁻¹.q", a.Inverse().Rotation, [4]float64{0, 0, -s2, s2}, 0)
}

func TestMulInverseRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	id := Identity()
	for range 1000 {
		a, b := randTransform(r), randTransform(r)
		nearTransform(t, "T·T⁻¹", a.Mul(a.Inverse()), id, 1e-12)
		nearTransform(t, "T⁻¹·T", a.Inverse().Mul(a), id, 1e-12)
		nearTransform(t, "(ab)⁻¹", a.Mul(b).Inverse(), b.Inverse().Mul(a.Inverse()), 1e-12)
		p := [3]float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64()}
		// Against the naive matrix reference.
		want := matApply(matrix(a.Rotation), a.Translation, matApply(matrix(b.Rotation), b.Translation, p))
		got := a.Mul(b).Apply(p)
		nearVec(t, "(a∘b)·p", got[:], want[:], 1e-12)
	}
}

func TestRPY(t *testing.T) {
	cases := []struct {
		roll, pitch, yaw float64
		q                [4]float64
	}{
		{0, 0, 0, [4]float64{0, 0, 0, 1}},
		{math.Pi / 2, 0, 0, [4]float64{s2, 0, 0, s2}},
		{0, math.Pi / 2, 0, [4]float64{0, s2, 0, s2}},
		{0, 0, math.Pi / 2, [4]float64{0, 0, s2, s2}},
		{0, 0, math.Pi, [4]float64{0, 0, 1, 0}},
		// Rz90·Rx90, the 120° turn about (1,1,1).
		{math.Pi / 2, 0, math.Pi / 2, [4]float64{0.5, 0.5, 0.5, 0.5}},
	}
	for _, c := range cases {
		q := FromRPY(c.roll, c.pitch, c.yaw)
		nearQuat(t, "FromRPY", q, c.q, 1e-15)
		r, p, y := Transform{Rotation: c.q}.RPY()
		nearVec(t, "RPY", []float64{r, p, y}, []float64{c.roll, c.pitch, c.yaw}, 1e-15)
	}

	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		roll := (rng.Float64()*2 - 1) * math.Pi * 0.999
		pitch := (rng.Float64()*2 - 1) * math.Pi / 2 * 0.999
		yaw := (rng.Float64()*2 - 1) * math.Pi * 0.999
		r, p, y := Transform{Rotation: FromRPY(roll, pitch, yaw)}.RPY()
		nearVec(t, "RPY(FromRPY)", []float64{r, p, y}, []float64{roll, pitch, yaw}, 1e-9)
		q := randTransform(rng).Rotation
		r, p, y = Transform{Rotation: q}.RPY()
		nearQuat(t, "FromRPY(RPY)", FromRPY(r, p, y), q, 1e-9)
	}
	// Gimbal lock: the rotation survives even though roll and yaw mix.
	for _, pitch := range []float64{math.Pi / 2, -math.Pi / 2} {
		q := FromRPY(0.3, pitch, -0.4)
		r, p, y := Transform{Rotation: q}.RPY()
		nearQuat(t, "gimbal FromRPY(RPY)", FromRPY(r, p, y), q, 1e-7)
	}
}

func TestInterpolate(t *testing.T) {
	s, c := math.Sin(math.Pi/8), math.Cos(math.Pi/8)
	a := Transform{Translation: [3]float64{0, 0, 0}, Rotation: [4]float64{0, 0, 0, 1}}
	b := Transform{Translation: [3]float64{2, -4, 6}, Rotation: [4]float64{0, 0, s2, s2}} // Rz90
	negB := b
	negB.Rotation = [4]float64{0, 0, -s2, -s2}
	rz270 := b
	rz270.Rotation = [4]float64{0, 0, s2, -s2} // Rz270 = -Rz(-90)
	cases := []struct {
		name  string
		a, b  Transform
		frac  float64
		wantT [3]float64
		wantQ [4]float64
	}{
		{"frac 0", a, b, 0, [3]float64{0, 0, 0}, a.Rotation},
		{"frac 1", a, b, 1, [3]float64{2, -4, 6}, b.Rotation},
		{"frac 0.5", a, b, 0.5, [3]float64{1, -2, 3}, [4]float64{0, 0, s, c}},
		{"frac 0.25", a, b, 0.25, [3]float64{0.5, -1, 1.5}, [4]float64{0, 0, math.Sin(math.Pi / 16), math.Cos(math.Pi / 16)}},
		{"-q frac 0.5", a, negB, 0.5, [3]float64{1, -2, 3}, [4]float64{0, 0, s, c}},
		{"shortest path", a, rz270, 0.5, [3]float64{1, -2, 3}, [4]float64{0, 0, -s, c}},
		{"same", b, b, 0.3, b.Translation, b.Rotation},
		{"tiny angle", a, Transform{Rotation: [4]float64{0, 0, math.Sin(1e-9), math.Cos(1e-9)}}, 0.5,
			[3]float64{}, [4]float64{0, 0, math.Sin(0.5e-9), math.Cos(0.5e-9)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Interpolate(c.a, c.b, c.frac)
			nearVec(t, "translation", got.Translation[:], c.wantT[:], 1e-15)
			nearQuat(t, "rotation", got.Rotation, c.wantQ, 1e-15)
			if n := math.Sqrt(dot(got.Rotation, got.Rotation)); !near(n, 1, 1e-15) {
				t.Errorf("|q| = %v", n)
			}
		})
	}
	// The shortest path never turns by more than the direct arc: the angle
	// to a is frac times the angle between a and b.
	r := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		x, y := randTransform(r), randTransform(r)
		f := r.Float64()
		q := Interpolate(x, y, f).Rotation
		angle := func(p, q [4]float64) float64 { return 2 * math.Acos(min(1, math.Abs(dot(p, q)))) }
		if d := angle(x.Rotation, q) - f*angle(x.Rotation, y.Rotation); math.Abs(d) > 1e-7 {
			t.Errorf("slerp angle off by %g", d)
		}
	}
}
