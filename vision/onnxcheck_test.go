package vision

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/onnx"
)

// The rewrite tests build small graphs in the forms exporters write,
// compute the expected output directly in Go, and check that the rewritten
// graph loads into OpenCV and gives those numbers. Where OpenCV 4.6
// rejects the original form, the test shows that too.

// rwFixture holds the data shared by the rewrite cases: an input x
// (1, 3, 4, 4) and a 3x3 convolution to 2 channels.
type rwFixture struct {
	x      []float32 // (1, 3, 4, 4)
	w, b   []float32 // (2, 3, 3, 3), (2)
	fc, fb []float32 // (3, 2) stored as B of a Gemm (K=2, N=3), (3)
}

func newRWFixture() *rwFixture {
	r := rand.New(rand.NewPCG(21, 22))
	return &rwFixture{x: randSlice32(r, 48), w: randSlice32(r, 54), b: randSlice32(r, 2), fc: randSlice32(r, 6), fb: randSlice32(r, 3)}
}

// conv is the fixture's convolution with the given padding and stride, by
// the naive loop: (1, 2, OH, OW).
func (f *rwFixture) conv(pads [4]int, stride int) []float32 {
	l := convLayer{cin: 3, cout: 2, k: 3, stride: stride, groups: 1, pads: pads, w: f.w, b: f.b}
	return naiveConv(&l, f.x, 1, 4, 4)
}

// convGraph starts a graph: x -> Conv(pads 1) -> "y" (1, 2, 4, 4).
func (f *rwFixture) convGraph(opset int64) *testGraph {
	g := newTestGraph(opset).input("x", 1, 3, 4, 4)
	g.floats("W", f.w, 2, 3, 3, 3).floats("B", f.b, 2)
	g.node("Conv", []string{"x", "W", "B"}, "y", onnx.IntsAttr("kernel_shape", 3, 3), onnx.IntsAttr("pads", 1, 1, 1, 1))
	return g
}

func mapf(x []float32, f func(float32) float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = f(v)
	}
	return out
}

func relu(v float32) float32 { return max(v, 0) }

// gap is the per-channel mean of (C, HW).
func gap(x []float32, c int) []float32 {
	hw := len(x) / c
	out := make([]float32, c)
	for i := range out {
		var s float64
		for _, v := range x[i*hw : (i+1)*hw] {
			s += float64(v)
		}
		out[i] = float32(s / float64(hw))
	}
	return out
}

// dense is v (K) · B (K, N) + c (N), scaled as alpha·v·B + beta·c.
func dense(v, b, c []float32, n int, alpha, beta float32) []float32 {
	out := make([]float32, n)
	for j := range out {
		s := beta * c[j]
		for i, x := range v {
			s += alpha * x * b[i*n+j]
		}
		out[j] = s
	}
	return out
}

// rawResult loads a model into OpenCV without any rewrite, runs it on x
// and says whether it computes want; if not, it says what went wrong.
func rawResult(b []byte, in string, shape []int, out string, x, want []float32) (bool, string) {
	n, err := readONNX(b)
	if err != nil {
		return false, firstLine(err.Error())
	}
	defer n.close()
	if err := n.configure(netConfig{inName: in, inShape: shape, outName: out}); err != nil {
		return false, firstLine(err.Error())
	}
	if err := n.forward(x, nil, nil); err != nil {
		return false, firstLine(err.Error())
	}
	got := make([]float32, len(want))
	if err := n.forward(x, nil, got); err != nil {
		return false, fmt.Sprintf("output shape %v instead of %d values", n.lastShape(), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-4*(1+math.Abs(float64(want[i]))) {
			return false, fmt.Sprintf("wrong numbers: output %d = %g, want %g", i, got[i], want[i])
		}
	}
	return true, ""
}

func TestRewrites(t *testing.T) {
	f := newRWFixture()
	y := f.conv([4]int{1, 1, 1, 1}, 1) // (2, 4, 4)
	type rwCase struct {
		name     string
		build    func() *testGraph
		rewrites []string  // kinds that must be reported
		want     []float32 // output for f.x
		rawFails bool      // OpenCV 4.6 rejects the original graph or computes something else
	}
	cases := []rwCase{
		{
			name: "identity and dropout",
			build: func() *testGraph {
				g := f.convGraph(13)
				g.node("Identity", []string{"y"}, "i1")
				g.m.Graph.Nodes = append(g.m.Graph.Nodes, &onnx.Node{Name: "drop", OpType: "Dropout", Inputs: []string{"i1"}, Outputs: []string{"d", "mask"}})
				g.node("Relu", []string{"d"}, "r")
				g.node("Identity", []string{"r"}, "out")
				return g.output("out", 1, 2, 4, 4)
			},
			rewrites: []string{RewriteIdentity},
			want:     mapf(y, relu),
		},
		{
			name: "initializers as inputs, symbolic dims",
			build: func() *testGraph {
				g := f.convGraph(9)
				g.m.IRVersion = 3
				g.m.Graph.Inputs[0].Type.Tensor.Shape.Dims = []onnx.Dimension{{Param: "N"}, {Value: 3}, {Param: "H"}, {Param: "W"}}
				g.input("W", 2, 3, 3, 3).input("B", 2)
				g.node("Relu", []string{"y"}, "out")
				return g.output("out", 1, 2, 4, 4)
			},
			rewrites: []string{RewriteInitInputs, RewritePinInput},
			want:     mapf(y, relu),
		},
		{
			name: "tf2onnx NHWC wrappers",
			build: func() *testGraph {
				g := newTestGraph(13).input("x", 1, 4, 4, 3)
				g.floats("W", f.w, 2, 3, 3, 3).floats("B", f.b, 2)
				g.node("Transpose", []string{"x"}, "x_nchw", onnx.IntsAttr("perm", 0, 3, 1, 2))
				g.node("Conv", []string{"x_nchw", "W", "B"}, "y", onnx.IntsAttr("kernel_shape", 3, 3), onnx.IntsAttr("pads", 1, 1, 1, 1))
				g.node("Relu", []string{"y"}, "r")
				g.node("Transpose", []string{"r"}, "out", onnx.IntsAttr("perm", 0, 2, 3, 1))
				return g.output("out", 1, 4, 4, 2)
			},
			rewrites: []string{RewriteNHWCInput, RewriteNHWCOutput},
			want:     mapf(y, relu),
		},
		{
			name: "transpose pair",
			build: func() *testGraph {
				g := f.convGraph(13)
				g.node("Transpose", []string{"y"}, "t1", onnx.IntsAttr("perm", 0, 2, 3, 1))
				g.node("Transpose", []string{"t1"}, "t2", onnx.IntsAttr("perm", 0, 3, 1, 2))
				g.node("Relu", []string{"t2"}, "out")
				return g.output("out", 1, 2, 4, 4)
			},
			rewrites: []string{RewriteTransposePair},
			want:     mapf(y, relu),
		},
		{
			name: "PyTorch flatten chain",
			build: func() *testGraph {
				g := f.convGraph(11)
				g.node("GlobalAveragePool", []string{"y"}, "p")
				g.node("Shape", []string{"p"}, "shape")
				g.m.Graph.Initializers = append(g.m.Graph.Initializers, &onnx.Tensor{Name: "zero", DataType: onnx.Int64, Int64Data: []int64{0}})
				g.node("Gather", []string{"shape", "zero"}, "batch", onnx.IntAttr("axis", 0))
				g.node("Unsqueeze", []string{"batch"}, "batch1", onnx.IntsAttr("axes", 0))
				g.ints("minus1", []int64{-1}, 1)
				g.node("Concat", []string{"batch1", "minus1"}, "newshape", onnx.IntAttr("axis", 0))
				g.node("Reshape", []string{"p", "newshape"}, "flat")
				g.floats("FC", transpose(f.fc, 2, 3), 3, 2).floats("FB", f.fb, 3)
				g.node("Gemm", []string{"flat", "FC", "FB"}, "out", onnx.IntAttr("transB", 1))
				return g.output("out", 1, 3)
			},
			rewrites: []string{RewriteFlatten, RewriteDeadCode},
			want:     dense(gap(y, 2), f.fc, f.fb, 3, 1, 1),
		},
		{
			name: "ReduceMean over H, W",
			build: func() *testGraph {
				g := f.convGraph(13)
				g.node("ReduceMean", []string{"y"}, "out", onnx.IntsAttr("axes", 2, 3), onnx.IntAttr("keepdims", 1))
				return g.output("out", 1, 2, 1, 1)
			},
			rewrites: []string{RewriteReduceMean},
			want:     gap(y, 2),
		},
		{
			name: "ReduceMean opset 18, axes input, no keepdims",
			build: func() *testGraph {
				g := f.convGraph(18)
				g.ints("axes", []int64{-2, -1}, 2)
				g.node("ReduceMean", []string{"y", "axes"}, "out", onnx.IntAttr("keepdims", 0))
				return g.output("out", 1, 2)
			},
			rewrites: []string{RewriteInputAttribute, RewriteReduceMean},
			want:     gap(y, 2),
			rawFails: true,
		},
		{
			name: "Pad tensor (opset 11) before a VALID stride-2 Conv",
			build: func() *testGraph {
				g := newTestGraph(11).input("x", 1, 3, 4, 4)
				g.floats("W", f.w, 2, 3, 3, 3).floats("B", f.b, 2)
				g.ints("pads", []int64{0, 0, 0, 0, 0, 0, 1, 1}, 8).floats("zero", []float32{0})
				g.node("Pad", []string{"x", "pads", "zero"}, "xp")
				g.node("Conv", []string{"xp", "W", "B"}, "out", onnx.IntsAttr("kernel_shape", 3, 3), onnx.IntsAttr("strides", 2, 2))
				return g.output("out", 1, 2, 2, 2)
			},
			rewrites: []string{RewritePadConv},
			want:     f.conv([4]int{0, 0, 1, 1}, 2),
		},
		{
			name: "Pad with axes (opset 18)",
			build: func() *testGraph {
				g := newTestGraph(18).input("x", 1, 3, 4, 4)
				g.floats("W", f.w, 2, 3, 3, 3).floats("B", f.b, 2)
				g.ints("pads", []int64{1, 0, 1, 1}, 4).ints("axes", []int64{2, 3}, 2)
				g.m.Graph.Nodes = append(g.m.Graph.Nodes, &onnx.Node{Name: "pad", OpType: "Pad", Inputs: []string{"x", "pads", "", "axes"}, Outputs: []string{"xp"}})
				g.node("Conv", []string{"xp", "W", "B"}, "out", onnx.IntsAttr("kernel_shape", 3, 3), onnx.IntsAttr("strides", 2, 2))
				return g.output("out", 1, 2, 2, 2)
			},
			rewrites: []string{RewriteInputAttribute, RewritePadConv},
			want:     f.conv([4]int{1, 0, 1, 1}, 2),
			rawFails: true,
		},
		{
			name: "Clip with min/max inputs (ReLU6, opset 11)",
			build: func() *testGraph {
				g := f.convGraph(11)
				g.floats("lo", []float32{0}).floats("hi", []float32{0.5})
				g.node("Clip", []string{"y", "lo", "hi"}, "out")
				return g.output("out", 1, 2, 4, 4)
			},
			rewrites: []string{RewriteInputAttribute},
			want:     mapf(y, func(v float32) float32 { return min(max(v, 0), 0.5) }),
			rawFails: true,
		},
		{
			name: "Squeeze with axes input (opset 13)",
			build: func() *testGraph {
				g := f.convGraph(13)
				g.node("GlobalAveragePool", []string{"y"}, "p")
				g.ints("axes", []int64{2, 3}, 2)
				g.node("Squeeze", []string{"p", "axes"}, "out")
				return g.output("out", 1, 2)
			},
			rewrites: []string{RewriteInputAttribute},
			want:     gap(y, 2),
			rawFails: true,
		},
		{
			name: "IR version 2 without opset import",
			build: func() *testGraph {
				g := f.convGraph(13)
				g.m.IRVersion, g.m.OpsetImports = 2, nil
				g.node("Relu", []string{"y"}, "out")
				return g.output("out", 1, 2, 4, 4)
			},
			rewrites: []string{RewriteOpset},
			want:     mapf(y, relu),
			rawFails: true,
		},
		{
			name: "Constant value_float",
			build: func() *testGraph {
				g := f.convGraph(13)
				g.m.Graph.Nodes = append(g.m.Graph.Nodes, &onnx.Node{Name: "k", OpType: "Constant", Outputs: []string{"k"}, Attributes: []*onnx.Attribute{onnx.FloatAttr("value_float", 0.25)}})
				g.node("Add", []string{"y", "k"}, "out")
				return g.output("out", 1, 2, 4, 4)
			},
			rewrites: []string{RewriteConstantForm},
			want:     mapf(y, func(v float32) float32 { return v + 0.25 }),
			rawFails: true,
		},
		{
			name: "Gemm with default transB, alpha and beta",
			build: func() *testGraph {
				g := f.convGraph(13)
				g.node("GlobalAveragePool", []string{"y"}, "p")
				g.node("Flatten", []string{"p"}, "flat", onnx.IntAttr("axis", 1))
				g.floats("FC", f.fc, 2, 3).floats("FB", f.fb, 3)
				g.node("Gemm", []string{"flat", "FC", "FB"}, "out", onnx.FloatAttr("alpha", 0.5), onnx.FloatAttr("beta", 2))
				return g.output("out", 1, 3)
			},
			rewrites: []string{RewriteGemm},
			want:     dense(gap(y, 2), f.fc, f.fb, 3, 0.5, 2),
			rawFails: true,
		},
		{
			name: "broadcasting Add, small operand first",
			build: func() *testGraph {
				g := f.convGraph(13)
				g.node("GlobalAveragePool", []string{"y"}, "p")
				g.node("Add", []string{"p", "y"}, "out")
				return g.output("out", 1, 2, 4, 4)
			},
			rewrites: []string{RewriteAddOrder},
			want: func() []float32 {
				m := gap(y, 2)
				out := make([]float32, len(y))
				for i, v := range y {
					out[i] = v + m[i/16]
				}
				return out
			}(),
			rawFails: true,
		},
		{
			name: "swish as Mul(Sigmoid(y), y)",
			build: func() *testGraph {
				g := f.convGraph(13)
				g.node("Sigmoid", []string{"y"}, "s")
				g.node("Mul", []string{"s", "y"}, "out")
				return g.output("out", 1, 2, 4, 4)
			},
			rewrites: []string{RewriteSwish},
			want:     mapf(y, func(v float32) float32 { return float32(float64(v) / (1 + math.Exp(-float64(v)))) }),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := c.build()
			raw := g.bytes(t)
			if c.rawFails {
				ok, why := rawResult(raw, g.m.Graph.Inputs[0].Name, []int{1, 3, 4, 4}, g.m.Graph.Outputs[0].Name, f.x, c.want)
				if ok {
					t.Error("OpenCV computes the original graph correctly; the rewrite is not needed")
				} else {
					t.Logf("OpenCV 4.6 on the original graph: %s", why)
				}
			}
			b := openTest(t, BackboneSpec{Path: writeFile(t, raw), Height: 4, Width: 4})
			var kinds []string
			for _, r := range b.Rewrites() {
				kinds = append(kinds, r.Kind)
				t.Logf("rewrite: %v", r)
			}
			for _, k := range c.rewrites {
				if !slices.Contains(kinds, k) {
					t.Errorf("rewrite %s not reported (got %v)", k, kinds)
				}
			}
			got := run(t, b, f.x, nil)
			if len(got) != len(c.want) {
				t.Fatalf("%d outputs, want %d", len(got), len(c.want))
			}
			for i := range got {
				if math.Abs(float64(got[i]-c.want[i])) > 1e-4*(1+math.Abs(float64(c.want[i]))) {
					t.Fatalf("output %d = %g, want %g", i, got[i], c.want[i])
				}
			}
		})
	}
}

// firstLine flattens a multi-line OpenCV message for a log line.
func firstLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n>", " |")), " ")
}

// TestCheckONNXRejects covers the checks that need no OpenCV.
func TestCheckONNXRejects(t *testing.T) {
	f := newRWFixture()
	base := func() *testGraph {
		g := f.convGraph(13)
		g.node("Relu", []string{"y"}, "out")
		return g.output("out", 1, 2, 4, 4)
	}
	cases := []struct {
		name string
		edit func(g *testGraph)
		want string
	}{
		{"no graph", func(g *testGraph) { g.m.Graph = nil }, "no graph"},
		{"unsupported op", func(g *testGraph) { g.m.Graph.Nodes[1].OpType = "TopK" }, `node "out": op "TopK" (domain ai.onnx) is not supported by OpenCV 4.6 DNN`},
		{"unnamed node", func(g *testGraph) { g.m.Graph.Nodes[1].Name = ""; g.m.Graph.Nodes[1].OpType = "Loop" }, `node #1 (output "out"): op "Loop"`},
		{"undefined input", func(g *testGraph) { g.m.Graph.Nodes[1].Inputs[0] = "ghost" }, `reads "ghost"`},
		{"redefined value", func(g *testGraph) { g.m.Graph.Nodes[1].Outputs[0] = "y" }, `redefines "y"`},
		{"output not produced", func(g *testGraph) { g.m.Graph.Outputs[0].Name = "nothing" }, `output "nothing" is not produced`},
		{"string tensor", func(g *testGraph) {
			g.m.Graph.Initializers = append(g.m.Graph.Initializers, &onnx.Tensor{Name: "s", DataType: onnx.String, Dims: []int64{1}, StringData: [][]byte{{}}})
		}, "element type STRING"},
		{"input not float", func(g *testGraph) { g.m.Graph.Inputs[0].Type.Tensor.ElemType = onnx.Uint8 }, "element type UINT8"},
		{"symbolic input", func(g *testGraph) { g.m.Graph.Inputs[0].Type.Tensor.Shape.Dims[0].Param = "N" }, "dimension 0"},
		{"huge int attribute", func(g *testGraph) { g.m.Graph.Nodes[0].SetAttr(onnx.IntAttr("group", 1<<40)) }, "32-bit range"},
		{"bad kernel_shape", func(g *testGraph) { g.m.Graph.Nodes[0].SetAttr(onnx.IntsAttr("kernel_shape", 3, 3, 3, 3)) }, "kernel_shape has 4 values"},
		{"strings attribute", func(g *testGraph) {
			g.m.Graph.Nodes[1].Attributes = append(g.m.Graph.Nodes[1].Attributes, &onnx.Attribute{Name: "names", Type: onnx.AttrStrings, Strings: [][]byte{{'a'}}})
		}, "STRINGS"},
		{"gemm variable B", func(g *testGraph) {
			g.m.Graph.Nodes[1] = &onnx.Node{Name: "out", OpType: "Gemm", Inputs: []string{"y", "y"}, Outputs: []string{"out"}, Attributes: []*onnx.Attribute{onnx.IntAttr("transB", 1)}}
		}, "B matrix (input 1"},
		{"gemm transA", func(g *testGraph) {
			g.m.Graph.Nodes[1] = &onnx.Node{Name: "out", OpType: "Gemm", Inputs: []string{"y", "W"}, Outputs: []string{"out"}, Attributes: []*onnx.Attribute{onnx.IntAttr("transA", 1), onnx.IntAttr("transB", 1)}}
		}, "transA=1"},
		{"pow variable exponent", func(g *testGraph) {
			g.m.Graph.Nodes[1] = &onnx.Node{Name: "out", OpType: "Pow", Inputs: []string{"y", "y"}, Outputs: []string{"out"}}
		}, "exponent"},
		{"old opset form of Constant", func(g *testGraph) {
			g.m.Graph.Nodes = append([]*onnx.Node{{Name: "k", OpType: "Constant", Outputs: []string{"k"}, Attributes: []*onnx.Attribute{onnx.StringAttr("value_string", "x")}}}, g.m.Graph.Nodes...)
		}, "tensor 'value' form"},
		{"IR version", func(g *testGraph) { g.m.IRVersion = 2 }, "IR version 2"},
		{"external data", func(g *testGraph) {
			g.m.Graph.Initializers[0] = &onnx.Tensor{Name: "W", DataType: onnx.Float, Dims: []int64{2, 3, 3, 3}, DataLocation: 1}
		}, "external file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := base()
			if err := CheckONNX(g.m); err != nil {
				t.Fatalf("base graph rejected: %v", err)
			}
			c.edit(g)
			err := CheckONNX(g.m)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("CheckONNX = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestAllowListMatchesOpenCV checks the allow-list against the library:
// the ops that OpenCV's importer handles by falling back to a layer type of
// the same name must be registered layer types, and a few ops OpenCV 4.6
// cannot import must be neither registered nor allowed.
func TestAllowListMatchesOpenCV(t *testing.T) {
	fallback := []string{"Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Celu", "Cos", "Cosh",
		"Dropout", "Erf", "Exp", "Floor", "HardSigmoid", "HardSwish", "Identity", "Log", "Not", "Reciprocal",
		"Round", "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Softmax", "Softplus", "Softsign", "Sqrt",
		"Tan", "ThresholdedRelu", "Swish", "Mish"}
	for _, op := range fallback {
		if !opencvOps[op] && !opencvLayerOps[op] {
			t.Errorf("%s is not on the allow-list", op)
		}
		if !layerTypeRegistered(op) {
			t.Errorf("%s is allowed through the layer-type fallback, but OpenCV has no such layer type", op)
		}
	}
	for _, op := range []string{"NonMaxSuppression", "Loop", "If", "TopK", "Einsum", "LayerNormalization", "Gelu", "Where", "ScatterND", "Tile", "GatherElements"} {
		if opencvOps[op] || opencvLayerOps[op] {
			t.Errorf("%s is on the allow-list", op)
		}
		if layerTypeRegistered(op) {
			t.Errorf("OpenCV 4.6 registers a layer type %s; the allow-list may be missing it", op)
		}
	}
	t.Logf("%d ai.onnx ops allowed", len(sortedOps(opencvOps)))
}

// FuzzPrepareCheck runs the rewrites and the checks on arbitrary bytes
// that parse as ONNX: they must not panic, and whatever passes must
// encode.
func FuzzPrepareCheck(f *testing.F) {
	fx := newRWFixture()
	f.Add(handGraph().bytes(f))
	g := fx.convGraph(11)
	g.node("GlobalAveragePool", []string{"y"}, "p")
	g.node("Shape", []string{"p"}, "shape")
	g.ints("zero", []int64{0})
	g.node("Gather", []string{"shape", "zero"}, "batch", onnx.IntAttr("axis", 0))
	g.node("Unsqueeze", []string{"batch"}, "batch1", onnx.IntsAttr("axes", 0))
	g.ints("minus1", []int64{-1}, 1)
	g.node("Concat", []string{"batch1", "minus1"}, "newshape", onnx.IntAttr("axis", 0))
	g.node("Reshape", []string{"p", "newshape"}, "out")
	f.Add(g.output("out", 1, 2).bytes(f))
	g = newTestGraph(18).input("x", 1, 4, 4, 3)
	g.node("Transpose", []string{"x"}, "t", onnx.IntsAttr("perm", 0, 3, 1, 2))
	g.ints("pads", []int64{1, 1, 1, 1}, 4).ints("axes", []int64{2, 3}, 2)
	g.m.Graph.Nodes = append(g.m.Graph.Nodes, &onnx.Node{Name: "pad", OpType: "Pad", Inputs: []string{"t", "pads", "", "axes"}, Outputs: []string{"p"}})
	g.node("ReduceMean", []string{"p", "axes"}, "out", onnx.IntAttr("keepdims", 0))
	f.Add(g.output("out", 1, 3).bytes(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := onnx.Parse(b)
		if err != nil {
			return
		}
		opts := PrepareOptions{Inputs: map[string][]int64{"x": {1, 3, 4, 4}}, ImageInput: "x", Output: "out"}
		if _, err := PrepareONNX(m, opts); err != nil {
			return
		}
		if CheckONNX(m) != nil {
			return
		}
		if _, err := onnx.Marshal(m); err != nil {
			t.Fatalf("a checked model does not encode: %v", err)
		}
	})
}
