package layer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/fdcheck"
	"github.com/ttmrobot/ttm/internal/nn"
)

func randFloats(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

// tokenLearnerTestParams returns random TokenLearner parameters (not the
// init: biases and LayerNorm affine non-trivial too).
func tokenLearnerTestParams(r *rand.Rand, d, hidden, k int) *TokenLearner {
	return &TokenLearner{
		LN: LayerNorm{Scale: randFloats(r, d, 1), Bias: randFloats(r, d, 0.3)},
		MLP: MLP{
			D0: Dense{Kernel: randFloats(r, d*hidden, 1/math.Sqrt(float64(d))), Bias: randFloats(r, hidden, 0.1), In: d, Out: hidden},
			D1: Dense{Kernel: randFloats(r, hidden*k, 1/math.Sqrt(float64(hidden))), Bias: randFloats(r, k, 0.1), In: hidden, Out: k},
		},
	}
}

// zeroTokenLearner returns zero parameters of the sizes given, registered
// in a Table as a model's are.
func zeroTokenLearner(d, hidden, k int) *TokenLearner {
	var p TokenLearner
	var t Table
	p.Register(&t, "tl", d, hidden, k, MLPBias)
	t.Allocate()
	return &p
}

func TestTokenLearnerMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, s := range []struct{ n, d, hidden, k int }{{9, 16, 8, 4}, {81, 64, 64, 8}, {100, 32, 16, 8}, {1, 8, 4, 2}} {
		p := tokenLearnerTestParams(r, s.d, s.hidden, s.k)
		in := randFloats(r, s.n*s.d, 2)
		a := NewTokenLearnerRec(s.n, s.d, s.hidden, s.k)
		out := make([]float32, s.k*s.d)
		TokenLearnerForward(out, a, in, p, 1e-6)
		wantOut, wantW := NaiveTokenLearner(in, p, s.n, s.d, s.hidden, s.k, 1e-6)
		if e := RelErr64(out, wantOut); e > 1e-4 {
			t.Errorf("%+v: tokens differ from the float64 definition by %g (relative)", s, e)
		}
		if e := RelErr64(a.Weights, wantW); e > 1e-4 {
			t.Errorf("%+v: weights differ from the float64 definition by %g (relative)", s, e)
		}
	}
}

// TestTokenLearnerRunnerMatchesNaive: the inference runner, alone or with
// its phases shared with a worker team, computes the definition's tokens.
func TestTokenLearnerRunnerMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	defer nn.SetParallelism(1)
	for _, s := range []struct{ n, d, hidden, k int }{{144, 64, 32, 16}, {100, 48, 16, 32}, {7, 32, 16, 16}, {40, 16, 8, 4}} {
		for _, par := range []int{1, 2} {
			t.Run(fmt.Sprintf("%+v/par=%d", s, par), func(t *testing.T) {
				nn.SetParallelism(par)
				p := tokenLearnerTestParams(r, s.d, s.hidden, s.k)
				in := randFloats(r, s.n*s.d, 2)
				run := NewTokenLearnerRunner(p, s.n, s.k, s.d, 1e-6)
				out := make([]float32, s.k*s.d)
				run.Forward(out, in)
				wantOut, wantW := NaiveTokenLearner(in, p, s.n, s.d, s.hidden, s.k, 1e-6)
				if e := RelErr64(out, wantOut); e > 1e-4 {
					t.Errorf("tokens differ from the float64 definition by %g (relative)", e)
				}
				if e := RelErr64(run.Weights(), wantW); e > 1e-4 {
					t.Errorf("weights differ from the float64 definition by %g (relative)", e)
				}
			})
		}
	}
}

func TestTokenLearnerWeightsSumToOne(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const n, d, hidden, k = 81, 64, 64, 8
	var init TokenLearner
	var tab Table
	init.Register(&tab, "tl", d, hidden, k, MLPBias)
	flat := tab.Allocate()
	ir := rand.New(rand.NewPCG(1, 1))
	for _, s := range tab.Specs {
		s.Init.Fill(flat[s.Offset:s.Offset+s.Size], ir)
	}
	for _, p := range []*TokenLearner{&init, tokenLearnerTestParams(r, d, hidden, k)} {
		for _, scale := range []float64{0.01, 1, 100} {
			in := randFloats(r, n*d, scale)
			a := NewTokenLearnerRec(n, d, hidden, k)
			out := make([]float32, k*d)
			TokenLearnerForward(out, a, in, p, 1e-6)
			for j := range k {
				var sum float64
				for i, w := range a.Weights[j*n : j*n+n] {
					if w < 0 || math.IsNaN(float64(w)) {
						t.Fatalf("token %d: weight %d is %v", j, i, w)
					}
					sum += float64(w)
				}
				if math.Abs(sum-1) > 1e-5 {
					t.Errorf("input scale %g: token %d's weights sum to %v", scale, j, sum)
				}
			}
		}
	}
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

func TestTokenLearnerGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	const n, d, hidden, k = 7, 6, 5, 3
	p := tokenLearnerTestParams(r, d, hidden, k)
	in := randFloats(r, n*d, 1)
	dOut := randFloats(r, k*d, 1)
	a := NewTokenLearnerRec(n, d, hidden, k)
	sc := NewTokenLearnerScratch(n, d, hidden, k)
	out := make([]float32, k*d)
	loss := func() float64 {
		TokenLearnerForward(out, a, in, p, 1e-6)
		return dot64(out, dOut)
	}
	loss()
	g := zeroTokenLearner(d, hidden, k)
	dIn := make([]float32, n*d)
	TokenLearnerBackward(dIn, g, dOut, a, sc, in, p)
	fdcheck.Require(t, r, []fdcheck.Var{{Name: "in", X: in, Grad: dIn},
		{Name: "LN.Scale", X: p.LN.Scale, Grad: g.LN.Scale}, {Name: "LN.Bias", X: p.LN.Bias, Grad: g.LN.Bias},
		{Name: "D0.Kernel", X: p.MLP.D0.Kernel, Grad: g.MLP.D0.Kernel}, {Name: "D0.Bias", X: p.MLP.D0.Bias, Grad: g.MLP.D0.Bias},
		{Name: "D1.Kernel", X: p.MLP.D1.Kernel, Grad: g.MLP.D1.Kernel}, {Name: "D1.Bias", X: p.MLP.D1.Bias, Grad: g.MLP.D1.Bias}}, 30, loss)

	// Without dIn the parameter gradients are the same.
	loss()
	g2 := zeroTokenLearner(d, hidden, k)
	TokenLearnerBackward(nil, g2, dOut, a, sc, in, p)
	clear(g.LN.Scale)
	clear(g.LN.Bias)
	TokenLearnerBackward(make([]float32, n*d), g, dOut, a, sc, in, p) // g.LN now holds one pass
	for j := range d {
		if math.Abs(float64(g.LN.Scale[j]-g2.LN.Scale[j])) > 1e-5 || math.Abs(float64(g.LN.Bias[j]-g2.LN.Bias[j])) > 1e-5 {
			t.Fatalf("LayerNorm gradients without dIn differ at %d: %v/%v vs %v/%v", j, g2.LN.Scale[j], g2.LN.Bias[j], g.LN.Scale[j], g.LN.Bias[j])
		}
	}
}
