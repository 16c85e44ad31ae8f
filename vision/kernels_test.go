package vision

import (
	"math"
	"strings"
	"testing"
)

// TestSwishFastAccuracy checks the layers' fused swish, in each kernel set
// the CPU runs, against float64 arithmetic over a fine grid: the relative
// error bound its comment states where swish's outputs matter (|x| <= 20),
// a looser one over all of ±100 (where only the rounding of x·log2 e, growing
// with |x|, limits it), and the special values.
func TestSwishFastAccuracy(t *testing.T) {
	const step = 1.0 / 1024
	var xs []float32
	for x := -100.0; x <= 100; x += step {
		xs = append(xs, float32(x))
	}
	got := make([]float32, len(xs))
	forEachISA(t, func(isa kernelISA) {
		swishFast(got, xs)
		cases := []struct {
			name   string
			lo, hi float64
			rel    float64
		}{
			{"|x| <= 20", -20, 20, 2e-6},
			{"|x| <= 100", -100, 100, 1e-5},
		}
		for _, c := range cases {
			worst, at := 0.0, 0.0
			for i, x32 := range xs {
				x := float64(x32)
				if x < c.lo || x > c.hi {
					continue
				}
				want := x / (1 + math.Exp(-x))
				if math.Abs(want) < 1e-30 { // float32's subnormals and below
					continue
				}
				if e := math.Abs(float64(got[i])-want) / math.Abs(want); e > worst {
					worst, at = e, x
				}
			}
			if worst > c.rel {
				t.Errorf("%s, %s: relative error %.3g at x = %g, want at most %g", isa, c.name, worst, at, c.rel)
			}
		}
		special := []float32{float32(math.NaN()), float32(math.Inf(1)), 0, 1}
		out := make([]float32, len(special))
		swishFast(out, special)
		if !math.IsNaN(float64(out[0])) || !math.IsInf(float64(out[1]), 1) || out[2] != 0 {
			t.Errorf("%s: swish of NaN, +Inf, 0 = %v, want NaN, +Inf, 0", isa, out[:3])
		}
		if want := 1 / (1 + math.Exp(-1)); math.Abs(float64(out[3])-want) > 2e-6*want {
			t.Errorf("%s: swish(1) = %v, want %v", isa, out[3], want)
		}
	})
}

// TestLayerArithmeticNamesKernelSet: features computed with different
// kernel sets round differently, so each set has its own name.
func TestLayerArithmeticNamesKernelSet(t *testing.T) {
	seen := map[string]kernelISA{}
	forEachISA(t, func(isa kernelISA) {
		a := LayerArithmetic()
		if !strings.HasPrefix(a, isa.String()+".r") {
			t.Errorf("%s: arithmetic %q does not name the kernel set", isa, a)
		}
		if other, ok := seen[a]; ok {
			t.Errorf("%s and %s share the arithmetic %q", isa, other, a)
		}
		seen[a] = isa
	})
}
