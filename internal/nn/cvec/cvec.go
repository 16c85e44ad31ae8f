//go:build cgo

// Package cvec holds vectorised C forms of nn's elementwise kernels
// (vec.h). Each gives the same float32 results as nn's Go loop bit for
// bit; nn calls them in cgo builds. Slices are passed as they are:
// lengths are the caller's to check.
package cvec

// #cgo LDFLAGS: -lm
// #include "vec.h"
import "C"

import "unsafe"

// MinLen is the slice length below which callers should run their Go loop
// instead: a cgo call costs about as much as a few dozen elements. Results
// are the same either way.
const MinLen = 64

func cf(s []float32) *C.float { return (*C.float)(unsafe.Pointer(unsafe.SliceData(s))) }

// GELUForward sets out[i] = gelu(in[i]) for i < len(in); out may be in.
func GELUForward(out, in []float32) {
	C.ttm_gelu_forward(cf(out), cf(in), C.long(len(in)))
}

// GELUBackward adds dOut[i]·gelu'(in[i]) to dIn[i], the sigmoid read from
// out, the forward output.
func GELUBackward(dIn, dOut, in, out []float32) {
	C.ttm_gelu_backward(cf(dIn), cf(dOut), cf(in), cf(out), C.long(len(in)))
}

// SoftmaxRows applies a softmax to the rows of x (n, k) in order, and
// stops at the first row holding a NaN or an infinity above the others,
// leaving it as it was. It returns that row's index, or n.
func SoftmaxRows(x []float32, n, k int) int {
	return int(C.ttm_softmax_rows(cf(x), C.long(n), C.long(k)))
}

// SumRows adds the column sums of x (n, c) to out (c).
func SumRows(out, x []float32, n, c int) {
	C.ttm_sum_rows(cf(out), cf(x), C.long(n), C.long(c))
}

// Add adds src to dst elementwise.
func Add(dst, src []float32) {
	C.ttm_add(cf(dst), cf(src), C.long(len(src)))
}

// LayerNormForward normalises the rows of in (n, c) into out, and stores
// each row's mean and reciprocal deviation unless mean is nil
// (nn.LayerNormForward).
func LayerNormForward(out, mean, rstd, in, scale, bias []float32, n, c int, eps float32) {
	C.ttm_layernorm_forward(cf(out), cf(mean), cf(rstd), cf(in), cf(scale), cf(bias), C.long(n), C.long(c), C.float(eps))
}

// LayerNormBackward adds the gradients of a LayerNorm of the rows of in
// (n, c) to dIn, and to dScale and dBias unless nil (nn.LayerNormBackward).
func LayerNormBackward(dIn, dScale, dBias, dOut, in, scale, mean, rstd []float32, n, c int) {
	C.ttm_layernorm_backward(cf(dIn), cf(dScale), cf(dBias), cf(dOut), cf(in), cf(scale), cf(mean), cf(rstd), C.long(n), C.long(c))
}

// FiLMForward sets out = x ⊙ (1 + gamma) + beta row by row; x, out (n, d).
func FiLMForward(out, x, gamma, beta []float32, n, d int) {
	C.ttm_film_forward(cf(out), cf(x), cf(gamma), cf(beta), C.long(n), C.long(d))
}

// FiLMBackward adds Σ_rows dOut ⊙ x to dGamma and, unless dX is nil,
// dOut ⊙ (1 + gamma) to dX.
func FiLMBackward(dX, dGamma, dOut, x, gamma []float32, n, d int) {
	C.ttm_film_backward(cf(dX), cf(dGamma), cf(dOut), cf(x), cf(gamma), C.long(n), C.long(d))
}

// Unfold3x3 writes each position's 3x3 neighbourhood of feat (c, n, a grid
// width wide) into out (9c, n), zero beyond the edges.
func Unfold3x3(out, feat []float32, c, n, width int) {
	C.ttm_unfold3x3(cf(out), cf(feat), C.long(c), C.long(n), C.long(width))
}

// Unfold3x3Backward adds the gradient of Unfold3x3, dOut (9c, n), into
// dFeat (c, n).
func Unfold3x3Backward(dFeat, dOut []float32, c, n, width int) {
	C.ttm_unfold3x3_backward(cf(dFeat), cf(dOut), C.long(c), C.long(n), C.long(width))
}

// KeypointDLogits sets dLogits[j, i] = q[j, i]·(dx_j·(gx_i - cx_j) +
// dy_j·(gy_i - cy_j)); q, dLogits (d, n); coords, dCoords (2d).
func KeypointDLogits(dLogits, q, gx, gy, coords, dCoords []float32, n, d int) {
	C.ttm_keypoint_dlogits(cf(dLogits), cf(q), cf(gx), cf(gy), cf(coords), cf(dCoords), C.long(n), C.long(d))
}

// KeypointDX adds s_j·dLogits[j, i] to dX[i, j] and s_j·Σ_i dLogits[j, i]·x[i, j]
// (summed in float64) to dLogScale[j]; x, dX (n, d), dLogits (d, n).
func KeypointDX(dX, dLogScale, dLogits, x, s []float32, n, d int) {
	C.ttm_keypoint_dx(cf(dX), cf(dLogScale), cf(dLogits), cf(x), cf(s), C.long(n), C.long(d))
}
