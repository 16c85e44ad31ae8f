package vision

import (
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/onnx"
)

// FuzzDepthwiseLayer mutates graphs of depthwise convolutions (Convs the
// rewrite turns into TTMDepthwise, and TTMDepthwise nodes written
// directly), rewrites them, and hands every mutant that passes CheckONNX
// to OpenCV and runs it: the layer may reject attributes, weights or
// shapes (an error through the shim) but must never take the process
// down, and every TTMDepthwise node the rewrite writes must be well
// formed.
func FuzzDepthwiseLayer(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, c := range []dwCase{
		{n: 1, c: 3, h: 8, w: 9, kh: 3, kw: 3, sh: 2, sw: 2, pads: [4]int{0, 0, 1, 1}, bias: true, swish: true},
		{n: 1, c: 4, h: 5, w: 5, kh: 5, kw: 5, sh: 1, sw: 1, pads: [4]int{2, 2, 2, 2}},
		{n: 1, c: 2, h: 7, w: 6, kh: 4, kw: 3, sh: 2, sw: 1, autoPad: "SAME_LOWER", bias: true},
	} {
		b, err := onnx.Marshal(c.graph(r))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	g := newTestGraph(13).input("x", 1, 3, 4, 4)
	g.floats("W", randSlice32(r, 27), 3, 1, 3, 3).floats("B", randSlice32(r, 3), 3)
	g.node(DepthwiseOp, []string{"x", "W", "B"}, "y", onnx.IntsAttr("kernel", 3, 3), onnx.IntsAttr("strides", 1, 2),
		onnx.IntsAttr("pads", 1, 0, 1, 2), onnx.StringAttr("activation", "swish"))
	f.Add(g.output("y", 1, 3, 4, 3).bytes(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := onnx.Parse(b)
		if err != nil || m.Graph == nil || len(m.Graph.Inputs) != 1 || len(m.Graph.Outputs) == 0 {
			return
		}
		in, out := m.Graph.Inputs[0].Name, m.Graph.Outputs[0].Name
		convs := map[*onnx.Node]bool{}
		for _, n := range m.Graph.Nodes {
			convs[n] = n.OpType == "Conv"
		}
		if _, err := PrepareONNX(m, PrepareOptions{ImageInput: in, Output: out, SwishOp: "TTMSwish", DepthwiseOp: DepthwiseOp}); err != nil {
			return
		}
		for _, n := range m.Graph.Nodes {
			if convs[n] && n.OpType == DepthwiseOp {
				checkDepthwiseNode(t, m.Graph, n)
			}
		}
		if CheckONNX(m) != nil || len(m.Graph.Inputs) != 1 {
			return
		}
		shape, ok := smallShape(m.Graph.Inputs[0])
		if !ok {
			return
		}
		bb, err := onnx.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		n, err := readONNX(bb)
		if err != nil {
			return
		}
		defer n.close()
		if n.configure(netConfig{inName: in, inShape: shape, outName: out}) != nil {
			return
		}
		size := 1
		for _, d := range shape {
			size *= d
		}
		n.forward(make([]float32, size), nil, nil)
	})
}

// checkDepthwiseNode fails t unless n is a TTMDepthwise node the layer
// accepts: weights (C, 1, kh, kw) and bias (C) initializers, kernel
// [kh kw], two strides and four pads within the layer's limits.
func checkDepthwiseNode(t *testing.T, g *onnx.Graph, n *onnx.Node) {
	t.Helper()
	if len(n.Inputs) < 2 || len(n.Inputs) > 3 {
		t.Fatalf("TTMDepthwise %s has inputs %v", nodeName(n), n.Inputs)
	}
	w := g.Initializer(n.Inputs[1])
	if w == nil || len(w.Dims) != 4 || w.Dims[1] != 1 {
		t.Fatalf("TTMDepthwise %s: weights %v", nodeName(n), w)
	}
	if len(n.Inputs) == 3 {
		if b := g.Initializer(n.Inputs[2]); b == nil || dimsProduct(b.Dims) != w.Dims[0] {
			t.Fatalf("TTMDepthwise %s: bias %v for %d channels", nodeName(n), b, w.Dims[0])
		}
	}
	k, s, p := n.AttrInts("kernel"), n.AttrInts("strides"), n.AttrInts("pads")
	if len(k) != 2 || k[0] != w.Dims[2] || k[1] != w.Dims[3] || k[0] > depthwiseMaxKernel || k[1] > depthwiseMaxKernel {
		t.Fatalf("TTMDepthwise %s: kernel %v, weights %v", nodeName(n), k, w.Dims)
	}
	if len(s) != 2 || min(s[0], s[1]) < 1 || max(s[0], s[1]) > depthwiseMaxStride {
		t.Fatalf("TTMDepthwise %s: strides %v", nodeName(n), s)
	}
	if len(p) != 4 || min(p[0], p[1], p[2], p[3]) < 0 || max(p[0], p[1], p[2], p[3]) > depthwiseMaxPad {
		t.Fatalf("TTMDepthwise %s: pads %v", nodeName(n), p)
	}
}

// smallShape is a graph input's shape if it is fixed and small enough to
// run quickly.
func smallShape(v *onnx.ValueInfo) ([]int, bool) {
	if v.Type == nil || v.Type.Tensor == nil || v.Type.Tensor.Shape == nil {
		return nil, false
	}
	size := 1
	var shape []int
	for _, d := range v.Type.Tensor.Shape.Dims {
		if d.Param != "" || d.Value < 1 || d.Value > 1<<12 {
			return nil, false
		}
		size *= int(d.Value)
		if size > 1<<16 {
			return nil, false
		}
		shape = append(shape, int(d.Value))
	}
	return shape, len(shape) > 0
}
