package vision

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/onnx"
)

// expansionCase is an MBConv block's expansion and depthwise convolution:
// x (N, K, H, W), a 1x1 Conv to C channels (with a bias if expBias), its
// swish, then the depthwise convolution of dwCase (C channels).
type expansionCase struct {
	dwCase
	k       int
	expBias bool
}

// expansionWeights draws the expansion's weights (C, K) and bias (C, nil
// without).
func (c expansionCase) expansionWeights(r *rand.Rand) (ew, eb []float32) {
	ew = randSlice32(r, c.c*c.k)
	if c.expBias {
		eb = randSlice32(r, c.c)
	}
	return ew, eb
}

// graphOf builds dwCase's graph reading "e", the swished expansion of the
// input "x".
func (c expansionCase) graphOf(ew, eb, wt, b []float32) *onnx.Model {
	m := c.dwCase.graphOf(wt, b)
	g := &testGraph{m: newTestGraph(13).m}
	g.input("x", int64(c.n), int64(c.k), int64(c.h), int64(c.w))
	g.floats("EW", ew, int64(c.c), int64(c.k), 1, 1)
	inputs := []string{"x", "EW"}
	if eb != nil {
		g.floats("EB", eb, int64(c.c))
		inputs = append(inputs, "EB")
	}
	g.node("Conv", inputs, "ez", onnx.IntsAttr("kernel_shape", 1, 1))
	g.node("Sigmoid", []string{"ez"}, "es")
	g.node("Mul", []string{"ez", "es"}, "e")
	for _, n := range m.Graph.Nodes {
		for i, in := range n.Inputs {
			if in == "x" {
				n.Inputs[i] = "e"
			}
		}
	}
	m.Graph.Inputs = g.m.Graph.Inputs
	m.Graph.Initializers = append(g.m.Graph.Initializers, m.Graph.Initializers...)
	m.Graph.Nodes = append(g.m.Graph.Nodes, m.Graph.Nodes...)
	return m
}

// naiveExpansion is swish(ew · x + eb) in float64: x (N, K, H, W), ew (C,
// K), eb (C) or nil; out (N, C, H, W).
func naiveExpansion(x []float32, n, k, h, w int, ew, eb []float32, c int) []float32 {
	plane := h * w
	out := make([]float32, n*c*plane)
	for b := 0; b < n; b++ {
		for ch := 0; ch < c; ch++ {
			for i := 0; i < plane; i++ {
				s := 0.0
				if eb != nil {
					s = float64(eb[ch])
				}
				for j := 0; j < k; j++ {
					s += float64(ew[ch*k+j]) * float64(x[(b*k+j)*plane+i])
				}
				out[(b*c+ch)*plane+i] = float32(s / (1 + math.Exp(-s)))
			}
		}
	}
	return out
}

// TestDepthwiseExpansionMatchesNaive runs an expansion and the depthwise
// convolution it feeds, fused into one TTMDepthwise layer, with every
// kernel the CPU runs (the AVX-512 kernels compute the expansion a few
// rows at a time; the others expand the whole map first), against
// naiveExpansion then naiveDepthwise: strides 2 and 2x1, kernels 3 and 5,
// asymmetric and over-wide pads, rows of fewer and more than the 8 pixels
// the kernels take at a time, a 2x1 map, a map larger than the unfused
// layer's blocked path takes, a batch of 2, 16 and 48 channels, with and
// without biases, swish and means. With AVX-512 the result must be the
// unfused layers' to the bit.
func TestDepthwiseExpansionMatchesNaive(t *testing.T) {
	cases := []expansionCase{
		{dwCase{name: "16 3x3/2 keras", n: 1, c: 16, h: 19, w: 18, kh: 3, kw: 3, sh: 2, sw: 2, pads: [4]int{0, 0, 1, 1}, bias: true, swish: true, mean: true}, 3, true},
		{dwCase{name: "32 5x5/2 no biases", n: 1, c: 32, h: 15, w: 14, kh: 5, kw: 5, sh: 2, sw: 2, pads: [4]int{2, 1, 2, 2}, swish: true}, 5, false},
		{dwCase{name: "48 wide rows batch of 2", n: 2, c: 48, h: 6, w: 41, kh: 3, kw: 3, sh: 2, sw: 2, pads: [4]int{1, 1, 1, 1}, bias: true, mean: true}, 8, true},
		{dwCase{name: "16 strides 2,1 pads wider than kernel", n: 1, c: 16, h: 4, w: 5, kh: 3, kw: 3, sh: 2, sw: 1, pads: [4]int{4, 3, 4, 3}, bias: true, swish: true}, 2, true},
		{dwCase{name: "16 5x5/2 on 2x1", n: 1, c: 16, h: 2, w: 1, kh: 5, kw: 5, sh: 2, sw: 2, pads: [4]int{2, 2, 2, 2}, bias: true, swish: true, mean: true}, 4, true},
		{dwCase{name: "32 3x3/2 on 64x80", n: 1, c: 32, h: 64, w: 80, kh: 3, kw: 3, sh: 2, sw: 2, pads: [4]int{0, 0, 1, 1}, bias: true, swish: true, mean: true}, 16, true},
		{dwCase{name: "32 3x3/2 112 wide", n: 1, c: 32, h: 9, w: 112, kh: 3, kw: 3, sh: 2, sw: 2, pads: [4]int{0, 0, 1, 1}, bias: true, swish: true, mean: true}, 16, true},
	}
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inShape := []int{c.n, c.k, c.h, c.w}
			in := randSlice32(r, c.n*c.k*c.h*c.w)
			ew, eb := c.expansionWeights(r)
			wt, b := c.weights(r)
			e := naiveExpansion(in, c.n, c.k, c.h, c.w, ew, eb, c.c)
			want, ho, wo := naiveDepthwise(e, c.n, c.c, c.h, c.w, wt, b, c.kh, c.kw, c.sh, c.sw, c.pads, c.swish)
			if c.mean {
				timesMean(want, ho*wo)
			}
			_, _, scale := moments(want)
			tol := 1e-5 * (1 + scale)
			opts := PrepareOptions{SwishOp: "TTMSwish", DepthwiseOp: DepthwiseOp, PointwiseOp: PointwiseOp, DepthwiseExpansion: true}
			forEachISA(t, func(isa kernelISA) {
				got, rs, ts := runCV(t, c.graphOf(ew, eb, wt, b), opts, inShape, in)
				if len(got) != len(want) {
					t.Fatalf("%s: %d outputs, want %d", isa, len(got), len(want))
				}
				if d := maxDiff(got, want); d > tol {
					t.Errorf("%s: the fused layer differs from the naive expansion and convolution by %g (tolerance %g)", isa, d, tol)
				}
				if types := layerTypes(ts); types[DepthwiseOp] != 1 || types[PointwiseOp] != 0 || types["Convolution"] != 0 || types["TTMSwish"] != 0 {
					t.Errorf("%s: OpenCV's layers %v, want one %s and no other convolution or swish", isa, types, DepthwiseOp)
				}
				if !hasRewriteContaining(rs, RewriteDepthwise, ", 1 with the expansion before them") {
					t.Errorf("%s: rewrites %v, want the expansion fused", isa, rs)
				}
				if isa != kernelAVX512 {
					return
				}
				// With AVX-512 the pointwise layer runs the expansion, and
				// fusing it changes no bit: features, and checkpoints
				// trained on them, stay the same.
				unfused := opts
				unfused.DepthwiseExpansion = false
				ref, _, _ := runCV(t, c.graphOf(ew, eb, wt, b), unfused, inShape, in)
				for i := range ref {
					if math.Float32bits(ref[i]) != math.Float32bits(got[i]) {
						t.Fatalf("output %d: %g fused, %g unfused", i, got[i], ref[i])
					}
				}
			})
		})
	}
}

func hasRewriteContaining(rs []Rewrite, kind, detail string) bool {
	for _, r := range rs {
		if r.Kind == kind && strings.Contains(r.Detail, detail) {
			return true
		}
	}
	return false
}

// TestDepthwiseExpansionSelects checks which expansions the rewrite fuses
// into the depthwise layer and the node it writes.
func TestDepthwiseExpansionSelects(t *testing.T) {
	base := expansionCase{dwCase{n: 1, c: 16, h: 9, w: 9, kh: 3, kw: 3, sh: 2, sw: 2, pads: [4]int{0, 0, 1, 1}, bias: true, swish: true}, 4, true}
	r := rand.New(rand.NewPCG(5, 6))
	graph := func(c expansionCase) *onnx.Model {
		ew, eb := c.expansionWeights(r)
		wt, b := c.weights(r)
		return c.graphOf(ew, eb, wt, b)
	}
	fused := PrepareOptions{SwishOp: "TTMSwish", DepthwiseOp: DepthwiseOp, PointwiseOp: PointwiseOp, DepthwiseExpansion: true}
	prepare := func(m *onnx.Model, c expansionCase, opts PrepareOptions) string {
		t.Helper()
		opts.Inputs = map[string][]int64{"x": {int64(c.n), int64(c.k), int64(c.h), int64(c.w)}}
		opts.ImageInput, opts.Output = "x", m.Graph.Outputs[0].Name
		if _, err := PrepareONNX(m, opts); err != nil {
			t.Fatal(err)
		}
		if err := CheckONNX(m); err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, n := range m.Graph.Nodes {
			s = append(s, n.OpType)
		}
		return strings.Join(s, " ")
	}

	m := graph(base)
	if got := prepare(m, base, fused); got != "TTMDepthwise" {
		t.Fatalf("nodes %q, want one TTMDepthwise", got)
	}
	n := m.Graph.Nodes[0]
	if fmt.Sprint(n.Inputs) != "[x W B EW EB]" || n.AttrInt("expand", 0) != 1 || n.AttrString("expand_activation", "") != "swish" {
		t.Errorf("fused node: inputs %v, expand %d, expand_activation %q", n.Inputs, n.AttrInt("expand", 0), n.AttrString("expand_activation", ""))
	}
	// Without biases the node reads zeros in their place.
	noBias := base
	noBias.bias, noBias.expBias = false, false
	m = graph(noBias)
	prepare(m, noBias, fused)
	for i, name := range []string{"", "", "depthwise bias", "", "expansion bias"} {
		if name == "" {
			continue
		}
		v := m.Graph.Initializer(m.Graph.Nodes[0].Inputs[i])
		if v == nil || len(v.Dims) != 1 || v.Dims[0] != 16 {
			t.Fatalf("%s: %v", name, v)
		}
		f, err := v.Floats()
		if err != nil || zeros(f) != 16 {
			t.Errorf("%s: %v, %v, want 16 zeros", name, f, err)
		}
	}

	cases := []struct {
		name  string
		c     func(c expansionCase) expansionCase
		edit  func(m *onnx.Model)
		opts  PrepareOptions
		nodes string
	}{
		{"stride 1", func(c expansionCase) expansionCase { c.sh, c.sw, c.pads = 1, 1, [4]int{1, 1, 1, 1}; return c }, nil, fused, "TTMPointwise TTMDepthwise"},
		{"24 channels", func(c expansionCase) expansionCase { c.c = 24; return c }, nil, fused, "TTMPointwise TTMDepthwise"},
		{"49 input channels", func(c expansionCase) expansionCase { c.k = 49; return c }, nil, fused, "TTMPointwise TTMDepthwise"},
		{"option off", nil, nil, PrepareOptions{SwishOp: "TTMSwish", DepthwiseOp: DepthwiseOp, PointwiseOp: PointwiseOp}, "TTMPointwise TTMDepthwise"},
		{"separate swish", nil, nil, PrepareOptions{SwishOp: "TTMSwish", DepthwiseOp: DepthwiseOp, PointwiseOp: PointwiseOp, DepthwiseExpansion: true, DepthwiseSeparateSwish: true}, "TTMPointwise TTMDepthwise TTMSwish"},
		{"no pointwise layer", nil, nil, PrepareOptions{SwishOp: "TTMSwish", DepthwiseOp: DepthwiseOp, DepthwiseExpansion: true}, "Conv TTMSwish TTMDepthwise"},
		{"expansion read twice", nil, func(m *onnx.Model) {
			m.Graph.Nodes = append(m.Graph.Nodes, &onnx.Node{Name: "m", OpType: "GlobalAveragePool", Inputs: []string{"e"}, Outputs: []string{"em"}})
			m.Graph.Outputs = append(m.Graph.Outputs, onnx.TensorValue("em", onnx.Float, 1, 16, 1, 1))
		}, fused, "TTMPointwise TTMDepthwise GlobalAveragePool"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			if tc.c != nil {
				c = tc.c(c)
			}
			m := graph(c)
			if tc.edit != nil {
				tc.edit(m)
			}
			if got := prepare(m, c, tc.opts); got != tc.nodes {
				t.Errorf("nodes %q, want %q", got, tc.nodes)
			}
		})
	}
}

// zeros counts the zeros in f.
func zeros(f []float32) int {
	n := 0
	for _, v := range f {
		if v == 0 {
			n++
		}
	}
	return n
}

// BenchmarkExpansionDepthwise runs the strided MBConv expansions and
// depthwise convolutions of EfficientNet-B0 at 224 and B3 at 300 (input
// channels, channels, input side, kernel; stride 2, Keras padding, swish
// and means) as one fused TTMDepthwise layer and as a TTMPointwise and a
// TTMDepthwise layer, on one OpenCV thread with AVX-512. cpu-ms is the
// calling thread's CPU time per forward pass, which other load on the
// machine does not change.
//
//	go test -run '^$' -bench ExpansionDepthwise -benchtime 100x ./vision
func BenchmarkExpansionDepthwise(b *testing.B) {
	if !kernelAVX512.supported() {
		b.Skip("the expansion is fused where the pointwise layer runs: with AVX-512")
	}
	defer SetOpenCVThreads(0)
	SetOpenCVThreads(1)
	shapes := []struct {
		net              string
		k, c, side, kern int
	}{
		{"b0", 16, 96, 112, 3}, {"b0", 24, 144, 56, 5}, {"b0", 40, 240, 28, 3},
		{"b3", 24, 144, 150, 3}, {"b3", 32, 192, 75, 5}, {"b3", 48, 288, 38, 3},
	}
	for _, s := range shapes {
		p := s.kern/2 - 1
		c := expansionCase{dwCase{n: 1, c: s.c, h: s.side, w: s.side, kh: s.kern, kw: s.kern, sh: 2, sw: 2,
			pads: [4]int{p, p, p + 1, p + 1}, bias: true, swish: true, mean: true}, s.k, true}
		r := rand.New(rand.NewPCG(1, 2))
		ew, eb := c.expansionWeights(r)
		wt, bias := c.weights(r)
		in := randSlice32(r, c.k*c.h*c.w)
		for _, fused := range []bool{true, false} {
			name := "separate"
			if fused {
				name = "fused"
			}
			b.Run(fmt.Sprintf("%s-k%d-c%d-%dx%d-k%d/%s", s.net, s.k, s.c, s.side, s.side, s.kern, name), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				opts := PrepareOptions{SwishOp: "TTMSwish", DepthwiseOp: DepthwiseOp, PointwiseOp: PointwiseOp, DepthwiseExpansion: fused}
				net, outLen := loadDepthwise(b, c.graphOf(ew, eb, wt, bias), opts, []int{1, c.k, c.h, c.w})
				defer net.close()
				out := make([]float32, outLen)
				var cpu time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					cpu0 := threadCPUTime()
					if err := net.forward(in, nil, out); err != nil {
						b.Fatal(err)
					}
					cpu += threadCPUTime() - cpu0
				}
				b.ReportMetric(ms(cpu)/float64(b.N), "cpu-ms")
			})
		}
	}
}
