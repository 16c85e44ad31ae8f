package nn

// The project's own general matrix product, on the packed kernel of
// MatMulPacked. Where the CPU has AVX-512 every Gemm goes through it:
// OpenBLAS 0.3.21 picks its kernels by CPU model, and on models newer than
// it knows (an Intel Xeon of model 207, for one) it falls back to SSE3
// kernels that made the trainer's products 64 % of its time. Here a
// product gives the same bits on every AVX-512 CPU, whatever the BLAS
// thinks of it, and a row's result does not depend on how the rows are
// shared between goroutines.
//
// The product is blocked as in GotoBLAS, on the calling goroutine:
// op(B) is cut into blocks of gemmKC x gemmNC, packed as 16-column panels
// (512 KB, kept in L2); op(A) into 16-row blocks of gemmKC, packed p-major
// (16 KB, kept in L1) unless the AVX-512 kernel reads them in place; each
// pair is one call of the 16x16 kernel.

const (
	gemmKC = 256 // terms per block: 16 rows of A and one panel of B fill 32 KB
	gemmNC = 512 // columns per block of B
)

// gemmScratch is one goroutine's packing space.
type gemmScratch struct {
	a    [gemmKC * PanelWidth]float32
	b    [gemmKC * gemmNC]float32
	edge [PanelWidth * PanelWidth]float32
}

// gemmScratches hands out scratch without allocating in steady state (a
// sync.Pool may drop its items at a collection): at most its capacity of
// goroutines keep one each, and more than that allocate.
var gemmScratches = make(chan *gemmScratch, 64)

// gemmPacked computes C = alpha*op(A)*op(B) + beta*C as Gemm describes.
// Each element of C is beta*C plus its terms summed in order, gemmKC at a
// time, so results do not depend on m, n or the other rows.
func gemmPacked(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if beta != 1 {
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			if beta == 0 {
				clear(row) // as BLAS: C's NaNs do not survive beta 0
			} else {
				for j := range row {
					row[j] *= beta
				}
			}
		}
	}
	if k == 0 || alpha == 0 {
		return
	}
	var s *gemmScratch
	select {
	case s = <-gemmScratches:
	default:
		s = new(gemmScratch)
	}
	// A product of one row block reads B's full panels where they are.
	inPlace := !transB && m <= PanelWidth
	for p0 := 0; p0 < k; p0 += gemmKC {
		kb := min(gemmKC, k-p0)
		for j0 := 0; j0 < n; j0 += gemmNC {
			nb := min(gemmNC, n-j0)
			// Pack op(B)[p0:p0+kb, j0:j0+nb] as panels (kb, 16).
			if !inPlace {
				for jp := 0; jp < nb; jp += PanelWidth {
					cols := min(PanelWidth, nb-jp)
					panel := s.b[jp*kb : jp*kb+kb*PanelWidth]
					if transB { // op(B)[p][j] = B[j*ldb+p]
						packRows(panel, b[(j0+jp)*ldb+p0:], ldb, cols, kb)
					} else {
						packCols(panel, b[p0*ldb+j0+jp:], ldb, cols, kb)
					}
				}
			}
			for i0 := 0; i0 < m; i0 += PanelWidth {
				nr := min(PanelWidth, m-i0)
				// op(A)[i0:i0+16, p0:p0+kb] starts at a[ai] and ends before
				// a[end]; where the kernel can read it there, it is not packed.
				ai, end := i0*lda+p0, i0*lda+p0+(PanelWidth-1)*lda+kb
				if transA { // op(A)[i][p] = A[p*lda+i]
					ai, end = p0*lda+i0, p0*lda+i0+(kb-1)*lda+PanelWidth
				}
				inPlaceA := alpha == 1 && readsA() && end <= len(a)
				xp := s.a[:kb*PanelWidth]
				if !inPlaceA {
					if transA {
						packCols(xp, a[ai:], lda, nr, kb)
					} else {
						packRows(xp, a[ai:], lda, nr, kb)
					}
					if alpha != 1 {
						for i := range xp {
							xp[i] *= alpha
						}
					}
				}
				out := c[i0*ldc+j0:]
				for jp := 0; jp < nb; jp += PanelWidth {
					cols := min(PanelWidth, nb-jp)
					panel, ldw := s.b[jp*kb:jp*kb+kb*PanelWidth], PanelWidth
					if inPlace {
						if cols == PanelWidth {
							panel, ldw = b[p0*ldb+j0+jp:], ldb
						} else {
							panel = s.b[:kb*PanelWidth]
							packCols(panel, b[p0*ldb+j0+jp:], ldb, cols, kb)
						}
					}
					if cols < PanelWidth {
						// The kernel writes 16 columns: sum into edge, then add.
						clear(s.edge[:])
						if inPlaceA {
							panel16A(s.edge[:], PanelWidth, a[ai:], lda, transA, panel, ldw, kb, nr)
						} else {
							panel16(s.edge[:], PanelWidth, xp, panel, ldw, kb, nr)
						}
						for i := 0; i < nr; i++ {
							o := out[i*ldc+jp : i*ldc+jp+cols]
							for j := range o {
								o[j] += s.edge[i*PanelWidth+j]
							}
						}
						continue
					}
					if inPlaceA {
						panel16A(out[jp:], ldc, a[ai:], lda, transA, panel, ldw, kb, nr)
					} else {
						panel16(out[jp:], ldc, xp, panel, ldw, kb, nr)
					}
				}
			}
		}
	}
	select {
	case gemmScratches <- s:
	default:
	}
}

// packColsGeneric copies cols (1..16) contiguous values from each of k rows
// of src (row stride ld) into the rows of dst (k, 16), zeros in the other
// slots: dst[p*16+j] = src[p*ld+j].
func packColsGeneric(dst, src []float32, ld, cols, k int) {
	for p := 0; p < k; p++ {
		d := dst[p*PanelWidth : p*PanelWidth+PanelWidth]
		copy(d, src[p*ld:p*ld+cols])
		clear(d[cols:])
	}
}
