package nn

import (
	"slices"
	"sync"

	"gonum.org/v1/gonum/blas"
)

// impl (blas_*.go) is the BLAS behind Gemm where the CPU has neither
// AVX-512 nor AVX2 with FMA: OpenBLAS in the default cgo build, gonum's pure-Go kernels in a build
// with the purego tag or without cgo (which always uses them).

// Backend names what computes Gemm: "packed" (the project's own product,
// its kernel named by Kernel), "openblas" or "gonum".
func Backend() string {
	if ownGemm {
		return "packed"
	}
	return backendName
}

// Gemm computes C = alpha*op(A)*op(B) + beta*C for row-major matrices, where
// op(X) is X or its transpose. op(A) is m x k, op(B) is k x n, C is m x n;
// lda, ldb and ldc are the row strides of A, B and C as stored. With
// AVX-512 or AVX2 it is the project's own product (gemmPacked), else the
// BLAS's.
func Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if ownGemm {
		gemmPacked(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	blasGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func blasGemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	ta, tb := blas.NoTrans, blas.NoTrans
	if transA {
		ta = blas.Trans
	}
	if transB {
		tb = blas.Trans
	}
	impl.Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// MatMul computes out = in·w, or out += in·w when accumulate is set.
// in (N, C), w (C, K), out (N, K), all contiguous.
func MatMul(out, in, w []float32, n, c, k int, accumulate bool) {
	checkLen("MatMul in", in, n*c)
	checkLen("MatMul w", w, c*k)
	checkLen("MatMul out", out, n*k)
	beta := float32(0)
	if accumulate {
		beta = 1
	}
	Gemm(false, false, n, k, c, 1, in, c, w, k, beta, out, k)
}

// MatMulBackward accumulates the gradients of out = in·w:
// dIn += dOut·wᵀ and dW += inᵀ·dOut. Either destination may be nil.
// dOut (N, K), in (N, C), w (C, K).
func MatMulBackward(dIn, dW, dOut, in, w []float32, n, c, k int) {
	if dIn != nil {
		checkLen("MatMulBackward dIn", dIn, n*c)
		Gemm(false, true, n, c, k, 1, dOut, k, w, k, 1, dIn, c)
	}
	if dW != nil {
		checkLen("MatMulBackward dW", dW, c*k)
		Gemm(true, false, c, k, n, 1, in, c, dOut, k, 1, dW, k)
	}
}

// RowSplitExact reports whether Gemm gives a product's rows the same bits
// when the product is computed in two parts of rows, as ParallelFor
// computes the TTM's summaries with a team. The project's own product
// (gemmPacked), gonum's kernels and OpenBLAS's SkylakeX kernels do;
// OpenBLAS 0.3.21's Haswell kernels change the summation order with the
// number of rows. Then results with a team agree with those without one
// to rounding, not to the bit; with a fixed parallelism they are still
// reproducible.
func RowSplitExact() bool {
	rowSplitOnce.Do(func() {
		const n, c, k, cut = 40, 96, 80, 16
		in, w := make([]float32, n*c), make([]float32, c*k)
		for i := range in {
			in[i] = float32(i%13) - 6.3
		}
		for i := range w {
			w[i] = float32(i%7)*0.37 - 1.1
		}
		whole, parts := make([]float32, n*k), make([]float32, n*k)
		MatMul(whole, in, w, n, c, k, false)
		MatMul(parts[:cut*k], in[:cut*c], w, cut, c, k, false)
		MatMul(parts[cut*k:], in[cut*c:], w, n-cut, c, k, false)
		rowSplitExact = slices.Equal(whole, parts)
	})
	return rowSplitExact
}

var (
	rowSplitOnce  sync.Once
	rowSplitExact bool
)
