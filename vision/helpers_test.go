package vision

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/layer"
)

func randFloats(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

// naiveTokenLearner is TokenLearner v1.1 written out in float64, straight
// from the definition, as the oracle for TokenLearnerForward.
// in (n, d) -> out (k, d), weights (k, n).
func naiveTokenLearner(in []float32, p *layer.TokenLearner, n, d, hidden, k int, eps float64) (out, weights []float64) {
	logits := make([]float64, n*k)
	for i := range n {
		x := in[i*d : i*d+d]
		var mean, sq float64
		for _, v := range x {
			mean += float64(v)
		}
		mean /= float64(d)
		for _, v := range x {
			sq += (float64(v) - mean) * (float64(v) - mean)
		}
		std := math.Sqrt(sq/float64(d) + eps)
		ln := make([]float64, d)
		for j, v := range x {
			ln[j] = (float64(v)-mean)/std*float64(p.LN.Scale[j]) + float64(p.LN.Bias[j])
		}
		hid := make([]float64, hidden)
		for o := range hidden {
			s := float64(p.MLP.D0.Bias[o])
			for j := range d {
				s += ln[j] * float64(p.MLP.D0.Kernel[j*hidden+o])
			}
			// gelu, tanh approximation (Flax's default)
			hid[o] = 0.5 * s * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(s+0.044715*s*s*s)))
		}
		for o := range k {
			s := float64(p.MLP.D1.Bias[o])
			for j := range hidden {
				s += hid[j] * float64(p.MLP.D1.Kernel[j*k+o])
			}
			logits[i*k+o] = s
		}
	}
	weights = make([]float64, k*n)
	out = make([]float64, k*d)
	for o := range k {
		mx := math.Inf(-1)
		for i := range n {
			mx = math.Max(mx, logits[i*k+o])
		}
		var sum float64
		for i := range n {
			weights[o*n+i] = math.Exp(logits[i*k+o] - mx)
			sum += weights[o*n+i]
		}
		for i := range n {
			weights[o*n+i] /= sum
			for j := range d {
				out[o*d+j] += weights[o*n+i] * float64(in[i*d+j])
			}
		}
	}
	return out, weights
}

func relErr64(got []float32, want []float64) float64 {
	var num, den float64
	for i := range got {
		num = math.Max(num, math.Abs(float64(got[i])-want[i]))
		den = math.Max(den, math.Abs(want[i]))
	}
	return num / math.Max(den, 1e-30)
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
