package policy

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/nn"
)

// TestDecodeMatchesLogitsOf: inference's packed head product (decode) gives
// the training pass's logits (logitsOf): the same bits at the small
// presets' width, within the bound on reordered float32 sums at the
// robot's d 512, with the unused padding left out; after ParamsChanged it
// reads the new kernel.
func TestDecodeMatchesLogitsOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		space action.Space
		d     int
		exact bool // the same bits when Gemm is the project's own product
	}{
		{"rt1-d64", action.RT1(), 64, true},
		{"continuous-arm-d64", action.RT1ContinuousArm(), 64, true},
		{"rt1-d512", action.RT1(), 512, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exact := tc.exact && nn.Backend() == "packed"
			h := newActionHead(Config{ActionSpace: tc.space}, tc.d, 8, 4)
			r := rand.New(rand.NewPCG(3, 4))
			fill := func(x []float32) {
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
			}
			for _, s := range h.specs("") {
				*s.dst = make([]float32, numElements(s.shape))
				fill(*s.dst)
			}
			const rows = 3
			out := make([]float32, rows*tc.d)
			fill(out)
			pooled, want := make([]float32, tc.d), make([]float32, h.width)
			got := make([]float32, h.paddedWidth())
			fill(got) // decode must overwrite all of it
			pack := make([]float32, nn.PackScratchSize(tc.d))
			a := make([]float32, tc.space.Len())
			check := func(when string) {
				t.Helper()
				h.logitsOf(want, pooled, out, rows)
				h.decode(a, got, pooled, out, rows, pack)
				for i, w := range want {
					// Two float32 sums of the same d+1 terms in any order
					// differ by at most 2·(d+1)·2⁻²⁴·Σ|term|. logitsOf's
					// Dense goes through Gemm; only when Gemm is the
					// project's own product (AVX-512) do both sum in the
					// same order, else OpenBLAS or gonum sums in its own.
					terms := math.Abs(float64(h.bias[i]))
					for k, x := range pooled {
						terms += math.Abs(float64(x) * float64(h.kernel[k*h.width+i]))
					}
					bound := 2 * float64(tc.d+1) * 0x1p-24 * terms
					if exact && got[i] != w || math.Abs(float64(got[i]-w)) > bound {
						t.Fatalf("%s: logit %d: decode %v, logitsOf %v (bound %.2g)", when, i, got[i], w, bound)
					}
				}
				for i, v := range got[h.width:] {
					if v != 0 {
						t.Fatalf("%s: padding logit %d is %v", when, i, v)
					}
				}
			}
			check("first step")
			fill(h.kernel)
			fill(h.bias)
			h.packed = nil // what Policy.ParamsChanged does
			check("after new weights")
		})
	}
}

// BenchmarkActionHead times the robot preset's head product (d 512 to
// RT-1's 2563 logits, 5.2 MB of weights) as training computes it
// (logitsOf: unpacked, one goroutine) and as inference does (decode:
// packed, shared with a worker), with the weights evicted from the caches
// before each product, as the backbone evicts them in a step.
func BenchmarkActionHead(b *testing.B) {
	nn.SetParallelism(2)
	defer nn.SetParallelism(1)
	const d, rows = 512, 8
	h := newActionHead(Config{ActionSpace: action.RT1()}, d, 8, 4)
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range h.specs("") {
		*s.dst = make([]float32, numElements(s.shape))
		for i := range *s.dst {
			(*s.dst)[i] = float32(r.NormFloat64())
		}
	}
	out, pooled := make([]float32, rows*d), make([]float32, d)
	logits, pack := make([]float32, h.paddedWidth()), make([]float32, nn.PackScratchSize(d))
	a := make([]float32, h.space.Len())
	evict := make([]byte, 64<<20)
	for _, bc := range []struct {
		name string
		run  func()
	}{
		{"logitsOf", func() { h.logitsOf(logits, pooled, out, rows) }},
		{"decode", func() { h.decode(a, logits, pooled, out, rows, pack) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bc.run()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for j := range evict {
					evict[j]++
				}
				b.StartTimer()
				bc.run()
			}
		})
	}
}
