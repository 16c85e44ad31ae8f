package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/fdcheck"
)

func randSlice(r *rand.Rand, n int, scale float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64()) * scale
	}
	return s
}

// naiveGemm is the textbook triple loop, in float64, the reference for Gemm.
func naiveGemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += float64(av) * float64(bv)
			}
			c[i*ldc+j] = float32(float64(alpha)*s + float64(beta)*float64(c[i*ldc+j]))
		}
	}
}

func maxRelDiff(got, want []float32) float64 {
	var worst float64
	for i := range want {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		den := math.Max(1, math.Abs(float64(want[i])))
		worst = math.Max(worst, d/den)
	}
	return worst
}

func TestLayerNormHandComputed(t *testing.T) {
	// x = (1, 2, 3): mean 2, variance 2/3, so x̂ = (-1, 0, 1)·sqrt(3/2).
	in := []float32{1, 2, 3}
	out := make([]float32, 3)
	LayerNormForward(out, nil, nil, in, []float32{1, 2, 1}, []float32{0, 0.5, -1}, 1, 3, 0)
	s := float32(math.Sqrt(1.5))
	want := []float32{-s, 0.5, s - 1}
	if d := maxRelDiff(out, want); d > 1e-6 {
		t.Errorf("got %v, want %v", out, want)
	}
	// A constant row has zero variance: the clamp keeps the result finite.
	LayerNormForward(out, nil, nil, []float32{5, 5, 5}, []float32{1, 1, 1}, []float32{0, 0, 0}, 1, 3, 1e-6)
	for _, v := range out {
		if v != 0 {
			t.Errorf("constant row normalised to %v, want zeros", out)
		}
	}
}

func TestGELUHandComputed(t *testing.T) {
	in := []float32{0, 1, -1, 3}
	out := make([]float32, 4)
	GELUForward(out, in)
	// Values of 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))) computed by hand.
	want := []float32{0, 0.8411920, -0.1588080, 2.9963627}
	if d := maxRelDiff(out, want); d > 1e-6 {
		t.Errorf("got %v, want %v", out, want)
	}
}

func TestSoftmaxRows(t *testing.T) {
	x := []float32{0, float32(math.Log(3)), 1000, 1000}
	SoftmaxRowsForward(x, 2, 2)
	want := []float32{0.25, 0.75, 0.5, 0.5}
	if d := maxRelDiff(x, want); d > 1e-6 {
		t.Errorf("got %v, want %v", x, want)
	}
}

func TestDenseTokensMatchesTransposedDense(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n, c, k := 5, 7, 3
	in, w, b := randSlice(r, n*c, 1), randSlice(r, n*k, 1), randSlice(r, k, 1)
	got := make([]float32, k*c)
	DenseTokens(got, in, w, b, n, c, k)
	inT := make([]float32, c*n)
	Transpose(inT, in, n, c)
	tmp := make([]float32, c*k)
	Dense(tmp, inT, w, b, c, n, k)
	want := make([]float32, k*c)
	Transpose(want, tmp, c, k)
	if d := maxRelDiff(got, want); d > 1e-6 {
		t.Errorf("max difference %g", d)
	}
}

// gradCase is a check of every entry of params against finite differences
// (fdcheck) of the scalar loss L = Σ out·g for a fixed random g. forward
// computes out from the parameters; backward accumulates dL/dparam given
// dOut = g.
type gradCase struct {
	name     string
	params   [][]float32 // slices perturbed by the check
	out      []float32
	forward  func()
	backward func(dOut []float32, grads [][]float32)
}

func gradCheck(t *testing.T, tc gradCase) {
	t.Helper()
	r := rand.New(rand.NewPCG(9, 9))
	g := randSlice(r, len(tc.out), 1)
	loss := func() float64 {
		tc.forward()
		var s float64
		for i, v := range tc.out {
			s += float64(v) * float64(g[i])
		}
		return s
	}
	loss()
	grads := make([][]float32, len(tc.params))
	for i, p := range tc.params {
		grads[i] = make([]float32, len(p))
	}
	tc.backward(g, grads)
	vars := make([]fdcheck.Var, len(tc.params))
	most := 0
	for i, p := range tc.params {
		vars[i] = fdcheck.Var{Name: fmt.Sprintf("%s param %d", tc.name, i), X: p, Grad: grads[i]}
		most = max(most, len(p))
	}
	fdcheck.Require(t, r, vars, most, loss) // every entry
}

func TestGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n, c, k, heads = 4, 6, 3, 2

	lnIn, lnScale, lnBias := randSlice(r, n*c, 1), randSlice(r, c, 1), randSlice(r, c, 1)
	lnOut, mean, rstd := make([]float32, n*c), make([]float32, n), make([]float32, n)

	gIn, gOut := randSlice(r, n*c, 2), make([]float32, n*c)

	smIn, smOut := randSlice(r, n*k, 1), make([]float32, n*k)

	dIn, dW, dB := randSlice(r, n*c, 1), randSlice(r, c*k, 1), randSlice(r, k, 1)
	dOut := make([]float32, n*k)

	tIn, tW, tB := randSlice(r, n*c, 1), randSlice(r, n*k, 1), randSlice(r, k, 1)
	tOut := make([]float32, k*c)

	q, kk, v := randSlice(r, 2*c, 1), randSlice(r, n*c, 1), randSlice(r, n*c, 1)
	att, aOut := make([]float32, heads*2*n), make([]float32, 2*c)

	for _, tc := range []gradCase{
		{
			name: "LayerNorm", params: [][]float32{lnIn, lnScale, lnBias}, out: lnOut,
			forward: func() { LayerNormForward(lnOut, mean, rstd, lnIn, lnScale, lnBias, n, c, 1e-6) },
			backward: func(d []float32, g [][]float32) {
				LayerNormBackward(g[0], g[1], g[2], d, lnIn, lnScale, mean, rstd, n, c)
			},
		},
		{
			name: "GELU", params: [][]float32{gIn}, out: gOut,
			forward:  func() { GELUForward(gOut, gIn) },
			backward: func(d []float32, g [][]float32) { GELUBackward(g[0], d, gIn, gOut) },
		},
		{
			name: "SoftmaxRows", params: [][]float32{smIn}, out: smOut,
			forward: func() { copy(smOut, smIn); SoftmaxRowsForward(smOut, n, k) },
			backward: func(d []float32, g [][]float32) {
				dx := append([]float32(nil), d...)
				SoftmaxRowsBackward(dx, smOut, n, k)
				Add(g[0], dx)
			},
		},
		{
			name: "Dense", params: [][]float32{dIn, dW, dB}, out: dOut,
			forward: func() { Dense(dOut, dIn, dW, dB, n, c, k) },
			backward: func(d []float32, g [][]float32) {
				DenseBackward(g[0], g[1], g[2], d, dIn, dW, n, c, k)
			},
		},
		{
			name: "DenseTokens", params: [][]float32{tIn, tW, tB}, out: tOut,
			forward: func() { DenseTokens(tOut, tIn, tW, tB, n, c, k) },
			backward: func(d []float32, g [][]float32) {
				DenseTokensBackward(g[0], g[1], g[2], d, tIn, tW, n, c, k)
			},
		},
		{
			name: "Attention", params: [][]float32{q, kk, v}, out: aOut,
			forward: func() { AttentionForward(aOut, att, q, kk, v, 2, n, c, heads, c, c) },
			backward: func(d []float32, g [][]float32) {
				AttentionBackward(g[0], g[1], g[2], make([]float32, heads*2*n), d, att, q, kk, v, 2, n, c, heads, c, c)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { gradCheck(t, tc) })
	}
}

func TestAttentionRowsAreDistributions(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	nq, nk, c, heads := 3, 5, 8, 4
	q, k, v := randSlice(r, nq*c, 3), randSlice(r, nk*c, 3), randSlice(r, nk*c, 1)
	att, out := make([]float32, heads*nq*nk), make([]float32, nq*c)
	AttentionForward(out, att, q, k, v, nq, nk, c, heads, c, c)
	for row := 0; row < heads*nq; row++ {
		var s float64
		for _, p := range att[row*nk : row*nk+nk] {
			if p < 0 {
				t.Fatalf("negative probability %g", p)
			}
			s += float64(p)
		}
		if math.Abs(s-1) > 1e-5 {
			t.Errorf("row %d sums to %g", row, s)
		}
	}
}

func TestKernelsDoNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	in, w, b := randSlice(r, 16*64, 1), randSlice(r, 64*32, 1), randSlice(r, 32, 1)
	out := make([]float32, 16*32)
	att := make([]float32, 4*16*16)
	q := randSlice(r, 16*64, 1)
	aOut := make([]float32, 16*64)
	// A product over nine 64x64 blocks of its result, which gonum's own
	// Sgemm would spread over goroutines.
	x, g := randSlice(r, 25*16, 1), randSlice(r, 25*576, 1)
	dw := make([]float32, 16*576)
	allocs := testing.AllocsPerRun(50, func() {
		Gemm(true, false, 16, 576, 25, 1, x, 16, g, 576, 1, dw, 576)
		Dense(out, in, w, b, 16, 64, 32)
		GELUForward(out, out)
		SoftmaxRowsForward(out, 16, 32)
		LayerNormForward(aOut, nil, nil, q, in[:64], in[64:128], 16, 64, 1e-6)
		AttentionForward(aOut, att, q, q, q, 16, 16, 64, 4, 64, 64)
	})
	if allocs != 0 {
		t.Errorf("kernels allocate %.1f times per run", allocs)
	}
}

func TestExp32(t *testing.T) {
	worst := 0.0
	for x := float32(-90); x < 90; x += 0.000731 {
		got, want := float64(Exp32(x)), math.Exp(float64(x))
		if want == 0 || math.IsInf(want, 0) || want < 1.2e-38 || want > 3.4e38 {
			continue
		}
		worst = math.Max(worst, math.Abs(got-want)/want)
	}
	if worst > 2.5e-7 { // 2 ulps of float32
		t.Errorf("worst relative error %.3g", worst)
	}
	if !math.IsInf(float64(Exp32(100)), 1) || Exp32(-200) != 0 || !math.IsNaN(float64(Exp32(float32(math.NaN())))) {
		t.Error("overflow, underflow or NaN handled wrongly")
	}
	// Off the fast path Exp32 is math.Exp rounded to float32, bit for bit,
	// the shortcut to 0 below ExpZeroBelow included.
	for x := float32(-112); x < -87; x += 0.00137 {
		if got, want := Exp32(x), float32(math.Exp(float64(x))); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("Exp32(%v) = %g, float32(math.Exp) %g", x, got, want)
		}
	}
	if float32(math.Exp(ExpZeroBelow)) != 0 || float32(math.Exp(ExpZeroBelow+0.1)) == 0 {
		t.Errorf("exp's float32 result is not first 0 near %v", float32(ExpZeroBelow))
	}
}

func TestGELUMatchesTanhFormula(t *testing.T) {
	in := make([]float32, 0, 4000)
	for x := float32(-12); x < 12; x += 0.006 {
		in = append(in, x)
	}
	out := make([]float32, len(in))
	GELUForward(out, in)
	for i, x := range in {
		xf := float64(x)
		want := 0.5 * xf * (1 + math.Tanh(geluScale*(xf+0.044715*xf*xf*xf)))
		if math.Abs(float64(out[i])-want) > 3e-7*math.Max(1, math.Abs(want)) {
			t.Fatalf("gelu(%g) = %g, want %g", x, out[i], want)
		}
	}
}

// TestGELUBackwardMatchesDerivative: the derivative read from the forward
// output matches the closed form in float64 over the whole range, at and
// near zero (where the quotient out/x is not used) and far out in both
// tails, where the forward's clamped exponent leaves a residue.
func TestGELUBackwardMatchesDerivative(t *testing.T) {
	in := []float32{0, 1e-35, -1e-35, 1e-30, -1e-29, 1e-6, -1e-6, 20, -20, 100, -100, 1e4, -1e4}
	for x := float32(-12); x < 12; x += 0.006 {
		in = append(in, x)
	}
	out, dOut, dIn := make([]float32, len(in)), make([]float32, len(in)), make([]float32, len(in))
	GELUForward(out, in)
	for i := range dOut {
		dOut[i] = 1
	}
	GELUBackward(dIn, dOut, in, out)
	for i, x := range in {
		xf := float64(x)
		u := geluScale * (xf + 0.044715*xf*xf*xf)
		th := math.Tanh(u)
		want := 0.5*(1+th) + 0.5*xf*(1-th*th)*geluScale*(1+3*0.044715*xf*xf)
		// For x of 4 to 5, 2x·u'(x) ≈ 30 amplifies out's rounding (half an
		// ulp of x) in s = out/x: a few 1e-6 there, as exp-based s has.
		if math.IsNaN(float64(dIn[i])) || math.Abs(float64(dIn[i])-want) > 5e-6*math.Max(1, math.Abs(want)) {
			t.Errorf("gelu'(%g) = %g, want %g", x, dIn[i], want)
		}
	}
}

func BenchmarkLayerNorm(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	in, scale, bias := randSlice(r, 160*512, 1), randSlice(r, 512, 1), randSlice(r, 512, 1)
	out := make([]float32, len(in))
	b.SetBytes(int64(4 * len(in)))
	for i := 0; i < b.N; i++ {
		LayerNormForward(out, nil, nil, in, scale, bias, 160, 512, 1e-6)
	}
}
