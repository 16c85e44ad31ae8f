package sim

import "math"

// Vec3 is a point or direction in metres: x forward, y left, z up.
type Vec3 [3]float64

// Add returns v + w.
func (v Vec3) Add(w Vec3) Vec3 { return Vec3{v[0] + w[0], v[1] + w[1], v[2] + w[2]} }

// Sub returns v - w.
func (v Vec3) Sub(w Vec3) Vec3 { return Vec3{v[0] - w[0], v[1] - w[1], v[2] - w[2]} }

// Scale returns s·v.
func (v Vec3) Scale(s float64) Vec3 { return Vec3{s * v[0], s * v[1], s * v[2]} }

// Dot returns v·w.
func (v Vec3) Dot(w Vec3) float64 { return v[0]*w[0] + v[1]*w[1] + v[2]*w[2] }

// Cross returns v × w.
func (v Vec3) Cross(w Vec3) Vec3 {
	return Vec3{v[1]*w[2] - v[2]*w[1], v[2]*w[0] - v[0]*w[2], v[0]*w[1] - v[1]*w[0]}
}

// Norm returns the length of v.
func (v Vec3) Norm() float64 { return math.Sqrt(v.Dot(v)) }

// DistXY returns the horizontal distance between v and w.
func (v Vec3) DistXY(w Vec3) float64 { return math.Hypot(v[0]-w[0], v[1]-w[1]) }

// rotZ returns v turned by angle a (radians, counter-clockwise) about the z axis.
func rotZ(v Vec3, a float64) Vec3 {
	s, c := math.Sincos(a)
	return Vec3{c*v[0] - s*v[1], s*v[0] + c*v[1], v[2]}
}

func clamp(x, lo, hi float64) float64 { return min(max(x, lo), hi) }

// wrapAngle maps a to (-π, π].
func wrapAngle(a float64) float64 {
	a = math.Mod(a, 2*math.Pi)
	if a > math.Pi {
		a -= 2 * math.Pi
	} else if a <= -math.Pi {
		a += 2 * math.Pi
	}
	return a
}

// segmentPointXY returns the parameter t in [0, 1] of the point of segment
// a→b closest to p in the horizontal plane, and that horizontal distance.
func segmentPointXY(a, b, p Vec3) (t, d float64) {
	dx, dy := b[0]-a[0], b[1]-a[1]
	l2 := dx*dx + dy*dy
	if l2 > 0 {
		t = clamp(((p[0]-a[0])*dx+(p[1]-a[1])*dy)/l2, 0, 1)
	}
	return t, math.Hypot(a[0]+t*dx-p[0], a[1]+t*dy-p[1])
}

// segmentPoint returns the distance from p to the segment a→b in 3-D.
func segmentPoint(a, b, p Vec3) float64 {
	ab := b.Sub(a)
	l2 := ab.Dot(ab)
	t := 0.0
	if l2 > 0 {
		t = clamp(p.Sub(a).Dot(ab)/l2, 0, 1)
	}
	return a.Add(ab.Scale(t)).Sub(p).Norm()
}
