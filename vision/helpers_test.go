package vision

import (
	"math/rand/v2"
)

func randFloats(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
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
