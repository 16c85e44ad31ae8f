package vision

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/onnx"
)

// naiveDepthwise is the reference the TTMDepthwise layer is checked
// against: a direct loop in float64.
//
//	in (N, C, H, W), w (C, kh, kw), b (C) or nil, pads top, left, bottom,
//	right; out (N, C, Ho, Wo) with Ho = (H + top + bottom - kh) / sh + 1.
//
// swish applies x·sigmoid(x) to the result.
func naiveDepthwise(in []float32, n, c, h, w int, wt, b []float32, kh, kw, sh, sw int, pads [4]int, swish bool) (out []float32, ho, wo int) {
	ho = (h+pads[0]+pads[2]-kh)/sh + 1
	wo = (w+pads[1]+pads[3]-kw)/sw + 1
	out = make([]float32, n*c*ho*wo)
	for p := 0; p < n*c; p++ {
		ch := p % c
		for oy := 0; oy < ho; oy++ {
			for ox := 0; ox < wo; ox++ {
				s := 0.0
				if b != nil {
					s = float64(b[ch])
				}
				for ky := 0; ky < kh; ky++ {
					iy := oy*sh + ky - pads[0]
					if iy < 0 || iy >= h {
						continue
					}
					for kx := 0; kx < kw; kx++ {
						ix := ox*sw + kx - pads[1]
						if ix < 0 || ix >= w {
							continue
						}
						s += float64(wt[(ch*kh+ky)*kw+kx]) * float64(in[(p*h+iy)*w+ix])
					}
				}
				if swish {
					s /= 1 + math.Exp(-s)
				}
				out[(p*ho+oy)*wo+ox] = float32(s)
			}
		}
	}
	return out, ho, wo
}

// TestNaiveDepthwiseHandComputed pins the reference itself to values
// worked out by hand.
func TestNaiveDepthwiseHandComputed(t *testing.T) {
	// One 3x3 channel 1..9, kernel [[1 0] [0 -1]] (2x2), bias 10, stride 1,
	// pads top 1, left 0, bottom 0, right 1: output 3x3, where row -1 and
	// column 3 are zero. out[oy][ox] = x[oy-1][ox] - x[oy][ox+1] + 10.
	in := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}
	got, ho, wo := naiveDepthwise(in, 1, 1, 3, 3, []float32{1, 0, 0, -1}, []float32{10}, 2, 2, 1, 1, [4]int{1, 0, 0, 1}, false)
	want := []float32{
		10 - 2, 10 - 3, 10 - 0,
		1 - 5 + 10, 2 - 6 + 10, 3 - 0 + 10,
		4 - 8 + 10, 5 - 9 + 10, 6 - 0 + 10,
	}
	if ho != 3 || wo != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %dx%d %v, want 3x3 %v", ho, wo, got, want)
	}
	// Stride 2 on 1..9 with a 1x1 kernel 2 picks 1 3 7 9, doubled; swish
	// of 2 is 2/(1+e^-2).
	got, ho, wo = naiveDepthwise(in, 1, 1, 3, 3, []float32{2}, nil, 1, 1, 2, 2, [4]int{}, false)
	if ho != 2 || wo != 2 || fmt.Sprint(got) != fmt.Sprint([]float32{2, 6, 14, 18}) {
		t.Errorf("stride 2: got %dx%d %v", ho, wo, got)
	}
	got, _, _ = naiveDepthwise([]float32{1}, 1, 1, 1, 1, []float32{2}, nil, 1, 1, 1, 1, [4]int{}, true)
	if want := 2 / (1 + math.Exp(-2)); math.Abs(float64(got[0])-want) > 1e-6 {
		t.Errorf("swish: %g, want %g", got[0], want)
	}
}

// dwCase is one depthwise convolution.
type dwCase struct {
	name        string
	n, c, h, w  int
	kh, kw      int
	sh, sw      int
	pads        [4]int // top, left, bottom, right
	bias, swish bool
	autoPad     string // "" for explicit pads
	// mean multiplies the output by its channel means (a
	// GlobalAveragePool and a Mul), as a squeeze-excitation reads them.
	mean bool
}

// weights draws the weights (C, kh, kw) and the bias (C, nil without).
func (c dwCase) weights(r *rand.Rand) (wt, b []float32) {
	wt = randSlice32(r, c.c*c.kh*c.kw)
	if c.bias {
		b = randSlice32(r, c.c)
	}
	return wt, b
}

// graph builds the Conv (plus Sigmoid+Mul for swish) with random weights.
func (c dwCase) graph(r *rand.Rand) *onnx.Model { return c.graphOf(c.weights(r)) }

// graphOf builds the Conv (plus Sigmoid+Mul for swish), input "x",
// output "y".
func (c dwCase) graphOf(wt, b []float32) *onnx.Model {
	g := newTestGraph(13).input("x", int64(c.n), int64(c.c), int64(c.h), int64(c.w))
	g.floats("W", wt, int64(c.c), 1, int64(c.kh), int64(c.kw))
	inputs := []string{"x", "W"}
	if b != nil {
		g.floats("B", b, int64(c.c))
		inputs = append(inputs, "B")
	}
	attrs := []*onnx.Attribute{
		onnx.IntsAttr("kernel_shape", int64(c.kh), int64(c.kw)),
		onnx.IntsAttr("strides", int64(c.sh), int64(c.sw)),
		onnx.IntAttr("group", int64(c.c)),
	}
	if c.autoPad != "" {
		attrs = append(attrs, onnx.StringAttr("auto_pad", c.autoPad))
	} else {
		attrs = append(attrs, onnx.IntsAttr("pads", int64(c.pads[0]), int64(c.pads[1]), int64(c.pads[2]), int64(c.pads[3])))
	}
	act := "y"
	if c.mean {
		act = "a"
	}
	out := act
	if c.swish {
		out = "z"
	}
	g.node("Conv", inputs, out, attrs...)
	if c.swish {
		g.node("Sigmoid", []string{"z"}, "s")
		g.node("Mul", []string{"z", "s"}, act)
	}
	if c.mean {
		g.node("GlobalAveragePool", []string{"a"}, "m")
		g.node("Mul", []string{"a", "m"}, "y")
	}
	g.output("y")
	return g.m
}

// runCV prepares m with opts, loads it into OpenCV through the shim and
// runs it on in (shape inShape), returning the output "y".
func runCV(t *testing.T, m *onnx.Model, opts PrepareOptions, inShape []int, in []float32) ([]float32, []Rewrite, []LayerTiming) {
	t.Helper()
	opts.Inputs = map[string][]int64{"x": {int64(inShape[0]), int64(inShape[1]), int64(inShape[2]), int64(inShape[3])}}
	opts.ImageInput, opts.Output = "x", "y"
	rs, err := PrepareONNX(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckONNX(m); err != nil {
		t.Fatal(err)
	}
	buf, err := onnx.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	net, err := readONNX(buf)
	if err != nil {
		t.Fatal(err)
	}
	defer net.close()
	if err := net.configure(netConfig{inName: "x", inShape: inShape, outName: "y"}); err != nil {
		t.Fatal(err)
	}
	if err := net.forward(in, nil, nil); err != nil {
		t.Fatal(err)
	}
	n := 1
	for _, d := range net.lastShape() {
		n *= d
	}
	out := make([]float32, n)
	if err := net.forward(in, nil, out); err != nil {
		t.Fatal(err)
	}
	ts, _, err := net.profile()
	if err != nil {
		t.Fatal(err)
	}
	return out, rs, ts
}

// forEachISA runs f with each layer kernel set this CPU supports selected,
// and selects the best one again afterwards.
func forEachISA(t *testing.T, f func(isa kernelISA)) {
	t.Helper()
	defer func() {
		if err := setKernelISA(kernelBest); err != nil {
			t.Fatal(err)
		}
	}()
	ran := 0
	for _, isa := range kernelISAs {
		if !isa.supported() {
			t.Logf("layer kernels %s: not supported by this CPU, not tested", isa)
			continue
		}
		if err := setKernelISA(isa); err != nil {
			t.Fatal(err)
		}
		f(isa)
		ran++
	}
	if ran == 0 {
		t.Fatal("no layer kernels supported, not even the generic one")
	}
}

// TestDepthwiseLayerMatchesNaive runs single depthwise convolutions through
// the rewrite and the TTMDepthwise layer, with every kernel the CPU runs,
// against naiveDepthwise: odd kernels and sizes, strides 1, 2 and 3,
// asymmetric and over-wide pads, 1x1 maps, channel counts that are not
// multiples of any vector width, maps wide enough for every block size of
// the kernels, a batch of 2, and the fused swish. OpenCV's own convolution
// of the same graph must agree too.
func TestDepthwiseLayerMatchesNaive(t *testing.T) {
	cases := []dwCase{
		{name: "3x3/1 pad 1", n: 1, c: 5, h: 9, w: 7, kh: 3, kw: 3, sh: 1, sw: 1, pads: [4]int{1, 1, 1, 1}, bias: true},
		{name: "3x3/2 keras", n: 1, c: 3, h: 8, w: 9, kh: 3, kw: 3, sh: 2, sw: 2, pads: [4]int{0, 0, 1, 1}, bias: true, swish: true},
		{name: "5x5/2 same", n: 1, c: 17, h: 15, w: 14, kh: 5, kw: 5, sh: 2, sw: 2, pads: [4]int{2, 1, 2, 2}, bias: true, swish: true},
		{name: "5x5/1 14x14 swish", n: 1, c: 33, h: 14, w: 14, kh: 5, kw: 5, sh: 1, sw: 1, pads: [4]int{2, 2, 2, 2}, bias: true, swish: true},
		{name: "5x5/1 7x7", n: 1, c: 19, h: 7, w: 7, kh: 5, kw: 5, sh: 1, sw: 1, pads: [4]int{2, 2, 2, 2}, bias: true},
		{name: "3x3 on 1x1", n: 1, c: 7, h: 1, w: 1, kh: 3, kw: 3, sh: 1, sw: 1, pads: [4]int{1, 1, 1, 1}, bias: true},
		{name: "5x5/2 on 1x1", n: 1, c: 2, h: 1, w: 1, kh: 5, kw: 5, sh: 2, sw: 2, pads: [4]int{2, 2, 2, 2}, bias: true, swish: true},
		{name: "asymmetric pads", n: 1, c: 4, h: 6, w: 11, kh: 3, kw: 3, sh: 1, sw: 1, pads: [4]int{2, 0, 1, 3}},
		{name: "pads wider than kernel", n: 1, c: 3, h: 4, w: 5, kh: 3, kw: 3, sh: 2, sw: 1, pads: [4]int{4, 3, 4, 3}, bias: true},
		{name: "7x7/1", n: 1, c: 6, h: 10, w: 12, kh: 7, kw: 7, sh: 1, sw: 1, pads: [4]int{3, 3, 3, 3}, bias: true},
		{name: "1x1 kernel", n: 1, c: 9, h: 5, w: 4, kh: 1, kw: 1, sh: 1, sw: 1, bias: true},
		{name: "3x5 strides 1,2", n: 1, c: 5, h: 9, w: 16, kh: 3, kw: 5, sh: 1, sw: 2, pads: [4]int{1, 2, 1, 1}, bias: true},
		{name: "3x3/3", n: 1, c: 3, h: 13, w: 11, kh: 3, kw: 3, sh: 3, sw: 3, pads: [4]int{1, 0, 1, 2}, bias: true},
		{name: "wide rows", n: 1, c: 3, h: 5, w: 301, kh: 3, kw: 3, sh: 1, sw: 1, pads: [4]int{1, 1, 1, 1}, bias: true, swish: true},
		{name: "wide rows stride 2", n: 1, c: 2, h: 6, w: 257, kh: 5, kw: 5, sh: 2, sw: 2, pads: [4]int{1, 1, 2, 2}, bias: true},
		{name: "batch of 2", n: 2, c: 5, h: 6, w: 6, kh: 3, kw: 3, sh: 2, sw: 2, pads: [4]int{1, 1, 1, 1}, bias: true, swish: true},
		{name: "no bias", n: 1, c: 4, h: 5, w: 5, kh: 3, kw: 3, sh: 1, sw: 1, pads: [4]int{1, 1, 1, 1}},
		{name: "SAME_UPPER 5x5/2", n: 1, c: 3, h: 10, w: 9, kh: 5, kw: 5, sh: 2, sw: 2, autoPad: "SAME_UPPER", bias: true},
		{name: "SAME_LOWER 4x4/2", n: 1, c: 3, h: 7, w: 8, kh: 4, kw: 4, sh: 2, sw: 2, autoPad: "SAME_LOWER", bias: true},
		{name: "VALID 3x3/1", n: 1, c: 3, h: 6, w: 5, kh: 3, kw: 3, sh: 1, sw: 1, autoPad: "VALID", bias: true},
		{name: "mean 3x3/2 keras", n: 1, c: 3, h: 8, w: 9, kh: 3, kw: 3, sh: 2, sw: 2, pads: [4]int{0, 0, 1, 1}, bias: true, swish: true, mean: true},
		{name: "mean wide rows", n: 1, c: 3, h: 5, w: 301, kh: 3, kw: 3, sh: 1, sw: 1, pads: [4]int{1, 1, 1, 1}, bias: true, swish: true, mean: true},
		{name: "mean batch of 2", n: 2, c: 5, h: 6, w: 6, kh: 3, kw: 3, sh: 2, sw: 2, pads: [4]int{1, 1, 1, 1}, bias: true, mean: true},
		{name: "mean 1x1 map", n: 1, c: 7, h: 1, w: 1, kh: 3, kw: 3, sh: 1, sw: 1, pads: [4]int{1, 1, 1, 1}, bias: true, swish: true, mean: true},
		// Channels in 16s on small maps take the blocked path with AVX-512.
		{name: "blocked 5x5/1 9x9", n: 1, c: 32, h: 9, w: 9, kh: 5, kw: 5, sh: 1, sw: 1, pads: [4]int{2, 2, 2, 2}, bias: true, swish: true, mean: true},
		{name: "blocked 3x3/2 keras", n: 1, c: 16, h: 19, w: 18, kh: 3, kw: 3, sh: 2, sw: 2, pads: [4]int{0, 0, 1, 1}, bias: true, swish: true},
		{name: "blocked 5x5/2 wide", n: 1, c: 48, h: 7, w: 37, kh: 5, kw: 5, sh: 2, sw: 2, pads: [4]int{1, 1, 2, 2}, bias: true, mean: true},
		{name: "blocked 3x3/1 7x7 batch of 2", n: 2, c: 32, h: 7, w: 7, kh: 3, kw: 3, sh: 1, sw: 1, pads: [4]int{1, 1, 1, 1}, swish: true, mean: true},
		{name: "blocked pads wider than kernel", n: 1, c: 16, h: 4, w: 5, kh: 3, kw: 3, sh: 2, sw: 1, pads: [4]int{4, 3, 4, 3}, bias: true},
		{name: "blocked 1x1 map", n: 1, c: 16, h: 1, w: 1, kh: 5, kw: 5, sh: 1, sw: 1, pads: [4]int{2, 2, 2, 2}, bias: true, swish: true, mean: true},
		{name: "blocked 3x5 strides 1,2 no pad", n: 1, c: 16, h: 6, w: 23, kh: 3, kw: 5, sh: 1, sw: 2, bias: true},
		{name: "blocked at the size limit", n: 1, c: 16, h: 40, w: 40, kh: 3, kw: 3, sh: 1, sw: 1, pads: [4]int{1, 1, 1, 1}, bias: true, swish: true, mean: true},
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inShape := []int{c.n, c.c, c.h, c.w}
			in := randSlice32(r, c.n*c.c*c.h*c.w)
			wt, b := c.weights(r)
			pads := c.pads
			switch c.autoPad {
			case "SAME_UPPER", "SAME_LOWER":
				for i, sz := range []int{c.h, c.w} {
					k, s := []int{c.kh, c.kw}[i], []int{c.sh, c.sw}[i]
					total := max(((sz+s-1)/s-1)*s+k-sz, 0)
					lo, hi := total/2, total-total/2
					if c.autoPad == "SAME_LOWER" {
						lo, hi = hi, lo
					}
					pads[i], pads[i+2] = lo, hi
				}
			}
			want, ho, wo := naiveDepthwise(in, c.n, c.c, c.h, c.w, wt, b, c.kh, c.kw, c.sh, c.sw, pads, c.swish)
			if c.mean {
				timesMean(want, ho*wo)
			}
			_, _, scale := moments(want)
			tol := 1e-5 * (1 + scale)

			// OpenCV's own convolution, as an independent second opinion.
			// OpenCV 4.6 pads SAME_LOWER as SAME_UPPER (the extra row and
			// column at the end); ONNX puts them at the start, as the
			// rewrite does.
			ocvPads := pads
			if c.autoPad == "SAME_LOWER" {
				ocvPads = [4]int{pads[2], pads[3], pads[0], pads[1]}
			}
			ocv, _, _ := naiveDepthwise(in, c.n, c.c, c.h, c.w, wt, b, c.kh, c.kw, c.sh, c.sw, ocvPads, c.swish)
			if c.mean {
				timesMean(ocv, ho*wo)
			}
			ref, _, _ := runCV(t, c.graphOf(wt, b), PrepareOptions{SwishOp: "TTMSwish"}, inShape, in)
			if d := maxDiff(ref, ocv); len(ref) != len(ocv) || d > tol {
				t.Fatalf("OpenCV's convolution and the naive one differ by %g (%d vs %d values)", d, len(ref), len(ocv))
			}

			forEachISA(t, func(isa kernelISA) {
				got, rs, ts := runCV(t, c.graphOf(wt, b), PrepareOptions{SwishOp: "TTMSwish", DepthwiseOp: DepthwiseOp}, inShape, in)
				if len(got) != len(want) {
					t.Fatalf("%s: %d outputs, want %d", isa, len(got), len(want))
				}
				if d := maxDiff(got, want); d > tol {
					t.Errorf("%s: TTMDepthwise differs from the naive convolution by %g (tolerance %g)", isa, d, tol)
				}
				if types := layerTypes(ts); types[DepthwiseOp] != 1 || types["Convolution"] != 0 || types["TTMSwish"] != 0 || types["Pooling"] != 0 {
					t.Errorf("%s: OpenCV's layers %v, want one %s and nothing else computing", isa, types, DepthwiseOp)
				}
				fused := 0
				if c.swish {
					fused = 1
				}
				detail := fmt.Sprintf("1 depthwise Conv nodes to TTMDepthwise layers, %d with the TTMSwish after them fused", fused)
				if c.mean {
					detail += ", 1 with the global average pooling of their output"
				}
				if !hasRewrite(rs, RewriteDepthwise, detail) {
					t.Errorf("%s: rewrites %v, want %q", isa, rs, detail)
				}
			})
		})
	}
}

// timesMean multiplies each plane of n values of x by the plane's mean.
func timesMean(x []float32, n int) {
	for p := 0; p < len(x); p += n {
		var sum float64
		for _, v := range x[p : p+n] {
			sum += float64(v)
		}
		for i := p; i < p+n; i++ {
			x[i] *= float32(sum / float64(n))
		}
	}
}

func hasRewrite(rs []Rewrite, kind, detail string) bool {
	for _, r := range rs {
		if r.Kind == kind && r.Detail == detail {
			return true
		}
	}
	return false
}

// TestDepthwiseRewriteSelects checks which Convs the rewrite takes, the
// attributes it writes, and when it fuses the swish.
func TestDepthwiseRewriteSelects(t *testing.T) {
	base := dwCase{n: 1, c: 4, h: 9, w: 9, kh: 3, kw: 3, sh: 2, sw: 2, pads: [4]int{0, 0, 1, 1}, bias: true, swish: true}
	r := rand.New(rand.NewPCG(1, 1))
	prepare := func(m *onnx.Model, opts PrepareOptions) []Rewrite {
		t.Helper()
		opts.Inputs = map[string][]int64{"x": {1, 4, 9, 9}}
		opts.ImageInput, opts.Output = "x", "y"
		rs, err := PrepareONNX(m, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckONNX(m); err != nil {
			t.Fatal(err)
		}
		return rs
	}
	ops := func(m *onnx.Model) string {
		var s []string
		for _, n := range m.Graph.Nodes {
			s = append(s, n.OpType)
		}
		return strings.Join(s, " ")
	}
	fast := PrepareOptions{SwishOp: "TTMSwish", DepthwiseOp: DepthwiseOp}

	m := base.graph(r)
	prepare(m, fast)
	if got := ops(m); got != "TTMDepthwise" {
		t.Fatalf("nodes %q, want one TTMDepthwise", got)
	}
	n := m.Graph.Nodes[0]
	if fmt.Sprintf("%v %v %v %s", n.AttrInts("kernel"), n.AttrInts("strides"), n.AttrInts("pads"), n.AttrString("activation", "")) != "[3 3] [2 2] [0 0 1 1] swish" ||
		len(n.Attributes) != 4 || fmt.Sprint(n.Inputs, n.Outputs) != "[x W B] [y]" {
		t.Errorf("node %+v: attributes %v %v %v %q", n, n.AttrInts("kernel"), n.AttrInts("strides"), n.AttrInts("pads"), n.AttrString("activation", ""))
	}

	cases := []struct {
		name  string
		edit  func(m *onnx.Model)
		opts  PrepareOptions
		nodes string
	}{
		{"separate swish", nil, PrepareOptions{SwishOp: "TTMSwish", DepthwiseOp: DepthwiseOp, DepthwiseSeparateSwish: true}, "TTMDepthwise TTMSwish"},
		{"off", nil, PrepareOptions{SwishOp: "TTMSwish"}, "Conv TTMSwish"},
		{"OpenCV's swish is not fused", nil, PrepareOptions{SwishOp: "Swish", DepthwiseOp: DepthwiseOp}, "TTMDepthwise Swish"},
		{"unfused swish", nil, PrepareOptions{DepthwiseOp: DepthwiseOp}, "TTMDepthwise Sigmoid Mul"},
		{"dilation 2", func(m *onnx.Model) { m.Graph.Nodes[0].SetAttr(onnx.IntsAttr("dilations", 2, 2)) }, fast, "Conv TTMSwish"},
		{"group 1", func(m *onnx.Model) { m.Graph.Nodes[0].SetAttr(onnx.IntAttr("group", 1)) }, fast, "Conv TTMSwish"},
		{"kernel_shape disagrees", func(m *onnx.Model) { m.Graph.Nodes[0].SetAttr(onnx.IntsAttr("kernel_shape", 2, 2)) }, fast, "Conv TTMSwish"},
		{"kernel too large", func(m *onnx.Model) {
			m.Graph.Initializers[0] = onnx.FloatTensor("W", make([]float32, 4*65*65), 4, 1, 65, 65)
			m.Graph.Nodes[0].DeleteAttr("kernel_shape")
			m.Graph.Nodes[0].SetAttr(onnx.IntsAttr("pads", 32, 32, 32, 32))
		}, fast, "Conv TTMSwish"},
		{"conv output read twice", func(m *onnx.Model) {
			m.Graph.Nodes = append(m.Graph.Nodes, &onnx.Node{Name: "y2", OpType: "Add", Inputs: []string{"y", "z"}, Outputs: []string{"y2"}})
			m.Graph.Outputs[0].Name = "y2"
		}, fast, "TTMDepthwise TTMSwish Add"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := base.graph(r)
			if c.edit != nil {
				c.edit(m)
			}
			opts := c.opts
			opts.Inputs = map[string][]int64{"x": {1, 4, 9, 9}}
			opts.ImageInput, opts.Output = "x", m.Graph.Outputs[0].Name
			if _, err := PrepareONNX(m, opts); err != nil {
				t.Fatal(err)
			}
			if err := CheckONNX(m); err != nil {
				t.Fatal(err)
			}
			if got := ops(m); got != c.nodes {
				t.Errorf("nodes %q, want %q", got, c.nodes)
			}
		})
	}

	// The pre-activation value read as the output is not fused away.
	m = base.graph(r)
	m.Graph.Outputs = append(m.Graph.Outputs, onnx.TensorValue("z", onnx.Float, 1, 4, 5, 5))
	prepare(m, fast)
	if got := ops(m); got != "TTMDepthwise TTMSwish" {
		t.Errorf("with the convolution's output a graph output: nodes %q", got)
	}
	// SAME_UPPER resolved to explicit pads: 9 wide, stride 2, kernel 4:
	// 5 outputs, (5-1)*2+4-9 = 3 padding, 1 before and 2 after.
	m = dwCase{n: 1, c: 4, h: 9, w: 9, kh: 4, kw: 4, sh: 2, sw: 2, autoPad: "SAME_UPPER"}.graph(r)
	prepare(m, fast)
	if got := m.Graph.Nodes[0].AttrInts("pads"); fmt.Sprint(got) != "[1 1 2 2]" || m.Graph.Nodes[0].Attr("auto_pad") != nil {
		t.Errorf("SAME_UPPER: pads %v", got)
	}
}

// TestDepthwiseLayerRejects gives the layer attributes and weights it
// cannot run: each must come back from OpenBackbone as an error naming the
// problem (the shim catches the layer's C++ exception), and the process
// must survive to the end of the test.
func TestDepthwiseLayerRejects(t *testing.T) {
	// expansion makes n read an expansion of k inputs to m channels (zero
	// weights and bias): the attributes expand and expand_activation.
	expansion := func(g *testGraph, n *onnx.Node, m, k int64) {
		g.floats("EW", make([]float32, m*k), m, k, 1, 1).floats("EB", make([]float32, 3), 3)
		n.Inputs = append(n.Inputs, "EW", "EB")
		n.SetAttr(onnx.IntAttr("expand", 1))
		n.SetAttr(onnx.StringAttr("expand_activation", "swish"))
	}
	graph := func(edit func(g *testGraph, n *onnx.Node)) BackboneSpec {
		g := newTestGraph(13).input("x", 1, 3, 4, 4)
		g.floats("W", make([]float32, 27), 3, 1, 3, 3).floats("B", make([]float32, 3), 3)
		g.node(DepthwiseOp, []string{"x", "W", "B"}, "y",
			onnx.IntsAttr("kernel", 3, 3), onnx.IntsAttr("strides", 1, 1), onnx.IntsAttr("pads", 1, 1, 1, 1))
		g.output("y", 1, 3, 4, 4)
		edit(g, g.m.Graph.Nodes[0])
		return BackboneSpec{Path: g.file(t), Height: 4, Width: 4}
	}
	cases := []struct {
		name string
		edit func(g *testGraph, n *onnx.Node)
		want string
	}{
		{"kernel mismatch", func(_ *testGraph, n *onnx.Node) { n.SetAttr(onnx.IntsAttr("kernel", 5, 5)) }, "attribute kernel 5x5 does not match the weights' 3x3"},
		{"negative pad", func(_ *testGraph, n *onnx.Node) { n.SetAttr(onnx.IntsAttr("pads", -1, 1, 1, 1)) }, "pads -1,1,1,1 outside 0..4096"},
		{"stride too large", func(_ *testGraph, n *onnx.Node) { n.SetAttr(onnx.IntsAttr("strides", 100, 1)) }, "strides 100,1 outside 1..64"},
		{"three strides", func(_ *testGraph, n *onnx.Node) { n.SetAttr(onnx.IntsAttr("strides", 1, 1, 1)) }, "attribute strides must hold 1 or 2 integers"},
		{"kernel as a string", func(_ *testGraph, n *onnx.Node) { n.SetAttr(onnx.StringAttr("kernel", "3x3")) }, "attribute kernel must hold 1 or 2 integers"},
		{"unknown activation", func(_ *testGraph, n *onnx.Node) { n.SetAttr(onnx.StringAttr("activation", "relu6")) }, `activation "relu6"; have "swish" and "none"`},
		{"activation as a number", func(_ *testGraph, n *onnx.Node) { n.SetAttr(onnx.IntAttr("activation", 1)) }, "attribute activation must be a string"},
		{"weights not depthwise", func(g *testGraph, _ *onnx.Node) {
			g.m.Graph.Initializers[0] = onnx.FloatTensor("W", make([]float32, 54), 3, 2, 3, 3)
		}, "weights are float32 (3, 2, 3, 3), want float32 (C, 1, kh, kw)"},
		{"weights for 4 channels", func(g *testGraph, _ *onnx.Node) {
			g.m.Graph.Initializers[0] = onnx.FloatTensor("W", make([]float32, 36), 4, 1, 3, 3)
			g.m.Graph.Initializers[1] = onnx.FloatTensor("B", make([]float32, 4), 4)
		}, "input has 3 channels, the weights 4"},
		{"short bias", func(g *testGraph, _ *onnx.Node) {
			g.m.Graph.Initializers[1] = onnx.FloatTensor("B", make([]float32, 2), 2)
		}, "bias has 2 values, want 3"},
		{"no weights", func(_ *testGraph, n *onnx.Node) { n.Inputs = n.Inputs[:1] }, "has 0 constant inputs"},
		{"expansion without its weights", func(_ *testGraph, n *onnx.Node) {
			n.SetAttr(onnx.IntAttr("expand", 1))
			n.SetAttr(onnx.StringAttr("expand_activation", "swish"))
		}, "has 2 constant inputs; it needs the weights (C, 1, kh, kw) and the bias (C), then the expansion's weights (C, K, 1, 1) and bias (C)"},
		{"expansion without its activation", func(g *testGraph, n *onnx.Node) {
			expansion(g, n, 3, 2)
			n.DeleteAttr("expand_activation")
		}, `attribute expand_activation must be "swish"`},
		{"expansion weights for 4 channels", func(g *testGraph, n *onnx.Node) { expansion(g, n, 4, 2) },
			"expansion weights are float32 (4, 2, 1, 1), want float32 (3, K, 1, 1)"},
		{"expansion of 5 input channels", func(g *testGraph, n *onnx.Node) { expansion(g, n, 3, 5) },
			"input has 3 channels, the weights 5"},
		{"expansion with a short bias", func(g *testGraph, n *onnx.Node) {
			expansion(g, n, 3, 3)
			g.m.Graph.Initializers[1] = onnx.FloatTensor("B", make([]float32, 2), 2)
		}, "bias has 2 values, want 3"},
		{"kernel larger than the padded input", func(g *testGraph, n *onnx.Node) {
			g.m.Graph.Initializers[0] = onnx.FloatTensor("W", make([]float32, 3*49), 3, 1, 7, 7)
			n.SetAttr(onnx.IntsAttr("kernel", 7, 7))
			n.SetAttr(onnx.IntsAttr("pads", 1, 1, 1, 0))
		}, "input 4x4 with pads 1,1,1,0 is smaller than the kernel 7x7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := OpenBackbone(graph(c.edit), nil)
			if err == nil {
				b.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "TTMDepthwise layer onnx_node!y:") {
				t.Errorf("error %q, want one naming the layer and containing %q", err, c.want)
			}
		})
	}
	// The unedited graph runs: 4x4 input of ones, zero weights but the
	// centre tap 1, bias 0: the output is the input.
	spec := graph(func(g *testGraph, _ *onnx.Node) {
		w := make([]float32, 27)
		for c := 0; c < 3; c++ {
			w[c*9+4] = 1
		}
		g.m.Graph.Initializers[0] = onnx.FloatTensor("W", w, 3, 1, 3, 3)
	})
	b := openTest(t, spec)
	in := randSlice32(rand.New(rand.NewPCG(3, 3)), 48)
	if d := maxDiff(run(t, b, in, nil), in); d != 0 {
		t.Errorf("identity kernel: output differs from the input by %g", d)
	}
}

func TestDepthwiseModeChecked(t *testing.T) {
	path := handGraph().file(t)
	for _, m := range []DepthwiseMode{-1, 3} {
		_, err := OpenBackbone(BackboneSpec{Path: path, Height: 3, Width: 3, Depthwise: m}, nil)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("unknown depthwise mode %d", int(m))) {
			t.Errorf("mode %d: %v", int(m), err)
		}
	}
	for m, want := range map[DepthwiseMode]string{DepthwiseFast: "fast", DepthwiseSeparateSwish: "fast-separate-swish", DepthwiseOpenCV: "opencv", 9: "DepthwiseMode(9)"} {
		if m.String() != want {
			t.Errorf("%d: %q, want %q", int(m), m.String(), want)
		}
	}
	if k := LayerKernel(); k != "avx512" && k != "avx2" && k != "generic" {
		t.Errorf("LayerKernel() = %q", k)
	}
	if !kernelGeneric.supported() {
		t.Error("the generic kernel is not supported")
	}
	if err := setKernelISA(99); err == nil {
		t.Error("kernel 99 accepted")
	}
}
