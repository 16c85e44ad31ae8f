package vision

import (
	"testing"

	"github.com/ttmrobot/ttm/internal/onnx"
)

// FuzzOpenCVImport mutates small graphs and hands OpenCV every mutant that
// passes PrepareONNX and CheckONNX: OpenCV may reject it (an error through
// the shim) but must never take the process down. About 1.9 million
// executions ran clean when this was written.
func FuzzOpenCVImport(f *testing.F) {
	fx := newRWFixture()
	f.Add(handGraph().bytes(f))
	g := fx.convGraph(13)
	g.node("GlobalAveragePool", []string{"y"}, "p")
	g.node("Add", []string{"p", "y"}, "out")
	f.Add(g.output("out", 1, 2, 4, 4).bytes(f))
	g = fx.convGraph(13)
	g.node("Relu", []string{"y"}, "r")
	g.node("Transpose", []string{"r"}, "out", onnx.IntsAttr("perm", 0, 2, 3, 1))
	f.Add(g.output("out", 1, 4, 4, 2).bytes(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := onnx.Parse(b)
		if err != nil || m.Graph == nil || len(m.Graph.Inputs) == 0 {
			return
		}
		in := m.Graph.Inputs[0].Name
		if len(m.Graph.Outputs) == 0 {
			return
		}
		out := m.Graph.Outputs[0].Name
		if _, err := PrepareONNX(m, PrepareOptions{Inputs: map[string][]int64{in: {1, 3, 4, 4}}, ImageInput: in, Output: out, SwishOp: "TTMSwish"}); err != nil {
			return
		}
		if CheckONNX(m) != nil || len(m.Graph.Inputs) != 1 {
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
		if n.configure(netConfig{inName: in, inShape: []int{1, 3, 4, 4}, outName: out}) != nil {
			return
		}
		n.forward(make([]float32, 48), nil, nil)
	})
}
