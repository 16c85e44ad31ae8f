//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

//go:noescape
func panel16AVX512(c *float32, ldc int, xp *float32, w *float32, ldw int, k int, rows int)

//go:noescape
func panel16AVX2(c *float32, ldc int, xp *float32, w *float32, ldw int, k int, rows int)

//go:noescape
func packColsAVX512(dst *float32, src *float32, ld int, cols int, k int)

//go:noescape
func packRowsAVX512(xp *float32, in *float32, ld int, k int, nr int)

var (
	hasAVX512 = cpu.X86.HasAVX512F
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

// ownGemm routes Gemm to gemmPacked instead of the BLAS. With AVX2 alone
// the BLAS stays: OpenBLAS's Haswell kernels run the trainer's products
// (468x32x320 on one thread) at 51 GFLOP/s against gemmPacked's 35, whose
// operand packing is Go loops there.
var ownGemm = hasAVX512

func kernel() string {
	switch {
	case hasAVX512:
		return "avx512"
	case hasAVX2:
		return "avx2"
	}
	return "go"
}

func panel16(out []float32, ldc int, xp, panel []float32, ldw, k, nr int) {
	if !(hasAVX512 || hasAVX2) || k == 0 {
		panel16Generic(out, ldc, xp, panel, ldw, k, nr)
		return
	}
	// The kernel touches rows [0, nr) of out, 16 wide, k*16 of xp and
	// k rows of panel, 16 wide.
	_ = out[(nr-1)*ldc+PanelWidth-1]
	_ = xp[k*PanelWidth-1]
	_ = panel[(k-1)*ldw+PanelWidth-1]
	if hasAVX512 {
		panel16AVX512(&out[0], ldc, &xp[0], &panel[0], ldw, k, nr)
		return
	}
	panel16AVX2(&out[0], ldc, &xp[0], &panel[0], ldw, k, nr)
}

// packCols is packColsGeneric; with AVX-512, one masked load a row.
func packCols(dst, src []float32, ld, cols, k int) {
	if !hasAVX512 || k == 0 {
		packColsGeneric(dst, src, ld, cols, k)
		return
	}
	_ = src[(k-1)*ld+cols-1]
	_ = dst[k*PanelWidth-1]
	packColsAVX512(&dst[0], &src[0], ld, cols, k)
}

// packRows is packRowsGeneric; with AVX-512, 16x16 transposes in registers.
func packRows(xp, in []float32, ld, nr, k int) {
	if !hasAVX512 || k == 0 {
		packRowsGeneric(xp, in, ld, nr, k)
		return
	}
	// The kernel reads rows [0, nr) of in, k wide, and writes k*16 of xp.
	_ = in[(nr-1)*ld+k-1]
	_ = xp[k*PanelWidth-1]
	packRowsAVX512(&xp[0], &in[0], ld, k, nr)
}
