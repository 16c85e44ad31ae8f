package nn

import "fmt"

// PanelWidth is the number of columns in one panel of a Packed matrix.
const PanelWidth = 16

// Packed is a constant weight matrix w (K, N) re-laid out for products with
// a few rows at a time: N is cut into panels of 16 columns and each panel is
// stored contiguously, row p of the panel at Data[panel*K*16 + p*16].
//
// OpenBLAS packs its operands on every call; for the TTM's products, 16 rows
// against a 512x512 weight matrix, that copy costs as much as the product.
// Packing the weights once, when they are loaded, lets the kernel stream each
// weight exactly once per product (see MatMulPacked).
type Packed struct {
	K, N int
	Data []float32 // (N/16, K, 16)
}

// Pack lays w (K, N) out as panels. N must be a multiple of 16.
func Pack(w []float32, k, n int) *Packed {
	if n%PanelWidth != 0 {
		panic(fmt.Sprintf("nn: Pack: %d columns is not a multiple of %d", n, PanelWidth))
	}
	checkLen("Pack w", w, k*n)
	p := &Packed{K: k, N: n, Data: make([]float32, k*n)}
	p.Repack(w)
	return p
}

// PackColumns packs the column-wise concatenation [w_0 | w_1 | ...] of
// matrices w_i (K, N_i), each N_i a multiple of 16, without building it:
// one product then computes x·w_0, x·w_1, ... side by side.
func PackColumns(k int, ws [][]float32, ns []int) *Packed {
	total := 0
	for i, n := range ns {
		if n%PanelWidth != 0 {
			panic(fmt.Sprintf("nn: PackColumns: part %d has %d columns, not a multiple of %d", i, n, PanelWidth))
		}
		checkLen("PackColumns w", ws[i], k*n)
		total += n
	}
	p := &Packed{K: k, N: total, Data: make([]float32, k*total)}
	p.RepackColumns(ws, ns)
	return p
}

// RepackColumns refreshes a matrix made by PackColumns.
func (p *Packed) RepackColumns(ws [][]float32, ns []int) {
	off := 0
	for i, n := range ns {
		part := Packed{K: p.K, N: n, Data: p.Data[off*p.K : (off+n)*p.K]}
		part.Repack(ws[i])
		off += n
	}
}

// Repack refreshes the panels from w (K, N), for example after an optimiser
// step changed the weights.
func (p *Packed) Repack(w []float32) {
	k, n := p.K, p.N
	for j0 := 0; j0 < n; j0 += PanelWidth {
		panel := p.Data[j0*k : j0*k+k*PanelWidth]
		for r := 0; r < k; r++ {
			copy(panel[r*PanelWidth:r*PanelWidth+PanelWidth], w[r*n+j0:r*n+j0+PanelWidth])
		}
	}
}

// Kernel names the instructions of MatMulPacked's kernel (and of Gemm's
// where Backend is "packed"): "avx512", "avx2" (with FMA) or "go". The two
// vector kernels give the same bits: each output is its terms' chain of
// fused multiply-adds in order from zero, then one add to the output, with
// denormals read and written as zero.
func Kernel() string { return kernel() }

// MaxPackedRows is the most rows for which dense layers use MatMulPacked;
// taller products go to BLAS, which handles them well (it packs the
// weights once for many rows).
const MaxPackedRows = 32

// PackScratchSize is the length of the scratch slice MatMulPacked needs for
// an input of width k.
func PackScratchSize(k int) int { return k * PanelWidth }

// MatMulPacked computes out += in·w for in (rows, K), w packed (K, N) and
// out (rows, N). Callers set out to zero or to a bias first. scratch holds
// PackScratchSize(K) floats. Panels are shared between the calling goroutine
// and the package's worker pool (see SetParallelism).
func MatMulPacked(out, in []float32, w *Packed, rows int, scratch []float32) {
	matMulPacked(out, in, w, rows, scratch, false)
}

// MatMulPackedGELU is MatMulPacked followed by GELUForward on out, applied
// panel by panel while each panel is still in cache.
func MatMulPackedGELU(out, in []float32, w *Packed, rows int, scratch []float32) {
	matMulPacked(out, in, w, rows, scratch, true)
}

func matMulPacked(out, in []float32, w *Packed, rows int, scratch []float32, act bool) {
	k, n := w.K, w.N
	checkLen("MatMulPacked in", in, rows*k)
	checkLen("MatMulPacked out", out, rows*n)
	checkLen("MatMulPacked scratch", scratch, k*PanelWidth)
	for r0 := 0; r0 < rows; r0 += PanelWidth {
		nr := min(PanelWidth, rows-r0)
		xp := scratch[:k*PanelWidth]
		packRows(xp, in[r0*k:], k, nr, k)
		parallelPanels(out[r0*n:], xp, w, nr, act)
	}
}

// packRowsGeneric writes the first K columns of nr rows of in (row stride
// ld) p-major into xp (K, 16), zero-filling the unused row slots:
// xp[p*16+i] = in[i*ld+p].
func packRowsGeneric(xp, in []float32, ld, nr, k int) {
	if nr < PanelWidth {
		clear(xp)
	}
	var rows [PanelWidth][]float32
	for i := 0; i < nr; i++ {
		rows[i] = in[i*ld : i*ld+k]
	}
	// Four columns at a time: each row is read sequentially and each 64-byte
	// destination row is written whole.
	p := 0
	for ; p+4 <= k; p += 4 {
		d := (*[4 * PanelWidth]float32)(xp[p*PanelWidth:])
		for i, row := range rows[:nr] {
			src := (*[4]float32)(row[p:])
			d[i], d[PanelWidth+i], d[2*PanelWidth+i], d[3*PanelWidth+i] = src[0], src[1], src[2], src[3]
		}
	}
	for ; p < k; p++ {
		d := (*[PanelWidth]float32)(xp[p*PanelWidth:])
		for i, row := range rows[:nr] {
			d[i] = row[p]
		}
	}
}

// geluPanels is how many panels' outputs panelsRange passes through GELU
// at once: 512 values per row, long enough for the vectorised kernel (a
// panel's 16 are below vecMin and ran the scalar Go loop, a tenth of the
// robot TTM's step in a profile on an AMD EPYC) and few enough calls into
// it, while 16 rows' 32 KB are still in cache.
const geluPanels = 32

// panelsRange runs the kernel for panels [p0, p1) of w, then GELU on
// their outputs when act is set, a few panels at a time while they are
// still in cache.
func panelsRange(out, xp []float32, w *Packed, nr, p0, p1 int, act bool) {
	k, n := w.K, w.N
	for g0 := p0; g0 < p1; g0 += geluPanels {
		g1 := min(g0+geluPanels, p1)
		for pi := g0; pi < g1; pi++ {
			j0 := pi * PanelWidth
			panel16(out[j0:], n, xp, w.Data[j0*k:j0*k+k*PanelWidth], PanelWidth, k, nr)
		}
		if act {
			for i := 0; i < nr; i++ {
				o := out[i*n+g0*PanelWidth : i*n+g1*PanelWidth]
				GELUForward(o, o)
			}
		}
	}
}

// panel16Generic is the portable kernel: out (nr rows, stride ldc) +=
// xpᵀ·panel, panel (k, 16) with row stride ldw.
func panel16Generic(out []float32, ldc int, xp, panel []float32, ldw, k, nr int) {
	var acc [PanelWidth][PanelWidth]float32
	for p := 0; p < k; p++ {
		wr := (*[PanelWidth]float32)(panel[p*ldw : p*ldw+PanelWidth])
		xr := (*[PanelWidth]float32)(xp[p*PanelWidth : p*PanelWidth+PanelWidth])
		for i := 0; i < nr; i++ {
			xv := xr[i]
			a := &acc[i]
			for j, wv := range wr {
				a[j] += xv * wv
			}
		}
	}
	for i := 0; i < nr; i++ {
		o := out[i*ldc : i*ldc+PanelWidth]
		for j, v := range acc[i] {
			o[j] += v
		}
	}
}
