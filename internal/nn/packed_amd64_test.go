//go:build amd64 && !purego

package nn

import (
	"math/rand/v2"
	"testing"
)

// forEachKernel runs f once for each vector kernel this CPU can run: the
// AVX-512 one, then, with AVX-512 switched off, the AVX2 one, so that a
// machine with both tests both; with neither, the Go loops.
func forEachKernel(t *testing.T, f func(t *testing.T)) {
	defer func(saved bool) { hasAVX512 = saved }(hasAVX512)
	ran := false
	if hasAVX512 {
		t.Run("avx512", f)
		ran = true
	}
	hasAVX512 = false
	if hasAVX2 {
		t.Run("avx2", f)
		ran = true
	}
	if !ran {
		t.Run("go", f)
	}
}

// TestVectorKernelsAgree: Gemm and MatMulPacked give the same bits with
// the AVX-512 and the AVX2 kernel, for the trainer's and the step's shapes.
func TestVectorKernelsAgree(t *testing.T) {
	if !hasAVX512 || !hasAVX2 {
		t.Skip("this CPU has not both vector kernels")
	}
	defer func(saved bool) { hasAVX512 = saved }(hasAVX512)
	r := rand.New(rand.NewPCG(41, 42))
	for _, tc := range []struct {
		m, n, k    int
		transA, tB bool
	}{
		{468, 32, 320, false, false}, {320, 32, 468, true, false}, {96, 129, 64, false, true}, {16, 512, 512, false, false}, {7, 45, 33, true, true},
	} {
		a, b := randSlice(r, tc.m*tc.k, 1), randSlice(r, tc.k*tc.n, 1)
		lda, ldb := tc.k, tc.n
		if tc.transA {
			lda = tc.m
		}
		if tc.tB {
			ldb = tc.k
		}
		c0 := randSlice(r, tc.m*tc.n, 1)
		// Alpha 1 lets the AVX-512 kernel read A in place; 0.75 packs it.
		for _, alpha := range []float32{1, 0.75} {
			var out [2][]float32
			for i, avx512 := range []bool{true, false} {
				hasAVX512 = avx512
				out[i] = append([]float32(nil), c0...)
				Gemm(tc.transA, tc.tB, tc.m, tc.n, tc.k, alpha, a, lda, b, ldb, 0.5, out[i], tc.n)
			}
			if i := sameBits(out[0], out[1]); i >= 0 {
				t.Errorf("Gemm %+v, alpha %g: [%d] is %g with AVX-512, %g with AVX2", tc, alpha, i, out[0][i], out[1][i])
			}
		}
		// MatMulPacked takes A untransposed and whole panels of B.
		if tc.transA || tc.tB || tc.n%PanelWidth != 0 {
			continue
		}
		var packed [2][]float32
		for i, avx512 := range []bool{true, false} {
			hasAVX512 = avx512
			packed[i] = make([]float32, tc.m*tc.n)
			MatMulPacked(packed[i], a, Pack(b, tc.k, tc.n), tc.m, make([]float32, PackScratchSize(tc.k)))
		}
		if i := sameBits(packed[0], packed[1]); i >= 0 {
			t.Errorf("MatMulPacked %+v: [%d] is %g with AVX-512, %g with AVX2", tc, i, packed[0][i], packed[1][i])
		}
	}
}
