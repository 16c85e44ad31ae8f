package vision

import (
	"fmt"

	"github.com/ttmrobot/ttm/internal/nn"
	"github.com/ttmrobot/ttm/internal/nn/cvec"
)

// FiLMParams generate the feature-wise modulation from an instruction
// embedding e (Perez et al. 2018, as RT-1 uses it):
//
//	gamma = e·W_m + b_m,  beta = e·W_a + b_a,  out = x ⊙ (1 + gamma) + beta
//
// Zero-initialised, FiLM is exactly the identity.
type FiLMParams struct {
	MultKernel []float32 // W_m (E, d)
	MultBias   []float32 // b_m (d)
	AddKernel  []float32 // W_a (E, d)
	AddBias    []float32 // b_a (d)
}

// FiLMCoefficients computes gamma and beta from the embedding.
// e (E), gamma, beta (d).
func FiLMCoefficients(gamma, beta, e []float32, p *FiLMParams, embDim, d int) {
	nn.Dense(gamma, e, p.MultKernel, p.MultBias, 1, embDim, d)
	nn.Dense(beta, e, p.AddKernel, p.AddBias, 1, embDim, d)
}

// FiLMCoefficientsBackward accumulates the gradients of FiLMCoefficients:
// into g's four tensors and, unless dE is nil, into dE (E).
func FiLMCoefficientsBackward(dE []float32, g *FiLMParams, dGamma, dBeta, e []float32, p *FiLMParams, embDim, d int) {
	nn.DenseBackward(dE, g.MultKernel, g.MultBias, dGamma, e, p.MultKernel, 1, embDim, d)
	nn.DenseBackward(dE, g.AddKernel, g.AddBias, dBeta, e, p.AddKernel, 1, embDim, d)
}

// FiLMForward modulates every row of x: out = x ⊙ (1 + gamma) + beta.
// x, out (N, d); gamma, beta (d). out may alias x at inference; training
// keeps x for the backward pass.
func FiLMForward(out, x, gamma, beta []float32, n, d int) {
	mustHave("FiLMForward out", out, n*d)
	mustHave("FiLMForward x", x, n*d)
	mustHave("FiLMForward gamma", gamma, d)
	mustHave("FiLMForward beta", beta, d)
	if n*d >= cvec.MinLen {
		cvec.FiLMForward(out, x, gamma, beta, n, d)
		return
	}
	filmForwardGo(out, x, gamma, beta, n, d)
}

// filmForwardGo is FiLMForward's loop in Go, the reference for cvec's.
func filmForwardGo(out, x, gamma, beta []float32, n, d int) {
	gamma, beta = gamma[:d], beta[:d]
	for i := range n {
		xr, or := x[i*d:i*d+d], out[i*d:i*d+d]
		for j, v := range xr {
			or[j] = v*(1+gamma[j]) + beta[j]
		}
	}
}

// FiLMBackward accumulates the gradients of FiLMForward:
// dX += dOut ⊙ (1 + gamma), dGamma += Σ_rows dOut ⊙ x, dBeta += Σ_rows dOut.
// dX may be nil.
func FiLMBackward(dX, dGamma, dBeta, dOut, x, gamma []float32, n, d int) {
	mustHave("FiLMBackward dOut", dOut, n*d)
	mustHave("FiLMBackward x", x, n*d)
	mustHave("FiLMBackward gamma", gamma, d)
	mustHave("FiLMBackward dGamma", dGamma, d)
	nn.SumRows(dBeta, dOut, n, d)
	if dX != nil {
		mustHave("FiLMBackward dX", dX, n*d)
	}
	if n*d >= cvec.MinLen {
		cvec.FiLMBackward(dX, dGamma, dOut, x, gamma, n, d)
		return
	}
	filmBackwardGo(dX, dGamma, dOut, x, gamma, n, d)
}

// filmBackwardGo is FiLMBackward but for dBeta, in Go (see filmForwardGo).
func filmBackwardGo(dX, dGamma, dOut, x, gamma []float32, n, d int) {
	gamma, dGamma = gamma[:d], dGamma[:d]
	for i := range n {
		xr, gr := x[i*d:i*d+d], dOut[i*d:i*d+d]
		for j, v := range gr {
			dGamma[j] += v * xr[j]
		}
		if dX != nil {
			dr := dX[i*d : i*d+d]
			for j, v := range gr {
				dr[j] += v * (1 + gamma[j])
			}
		}
	}
}

// mustHave panics when s is shorter than want: shapes are fixed when a
// layer is built, so a short slice is a programmer error.
func mustHave(what string, s []float32, want int) {
	if len(s) < want {
		panic(fmt.Sprintf("vision: %s has %d elements, need %d", what, len(s), want))
	}
}
