package vision

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ttmrobot/ttm/internal/onnx"
)

// testGraph builds small ONNX models for the tests.
type testGraph struct{ m *onnx.Model }

func newTestGraph(opset int64) *testGraph {
	return &testGraph{m: &onnx.Model{IRVersion: 7, OpsetImports: []onnx.OperatorSetID{{Version: opset}}, Graph: &onnx.Graph{Name: "test"}}}
}

func (g *testGraph) input(name string, dims ...int64) *testGraph {
	g.m.Graph.Inputs = append(g.m.Graph.Inputs, onnx.TensorValue(name, onnx.Float, dims...))
	return g
}

func (g *testGraph) output(name string, dims ...int64) *testGraph {
	g.m.Graph.Outputs = append(g.m.Graph.Outputs, onnx.TensorValue(name, onnx.Float, dims...))
	return g
}

func (g *testGraph) floats(name string, v []float32, dims ...int64) *testGraph {
	g.m.Graph.Initializers = append(g.m.Graph.Initializers, onnx.FloatTensor(name, v, dims...))
	return g
}

func (g *testGraph) ints(name string, v []int64, dims ...int64) *testGraph {
	g.m.Graph.Initializers = append(g.m.Graph.Initializers, onnx.Int64Tensor(name, v, dims...))
	return g
}

// node adds a node named after its (single) output.
func (g *testGraph) node(op string, in []string, out string, attrs ...*onnx.Attribute) *testGraph {
	g.m.Graph.Nodes = append(g.m.Graph.Nodes, &onnx.Node{Name: out, OpType: op, Inputs: in, Outputs: []string{out}, Attributes: attrs})
	return g
}

func (g *testGraph) bytes(t testing.TB) []byte {
	t.Helper()
	b, err := onnx.Marshal(g.m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (g *testGraph) file(t testing.TB) string {
	t.Helper()
	return writeFile(t, g.bytes(t))
}

func writeFile(t testing.TB, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// handGraph is the tiny graph of TestHandComputedGraph:
//
//	x (1, 3, 3, 3): channel 0 = 1..9, channel 1 = 0.5 everywhere, channel 2 = 101..109
//	y = Conv(x, W, B), 2x2 kernels, B = [0 1]:
//	  output 0 = x0[i][j] - x0[i+1][j+1] + (sum of the 2x2 window of x1) = -4 + 2 = -2 everywhere
//	  output 1 = half the 2x2 window sum of x0, + 1 = 7 9 / 13 15
//	  (x2 has zero weights)
//	z = y + [1 -2] (per channel)  = -1 -1 -1 -1 / 5 7 11 13
//	out = z * Sigmoid(z)          (swish)
//	pool = GlobalAveragePool(out)
func handGraph() *testGraph {
	g := newTestGraph(13).input("x", 1, 3, 3, 3)
	w := []float32{
		1, 0, 0, -1, 1, 1, 1, 1, 0, 0, 0, 0, // output 0 from x0, x1, x2
		0.5, 0.5, 0.5, 0.5, 0, 0, 0, 0, 0, 0, 0, 0, // output 1
	}
	g.floats("W", w, 2, 3, 2, 2).floats("B", []float32{0, 1}, 2)
	g.floats("c", []float32{1, -2}, 1, 2, 1, 1)
	g.node("Conv", []string{"x", "W", "B"}, "y", onnx.IntsAttr("kernel_shape", 2, 2))
	g.node("Add", []string{"y", "c"}, "z")
	g.node("Sigmoid", []string{"z"}, "s")
	g.node("Mul", []string{"z", "s"}, "out")
	g.node("GlobalAveragePool", []string{"out"}, "pool")
	g.output("out", 1, 2, 2, 2)
	return g
}

var handInput = []float32{
	1, 2, 3, 4, 5, 6, 7, 8, 9,
	0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5,
	101, 102, 103, 104, 105, 106, 107, 108, 109,
}
