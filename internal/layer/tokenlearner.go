package layer

import (
	"fmt"

	"github.com/ttmrobot/ttm/internal/nn"
)

// TokenLearner is TokenLearner v1.1 (Ryoo et al. 2021, scenic's
// TokenLearnerModuleV11), which turns N tokens V (N, d) into K:
//
//	L = Dense_1(gelu(Dense_0(LayerNorm(V))))   (N, K)
//	A = softmax of Lᵀ over the N rows           (K, N), each row sums to one
//	Z = A·V                                     (K, d), on the raw V
type TokenLearner struct {
	LN  LayerNorm // LayerNorm_0
	MLP MLP       // token_masking: d -> h -> K
}

// Register names the tensors under path as scenic does; mlpBias is the
// MLP biases' initialiser.
func (p *TokenLearner) Register(t *Table, path string, d, hidden, k int, mlpBias Init) {
	p.LN.Register(t, path+"/LayerNorm_0", d)
	p.MLP.Register(t, path+"/token_masking", d, hidden, k, mlpBias)
}

// TokenLearnerRec keeps one TokenLearner pass for its backward pass.
// Sizes are fixed by NewTokenLearnerRec.
type TokenLearnerRec struct {
	N, D, Hidden, K int

	LN      []float32 // (N, d) LayerNorm(V)
	Mean    []float32 // (N)
	Rstd    []float32 // (N)
	Pre     []float32 // (N, h) Dense_0 output, before gelu
	Hid     []float32 // (N, h) after gelu
	Logits  []float32 // (N, K)
	Weights []float32 // (K, N) A: row j is token j's distribution over the rows
}

// NewTokenLearnerRec allocates a record for N tokens of width d.
func NewTokenLearnerRec(n, d, hidden, k int) *TokenLearnerRec {
	return &TokenLearnerRec{
		N: n, D: d, Hidden: hidden, K: k,
		LN: make([]float32, n*d), Mean: make([]float32, n), Rstd: make([]float32, n),
		Pre: make([]float32, n*hidden), Hid: make([]float32, n*hidden),
		Logits: make([]float32, n*k), Weights: make([]float32, k*n),
	}
}

// TokenLearnerScratch is the backward pass's scratch space.
type TokenLearnerScratch struct {
	dWeights []float32 // (K, N)
	dLogits  []float32 // (N, K)
	dHid     []float32 // (N, h)
	dPre     []float32 // (N, h)
	dLN      []float32 // (N, d)
}

// NewTokenLearnerScratch allocates scratch for passes recorded in a
// TokenLearnerRec of the same sizes.
func NewTokenLearnerScratch(n, d, hidden, k int) *TokenLearnerScratch {
	return &TokenLearnerScratch{
		dWeights: make([]float32, k*n), dLogits: make([]float32, n*k),
		dHid: make([]float32, n*hidden), dPre: make([]float32, n*hidden), dLN: make([]float32, n*d),
	}
}

// TokenLearnerForward computes out (K, d) from in (N, d) on one goroutine,
// keeping the pass in a.
func TokenLearnerForward(out []float32, a *TokenLearnerRec, in []float32, p *TokenLearner, eps float32) {
	n, d, h, k := a.N, a.D, a.Hidden, a.K
	checkLen("TokenLearnerForward in", in, n*d)
	checkLen("TokenLearnerForward out", out, k*d)
	nn.LayerNormForward(a.LN, a.Mean, a.Rstd, in, p.LN.Scale, p.LN.Bias, n, d, eps)
	nn.Dense(a.Pre, a.LN, p.MLP.D0.Kernel, p.MLP.D0.Bias, n, d, h)
	nn.GELUForward(a.Hid, a.Pre)
	nn.Dense(a.Logits, a.Hid, p.MLP.D1.Kernel, p.MLP.D1.Bias, n, h, k)
	nn.Transpose(a.Weights, a.Logits, n, k)
	nn.SoftmaxRowsForward(a.Weights, k, n)
	// out (K, d) = A (K, N) · V (N, d)
	nn.Gemm(false, false, k, d, n, 1, a.Weights, n, in, d, 0, out, d)
}

// TokenLearnerBackward accumulates the gradients of TokenLearnerForward
// into g and, unless dIn is nil, into dIn (N, d). dOut (K, d); a and in
// are the forward pass's.
func TokenLearnerBackward(dIn []float32, g *TokenLearner, dOut []float32, a *TokenLearnerRec, sc *TokenLearnerScratch, in []float32, p *TokenLearner) {
	n, d, h, k := a.N, a.D, a.Hidden, a.K
	checkLen("TokenLearnerBackward dOut", dOut, k*d)
	// Z = A·V: dA = dOut·Vᵀ, and V's direct part dV += Aᵀ·dOut.
	nn.Gemm(false, true, k, n, d, 1, dOut, d, in, d, 0, sc.dWeights, n)
	if dIn != nil {
		checkLen("TokenLearnerBackward dIn", dIn, n*d)
		nn.Gemm(true, false, n, d, k, 1, a.Weights, n, dOut, d, 1, dIn, d)
	}
	nn.SoftmaxRowsBackward(sc.dWeights, a.Weights, k, n)
	nn.Transpose(sc.dLogits, sc.dWeights, k, n)
	clear(sc.dHid)
	nn.DenseBackward(sc.dHid, g.MLP.D1.Kernel, g.MLP.D1.Bias, sc.dLogits, a.Hid, p.MLP.D1.Kernel, n, h, k)
	clear(sc.dPre)
	nn.GELUBackward(sc.dPre, sc.dHid, a.Pre, a.Hid)
	clear(sc.dLN)
	nn.DenseBackward(sc.dLN, g.MLP.D0.Kernel, g.MLP.D0.Bias, sc.dPre, a.LN, p.MLP.D0.Kernel, n, d, h)
	if dIn != nil {
		nn.LayerNormBackward(dIn, g.LN.Scale, g.LN.Bias, sc.dLN, in, p.LN.Scale, a.Mean, a.Rstd, n, d)
	} else {
		lnParamGrads(&g.LN, sc.dLN, a, in)
	}
}

// lnParamGrads accumulates LayerNorm's scale and bias gradients alone:
// dScale += Σ dLN ⊙ x̂, dBias += Σ dLN, with x̂ = (x - mean)·rstd.
func lnParamGrads(g *LayerNorm, dLN []float32, a *TokenLearnerRec, in []float32) {
	n, d := a.N, a.D
	scale, bias := g.Scale[:d], g.Bias[:d]
	for i := range n {
		x, dy := in[i*d:i*d+d], dLN[i*d:i*d+d]
		m, rs := a.Mean[i], a.Rstd[i]
		for j, v := range dy {
			scale[j] += v * (x[j] - m) * rs
			bias[j] += v
		}
	}
}

// TokenLearnerRunner runs TokenLearner forward passes of fixed sizes with
// each phase split across the nn worker team: rows of V for the logits,
// rows of A for the weights and the output. It keeps nothing for a
// backward pass and allocates nothing after NewTokenLearnerRunner.
type TokenLearnerRunner struct {
	p       *TokenLearner
	n, k, d int
	eps     float32
	ln      []float32 // (N, d)
	hidden  []float32 // (N, h)
	logits  []float32 // (N, K)
	weights []float32 // (K, N)

	in, out []float32 // of the Forward call in progress

	logitsTask, weightsTask, outTask nn.Task
}

// NewTokenLearnerRunner prepares passes of p from N tokens of width d to K.
func NewTokenLearnerRunner(p *TokenLearner, n, k, d int, eps float32) *TokenLearnerRunner {
	t := &TokenLearnerRunner{
		p: p, n: n, k: k, d: d, eps: eps,
		ln: make([]float32, n*d), hidden: make([]float32, n*p.MLP.D0.Out),
		logits: make([]float32, n*k), weights: make([]float32, k*n),
	}
	t.logitsTask, t.weightsTask, t.outTask = tlLogits{t}, tlWeights{t}, tlOut{t}
	return t
}

// Grain sizes: below these, splitting a phase costs more than it saves.
const (
	rowGrain    = 16
	columnGrain = 4
)

// Forward computes out (K, d) from in (N, d).
func (t *TokenLearnerRunner) Forward(out, in []float32) {
	t.in, t.out = in, out
	nn.ParallelFor(t.n, rowGrain, t.logitsTask)
	nn.ParallelFor(t.k, columnGrain, t.weightsTask)
	nn.ParallelFor(t.k, columnGrain, t.outTask)
	t.in, t.out = nil, nil
}

// Weights are the last pass's weights A (K, N), a view.
func (t *TokenLearnerRunner) Weights() []float32 { return t.weights }

type (
	tlLogits  struct{ *TokenLearnerRunner }
	tlWeights struct{ *TokenLearnerRunner }
	tlOut     struct{ *TokenLearnerRunner }
)

// Run computes the logits of input rows [lo, hi).
func (t tlLogits) Run(lo, hi int) {
	d, h, k, rows := t.d, t.p.MLP.D0.Out, t.k, hi-lo
	ln, hidden, logits := t.ln[lo*d:hi*d], t.hidden[lo*h:hi*h], t.logits[lo*k:hi*k]
	t.p.LN.Forward(ln, t.in[lo*d:hi*d], rows, d, t.eps)
	d0, d1 := &t.p.MLP.D0, &t.p.MLP.D1
	nn.Dense(hidden, ln, d0.Kernel, d0.Bias, rows, d, h)
	nn.GELUForward(hidden, hidden)
	nn.Dense(logits, hidden, d1.Kernel, d1.Bias, rows, h, k)
}

// Run fills rows [lo, hi) of A: column j of L, softmaxed over the N rows.
func (t tlWeights) Run(lo, hi int) {
	n, k := t.n, t.k
	for j := lo; j < hi; j++ {
		row := t.weights[j*n : j*n+n]
		for i := range row {
			row[i] = t.logits[i*k+j]
		}
	}
	nn.SoftmaxRowsForward(t.weights[lo*n:hi*n], hi-lo, n)
}

// Run computes output rows [lo, hi) = A[lo:hi]·V.
func (t tlOut) Run(lo, hi int) {
	n, d := t.n, t.d
	nn.Gemm(false, false, hi-lo, d, n, 1, t.weights[lo*n:], n, t.in, d, 0, t.out[lo*d:], d)
}

func checkLen(what string, s []float32, want int) {
	if len(s) < want {
		panic(fmt.Sprintf("layer: %s has %d elements, need %d", what, len(s), want))
	}
}
