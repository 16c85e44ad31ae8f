package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// vecInputs are the values the vectorised kernels are checked on: normal
// draws at two scales, and around every edge of the Go loops (the GELU
// exponent's clamp at ±87, the derivative's quotient near 0, Exp32's fast
// path, signed zeros, subnormals, infinities, NaN).
func vecInputs(r *rand.Rand, n int) []float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 1.1e-30, -0.9e-30, 1e-38, -1e-45,
		1e-6, -1e-6, 1, -1, 4.5, -4.5, 20, -20, 54.5, -54.6, 87, -87, 88, -88, 100, -200, 1e4, -1e4, 3e38, -3e38,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	s := make([]float32, n)
	for i := range s {
		switch r.IntN(4) {
		case 0:
			s[i] = special[r.IntN(len(special))]
		case 1:
			s[i] = float32(r.NormFloat64() * 30)
		default:
			s[i] = float32(r.NormFloat64() * 2)
		}
	}
	return s
}

// sameBits reports the first index where got and want differ as float32
// bits (any NaN equals any NaN), or -1.
func sameBits(got, want []float32) int {
	for i := range want {
		g, w := got[i], want[i]
		if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
			return i
		}
	}
	return -1
}

// TestVectorKernelsEqualGoLoops: in cgo builds GELU, its derivative, the
// row softmax, SumRows and Add run vectorised C (cvec); each must give
// exactly the Go loop's float32 bits, so that a checkpoint trains to the
// same weights with either, at every length (vector tails) and alignment.
func TestVectorKernelsEqualGoLoops(t *testing.T) {
	if vecKernels == "go" {
		t.Skip("no cgo: the Go loops are the kernels")
	}
	r := rand.New(rand.NewPCG(7, 23))
	for _, n := range []int{vecMin, vecMin + 1, 100, 333, 1024, 10240 + 7} {
		for _, off := range []int{0, 1, 3} {
			t.Run(fmt.Sprintf("n=%d/offset=%d", n, off), func(t *testing.T) {
				in := vecInputs(r, n+off)[off:]
				got, want := make([]float32, n+off)[off:], make([]float32, n)
				GELUForward(got, in)
				geluForwardGo(want, in)
				if i := sameBits(got, want); i >= 0 {
					t.Fatalf("GELUForward(%g) = %g, Go loop %g", in[i], got[i], want[i])
				}
				inPlace := append([]float32(nil), in...)
				GELUForward(inPlace, inPlace)
				if i := sameBits(inPlace, want); i >= 0 {
					t.Fatalf("GELUForward in place (%g) = %g, Go loop %g", in[i], inPlace[i], want[i])
				}

				out, dOut := want, vecInputs(r, n)
				dIn0 := vecInputs(r, n)
				gotD, wantD := append([]float32(nil), dIn0...), append([]float32(nil), dIn0...)
				GELUBackward(gotD, dOut, in, out)
				geluBackwardGo(wantD, dOut, in, out)
				if i := sameBits(gotD, wantD); i >= 0 {
					t.Fatalf("GELUBackward at x=%g: %g, Go loop %g", in[i], gotD[i], wantD[i])
				}

				gotA, wantA := append([]float32(nil), dIn0...), append([]float32(nil), dIn0...)
				Add(gotA, in)
				addGo(wantA, in)
				if i := sameBits(gotA, wantA); i >= 0 {
					t.Fatalf("Add at %d: %g, Go loop %g", i, gotA[i], wantA[i])
				}
			})
		}
	}
}

// TestVectorRowKernelsEqualGoLoops: the same for the kernels that work
// row by row (softmax, SumRows, LayerNorm forward and backward), including
// rows the C softmax leaves to Go (a NaN, an infinity).
func TestVectorRowKernelsEqualGoLoops(t *testing.T) {
	if vecKernels == "go" {
		t.Skip("no cgo: the Go loops are the kernels")
	}
	r := rand.New(rand.NewPCG(9, 4))
	for _, c := range []struct {
		name string
		n, k int
		edit func(x []float32, k int) // rows the C loop leaves to Go
	}{
		{"one long row", 1, 320, nil},
		{"token rows", 17, 16, nil},
		{"odd rows", 9, 37, nil},
		{"short rows", 64, 1, nil},
		{"model rows", 16, 512, nil},
		{"rows of 4 blocks and a tail", 5, 256 + 64 + 7, nil},
		{"rows of 3 blocks", 3, 190, nil},
		{"a NaN in row 3", 8, 40, func(x []float32, k int) { x[3*k+5] = float32(math.NaN()) }},
		{"a value 100 below the max in the first and last rows", 6, 50, func(x []float32, k int) {
			x[0] = x[1] - 100
			x[5*k+49] = x[5*k] - 100
		}},
		{"values far below the max (exponents 0) in every row, a subnormal exponent in row 5", 8, 48, func(x []float32, k int) {
			for i := range 8 {
				x[i*k+1], x[i*k+7], x[i*k+20] = x[i*k]-150, x[i*k]-1e4, float32(math.Inf(-1))
				x[i*k+30] = x[i*k] - 104.5
			}
			for j := 1; j < k; j++ { // row 5: the max, the rest 0, one subnormal
				x[5*k+j] = x[5*k] - 150
			}
			x[5*k+9] = x[5*k] - 103.5 // e^-103.5 rounds to the smallest subnormal
		}},
		{"an infinity in row 2", 4, 64, func(x []float32, k int) { x[2*k] = float32(math.Inf(1)) }},
		{"signed zeros at the max", 4, 32, func(x []float32, k int) {
			for i := range x {
				x[i] = -float32(i%5) - 1
			}
			x[k+3], x[k+9] = float32(math.Copysign(0, -1)), 0
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := make([]float32, c.n*c.k)
			for i := range x {
				x[i] = float32(r.NormFloat64() * 4)
			}
			if c.edit != nil {
				c.edit(x, c.k)
			}
			got, want := append([]float32(nil), x...), append([]float32(nil), x...)
			SoftmaxRowsForward(got, c.n, c.k)
			softmaxRowsGo(want, c.n, c.k)
			if i := sameBits(got, want); i >= 0 {
				t.Fatalf("softmax row %d column %d: %g, Go loop %g", i/c.k, i%c.k, got[i], want[i])
			}

			sum0 := vecInputs(r, c.k)
			gotS, wantS := append([]float32(nil), sum0...), append([]float32(nil), sum0...)
			SumRows(gotS, x, c.n, c.k)
			sumRowsGo(wantS, x, c.n, c.k)
			if i := sameBits(gotS, wantS); i >= 0 {
				t.Fatalf("SumRows column %d: %g, Go loop %g", i, gotS[i], wantS[i])
			}

			if c.edit != nil {
				return // LayerNorm's inputs are finite
			}
			scale, bias := randSlice(r, c.k, 1), randSlice(r, c.k, 1)
			mean, rstd, normed := make([]float32, c.n), make([]float32, c.n), make([]float32, c.n*c.k)
			LayerNormForward(normed, mean, rstd, x, scale, bias, c.n, c.k, 1e-6)
			wantMean, wantRstd, wantNormed := make([]float32, c.n), make([]float32, c.n), make([]float32, c.n*c.k)
			layerNormForwardGo(wantNormed, wantMean, wantRstd, x, scale, bias, c.n, c.k, 1e-6)
			for _, p := range []struct {
				what      string
				got, want []float32
			}{{"out", normed, wantNormed}, {"mean", mean, wantMean}, {"rstd", rstd, wantRstd}} {
				if i := sameBits(p.got, p.want); i >= 0 {
					t.Fatalf("LayerNormForward %s[%d]: %g, Go loop %g", p.what, i, p.got[i], p.want[i])
				}
			}
			dOut, dIn0 := randSlice(r, c.n*c.k, 1), randSlice(r, c.n*c.k, 1)
			for _, withParams := range []bool{true, false} {
				gotIn, wantIn := append([]float32(nil), dIn0...), append([]float32(nil), dIn0...)
				var gotScale, gotBias, wantScale, wantBias []float32
				if withParams {
					gotScale, gotBias = randSlice(r, c.k, 1), randSlice(r, c.k, 1)
					wantScale, wantBias = append([]float32(nil), gotScale...), append([]float32(nil), gotBias...)
				}
				LayerNormBackward(gotIn, gotScale, gotBias, dOut, x, scale, mean, rstd, c.n, c.k)
				layerNormBackwardGo(wantIn, wantScale, wantBias, dOut, x, scale, mean, rstd, c.n, c.k)
				for _, p := range []struct {
					what      string
					got, want []float32
				}{{"dIn", gotIn, wantIn}, {"dScale", gotScale, wantScale}, {"dBias", gotBias, wantBias}} {
					if i := sameBits(p.got, p.want); i >= 0 {
						t.Fatalf("LayerNormBackward %s[%d] (parameter gradients %v): %g, Go loop %g", p.what, i, withParams, p.got[i], p.want[i])
					}
				}
			}
		})
	}
}

// The elementwise kernels at the head's size (320 positions by 32 hidden
// channels), vectorised and as Go loops.
func BenchmarkGELU(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	in, dOut := randSlice(r, 320*32, 2), randSlice(r, 320*32, 1)
	out, dIn := make([]float32, len(in)), make([]float32, len(in))
	for _, k := range []struct {
		name string
		fwd  func(out, in []float32)
		bwd  func(dIn, dOut, in, out []float32)
	}{{"kernels=" + vecKernels, GELUForward, GELUBackward}, {"kernels=go", geluForwardGo, geluBackwardGo}} {
		b.Run("forward/"+k.name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(in)))
			for b.Loop() {
				k.fwd(out, in)
			}
		})
		b.Run("backward/"+k.name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(in)))
			for b.Loop() {
				k.bwd(dIn, dOut, in, out)
			}
		})
	}
}

func BenchmarkSoftmaxRows(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, 4*320)
	for _, rows := range []struct {
		name        string
		far, spread float32 // all but each row's first value far to far+spread below it
	}{
		{"rows=spread", 0, 0},
		{"rows=peaked", 200, 0}, // a trained keypoint map's: exponents 0 in float32
		{"rows=tail", 60, 80},   // a fifth of the exponents subnormal
	} {
		x0 := randSlice(r, len(x), 3)
		for i := range x0 {
			if i%320 != 0 {
				x0[i] -= rows.far + rows.spread*r.Float32()
			}
		}
		for _, k := range []struct {
			name string
			f    func(x []float32, n, k int)
		}{{"kernels=" + vecKernels, SoftmaxRowsForward}, {"kernels=go", softmaxRowsGo}} {
			b.Run(rows.name+"/"+k.name, func(b *testing.B) {
				b.SetBytes(int64(4 * len(x)))
				for b.Loop() {
					copy(x, x0)
					k.f(x, 4, 320)
				}
			})
		}
	}
}
