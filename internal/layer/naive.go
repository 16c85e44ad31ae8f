package layer

import "math"

// NaiveTokenLearner is TokenLearner v1.1 written out in float64, straight
// from the definition: the oracle the tests of TokenLearnerForward, the
// runner and the vision head check them against.
// in (n, d) -> out (k, d), weights (k, n).
func NaiveTokenLearner(in []float32, p *TokenLearner, n, d, hidden, k int, eps float64) (out, weights []float64) {
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

// RelErr64 is the largest difference of got from want relative to the
// largest magnitude in want.
func RelErr64(got []float32, want []float64) float64 {
	var num, den float64
	for i := range got {
		num = math.Max(num, math.Abs(float64(got[i])-want[i]))
		den = math.Max(den, math.Abs(want[i]))
	}
	return num / math.Max(den, 1e-30)
}
