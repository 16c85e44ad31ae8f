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

// exCase is one squeeze-excitation gate over the channel means of x.
type exCase struct{ n, c, r, h, w int }

// graph builds y = Sigmoid(Conv(swish(Conv(GlobalAveragePool(x), W1, B1)),
// W2, B2)), the swish as Sigmoid and Mul.
func (c exCase) graph(w1, b1, w2, b2 []float32) *onnx.Model {
	g := newTestGraph(13).input("x", int64(c.n), int64(c.c), int64(c.h), int64(c.w))
	g.floats("W1", w1, int64(c.r), int64(c.c), 1, 1).floats("B1", b1, int64(c.r))
	g.floats("W2", w2, int64(c.c), int64(c.r), 1, 1).floats("B2", b2, int64(c.c))
	g.node("GlobalAveragePool", []string{"x"}, "m")
	g.node("Conv", []string{"m", "W1", "B1"}, "h", onnx.IntsAttr("kernel_shape", 1, 1))
	g.node("Sigmoid", []string{"h"}, "hs")
	g.node("Mul", []string{"h", "hs"}, "ha")
	g.node("Conv", []string{"ha", "W2", "B2"}, "z", onnx.IntsAttr("kernel_shape", 1, 1))
	g.node("Sigmoid", []string{"z"}, "y")
	g.output("y")
	return g.m
}

// naive is the gate in float64.
func (c exCase) naive(x, w1, b1, w2, b2 []float32) []float64 {
	hw := c.h * c.w
	y := make([]float64, 0, c.n*c.c)
	for b := 0; b < c.n; b++ {
		m := make([]float64, c.c)
		for k := range m {
			for _, v := range x[(b*c.c+k)*hw : (b*c.c+k+1)*hw] {
				m[k] += float64(v)
			}
			m[k] /= float64(hw)
		}
		h := make([]float64, c.r)
		for i := range h {
			h[i] = float64(b1[i])
			for k := range m {
				h[i] += float64(w1[i*c.c+k]) * m[k]
			}
			h[i] /= 1 + math.Exp(-h[i])
		}
		for k := 0; k < c.c; k++ {
			z := float64(b2[k])
			for i := range h {
				z += float64(w2[k*c.r+i]) * h[i]
			}
			y = append(y, 1/(1+math.Exp(-z)))
		}
	}
	return y
}

func TestExcitationNaiveHandComputed(t *testing.T) {
	// One channel of mean 2, W1 = [1], B1 = [0]: h = swish(2); W2 = [0],
	// B2 = [0]: the gate is sigmoid(0) = 0.5 whatever h is.
	c := exCase{n: 1, c: 1, r: 1, h: 1, w: 2}
	got := c.naive([]float32{1, 3}, []float32{1}, []float32{0}, []float32{0}, []float32{0})
	if got[0] != 0.5 {
		t.Errorf("gate %v, want 0.5", got)
	}
	got = c.naive([]float32{1, 3}, []float32{1}, []float32{0}, []float32{1}, []float32{0})
	h := 2 / (1 + math.Exp(-2))
	if want := 1 / (1 + math.Exp(-h)); math.Abs(got[0]-want) > 1e-15 {
		t.Errorf("gate %v, want %v", got, want)
	}
}

// TestExcitationLayerMatchesNaive runs gates through the rewrite and the
// TTMExcitation layer, with every kernel set the CPU runs, against
// exCase.naive: channel counts around the 16 and 32 lanes of the dot
// products, and a batch of 2.
func TestExcitationLayerMatchesNaive(t *testing.T) {
	cases := []exCase{{1, 5, 2, 3, 3}, {1, 48, 12, 7, 7}, {2, 40, 17, 4, 5}, {1, 1152, 48, 2, 2}, {2, 672, 28, 3, 3}, {1, 33, 1, 1, 3}}
	r := rand.New(rand.NewPCG(9, 10))
	forEachISA(t, func(isa kernelISA) {
		for _, c := range cases {
			w1, b1, w2, b2 := randSlice32(r, c.r*c.c), randSlice32(r, c.r), randSlice32(r, c.c*c.r), randSlice32(r, c.c)
			x := randSlice32(r, c.n*c.c*c.h*c.w)
			want := c.naive(x, w1, b1, w2, b2)
			got, rs, ts := runCV(t, c.graph(w1, b1, w2, b2), PrepareOptions{SwishOp: "TTMSwish", ExcitationOp: ExcitationOp}, []int{c.n, c.c, c.h, c.w}, x)
			if types := layerTypes(ts); types[ExcitationOp] != 1 || types["Convolution"] != 0 || types["TTMSwish"] != 0 {
				t.Fatalf("%s, %+v: layers %v (rewrites %v), want one TTMExcitation", isa, c, types, rs)
			}
			if e := layer.RelErr64(got, want); e > 1e-5 {
				t.Errorf("%s, %+v: relative error %.2g", isa, c, e)
			}
		}
	})
}

// TestExcitationRewriteSelects checks which chains the rewrite takes.
func TestExcitationRewriteSelects(t *testing.T) {
	c := exCase{n: 1, c: 6, r: 2, h: 3, w: 3}
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name  string
		edit  func(m *onnx.Model)
		nodes string
	}{
		{"gate", nil, "GlobalAveragePool TTMExcitation"},
		{"ReLU inside", func(m *onnx.Model) {
			m.Graph.Nodes[2].OpType = "Relu"
			m.Graph.Nodes[3].Inputs = []string{"hs", "hs"}
		}, "GlobalAveragePool Conv Relu Mul Conv Sigmoid"},
		{"no bias", func(m *onnx.Model) { m.Graph.Nodes[1].Inputs = m.Graph.Nodes[1].Inputs[:2] }, "GlobalAveragePool Conv TTMSwish Conv Sigmoid"},
		{"hidden read twice", func(m *onnx.Model) {
			m.Graph.Nodes = append(m.Graph.Nodes, &onnx.Node{Name: "y2", OpType: "Add", Inputs: []string{"y", "ha"}, Outputs: []string{"y2"}})
			m.Graph.Outputs[0].Name = "y2"
		}, "GlobalAveragePool Conv TTMSwish Conv Sigmoid Add"},
		{"over a map", func(m *onnx.Model) {
			m.Graph.Nodes = m.Graph.Nodes[1:]
			m.Graph.Nodes[0].Inputs[0] = "x"
			m.Graph.Initializers[0] = onnx.FloatTensor("W1", make([]float32, 12), 2, 6, 1, 1)
		}, "Conv TTMSwish Conv Sigmoid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := c.graph(randSlice32(r, c.r*c.c), randSlice32(r, c.r), randSlice32(r, c.c*c.r), randSlice32(r, c.c))
			if tc.edit != nil {
				tc.edit(m)
			}
			opts := PrepareOptions{SwishOp: "TTMSwish", ExcitationOp: ExcitationOp, Inputs: map[string][]int64{"x": {1, 6, 3, 3}}, ImageInput: "x", Output: m.Graph.Outputs[0].Name}
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

// TestExcitationLayerRejects: constants of the wrong shapes are an error
// from OpenBackbone naming the layer, not an abort.
func TestExcitationLayerRejects(t *testing.T) {
	build := func(w2 []int64) *testGraph {
		g := newTestGraph(13).input("x", 1, 3, 4, 4)
		g.floats("W1", make([]float32, 6), 2, 3, 1, 1).floats("B1", make([]float32, 2), 2)
		g.floats("W2", make([]float32, dimsProduct(w2)), w2...).floats("B2", make([]float32, 3), 3)
		g.node("GlobalAveragePool", []string{"x"}, "m")
		g.node(ExcitationOp, []string{"m", "W1", "B1", "W2", "B2"}, "y")
		g.output("y")
		return g
	}
	for _, c := range []struct {
		w2   []int64
		want string
	}{{[]int64{3, 2, 1, 1}, ""}, {[]int64{2, 3, 1, 1}, "W2 is not (3, 2, 1, 1)"}, {[]int64{3, 2, 3, 1}, "W2 is not (3, 2, 1, 1)"}} {
		t.Run(fmt.Sprint(c.w2), func(t *testing.T) {
			_, err := OpenBackbone(BackboneSpec{Path: build(c.w2).file(t), Height: 4, Width: 4}, nil)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("open: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), ExcitationOp)):
				t.Fatalf("open: %v, want an error with %q", err, c.want)
			}
		})
	}
}
