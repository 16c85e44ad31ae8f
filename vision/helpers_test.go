package vision

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randFloats(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

// gradCheck compares an analytic gradient with central differences of
// loss, a function of x, at up to maxPoints coordinates of x.
func gradCheck(t *testing.T, name string, x []float32, analytic []float32, loss func() float64, maxPoints int, r *rand.Rand) {
	t.Helper()
	idx := r.Perm(len(x))
	if len(idx) > maxPoints {
		idx = idx[:maxPoints]
	}
	var worst float64
	var scale float64
	for _, g := range analytic {
		scale = math.Max(scale, math.Abs(float64(g)))
	}
	for _, i := range idx {
		old := x[i]
		h := float32(1e-2) * max(1, float32(math.Abs(float64(old))))
		x[i] = old + h
		up := loss()
		x[i] = old - h
		down := loss()
		x[i] = old
		num := (up - down) / (2 * float64(h))
		err := math.Abs(num-float64(analytic[i])) / math.Max(scale, 1e-3) // floor: some gradients are zero by symmetry
		worst = math.Max(worst, err)
		if err > 2e-2 {
			t.Errorf("%s[%d]: analytic %g, numeric %g", name, i, analytic[i], num)
			return
		}
	}
	t.Logf("%s: worst error %.2g of the largest gradient over %d points", name, worst, len(idx))
}

// dot64 is Σ a·b in float64: the loss whose gradient with respect to
// the output is b.
func dot64(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}
