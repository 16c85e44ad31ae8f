package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMatMulPackedMatchesNaive(t *testing.T) { forEachKernel(t, testMatMulPackedMatchesNaive) }

func testMatMulPackedMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, par := range []int{1, 2} {
		SetParallelism(par)
		for _, tc := range []struct{ rows, k, n int }{
			{1, 1, 16}, {5, 7, 32}, {16, 64, 48}, {17, 33, 16}, {40, 512, 512}, {16, 512, 1536}, {16, 64, 13 * PanelWidth},
		} {
			const guard = 12345
			in := randSlice(r, tc.rows*tc.k, 1)
			w := randSlice(r, tc.k*tc.n, 1)
			// out lives inside a larger slice whose edges must stay untouched.
			buf := randSlice(r, tc.rows*tc.n+2*tc.n, 1)
			for i := 0; i < tc.n; i++ {
				buf[i], buf[len(buf)-1-i] = guard, guard
			}
			out := buf[tc.n : tc.n+tc.rows*tc.n]
			want := append([]float32(nil), out...)
			naiveGemm(false, false, tc.rows, tc.n, tc.k, 1, in, tc.k, w, tc.n, 1, want, tc.n)
			MatMulPacked(out, in, Pack(w, tc.k, tc.n), tc.rows, make([]float32, PackScratchSize(tc.k)))
			if d := maxRelDiff(out, want); d > float64(tc.k)*1.2e-7+1e-6 {
				t.Errorf("parallelism %d, %+v: max relative difference %.3g", par, tc, d)
			}
			clear(out)
			MatMulPackedGELU(out, in, Pack(w, tc.k, tc.n), tc.rows, make([]float32, PackScratchSize(tc.k)))
			wantGELU := make([]float32, len(want))
			clear(want)
			naiveGemm(false, false, tc.rows, tc.n, tc.k, 1, in, tc.k, w, tc.n, 0, want, tc.n)
			GELUForward(wantGELU, want)
			if d := maxRelDiff(out, wantGELU); d > float64(tc.k)*1.2e-7+1e-6 {
				t.Errorf("parallelism %d, %+v: GELU: max relative difference %.3g", par, tc, d)
			}
			// GELU of the product, applied a few panels at a time, is
			// GELUForward of the whole product, bit for bit.
			product := make([]float32, len(out))
			MatMulPacked(product, in, Pack(w, tc.k, tc.n), tc.rows, make([]float32, PackScratchSize(tc.k)))
			GELUForward(product, product)
			if i := sameBits(out, product); i >= 0 {
				t.Errorf("parallelism %d, %+v: MatMulPackedGELU[%d] = %g, GELU of MatMulPacked %g", par, tc, i, out[i], product[i])
			}
			for i := 0; i < tc.n; i++ {
				if buf[i] != guard || buf[len(buf)-1-i] != guard {
					t.Fatalf("parallelism %d, %+v: write outside the output", par, tc)
				}
			}
		}
	}
	SetParallelism(1)
}

// TestPackers checks the two ways products pack 16 rows or columns into
// (k, 16) blocks, each as built for this CPU and as the Go loop, against
// their definitions over a scratch slice full of NaNs, with strides as
// short as allowed and longer: packRows, xp[p*16+i] = in[i*ld+p] for the
// nr rows given; packCols, dst[p*16+j] = src[p*ld+j] for the cols given;
// 0 in the other slots.
func TestPackers(t *testing.T) { forEachKernel(t, testPackers) }

func testPackers(t *testing.T) {
	type packer func(dst, src []float32, ld, count, k int)
	r := rand.New(rand.NewPCG(21, 22))
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name          string
		pack, generic packer
		at            func(ld, slot, p int) int // src index of dst[p*16+slot]
		strides       func(k int) []int
	}{
		{"packRows", packRows, packRowsGeneric, func(ld, i, p int) int { return i*ld + p }, func(k int) []int { return []int{k, k + 5} }},
		{"packCols", packCols, packColsGeneric, func(ld, j, p int) int { return p*ld + j }, func(int) []int { return []int{PanelWidth, 41} }},
	} {
		for _, k := range []int{1, 3, 16, 17, 257, 512, 2049} {
			for _, ld := range tc.strides(k) {
				for count := 1; count <= PanelWidth; count++ {
					src := randSlice(r, tc.at(ld, count-1, k-1)+1, 1)
					for name, pack := range map[string]packer{tc.name: tc.pack, tc.name + "Generic": tc.generic} {
						dst := make([]float32, k*PanelWidth)
						for i := range dst {
							dst[i] = nan
						}
						pack(dst, src, ld, count, k)
						for p := 0; p < k; p++ {
							for slot := 0; slot < PanelWidth; slot++ {
								want := float32(0)
								if slot < count {
									want = src[tc.at(ld, slot, p)]
								}
								if got := dst[p*PanelWidth+slot]; math.Float32bits(got) != math.Float32bits(want) {
									t.Fatalf("%s, k %d, stride %d, %d packed: dst[%d*16+%d] = %g, want %g", name, k, ld, count, p, slot, got, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

func TestMatMulPackedDoesNotAllocate(t *testing.T) {
	SetParallelism(2)
	defer SetParallelism(1)
	r := rand.New(rand.NewPCG(1, 3))
	in, w := randSlice(r, 16*512, 1), Pack(randSlice(r, 512*512, 1), 512, 512)
	out, scratch := make([]float32, 16*512), make([]float32, PackScratchSize(512))
	if a := testing.AllocsPerRun(20, func() { MatMulPacked(out, in, w, 16, scratch) }); a != 0 {
		t.Errorf("MatMulPacked allocates %.1f times per call", a)
	}
}

// Skinny products as the TTM's processing unit does them: 16 token rows
// against a d x 3d or d x d weight matrix. Many distinct weight matrices
// (about 64 MB) are cycled so the numbers include streaming them from memory.
func BenchmarkSkinny(b *testing.B) {
	for _, s := range []struct{ rows, k, n int }{{16, 512, 512}, {16, 512, 1536}} {
		count := max(1, 64<<20/(4*s.k*s.n))
		r := rand.New(rand.NewPCG(1, 1))
		ws := make([][]float32, count)
		ps := make([]*Packed, count)
		for i := range ws {
			ws[i] = randSlice(r, s.k*s.n, 1)
			ps[i] = Pack(ws[i], s.k, s.n)
		}
		in, out := randSlice(r, s.rows*s.k, 1), make([]float32, s.rows*s.n)
		scratch := make([]float32, PackScratchSize(s.k))
		flops := 2 * float64(s.rows*s.k*s.n)
		name := fmt.Sprintf("%dx%dx%d", s.rows, s.k, s.n)
		b.Run(name+"/blas-"+Backend(), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				MatMul(out, in, ws[i%count], s.rows, s.k, s.n, false)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		for _, par := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/packed-%d", name, par), func(b *testing.B) {
				SetParallelism(par)
				defer SetParallelism(1)
				for i := 0; i < b.N; i++ {
					MatMulPacked(out, in, ps[i%count], s.rows, scratch)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

func TestPackColumnsMatchesConcatenation(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	k := 9
	a, b := randSlice(r, k*16, 1), randSlice(r, k*32, 1)
	cat := make([]float32, k*48)
	for i := 0; i < k; i++ {
		copy(cat[i*48:], a[i*16:i*16+16])
		copy(cat[i*48+16:], b[i*32:i*32+32])
	}
	got, want := PackColumns(k, [][]float32{a, b}, []int{16, 32}), Pack(cat, k, 48)
	for i := range want.Data {
		if got.Data[i] != want.Data[i] {
			t.Fatalf("element %d: %g, want %g", i, got.Data[i], want.Data[i])
		}
	}
}

type squareTask struct{ out []int }

func (s *squareTask) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		s.out[i] += i * i
	}
}

func TestParallelForCoversRangeOnce(t *testing.T) {
	for _, par := range []int{1, 2, 3} {
		SetParallelism(par)
		for _, n := range []int{0, 1, 5, 64, 1001} {
			task := &squareTask{out: make([]int, n)}
			ParallelFor(n, 1, task)
			for i, v := range task.out {
				if v != i*i {
					t.Fatalf("parallelism %d, n %d: element %d = %d, want %d", par, n, i, v, i*i)
				}
			}
		}
	}
	SetParallelism(1)
}

// BenchmarkPackRows packs 16 rows of the robot TTM's widths, with the
// gather kernel where the CPU has it and with the Go loop beside it.
//
//	go test -run '^$' -bench PackRows ./internal/nn
func BenchmarkPackRows(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{512, 2048} {
		in, xp := randSlice(r, PanelWidth*k, 1), make([]float32, k*PanelWidth)
		for name, pack := range map[string]func(xp, in []float32, ld, nr, k int){"packRows": packRows, "go": packRowsGeneric} {
			b.Run(fmt.Sprintf("k%d/%s", k, name), func(b *testing.B) {
				b.SetBytes(int64(4 * len(xp)))
				for b.Loop() {
					pack(xp, in, k, PanelWidth, k)
				}
			})
		}
	}
}

// smallestNormal is a variable so that the compiler cannot fold its half.
var smallestNormal = float32(1.1754944e-38)

// TestPanelFlushesDenormals: the vector kernels treat denormal inputs as
// zero and flush denormal results to zero, and leave the thread's
// floating-point mode as they found it.
func TestPanelFlushesDenormals(t *testing.T) { forEachKernel(t, testPanelFlushesDenormals) }

func testPanelFlushesDenormals(t *testing.T) {
	if Kernel() == "go" {
		t.Skip("the portable kernel computes denormals")
	}
	// One row, two terms: out[j] = xp[0]·panel[j] + xp[16]·panel[16+j].
	xp, panel := make([]float32, 2*PanelWidth), make([]float32, 2*PanelWidth)
	out := make([]float32, PanelWidth)
	xp[0], xp[PanelWidth] = 1, 1e-20
	panel[0] = 1e-39            // a denormal weight
	panel[PanelWidth+1] = 1e-20 // 1e-20·1e-20: a denormal product
	panel[2] = 3
	panel16(out, PanelWidth, xp, panel, PanelWidth, 2, 1)
	if out[0] != 0 || out[1] != 0 || out[2] != 3 {
		t.Errorf("got %g, %g, %g; want 0, 0, 3", out[0], out[1], out[2])
	}
	if half := smallestNormal * 0.5; half == 0 {
		t.Error("after the kernel, Go arithmetic flushes denormals: the mode was not restored")
	}
}

// TestPanel16Bits holds this CPU's vector kernel to its definition, bit for
// bit, so that the AVX-512 and AVX2 kernels agree with each other: each
// output gets its terms' chain of fused multiply-adds in order from zero,
// then one add, with denormals (some planted in every operand) read as
// zero. Rows past nr and columns outside the 16 must stay untouched. Where
// the kernel reads its rows in place (panel16A), the same bits again.
func TestPanel16Bits(t *testing.T) { forEachKernel(t, testPanel16Bits) }

func testPanel16Bits(t *testing.T) {
	if Kernel() == "go" {
		t.Skip("no vector kernel on this CPU: the Go loop rounds each product")
	}
	r := rand.New(rand.NewPCG(31, 32))
	withDenormals := func(n int) []float32 {
		x := randSlice(r, n, 1)
		for i := 0; i < n; i += 13 {
			x[i] = math.Float32frombits(uint32(1 + r.IntN(1<<23-1))) // subnormal
		}
		return x
	}
	for _, k := range []int{1, 2, 7, 64, 256} {
		for _, ldw := range []int{PanelWidth, 40} {
			for nr := 1; nr <= PanelWidth; nr++ {
				const ldc = 21
				xp := withDenormals(k * PanelWidth)
				panel := withDenormals((k-1)*ldw + PanelWidth)
				out := withDenormals(PanelWidth * ldc)
				want := append([]float32(nil), out...)
				for i := 0; i < nr; i++ {
					for j := 0; j < PanelWidth; j++ {
						acc := float32(0)
						for p := 0; p < k; p++ {
							acc = fma32DAZ(xp[p*PanelWidth+i], panel[p*ldw+j], acc)
						}
						want[i*ldc+j] = flushDenormal(flushDenormal(want[i*ldc+j]) + acc)
					}
				}
				orig := slices.Clone(out)
				panel16(out, ldc, xp, panel, ldw, k, nr)
				if i := sameBits(out, want); i >= 0 {
					t.Fatalf("%s kernel, k %d, ldw %d, %d rows: out[%d] = %g (%08x), want %g (%08x)",
						Kernel(), k, ldw, nr, i, out[i], math.Float32bits(out[i]), want[i], math.Float32bits(want[i]))
				}
				if !readsA() {
					continue
				}
				// The same rows read in place: p-major at a row stride of
				// 19, and row by row at one of k+3.
				for _, transA := range []bool{true, false} {
					lda := k + 3
					if transA {
						lda = 19
					}
					a := make([]float32, PanelWidth*lda+k*lda)
					for p := 0; p < k; p++ {
						for i := 0; i < PanelWidth; i++ {
							if transA {
								a[p*lda+i] = xp[p*PanelWidth+i]
							} else {
								a[i*lda+p] = xp[p*PanelWidth+i]
							}
						}
					}
					got := slices.Clone(orig)
					panel16A(got, ldc, a, lda, transA, panel, ldw, k, nr)
					if i := sameBits(got, want); i >= 0 {
						t.Fatalf("panel16A, transposed %v, k %d, ldw %d, %d rows: out[%d] = %g, want %g", transA, k, ldw, nr, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// fma32DAZ is x*y+z rounded once to float32, as VFMADD231PS computes it
// with MXCSR's DAZ and FTZ set. The float64 product is exact; the sum is
// rounded to odd (the exact sum's error by TwoSum decides), which makes
// the final rounding to float32 a single correct one.
func fma32DAZ(x, y, z float32) float32 {
	p, q := float64(flushDenormal(x))*float64(flushDenormal(y)), float64(flushDenormal(z))
	s := p + q
	qq := s - p
	if e := (p - (s - qq)) + (q - qq); e != 0 && math.Float64bits(s)&1 == 0 {
		s = math.Nextafter(s, math.Inf(int(math.Copysign(1, e))))
	}
	return flushDenormal(float32(s))
}

// flushDenormal is x, or a zero of its sign where x is subnormal.
func flushDenormal(x float32) float32 {
	if x != 0 && math.Abs(float64(x)) < 0x1p-126 {
		return float32(math.Copysign(0, float64(x)))
	}
	return x
}
