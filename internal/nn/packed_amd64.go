//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

//go:noescape
func panel16AVX512(c *float32, ldc int, x *float32, ldx int, byRows int, w *float32, ldw int, k int, rows int)

//go:noescape
func panel16AVX2(c *float32, ldc int, xp *float32, w *float32, ldw int, k int, rows int)

//go:noescape
func packRows8AVX2(xp *float32, in *float32, ld int, blocks int)

//go:noescape
func packCols16AVX2(dst *float32, src *float32, ld int, k int)

//go:noescape
func packColsAVX512(dst *float32, src *float32, ld int, cols int, k int)

//go:noescape
func packRowsAVX512(xp *float32, in *float32, ld int, k int, nr int)

var (
	hasAVX512 = cpu.X86.HasAVX512F
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

// ownGemm routes Gemm to gemmPacked instead of the BLAS.
var ownGemm = hasAVX512 || hasAVX2

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
		panel16AVX512(&out[0], ldc, &xp[0], PanelWidth, 0, &panel[0], ldw, k, nr)
		return
	}
	panel16AVX2(&out[0], ldc, &xp[0], &panel[0], ldw, k, nr)
}

// readsA reports whether panel16A can run: the AVX-512 kernel reads its
// input rows in any layout, so a product with alpha 1 need not pack them.
func readsA() bool { return hasAVX512 }

// panel16A is panel16 for 16 rows of op(A) read where they are (A's row
// stride lda; transposed, op(A)[i][p] = a[p*lda+i], else a[i*lda+p]),
// where readsA. Rows past nr are read but not written.
func panel16A(out []float32, ldc int, a []float32, lda int, transA bool, panel []float32, ldw, k, nr int) {
	_ = out[(nr-1)*ldc+PanelWidth-1]
	_ = panel[(k-1)*ldw+PanelWidth-1]
	byRows := 1
	if transA {
		_ = a[(k-1)*lda+PanelWidth-1]
		byRows = 0
	} else {
		_ = a[(PanelWidth-1)*lda+k-1]
	}
	panel16AVX512(&out[0], ldc, &a[0], lda, byRows, &panel[0], ldw, k, nr)
}

// packCols is packColsGeneric; with AVX-512, one masked load a row; with
// AVX2, two loads a row of 16.
func packCols(dst, src []float32, ld, cols, k int) {
	switch {
	case k > 0 && hasAVX512:
		_ = src[(k-1)*ld+cols-1]
		_ = dst[k*PanelWidth-1]
		packColsAVX512(&dst[0], &src[0], ld, cols, k)
	case k > 0 && hasAVX2 && cols == PanelWidth:
		_ = src[(k-1)*ld+cols-1]
		_ = dst[k*PanelWidth-1]
		packCols16AVX2(&dst[0], &src[0], ld, k)
	default:
		packColsGeneric(dst, src, ld, cols, k)
	}
}

// packRows is packRowsGeneric; with AVX-512, 16x16 transposes in
// registers; with AVX2, 8x8 ones for each group of 8 rows, the columns
// past the last multiple of 8 and a last partial group by the Go loop.
func packRows(xp, in []float32, ld, nr, k int) {
	switch {
	case k > 0 && hasAVX512:
		// The kernel reads rows [0, nr) of in, k wide, and writes k*16 of xp.
		_ = in[(nr-1)*ld+k-1]
		_ = xp[k*PanelWidth-1]
		packRowsAVX512(&xp[0], &in[0], ld, k, nr)
	case k >= 8 && hasAVX2:
		packRowsAVX2(xp, in, ld, nr, k)
	default:
		packRowsGeneric(xp, in, ld, nr, k)
	}
}

func packRowsAVX2(xp, in []float32, ld, nr, k int) {
	if nr < PanelWidth {
		clear(xp)
	}
	full, groups := k&^7, nr&^7
	_ = xp[k*PanelWidth-1]
	for g := 0; g < groups; g += 8 {
		_ = in[(g+7)*ld+k-1]
		packRows8AVX2(&xp[g], &in[g*ld], ld, full/8)
	}
	for i := 0; i < nr; i++ {
		p0 := full
		if i >= groups {
			p0 = 0
		}
		row := in[i*ld : i*ld+k]
		for p := p0; p < k; p++ {
			xp[p*PanelWidth+i] = row[p]
		}
	}
}
