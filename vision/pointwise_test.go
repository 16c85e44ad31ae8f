package vision

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/layer"
	"github.com/ttmrobot/ttm/internal/onnx"
)

// pwCase is one 1x1 convolution with what may be fused around it.
type pwCase struct {
	name              string
	n, k, m, h, w     int
	bias, swish       bool
	scale, residual   bool
	residualAfterConv bool // the residual's producer comes after the Conv
	film              int  // 0: none; 1: FiLM's coefficients by Convs; 2: by Gemms of an embedding
}

// pwWeights holds a case's constants: W (M, K), B (M), the residual's
// 3x3 convolution R (M, K, 3, 3), FiLM's F and G (M, K) and, for its
// Gemms, their biases fb and gb (M).
type pwWeights struct{ w, b, r, f, g, fb, gb []float32 }

func (c pwCase) weights(r *rand.Rand) pwWeights {
	p := pwWeights{w: randSlice32(r, c.m*c.k), r: randSlice32(r, c.m*c.k*9), f: randSlice32(r, c.m*c.k), g: randSlice32(r, c.m*c.k),
		fb: randSlice32(r, c.m), gb: randSlice32(r, c.m)}
	if c.bias {
		p.b = randSlice32(r, c.m)
	}
	return p
}

// graph builds, from input "x" to output "y":
//
//	s = Sigmoid(GlobalAveragePool(x))         if scale
//	z = Conv1x1(scale ? Mul(x, s) : x, W, B)
//	z = z * Sigmoid(z)                          if swish
//	z = z + Conv3x3(x, R)                       if residual
//	y = z * Conv1x1(GlobalAveragePool(x), F)
//	      + Conv1x1(GlobalAveragePool(x), G)    if film 1 (FiLM computed after
//	                                            the Conv, as in the exported
//	                                            graphs)
//	y = z * Reshape(Gemm(e, F, fb))
//	      + Reshape(Gemm(e, G, gb))             if film 2, e = Reshape(
//	                                            GlobalAveragePool(x)) (N, K)
func (c pwCase) graph(p pwWeights) *onnx.Model {
	g := newTestGraph(13).input("x", int64(c.n), int64(c.k), int64(c.h), int64(c.w))
	g.floats("W", p.w, int64(c.m), int64(c.k), 1, 1)
	g.floats("R", p.r, int64(c.m), int64(c.k), 3, 3)
	residual := func() {
		g.node("Conv", []string{"x", "R"}, "r", onnx.IntsAttr("kernel_shape", 3, 3), onnx.IntsAttr("pads", 1, 1, 1, 1))
	}
	if c.residual && !c.residualAfterConv {
		residual()
	}
	in := "x"
	if c.scale {
		g.node("GlobalAveragePool", []string{"x"}, "g")
		g.node("Sigmoid", []string{"g"}, "s")
		g.node("Mul", []string{"x", "s"}, "xs")
		in = "xs"
	}
	inputs := []string{in, "W"}
	if p.b != nil {
		g.floats("B", p.b, int64(c.m))
		inputs = append(inputs, "B")
	}
	g.node("Conv", inputs, "z", onnx.IntsAttr("kernel_shape", 1, 1))
	out := "z"
	if c.swish {
		g.node("Sigmoid", []string{"z"}, "zs")
		g.node("Mul", []string{"z", "zs"}, "za")
		out = "za"
	}
	if c.residual {
		if c.residualAfterConv {
			residual()
		}
		g.node("Add", []string{out, "r"}, "zr")
		out = "zr"
	}
	switch c.film {
	case 1:
		g.floats("F", p.f, int64(c.m), int64(c.k), 1, 1)
		g.floats("G", p.g, int64(c.m), int64(c.k), 1, 1)
		g.node("GlobalAveragePool", []string{"x"}, "gx")
		g.node("Conv", []string{"gx", "F"}, "fm", onnx.IntsAttr("kernel_shape", 1, 1))
		g.node("Conv", []string{"gx", "G"}, "fa", onnx.IntsAttr("kernel_shape", 1, 1))
	case 2:
		g.floats("F", p.f, int64(c.m), int64(c.k))
		g.floats("G", p.g, int64(c.m), int64(c.k))
		g.floats("Fb", p.fb, int64(c.m))
		g.floats("Gb", p.gb, int64(c.m))
		g.ints("es", []int64{int64(c.n), int64(c.k)}, 2)
		g.ints("cs", []int64{int64(c.n), int64(c.m), 1, 1}, 4)
		g.node("GlobalAveragePool", []string{"x"}, "gx")
		g.node("Reshape", []string{"gx", "es"}, "e")
		g.node("Gemm", []string{"e", "F", "Fb"}, "fm2", onnx.IntAttr("transB", 1))
		g.node("Gemm", []string{"e", "G", "Gb"}, "fa2", onnx.IntAttr("transB", 1))
		g.node("Reshape", []string{"fm2", "cs"}, "fm")
		g.node("Reshape", []string{"fa2", "cs"}, "fa")
	}
	if c.film != 0 {
		g.node("Mul", []string{out, "fm"}, "zm")
		g.node("Add", []string{"zm", "fa"}, "y")
	} else {
		g.node("Identity", []string{out}, "y")
	}
	g.output("y")
	return g.m
}

// naive computes the case in float64 from its definition.
func (c pwCase) naive(x []float32, p pwWeights) []float64 {
	hw := c.h * c.w
	y := make([]float64, c.n*c.m*hw)
	for b := 0; b < c.n; b++ {
		xb := x[b*c.k*hw : (b+1)*c.k*hw]
		s, means := make([]float64, c.k), make([]float64, c.k)
		for k := range s {
			for _, v := range xb[k*hw : (k+1)*hw] {
				means[k] += float64(v)
			}
			means[k] /= float64(hw)
			s[k] = 1
			if c.scale {
				s[k] = 1 / (1 + math.Exp(-means[k]))
			}
		}
		for m := 0; m < c.m; m++ {
			for i := 0; i < hw; i++ {
				z := 0.0
				if p.b != nil {
					z = float64(p.b[m])
				}
				for k := 0; k < c.k; k++ {
					z += float64(p.w[m*c.k+k]) * s[k] * float64(xb[k*hw+i])
				}
				if c.swish {
					z /= 1 + math.Exp(-z)
				}
				if c.residual {
					oy, ox := i/c.w, i%c.w
					for k := 0; k < c.k; k++ {
						for ky := 0; ky < 3; ky++ {
							for kx := 0; kx < 3; kx++ {
								iy, ix := oy+ky-1, ox+kx-1
								if iy >= 0 && iy < c.h && ix >= 0 && ix < c.w {
									z += float64(p.r[((m*c.k+k)*3+ky)*3+kx]) * float64(xb[k*hw+iy*c.w+ix])
								}
							}
						}
					}
				}
				if c.film != 0 {
					fm, fa := 0.0, 0.0
					if c.film == 2 {
						fm, fa = float64(p.fb[m]), float64(p.gb[m])
					}
					for k := 0; k < c.k; k++ {
						fm += float64(p.f[m*c.k+k]) * means[k]
						fa += float64(p.g[m*c.k+k]) * means[k]
					}
					z = z*fm + fa
				}
				y[(b*c.m+m)*hw+i] = z
			}
		}
	}
	return y
}

func TestPointwiseNaiveHandComputed(t *testing.T) {
	// x: 2 channels of 2 pixels; W = [[1, 2]], B = [0.5]; scale =
	// sigmoid(channel means): channel 0 mean 0, channel 1 mean 0.
	c := pwCase{n: 1, k: 2, m: 1, h: 1, w: 2, bias: true, scale: true}
	x := []float32{1, -1, 2, -2}
	got := c.naive(x, pwWeights{w: []float32{1, 2}, b: []float32{0.5}})
	// y = 0.5 + 0.5*x0 + 0.5*2*x1: pixel 0: 0.5+0.5+2 = 3, pixel 1: 0.5-0.5-2 = -2.
	if math.Abs(got[0]-3) > 1e-12 || math.Abs(got[1]+2) > 1e-12 {
		t.Errorf("naive = %v, want [3 -2]", got)
	}
	c.swish = true
	got = c.naive(x, pwWeights{w: []float32{1, 2}, b: []float32{0.5}})
	if want := 3 / (1 + math.Exp(-3)); math.Abs(got[0]-want) > 1e-12 {
		t.Errorf("naive with swish = %v, want %v first", got, want)
	}
}

// TestPointwiseLayerMatchesNaive runs 1x1 convolutions through the rewrite
// and the TTMPointwise layer, with every kernel set the CPU runs, against
// pwCase.naive: pixel counts around the 16- and 32-wide tiles, channel
// counts that are not multiples of the 8-row panels, a batch of 2, and
// every combination of bias, swish, excitation scale, residual and FiLM.
func TestPointwiseLayerMatchesNaive(t *testing.T) {
	var cases []pwCase
	sizes := []struct{ k, m, h, w int }{
		{1, 1, 1, 2}, {3, 7, 1, 15}, {17, 9, 4, 4}, {8, 8, 7, 7}, {40, 24, 5, 13}, {5, 100, 3, 11}, {200, 17, 9, 9}, {16, 33, 8, 16},
	}
	for i, s := range sizes {
		for f := 0; f < 32; f++ {
			c := pwCase{n: 1 + (i+f)%3/2, k: s.k, m: s.m, h: s.h, w: s.w,
				bias: f&1 != 0, swish: f&2 != 0, scale: f&4 != 0, residual: f&8 != 0}
			if f&16 != 0 {
				c.film = 1 + (i+f)%2
			}
			c.name = fmt.Sprintf("%dx%dx%dx%d-to-%d-bias=%v-swish=%v-scale=%v-residual=%v-film=%d", c.n, c.k, c.h, c.w, c.m, c.bias, c.swish, c.scale, c.residual, c.film)
			cases = append(cases, c)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	forEachISA(t, func(isa kernelISA) {
		for _, c := range cases {
			p := c.weights(r)
			x := randSlice32(r, c.n*c.k*c.h*c.w)
			want := c.naive(x, p)
			got, rs, ts := runCV(t, c.graph(p), PrepareOptions{SwishOp: "TTMSwish", PointwiseOp: PointwiseOp}, []int{c.n, c.k, c.h, c.w}, x)
			if n := layerTypes(ts)[PointwiseOp]; n != 1 {
				t.Fatalf("%s, %s: %d TTMPointwise layers (rewrites %v)", isa, c.name, n, rs)
			}
			if e := layer.RelErr64(got, want); e > 1e-5 {
				t.Errorf("%s, %s: relative error %.2g", isa, c.name, e)
			}
		}
	})
}

// TestPointwiseRewriteSelects checks which Convs the rewrite takes and
// what it fuses into them.
func TestPointwiseRewriteSelects(t *testing.T) {
	all := pwCase{n: 1, k: 4, m: 6, h: 5, w: 5, bias: true, swish: true, scale: true, residual: true}
	r := rand.New(rand.NewPCG(1, 1))
	ops := func(m *onnx.Model) string {
		var s []string
		for _, n := range m.Graph.Nodes {
			s = append(s, n.OpType)
		}
		return strings.Join(s, " ")
	}
	fast := PrepareOptions{SwishOp: "TTMSwish", PointwiseOp: PointwiseOp}
	cases := []struct {
		name  string
		c     pwCase
		edit  func(m *onnx.Model)
		opts  PrepareOptions
		nodes string
		attrs string // the TTMPointwise node's attributes and inputs
	}{
		{"everything fused", all, nil, fast, "Conv GlobalAveragePool Sigmoid TTMPointwise",
			"scale=1 activation=swish residual=1 [x W B s r]"},
		{"FiLM computed after the Conv", pwCase{n: 1, k: 4, m: 6, h: 5, w: 5, residual: true, film: 1}, nil, fast,
			"Conv GlobalAveragePool Conv Conv TTMPointwise", "residual=1 film=1 [x W r fm fa]"},
		{"FiLM's Gemms taken in", pwCase{n: 1, k: 4, m: 6, h: 5, w: 5, residual: true, film: 2}, nil, fast,
			"Conv GlobalAveragePool Reshape TTMPointwise", "residual=1 film=2 [x W r e F Fb G Gb]"},
		{"FiLM's Gemm read twice", pwCase{n: 1, k: 4, m: 6, h: 5, w: 5, film: 2}, func(m *onnx.Model) {
			m.Graph.Nodes = append(m.Graph.Nodes, &onnx.Node{Name: "y2", OpType: "Add", Inputs: []string{"y", "fm"}, Outputs: []string{"y2"}})
			m.Graph.Outputs[0].Name = "y2"
		}, fast, "GlobalAveragePool Reshape Gemm Gemm Reshape Reshape TTMPointwise Add", "film=1 [x W fm fa]"},
		{"FiLM's multiplier a constant", pwCase{n: 1, k: 4, m: 6, h: 5, w: 5, film: 1}, func(m *onnx.Model) {
			m.Graph.Initializers = append(m.Graph.Initializers, onnx.FloatTensor("c", make([]float32, 6), 1, 6, 1, 1))
			for _, n := range m.Graph.Nodes {
				if n.OpType == "Mul" {
					n.Inputs[1] = "c"
				}
			}
		}, fast, "TTMPointwise GlobalAveragePool Conv Mul Add", " [x W]"},
		{"bare", pwCase{n: 1, k: 4, m: 6, h: 5, w: 5}, nil, fast, "TTMPointwise", " [x W]"},
		{"off", all, nil, PrepareOptions{SwishOp: "TTMSwish"}, "Conv GlobalAveragePool Sigmoid Mul Conv TTMSwish Add", ""},
		{"one pixel stays with OpenCV", pwCase{n: 1, k: 4, m: 6, h: 1, w: 1, swish: true}, nil, fast, "Conv TTMSwish", ""},
		{"residual computed after the Conv", pwCase{n: 1, k: 4, m: 6, h: 5, w: 5, residual: true, residualAfterConv: true}, nil, fast,
			"TTMPointwise Conv Add", " [x W]"},
		{"stride 2", all, func(m *onnx.Model) { convZ(m).SetAttr(onnx.IntsAttr("strides", 2, 2)) }, fast,
			"Conv GlobalAveragePool Sigmoid Mul Conv TTMSwish Add", ""},
		{"padded", all, func(m *onnx.Model) { convZ(m).SetAttr(onnx.IntsAttr("pads", 1, 1, 1, 1)) }, fast,
			"Conv GlobalAveragePool Sigmoid Mul Conv TTMSwish Add", ""},
		{"grouped", pwCase{n: 1, k: 4, m: 6, h: 5, w: 5}, func(m *onnx.Model) {
			m.Graph.Initializers[0] = onnx.FloatTensor("W", make([]float32, 12), 6, 2, 1, 1)
			convZ(m).SetAttr(onnx.IntAttr("group", 2))
		}, fast, "Conv", ""},
		{"activation read twice", all, func(m *onnx.Model) {
			m.Graph.Nodes = append(m.Graph.Nodes, &onnx.Node{Name: "y2", OpType: "Add", Inputs: []string{"y", "za"}, Outputs: []string{"y2"}})
			m.Graph.Outputs[0].Name = "y2"
		}, fast, "Conv GlobalAveragePool Sigmoid TTMPointwise Add Add", "scale=1 activation=swish [x W B s]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := c.c.graph(c.c.weights(r))
			if c.edit != nil {
				c.edit(m)
			}
			opts := c.opts
			opts.Inputs = map[string][]int64{"x": {int64(c.c.n), int64(c.c.k), int64(c.c.h), int64(c.c.w)}}
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
			for _, n := range m.Graph.Nodes {
				if n.OpType != PointwiseOp {
					continue
				}
				var s []string
				for _, a := range n.Attributes {
					if a.Type == onnx.AttrString {
						s = append(s, a.Name+"="+string(a.S))
					} else {
						s = append(s, fmt.Sprintf("%s=%d", a.Name, a.I))
					}
				}
				if got := strings.Join(s, " ") + " " + fmt.Sprint(n.Inputs); got != c.attrs {
					t.Errorf("TTMPointwise %q, want %q", got, c.attrs)
				}
			}
		})
	}
}

// convZ is the test graph's 1x1 Conv.
func convZ(m *onnx.Model) *onnx.Node {
	for _, n := range m.Graph.Nodes {
		if n.OpType == "Conv" && n.Outputs[0] == "z" {
			return n
		}
	}
	panic("no Conv z")
}

// TestPointwiseLayerRejects gives the layer nodes it cannot run: OpenCV
// must refuse them with an error naming the problem, not abort.
func TestPointwiseLayerRejects(t *testing.T) {
	buildOp := func(op string, w *onnx.Tensor, inputs []string, attrs ...*onnx.Attribute) *testGraph {
		g := newTestGraph(13).input("x", 1, 3, 3, 3)
		g.m.Graph.Initializers = append(g.m.Graph.Initializers, w)
		g.floats("B", []float32{1, 2}, 2)
		g.node("GlobalAveragePool", []string{"x"}, "s")
		g.node(op, inputs, "y", attrs...)
		g.output("y")
		return g
	}
	build := func(w *onnx.Tensor, inputs []string, attrs ...*onnx.Attribute) *testGraph {
		return buildOp(PointwiseOp, w, inputs, attrs...)
	}
	w3 := onnx.FloatTensor("W", make([]float32, 54), 2, 3, 3, 3)
	w := onnx.FloatTensor("W", make([]float32, 6), 2, 3, 1, 1)
	cases := []struct {
		name string
		g    *testGraph
		want string
	}{
		{"3x3 weights", build(onnx.FloatTensor("W", make([]float32, 54), 2, 3, 3, 3), []string{"x", "W"}), "weights are not float32 (M, K, 1, 1)"},
		{"a valid node opens", build(w, []string{"x", "W", "B"}), ""},
		{"unknown activation", build(w, []string{"x", "W"}, onnx.StringAttr("activation", "relu")), `activation "relu"`},
		{"scale missing", build(w, []string{"x", "W"}, onnx.IntAttr("scale", 1)), "has 1 computed inputs, want 2"},
		{"scale of the wrong size", build(onnx.FloatTensor("W", make([]float32, 10), 2, 5, 1, 1), []string{"x", "W", "s"}, onnx.IntAttr("scale", 1)), "input is not (N, 5, H, W)"},
		{"residual of the wrong shape", build(w, []string{"x", "W", "x"}, onnx.IntAttr("residual", 1)), "residual is not (N, 2, H, W)"},
		{"FiLM's shift missing", build(w, []string{"x", "W", "s"}, onnx.IntAttr("film", 1)), "has 2 computed inputs, want 3"},
		{"FiLM of the wrong size", build(w, []string{"x", "W", "s", "s"}, onnx.IntAttr("film", 1)), "FiLM's multiplier and shift are not (N, 2, 1, 1)"},
		{"conv opens", buildOp(ConvOp, w3, []string{"x", "W", "B"}, onnx.IntsAttr("kernel", 3, 3), onnx.IntsAttr("pads", 1, 1, 1, 1)), ""},
		{"conv kernel disagrees", buildOp(ConvOp, w3, []string{"x", "W"}, onnx.IntsAttr("kernel", 2, 2)), "kernel 2x2 does not match"},
		{"conv with a scale", buildOp(ConvOp, w3, []string{"x", "W", "s"}, onnx.IntsAttr("kernel", 3, 3), onnx.IntAttr("scale", 1)), "has no scale, residual or FiLM"},
		{"conv larger than its input", buildOp(ConvOp, onnx.FloatTensor("W", make([]float32, 150), 2, 3, 5, 5), []string{"x", "W"}, onnx.IntsAttr("kernel", 5, 5)), "smaller than the kernel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenBackbone(BackboneSpec{Path: c.g.file(t), Height: 3, Width: 3}, nil)
			if c.want == "" {
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), " layer ") {
				t.Fatalf("open: %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestPointwiseModeChecked refuses an unknown mode.
func TestPointwiseModeChecked(t *testing.T) {
	spec := BackboneSpec{Path: "x.onnx", Height: 8, Width: 8, Pointwise: PointwiseMode(7)}
	if err := spec.check(); err == nil || !strings.Contains(err.Error(), "pointwise mode 7") {
		t.Errorf("check: %v", err)
	}
}

// TestPointwiseBackbones runs B0 and B3 as the backbone runs them by
// default (this package's pointwise, depthwise and swish layers) against
// the unfused graph in OpenCV's own layers: the features must agree to
// 1e-4 of their largest value on synthetic images and photographs, and
// every 1x1 convolution must be a TTMPointwise layer with the excitation
// scale, swish, residual and FiLM fused, or part of a TTMExcitation gate.
func TestPointwiseBackbones(t *testing.T) {
	if testing.Short() {
		t.Skip("generates B0 and B3")
	}
	if !kernelAVX512.supported() {
		t.Skip("the backbone uses the pointwise layer only with AVX-512")
	}
	// fused counts the expansions the depthwise layers take in: the narrow
	// ones (up to 48 input channels) before a stride of 2.
	cases := []struct {
		cfg                                     EfficientNetConfig
		blocks, expansions, residuals, n, fused int
	}{
		{EfficientNetConfig{Variant: "b0", Seed: 1}, 16, 15, 9, 32, 3},
		{EfficientNetConfig{Variant: "b3", Seed: 1, Padding: PaddingKeras, FiLMDim: 8, FiLMInitStd: 0.1}, 26, 24, 19, 51, 3},
	}
	for _, c := range cases {
		t.Run(c.cfg.Variant, func(t *testing.T) {
			g := generate(t, c.cfg)
			h, w := g.net.InputSize()
			path := g.write(t)
			spec := BackboneSpec{Path: path, Height: h, Width: w}
			var film []float32
			if c.cfg.FiLMDim > 0 {
				spec.FiLMInput, spec.FiLMDim = EfficientNetFiLMInput, c.cfg.FiLMDim
				film = randSlice32(rand.New(rand.NewPCG(3, 4)), c.cfg.FiLMDim)
			}
			unfused := spec
			unfused.Swish, unfused.Depthwise, unfused.Pointwise = SwishUnfused, DepthwiseOpenCV, PointwiseOpenCV
			ref := openTest(t, unfused)
			b := openTest(t, spec)
			films := 0
			if c.cfg.FiLMDim > 0 {
				films = c.blocks
			}
			want := fmt.Sprintf("%d 1x1 Conv nodes to TTMPointwise layers, with %d excitation scales, %d swishes, %d residual additions and %d FiLMs fused, %d with their coefficients' Gemms",
				c.n, c.blocks, c.expansions+1, c.residuals, films, films)
			if !hasRewrite(b.Rewrites(), RewritePointwise, want) {
				t.Errorf("rewrites %v, want %q", b.Rewrites(), want)
			}
			if want := fmt.Sprintf(", %d with the expansion before them", c.fused); !hasRewriteContaining(b.Rewrites(), RewriteDepthwise, want) {
				t.Errorf("rewrites %v, want depthwise ones %q", b.Rewrites(), want)
			}
			r := rand.New(rand.NewPCG(21, 22))
			images := append([][]float32{syntheticImage(r, h, w)}, gocvPhotos(t, h, w)...)
			for i, img := range images {
				want := run(t, ref, img, film)
				got := run(t, b, img, film)
				_, std, maxAbs := moments(want)
				if d := maxDiff(got, want); d > 1e-4*maxAbs {
					t.Errorf("image %d: features differ from the unfused graph's by %g (features up to %g)", i, d, maxAbs)
				} else {
					t.Logf("image %d: max difference %.2g, features std %.2f, max %.1f", i, d, std, maxAbs)
				}
			}
			if film != nil {
				// Another instruction and back: the layers compute FiLM's
				// coefficients again for each.
				other := randSlice32(rand.New(rand.NewPCG(5, 6)), c.cfg.FiLMDim)
				for i, e := range [][]float32{other, film} {
					want := run(t, ref, images[0], e)
					_, _, maxAbs := moments(want)
					if d := maxDiff(run(t, b, images[0], e), want); d > 1e-4*maxAbs {
						t.Errorf("embedding %d: features differ from the unfused graph's by %g (features up to %g)", i, d, maxAbs)
					}
				}
			}
			types := layerTypes(b.LayerTimings())
			if types[PointwiseOp] != c.n-c.fused || types[ExcitationOp] != c.blocks || types[ConvOp] != 1 || types["Convolution"] != 0 ||
				types["Scale"] != 0 || types["InnerProduct"] != 0 {
				t.Errorf("layers %v, want %d TTMPointwise, %d TTMExcitation, 1 TTMConv, no Convolution, Scale or InnerProduct", types, c.n-c.fused, c.blocks)
			}
		})
	}
}

// convCase is one k x k convolution (group 1) for the TTMConv layer.
type convCase struct {
	n, c, m, h, w  int
	kh, kw, sh, sw int
	pads           [4]int // top, left, bottom, right
	bias, swish    bool
}

// naive computes the case in float64 from its definition.
func (c convCase) naive(x, wt, b []float32) (y []float64, ho, wo int) {
	ho = (c.h+c.pads[0]+c.pads[2]-c.kh)/c.sh + 1
	wo = (c.w+c.pads[1]+c.pads[3]-c.kw)/c.sw + 1
	y = make([]float64, c.n*c.m*ho*wo)
	for n := 0; n < c.n; n++ {
		for m := 0; m < c.m; m++ {
			for oy := 0; oy < ho; oy++ {
				for ox := 0; ox < wo; ox++ {
					z := 0.0
					if b != nil {
						z = float64(b[m])
					}
					for ch := 0; ch < c.c; ch++ {
						for ky := 0; ky < c.kh; ky++ {
							for kx := 0; kx < c.kw; kx++ {
								iy, ix := oy*c.sh+ky-c.pads[0], ox*c.sw+kx-c.pads[1]
								if iy >= 0 && iy < c.h && ix >= 0 && ix < c.w {
									z += float64(wt[((m*c.c+ch)*c.kh+ky)*c.kw+kx]) * float64(x[((n*c.c+ch)*c.h+iy)*c.w+ix])
								}
							}
						}
					}
					if c.swish {
						z /= 1 + math.Exp(-z)
					}
					y[((n*c.m+m)*ho+oy)*wo+ox] = z
				}
			}
		}
	}
	return y, ho, wo
}

func (c convCase) graph(wt, b []float32) *onnx.Model {
	g := newTestGraph(13).input("x", int64(c.n), int64(c.c), int64(c.h), int64(c.w))
	g.floats("W", wt, int64(c.m), int64(c.c), int64(c.kh), int64(c.kw))
	inputs := []string{"x", "W"}
	if b != nil {
		g.floats("B", b, int64(c.m))
		inputs = append(inputs, "B")
	}
	out := "y"
	if c.swish {
		out = "z"
	}
	g.node("Conv", inputs, out, onnx.IntsAttr("kernel_shape", int64(c.kh), int64(c.kw)), onnx.IntsAttr("strides", int64(c.sh), int64(c.sw)),
		onnx.IntsAttr("pads", int64(c.pads[0]), int64(c.pads[1]), int64(c.pads[2]), int64(c.pads[3])))
	if c.swish {
		g.node("Sigmoid", []string{"z"}, "s")
		g.node("Mul", []string{"z", "s"}, "y")
	}
	g.output("y")
	return g.m
}

// TestConvLayerMatchesNaive runs stem-like convolutions through the
// rewrite and the TTMConv layer, with every kernel set the CPU runs,
// against convCase.naive: Keras' asymmetric stride-2 padding, pads wider
// than the kernel, rectangular kernels and strides, maps whose rows do not
// divide the 32-pixel blocks, a single channel and a batch of 2.
func TestConvLayerMatchesNaive(t *testing.T) {
	cases := []convCase{
		{1, 3, 32, 17, 23, 3, 3, 2, 2, [4]int{0, 0, 1, 1}, true, true},
		{1, 3, 40, 30, 30, 3, 3, 2, 2, [4]int{1, 1, 1, 1}, true, false},
		{2, 2, 7, 9, 11, 5, 5, 1, 1, [4]int{2, 2, 2, 2}, false, true},
		{1, 1, 9, 8, 40, 1, 3, 1, 2, [4]int{0, 1, 0, 1}, true, true},
		{1, 2, 16, 6, 6, 2, 2, 2, 2, [4]int{0, 0, 0, 0}, true, false},
		{1, 3, 8, 5, 4, 3, 3, 1, 1, [4]int{4, 3, 2, 5}, true, true},
	}
	r := rand.New(rand.NewPCG(11, 12))
	forEachISA(t, func(isa kernelISA) {
		for i, c := range cases {
			wt, b := randSlice32(r, c.m*c.c*c.kh*c.kw), randSlice32(r, c.m)
			if !c.bias {
				b = nil
			}
			x := randSlice32(r, c.n*c.c*c.h*c.w)
			want, _, _ := c.naive(x, wt, b)
			got, rs, ts := runCV(t, c.graph(wt, b), PrepareOptions{SwishOp: "TTMSwish", ConvOp: ConvOp}, []int{c.n, c.c, c.h, c.w}, x)
			if types := layerTypes(ts); types[ConvOp] != 1 || types["Convolution"] != 0 || types["TTMSwish"] != 0 || types["Padding"] != 0 {
				t.Fatalf("%s, case %d: layers %v (rewrites %v), want one TTMConv", isa, i, types, rs)
			}
			if len(got) != len(want) {
				t.Fatalf("%s, case %d: %d outputs, want %d", isa, i, len(got), len(want))
			}
			if e := layer.RelErr64(got, want); e > 1e-5 {
				t.Errorf("%s, case %d %+v: relative error %.2g", isa, i, c, e)
			}
		}
	})
}

// TestConvRewriteSelects: only small group-1 kernels become TTMConv.
func TestConvRewriteSelects(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	cases := []struct {
		name  string
		c     convCase
		edit  func(m *onnx.Model)
		nodes string
	}{
		{"stem", convCase{1, 3, 8, 9, 9, 3, 3, 2, 2, [4]int{0, 0, 1, 1}, true, true}, nil, "TTMConv"},
		{"K over the limit", convCase{1, 8, 8, 9, 9, 3, 3, 1, 1, [4]int{1, 1, 1, 1}, true, true}, nil, "Conv TTMSwish"},
		{"dilated", convCase{1, 3, 8, 9, 9, 3, 3, 1, 1, [4]int{2, 2, 2, 2}, true, false}, func(m *onnx.Model) {
			m.Graph.Nodes[0].SetAttr(onnx.IntsAttr("dilations", 2, 2))
		}, "Conv"},
		{"grouped", convCase{1, 4, 4, 9, 9, 3, 3, 1, 1, [4]int{1, 1, 1, 1}, true, false}, func(m *onnx.Model) {
			m.Graph.Initializers[0] = onnx.FloatTensor("W", make([]float32, 4*2*9), 4, 2, 3, 3)
			m.Graph.Nodes[0].SetAttr(onnx.IntAttr("group", 2))
		}, "Conv"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			m := c.graph(randSlice32(r, c.m*c.c*c.kh*c.kw), randSlice32(r, c.m))
			if tc.edit != nil {
				tc.edit(m)
			}
			opts := PrepareOptions{SwishOp: "TTMSwish", ConvOp: ConvOp, Inputs: map[string][]int64{"x": {1, int64(c.c), 9, 9}}, ImageInput: "x", Output: "y"}
			if _, err := PrepareONNX(m, opts); err != nil {
				t.Fatal(err)
			}
			if err := CheckONNX(m); err != nil {
				t.Fatal(err)
			}
			var ops []string
			for _, n := range m.Graph.Nodes {
				ops = append(ops, n.OpType)
			}
			if got := strings.Join(ops, " "); got != tc.nodes {
				t.Errorf("nodes %q, want %q", got, tc.nodes)
			}
		})
	}
}
