package vision

import "github.com/ttmrobot/ttm/internal/nn"

// TokenLearnerParams are TokenLearner v1.1's (Ryoo et al. 2021, scenic's
// TokenLearnerModuleV11), which turns the N positions of a feature map
// into K tokens:
//
//	L = Dense_1(gelu(Dense_0(LayerNorm(V))))   (N, K)
//	A = softmax of Lᵀ over the N positions      (K, N), each row sums to one
//	Z = A·V                                     (K, d), on the raw V
type TokenLearnerParams struct {
	LNScale []float32 // (d)
	LNBias  []float32 // (d)
	Kernel0 []float32 // (d, hidden)
	Bias0   []float32 // (hidden)
	Kernel1 []float32 // (hidden, K)
	Bias1   []float32 // (K)
}

// TokenLearnerActs holds one forward pass's activations, which the
// backward pass reads, and the backward pass's scratch space.
// Sizes are fixed by NewTokenLearnerActs.
type TokenLearnerActs struct {
	N, D, Hidden, K int

	LN      []float32 // (N, d) LayerNorm(V)
	Mean    []float32 // (N)
	Rstd    []float32 // (N)
	Pre     []float32 // (N, hidden) Dense_0 output, before gelu
	Hid     []float32 // (N, hidden) after gelu
	Logits  []float32 // (N, K)
	Weights []float32 // (K, N) A: row j is token j's distribution over positions

	dWeights []float32 // (K, N)
	dLogits  []float32 // (N, K)
	dHid     []float32 // (N, hidden)
	dPre     []float32 // (N, hidden)
	dLN      []float32 // (N, d)
}

// NewTokenLearnerActs allocates activations for N positions of width d.
func NewTokenLearnerActs(n, d, hidden, k int) *TokenLearnerActs {
	return &TokenLearnerActs{
		N: n, D: d, Hidden: hidden, K: k,
		LN: make([]float32, n*d), Mean: make([]float32, n), Rstd: make([]float32, n),
		Pre: make([]float32, n*hidden), Hid: make([]float32, n*hidden),
		Logits: make([]float32, n*k), Weights: make([]float32, k*n),
		dWeights: make([]float32, k*n), dLogits: make([]float32, n*k),
		dHid: make([]float32, n*hidden), dPre: make([]float32, n*hidden), dLN: make([]float32, n*d),
	}
}

// TokenLearnerForward computes out (K, d) from in (N, d), keeping the
// activations in a. It does not allocate.
func TokenLearnerForward(out []float32, a *TokenLearnerActs, in []float32, p *TokenLearnerParams, eps float32) {
	n, d, h, k := a.N, a.D, a.Hidden, a.K
	mustHave("TokenLearnerForward in", in, n*d)
	mustHave("TokenLearnerForward out", out, k*d)
	nn.LayerNormForward(a.LN, a.Mean, a.Rstd, in, p.LNScale, p.LNBias, n, d, eps)
	nn.Dense(a.Pre, a.LN, p.Kernel0, p.Bias0, n, d, h)
	nn.GELUForward(a.Hid, a.Pre)
	nn.Dense(a.Logits, a.Hid, p.Kernel1, p.Bias1, n, h, k)
	nn.Transpose(a.Weights, a.Logits, n, k)
	nn.SoftmaxRowsForward(a.Weights, k, n)
	nn.Gemm(false, false, k, d, n, 1, a.Weights, n, in, d, 0, out, d)
}

// TokenLearnerBackward accumulates the gradients of TokenLearnerForward
// into g and, unless dIn is nil, into dIn (N, d). dOut (K, d); a and in
// are the forward pass's. It does not allocate.
func TokenLearnerBackward(dIn []float32, g *TokenLearnerParams, dOut []float32, a *TokenLearnerActs, in []float32, p *TokenLearnerParams) {
	n, d, h, k := a.N, a.D, a.Hidden, a.K
	mustHave("TokenLearnerBackward dOut", dOut, k*d)
	// Z = A·V: dA = dOut·Vᵀ, and V's direct part dV += Aᵀ·dOut.
	nn.Gemm(false, true, k, n, d, 1, dOut, d, in, d, 0, a.dWeights, n)
	if dIn != nil {
		mustHave("TokenLearnerBackward dIn", dIn, n*d)
		nn.Gemm(true, false, n, d, k, 1, a.Weights, n, dOut, d, 1, dIn, d)
	}
	nn.SoftmaxRowsBackward(a.dWeights, a.Weights, k, n)
	nn.Transpose(a.dLogits, a.dWeights, k, n)
	clear(a.dHid)
	nn.DenseBackward(a.dHid, g.Kernel1, g.Bias1, a.dLogits, a.Hid, p.Kernel1, n, h, k)
	clear(a.dPre)
	nn.GELUBackward(a.dPre, a.dHid, a.Pre, a.Hid)
	clear(a.dLN)
	nn.DenseBackward(a.dLN, g.Kernel0, g.Bias0, a.dPre, a.LN, p.Kernel0, n, d, h)
	if dIn != nil {
		nn.LayerNormBackward(dIn, g.LNScale, g.LNBias, a.dLN, in, p.LNScale, a.Mean, a.Rstd, n, d)
	} else {
		lnParamGrads(g, a.dLN, a, in)
	}
}

// lnParamGrads accumulates LayerNorm's scale and bias gradients alone:
// dScale += Σ dLN ⊙ x̂, dBias += Σ dLN, with x̂ = (x - mean)·rstd.
func lnParamGrads(g *TokenLearnerParams, dLN []float32, a *TokenLearnerActs, in []float32) {
	n, d := a.N, a.D
	scale, bias := g.LNScale[:d], g.LNBias[:d]
	for i := range n {
		x, dy := in[i*d:i*d+d], dLN[i*d:i*d+d]
		m, rs := a.Mean[i], a.Rstd[i]
		for j, v := range dy {
			scale[j] += v * (x[j] - m) * rs
			bias[j] += v
		}
	}
}
