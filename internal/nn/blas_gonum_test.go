//go:build !cgo || purego

package nn

import (
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// TestSerialGonumMatchesGonum checks the gonum build's serial Sgemm against
// gonum's own, which runs these products' blocks on goroutines: the same
// bits, for every transpose and for products just over the size at which
// gonum goes parallel.
func TestSerialGonumMatchesGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		m, n, k int
		beta    float32
	}{
		{16, 576, 25, 1},    // the vision head's 3x3 weight gradient
		{130, 129, 70, 0},   // partial blocks on every side
		{256, 64, 200, 0.5}, // four row blocks, one column block
		{130, 129, 0, 0.5},  // no terms: C = beta*C
	} {
		for _, tr := range []struct{ a, b blas.Transpose }{
			{blas.NoTrans, blas.NoTrans}, {blas.Trans, blas.NoTrans}, {blas.NoTrans, blas.Trans}, {blas.Trans, blas.Trans},
		} {
			lda, rowsA := tc.k+1, tc.m
			if tr.a == blas.Trans {
				lda, rowsA = tc.m+1, tc.k
			}
			ldb, rowsB := tc.n+2, tc.k
			if tr.b == blas.Trans {
				ldb, rowsB = tc.k+2, tc.n
			}
			a, b := randSlice(r, rowsA*lda, 1), randSlice(r, rowsB*ldb, 1)
			ldc := tc.n + 3
			want := randSlice(r, tc.m*ldc, 1)
			got := slices.Clone(want)
			gonum.Implementation{}.Sgemm(tr.a, tr.b, tc.m, tc.n, tc.k, 0.75, a, lda, b, ldb, tc.beta, want, ldc)
			serialGonum{}.Sgemm(tr.a, tr.b, tc.m, tc.n, tc.k, 0.75, a, lda, b, ldb, tc.beta, got, ldc)
			if !slices.Equal(got, want) {
				t.Errorf("%dx%dx%d %c%c beta %g: differs from gonum's Sgemm", tc.m, tc.n, tc.k, tr.a, tr.b, tc.beta)
			}
		}
	}
}
