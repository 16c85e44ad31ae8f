package layer

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/safetensors"
)

// randomize fills every tensor of t's flat slice with N(0, scale²) values
// (not the initialisers: LayerNorm affine and biases non-trivial too).
func randomize(flat []float32, r *rand.Rand, scale float64) {
	for i := range flat {
		flat[i] = float32(r.NormFloat64() * scale)
	}
}

// TestBackwardMatchesFiniteDifferences checks each layer's backward pass,
// input and parameter gradients, against central differences of
// L = Σ out ⊙ dOut.
func TestBackwardMatchesFiniteDifferences(t *testing.T) {
	const rows, d, hidden, heads, keys = 5, 8, 6, 2, 7
	cases := []struct {
		name string
		// build registers the layer's parameters and returns its forward
		// pass (in -> out) and backward pass (dIn += ..., grads += ...);
		// inN and outN are the input and output sizes.
		build func(t *Table, g *Table) (inN, outN int, fwd func(out, in []float32), bwd func(dIn, dOut, in []float32))
	}{
		{"dense", func(t, gt *Table) (int, int, func(out, in []float32), func(dIn, dOut, in []float32)) {
			var l, g Dense
			l.Register(t, "dense", d, hidden, Zeros)
			g.Register(gt, "dense", d, hidden, Zeros)
			return rows * d, rows * hidden,
				func(out, in []float32) { l.Forward(out, in, rows, nil) },
				func(dIn, dOut, in []float32) { l.Backward(&g, dIn, dOut, in, rows) }
		}},
		{"layer norm", func(t, gt *Table) (int, int, func(out, in []float32), func(dIn, dOut, in []float32)) {
			var ln, g LayerNorm
			ln.Register(t, "ln", d)
			g.Register(gt, "ln", d)
			rc := NewLayerNormRec(rows, d)
			return rows * d, rows * d,
				func(out, in []float32) { rc.Forward(&ln, in, rows, d, 1e-6); copy(out, rc.Out) },
				func(dIn, dOut, in []float32) { rc.Backward(&ln, &g, dIn, dOut, rows, d) }
		}},
		{"mlp", func(t, gt *Table) (int, int, func(out, in []float32), func(dIn, dOut, in []float32)) {
			var b, g MLP
			b.Register(t, "mlp", d, hidden, 3, MLPBias)
			g.Register(gt, "mlp", d, hidden, 3, MLPBias)
			rc, dHid, dPre := NewMLPRec(rows, hidden), make([]float32, rows*hidden), make([]float32, rows*hidden)
			return rows * d, rows * 3,
				func(out, in []float32) { rc.Forward(&b, out, in, rows, nil) },
				func(dIn, dOut, in []float32) { rc.Backward(&b, &g, dIn, dOut, in, dHid, dPre, rows) }
		}},
		{"mlp along tokens", func(t, gt *Table) (int, int, func(out, in []float32), func(dIn, dOut, in []float32)) {
			var b, g MLP
			b.Register(t, "mlp", rows, hidden, 3, MLPBias)
			g.Register(gt, "mlp", rows, hidden, 3, MLPBias)
			rc, dHid, dPre := NewMLPRec(hidden, d), make([]float32, hidden*d), make([]float32, hidden*d)
			return rows * d, 3 * d,
				func(out, in []float32) { rc.ForwardTokens(&b, out, in, d) },
				func(dIn, dOut, in []float32) { rc.BackwardTokens(&b, &g, dIn, dOut, in, dHid, dPre, d) }
		}},
		{"self-attention", func(t, gt *Table) (int, int, func(out, in []float32), func(dIn, dOut, in []float32)) {
			var a, g Attention
			a.Register(t, "attn", d, heads)
			g.Register(gt, "attn", d, heads)
			rc, sc := NewAttentionRec(rows, rows, d, heads), NewAttentionScratch(rows, rows, d, heads)
			return rows * d, rows * d,
				func(out, in []float32) { rc.Forward(&a, out, in, in, rows, rows, d) },
				func(dIn, dOut, in []float32) { rc.Backward(&a, &g, &sc, dIn, dIn, dOut, in, in, rows, rows, d) }
		}},
		{"cross-attention", func(t, gt *Table) (int, int, func(out, in []float32), func(dIn, dOut, in []float32)) {
			var a, g Attention
			var queries, dQueries []float32
			a.Register(t, "attn", d, heads)
			g.Register(gt, "attn", d, heads)
			t.Add(&queries, "queries", PosInit, rows, d)
			gt.Add(&dQueries, "queries", PosInit, rows, d)
			rc, sc := NewAttentionRec(rows, keys, d, heads), NewAttentionScratch(rows, keys, d, heads)
			return keys * d, rows * d,
				func(out, in []float32) { rc.Forward(&a, out, queries, in, rows, keys, d) },
				func(dIn, dOut, in []float32) {
					rc.Backward(&a, &g, &sc, dQueries, dIn, dOut, queries, in, rows, keys, d)
				}
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(21, uint64(i)))
			var pt, gt Table
			inN, outN, fwd, bwd := tc.build(&pt, &gt)
			params, grads := pt.Allocate(), gt.Allocate()
			randomize(params, r, 0.5)
			in, dOut, out := randFloats(r, inN, 1), randFloats(r, outN, 1), make([]float32, outN)
			loss := func() float64 {
				fwd(out, in)
				return dot64(out, dOut)
			}
			loss()
			dIn := make([]float32, inN)
			bwd(dIn, dOut, in)
			// Errors relative to the largest gradient of the layer: the key
			// bias's gradient is zero (softmax does not see a shift of
			// every score), so its own scale is float32 noise.
			var scale float64
			for _, g := range slices.Concat(dIn, grads) {
				scale = max(scale, math.Abs(float64(g)))
			}
			check := func(name string, x, analytic []float32) {
				for _, i := range r.Perm(len(x))[:min(len(x), 20)] {
					old := x[i]
					h := float32(1e-2) * max(1, float32(math.Abs(float64(old))))
					x[i] = old + h
					up := loss()
					x[i] = old - h
					down := loss()
					x[i] = old
					num := (up - down) / (2 * float64(h))
					if e := math.Abs(num-float64(analytic[i])) / scale; e > 2e-2 {
						t.Errorf("%s[%d]: analytic %g, numeric %g", name, i, analytic[i], num)
						return
					}
				}
			}
			check("input", in, dIn)
			for _, s := range pt.Specs {
				check(s.Name, params[s.Offset:s.Offset+s.Size], grads[s.Offset:s.Offset+s.Size])
			}
		})
	}
}

// TestMLPForwardMatchesRecord checks that the inference pass (nothing
// kept) and the recording pass give the same bits, along either axis.
func TestMLPForwardMatchesRecord(t *testing.T) {
	const rows, d, hidden, k = 6, 8, 5, 4
	r := rand.New(rand.NewPCG(22, 22))
	var b MLP
	var tab Table
	b.Register(&tab, "mlp", d, hidden, k, MLPBias)
	randomize(tab.Allocate(), r, 0.5)
	in := randFloats(r, rows*d, 1)
	got, want := make([]float32, rows*k), make([]float32, rows*k)
	b.Forward(got, make([]float32, rows*hidden), in, rows, nil)
	rc := NewMLPRec(rows, hidden)
	rc.Forward(&b, want, in, rows, nil)
	if !slices.Equal(got, want) {
		t.Errorf("MLP.Forward %v, MLPRec.Forward %v", got, want)
	}

	var tb MLP
	var ttab Table
	tb.Register(&ttab, "tok", rows, hidden, k, MLPBias)
	randomize(ttab.Allocate(), r, 0.5)
	got, want = make([]float32, k*d), make([]float32, k*d)
	tb.ForwardTokens(got, make([]float32, hidden*d), in, d)
	trc := NewMLPRec(hidden, d)
	trc.ForwardTokens(&tb, want, in, d)
	if !slices.Equal(got, want) {
		t.Errorf("MLP.ForwardTokens %v, MLPRec.ForwardTokens %v", got, want)
	}
}

func TestTableBindsViewsWithoutSpill(t *testing.T) {
	var a, b []float32
	var tab Table
	tab.Add(&a, "a", Zeros, 2, 3)
	tab.Add(&b, "b", Ones, 4)
	flat := tab.Allocate()
	if tab.Size != 10 || len(flat) != 10 || len(a) != 6 || cap(a) != 6 || len(b) != 4 {
		t.Fatalf("size %d, views %d/%d and %d", tab.Size, len(a), cap(a), len(b))
	}
	a = append(a, 7) // must reallocate, not write into b
	if flat[6] != 0 {
		t.Errorf("append spilled into the next view: %v", flat)
	}
	grads := make([]float32, 10)
	tab.Bind(grads)
	b[0] = 5
	if grads[6] != 5 || flat[6] != 0 {
		t.Errorf("after Bind the views cut %v, not %v", flat, grads)
	}
}

// TestSinCos2D: the initialiser draws nothing (a nil source), and position
// (row 1, column 2) of a grid 3 wide with d = 8 holds 0.5·(sin, cos) of 1
// and of 0.01 for the row, then of 2 and 0.02 for the column; and codes of
// neighbours are closer than codes of far cells.
func TestSinCos2D(t *testing.T) {
	const width, d = 3, 8
	dst := make([]float32, 6*d)
	SinCos2D(width, d).Fill(dst, nil)
	row := dst[5*d : 6*d]
	want := []float64{math.Sin(1), math.Cos(1), math.Sin(0.01), math.Cos(0.01), math.Sin(2), math.Cos(2), math.Sin(0.02), math.Cos(0.02)}
	for i, w := range want {
		if math.Abs(float64(row[i])-0.5*w) > 1e-6 {
			t.Errorf("value %d = %v, want %v", i, row[i], 0.5*w)
		}
	}
	big := make([]float32, 16*20*64)
	SinCos2D(20, 64).Fill(big, nil)
	dist := func(a, b int) float64 {
		var s float64
		for k := range 64 {
			v := float64(big[a*64+k] - big[b*64+k])
			s += v * v
		}
		return s
	}
	if near, far := dist(5*20+5, 5*20+6), dist(5*20+5, 12*20+17); near >= far {
		t.Errorf("neighbour distance %v, far distance %v", near, far)
	}
}

// TestTensorsRoundTrip: AddTensors stores each tensor of a table's flat
// slice under prefix plus its name and shape, and Wants reads them back
// into another slice of the same layout; a table of another shape is
// refused.
func TestTensorsRoundTrip(t *testing.T) {
	var a, b []float32
	var tab Table
	tab.Add(&a, "dense/kernel", Xavier(3, 2), 3, 2)
	tab.Add(&b, "dense/bias", Zeros, 2)
	params := make([]float32, tab.Size)
	for i := range params {
		params[i] = float32(i) + 0.5
	}
	f := safetensors.New()
	AddTensors(f, "m/", tab.Specs, params)
	if got := f.Tensors["m/dense/kernel"].Shape; !slices.Equal(got, []int{3, 2}) {
		t.Fatalf("m/dense/kernel has shape %v", got)
	}
	back := make([]float32, tab.Size)
	if err := f.Load(safetensors.Set{What: "test", Owns: safetensors.HasPrefix("m/"), Tensors: Wants("m/", tab.Specs, back)}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back, params) {
		t.Errorf("read back %v, stored %v", back, params)
	}

	var other Table
	var c []float32
	other.Add(&c, "dense/kernel", Zeros, 2, 3)
	err := f.Load(safetensors.Set{What: "test", Owns: safetensors.HasPrefix("m/"), Tensors: Wants("m/", other.Specs, make([]float32, other.Size))})
	if err == nil || !strings.Contains(err.Error(), "dense/kernel") || !strings.Contains(err.Error(), "dense/bias") {
		t.Errorf("a table of another shape: %v", err)
	}
}
