//go:build !cgo || purego

package nn

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

const backendName = "gonum"

var impl blas.Float32 = serialGonum{}

// SetThreads is a no-op: the gonum build computes each product on the
// calling goroutine.
func SetThreads(int) {}

// Threads reports 1.
func Threads() int { return 1 }

// gonum's Sgemm spreads a product whose result spans minParBlocks or more
// blockSize x blockSize blocks over goroutines (its gonum.go).
const (
	gonumBlockSize    = 64
	gonumMinParBlocks = 4
)

// serialGonum is gonum's pure-Go BLAS with Sgemm kept on the calling
// goroutine: starting goroutines allocates, and the training passes are
// tested to allocate nothing in this build too. It computes gonum's blocks
// in gonum's order, so its results are gonum's to the bit.
type serialGonum struct{ gonum.Implementation }

func (s serialGonum) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	blocks := func(n int) int { return (n + gonumBlockSize - 1) / gonumBlockSize }
	if blocks(m)*blocks(n) < gonumMinParBlocks {
		s.Implementation.Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	// As gonum: C = beta*C first (zeroed for beta 0, which clears NaNs),
	// then each block of C accumulates its products 64 terms at a time.
	if beta != 1 {
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				if beta == 0 {
					row[j] = 0
				} else {
					row[j] *= beta
				}
			}
		}
	}
	view := func(x []float32, ld, i, j, rows, cols int) []float32 { return x[i*ld+j : (i+rows-1)*ld+j+cols] }
	for i := 0; i < m; i += gonumBlockSize {
		rows := min(gonumBlockSize, m-i)
		for j := 0; j < n; j += gonumBlockSize {
			cols := min(gonumBlockSize, n-j)
			cb := view(c, ldc, i, j, rows, cols)
			for l := 0; l < k; l += gonumBlockSize {
				depth := min(gonumBlockSize, k-l)
				var ab, bb []float32
				if tA == blas.NoTrans {
					ab = view(a, lda, i, l, rows, depth)
				} else {
					ab = view(a, lda, l, i, depth, rows)
				}
				if tB == blas.NoTrans {
					bb = view(b, ldb, l, j, depth, cols)
				} else {
					bb = view(b, ldb, j, l, cols, depth)
				}
				s.Implementation.Sgemm(tA, tB, rows, cols, depth, alpha, ab, lda, bb, ldb, 1, cb, ldc)
			}
		}
	}
}
