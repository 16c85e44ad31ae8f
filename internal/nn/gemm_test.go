package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGemm checks Gemm, and gemmPacked with this build's kernels, against
// the product's definition summed in float64, for every transpose, strides
// wider than the matrices, partial row blocks and panels, more terms than
// one block (gemmKC) and more columns than one block of B (gemmNC). Each
// element's error is bounded by float32 rounding of its own terms.
func TestGemm(t *testing.T) { forEachKernel(t, testGemm) }

func testGemm(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	nan := float32(math.NaN())
	for _, tc := range []struct {
		m, n, k     int
		alpha, beta float32
	}{
		{1, 1, 1, 1, 0},
		{16, 16, 64, 1, 1},
		{7, 5, 3, 0.75, 0.5},
		{16, 512, 512, 1, 0},  // the TTM's product shape
		{9, 40, 600, 0.75, 1}, // one row block (B read in place), three of terms
		{130, 200, 70, 0.75, 0.5},
		{17, 33, 5, 1, 0},         // one row and one column past a block
		{468, 32, 320, 1, 1},      // the trainer's largest product
		{40, 530, 600, 0.5, -2},   // three blocks of terms, two of columns
		{5, 1798, 3, 1, 0},        // wide and shallow, a partial last panel
		{33, 20, 0, 1, 0.5},       // no terms: C = beta*C
		{20, 33, 70, 0, 0},        // alpha 0: C = 0
		{129, 4, 257, -1.5, 0.25}, // one term past a block
	} {
		for _, tr := range []struct{ a, b bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
			name := fmt.Sprintf("%dx%dx%d/tA=%v,tB=%v/alpha=%g,beta=%g", tc.m, tc.n, tc.k, tr.a, tr.b, tc.alpha, tc.beta)
			lda, rowsA := tc.k+3, tc.m
			if tr.a {
				lda, rowsA = tc.m+3, tc.k
			}
			ldb, rowsB := tc.n+1, tc.k
			if tr.b {
				ldb, rowsB = tc.k+1, tc.n
			}
			a, b := randSlice(r, rowsA*lda, 1), randSlice(r, rowsB*ldb, 1)
			opA := func(i, p int) float32 {
				if tr.a {
					return a[p*lda+i]
				}
				return a[i*lda+p]
			}
			opB := func(p, j int) float32 {
				if tr.b {
					return b[j*ldb+p]
				}
				return b[p*ldb+j]
			}
			ldc := tc.n + 2
			c := randSlice(r, tc.m*ldc, 1)
			if tc.beta == 0 {
				for i := range c {
					c[i] = nan // beta 0 must not let C's NaNs through
				}
			}
			for _, gemm := range []struct {
				name string
				f    func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
			}{{"Gemm", Gemm}, {"gemmPacked", gemmPacked}} {
				name := gemm.name + "/" + name
				got := slices.Clone(c)
				gemm.f(tr.a, tr.b, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, got, ldc)
				for i := 0; i < tc.m; i++ {
					for j := 0; j < ldc; j++ {
						g := got[i*ldc+j]
						if j >= tc.n { // outside the product: untouched
							if math.Float32bits(g) != math.Float32bits(c[i*ldc+j]) {
								t.Fatalf("%s: C[%d][%d] outside the product changed", name, i, j)
							}
							continue
						}
						var sum, mag float64
						for p := 0; p < tc.k; p++ {
							v := float64(opA(i, p)) * float64(opB(p, j))
							sum += v
							mag += math.Abs(v)
						}
						want := float64(tc.alpha) * sum
						bound := 2e-7 * float64(tc.k+2) * math.Abs(float64(tc.alpha)) * mag
						if tc.beta != 0 {
							want += float64(tc.beta) * float64(c[i*ldc+j])
							bound += 2e-7 * math.Abs(float64(tc.beta)*float64(c[i*ldc+j]))
						}
						if !(math.Abs(float64(g)-want) <= bound+1e-30) {
							t.Fatalf("%s: C[%d][%d] = %g, want %g (bound %.2g)", name, i, j, g, want, bound)
						}
					}
				}
			}
		}
	}
}

// TestGemmPackedSplits checks that a row's result does not depend on which
// other rows or columns are in the product: computing the product in two
// parts of rows, or of columns, gives the same bits (what lets ParallelFor
// share a product's rows between goroutines exactly).
func TestGemmPackedSplits(t *testing.T) { forEachKernel(t, testGemmPackedSplits) }

func testGemmPackedSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const m, n, k = 70, 600, 300
	a, b := randSlice(r, m*k, 1), randSlice(r, k*n, 1)
	whole := make([]float32, m*n)
	gemmPacked(false, false, m, n, k, 1, a, k, b, n, 0, whole, n)
	for _, cut := range []int{1, 16, 23} {
		parts := make([]float32, m*n)
		gemmPacked(false, false, cut, n, k, 1, a, k, b, n, 0, parts, n)
		gemmPacked(false, false, m-cut, n, k, 1, a[cut*k:], k, b, n, 0, parts[cut*n:], n)
		if !slices.Equal(parts, whole) {
			t.Errorf("rows split at %d: results differ", cut)
		}
	}
	for _, cut := range []int{7, 16, 520} {
		parts := make([]float32, m*n)
		gemmPacked(false, false, m, cut, k, 1, a, k, b, n, 0, parts, n)
		gemmPacked(false, false, m, n-cut, k, 1, a, k, b[cut:], n, 0, parts[cut:], n)
		if !slices.Equal(parts, whole) {
			t.Errorf("columns split at %d: results differ", cut)
		}
	}
}

func TestGemmPackedDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	a, b, c := randSlice(r, 300*64, 1), randSlice(r, 64*40, 1), make([]float32, 300*40)
	gemmPacked(false, false, 300, 40, 64, 1, a, 64, b, 40, 0, c, 40)
	if n := testing.AllocsPerRun(20, func() { gemmPacked(false, false, 300, 40, 64, 1, a, 64, b, 40, 0, c, 40) }); n != 0 {
		t.Errorf("gemmPacked allocates %.1f times per call", n)
	}
}

// BenchmarkGemm runs the trainer's commonest product shapes (kitchen
// preset) through Gemm, which is gemmPacked where the CPU has AVX-512 or AVX2, and
// through the BLAS beside it.
//
//	go test -run '^$' -bench Gemm ./internal/nn
func BenchmarkGemm(b *testing.B) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, s := range []struct {
		tA, tB  bool
		m, n, k int
	}{
		{false, false, 468, 32, 320},
		{true, false, 320, 32, 468},
		{false, true, 96, 129, 64},
		{false, false, 16, 64, 64},
	} {
		rowsA, rowsB := s.m, s.k
		if s.tA {
			rowsA = s.k
		}
		if s.tB {
			rowsB = s.n
		}
		lda, ldb := len2(s.tA, s.k, s.m), len2(s.tB, s.n, s.k)
		a, bm, c := randSlice(r, rowsA*lda, 1), randSlice(r, rowsB*ldb, 1), make([]float32, s.m*s.n)
		for _, impl := range []struct {
			name string
			f    func()
		}{
			{"gemm", func() { Gemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bm, ldb, 0, c, s.n) }},
			{"blas-" + backendName, func() { blasGemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bm, ldb, 0, c, s.n) }},
		} {
			b.Run(fmt.Sprintf("%dx%dx%d/tA=%v,tB=%v/%s", s.m, s.n, s.k, s.tA, s.tB, impl.name), func(b *testing.B) {
				b.SetBytes(int64(2 * s.m * s.n * s.k)) // "MB/s" reads as MFLOP/s
				for b.Loop() {
					impl.f()
				}
			})
		}
	}
}

// len2 is a row stride: the first width when not transposed, else the other.
func len2(trans bool, width, other int) int {
	if trans {
		return other
	}
	return width
}
