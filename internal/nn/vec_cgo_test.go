//go:build cgo && !purego

package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/nn/cvec"
)

// TestSoftmaxRowsSubnormalExponents: the C softmax finishes rows whose
// exponents have subnormal float32 results itself, equal bit for bit to
// the Go loop, for every float32 from -86.5 to -104.5 below the row's
// maximum (a row [0, d] is [1, e^d] after the softmax), and in long rows
// with such exponents in each of their blocks.
func TestSoftmaxRowsSubnormalExponents(t *testing.T) {
	var x []float32
	for b := math.Float32bits(-86.5); math.Float32frombits(b) >= -104.5; b++ {
		x = append(x, 0, math.Float32frombits(b))
	}
	n := len(x) / 2
	checkCSoftmax(t, "rows [0, d]", x, n, 2)

	r := rand.New(rand.NewPCG(3, 7))
	const k = 3*256 + 40
	long := make([]float32, 4*k)
	for i := range long {
		long[i] = float32(r.NormFloat64())
	}
	for i := range 4 {
		for range 20 {
			long[i*k+r.IntN(k)] = -87 - 17*r.Float32()
		}
	}
	checkCSoftmax(t, "long rows", long, 4, k)
}

// checkCSoftmax runs the C softmax on x (n, k), checks that it did every
// row and that they equal the Go loop's bit for bit.
func checkCSoftmax(t *testing.T, what string, x []float32, n, k int) {
	t.Helper()
	got, want := append([]float32(nil), x...), append([]float32(nil), x...)
	if done := cvec.SoftmaxRows(got, n, k); done != n {
		t.Fatalf("%s: the C softmax left row %d (of %d) to Go", what, done, n)
	}
	softmaxRowsGo(want, n, k)
	if i := sameBits(got, want); i >= 0 {
		t.Fatalf("%s: row %d (%g below its maximum) column %d: %g, Go loop %g", what, i/k, x[i]-x[i/k*k], i%k, got[i], want[i])
	}
}
