package nn

import (
	"fmt"
	"math"
)

// AttentionForward computes multi-head dot-product attention from already
// projected queries, keys and values, as Flax's MultiHeadDotProductAttention
// does between its input and output projections: for each head h of width
// dh = C/H, att_h = softmax(q_h·k_hᵀ / sqrt(dh)) over keys, out_h = att_h·v_h.
// There is no mask. att keeps the probabilities for the backward pass.
// q (Nq, C) with row stride ldq; k, v (Nk, C) with row stride ldkv (strides
// larger than C let q, k and v live side by side in one fused product);
// att (H, Nq, Nk); out (Nq, C).
func AttentionForward(out, att, q, k, v []float32, nq, nk, c, heads, ldq, ldkv int) {
	dh := headWidth(c, heads)
	checkLen("AttentionForward q", q, (nq-1)*ldq+c)
	checkLen("AttentionForward k", k, (nk-1)*ldkv+c)
	checkLen("AttentionForward v", v, (nk-1)*ldkv+c)
	checkLen("AttentionForward att", att, heads*nq*nk)
	checkLen("AttentionForward out", out, nq*c)
	scale := float32(1 / math.Sqrt(float64(dh)))
	for h := 0; h < heads; h++ {
		a := att[h*nq*nk : (h+1)*nq*nk]
		// a (Nq, Nk) = scale * q_h (Nq, dh) · k_hᵀ (dh, Nk)
		Gemm(false, true, nq, nk, dh, scale, q[h*dh:], ldq, k[h*dh:], ldkv, 0, a, nk)
		SoftmaxRowsForward(a, nq, nk)
		// out_h (Nq, dh) = a (Nq, Nk) · v_h (Nk, dh)
		Gemm(false, false, nq, dh, nk, 1, a, nk, v[h*dh:], ldkv, 0, out[h*dh:], c)
	}
}

// AttentionBackward accumulates into dq, dk and dv the gradients of
// AttentionForward. Gradients share the strides of what they are the
// gradient of. dAtt (H, Nq, Nk) is scratch space, overwritten.
func AttentionBackward(dq, dk, dv, dAtt, dOut, att, q, k, v []float32, nq, nk, c, heads, ldq, ldkv int) {
	dh := headWidth(c, heads)
	checkLen("AttentionBackward dAtt", dAtt, heads*nq*nk)
	scale := float32(1 / math.Sqrt(float64(dh)))
	for h := 0; h < heads; h++ {
		a := att[h*nq*nk : (h+1)*nq*nk]
		da := dAtt[h*nq*nk : (h+1)*nq*nk]
		// da (Nq, Nk) = dOut_h (Nq, dh) · v_hᵀ
		Gemm(false, true, nq, nk, dh, 1, dOut[h*dh:], c, v[h*dh:], ldkv, 0, da, nk)
		// dv_h (Nk, dh) += aᵀ · dOut_h
		Gemm(true, false, nk, dh, nq, 1, a, nk, dOut[h*dh:], c, 1, dv[h*dh:], ldkv)
		SoftmaxRowsBackward(da, a, nq, nk)
		// dq_h += scale * da · k_h ; dk_h += scale * daᵀ · q_h
		Gemm(false, false, nq, dh, nk, scale, da, nk, k[h*dh:], ldkv, 1, dq[h*dh:], ldq)
		Gemm(true, false, nk, dh, nq, scale, da, nk, q[h*dh:], ldq, 1, dk[h*dh:], ldkv)
	}
}

func headWidth(c, heads int) int {
	if heads <= 0 || c%heads != 0 {
		panic(fmt.Sprintf("nn: %d channels cannot be split into %d heads", c, heads))
	}
	return c / heads
}
