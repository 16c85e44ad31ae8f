//go:build !amd64 || purego

package nn

// ownGemm routes Gemm to gemmPacked instead of the BLAS: never in the
// portable build, whose Go kernels are no faster than gonum's.
const ownGemm = false

func kernel() string { return "go" }

func panel16(out []float32, ldc int, xp, panel []float32, ldw, k, nr int) {
	panel16Generic(out, ldc, xp, panel, ldw, k, nr)
}

func readsA() bool { return false }

func panel16A(out []float32, ldc int, a []float32, lda int, transA bool, panel []float32, ldw, k, nr int) {
	panic("nn: panel16A without a vector kernel")
}

func packCols(dst, src []float32, ld, cols, k int) { packColsGeneric(dst, src, ld, cols, k) }

func packRows(xp, in []float32, ld, nr, k int) { packRowsGeneric(xp, in, ld, nr, k) }
