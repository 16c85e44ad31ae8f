package onnx_test

import (
	"fmt"

	"github.com/ttmrobot/ttm/internal/onnx"
)

// A one-node graph, y = Sigmoid(x), written and read back.
func Example() {
	m := &onnx.Model{
		IRVersion:    8,
		OpsetImports: []onnx.OperatorSetID{{Version: 13}},
		Graph: &onnx.Graph{
			Name:    "sigmoid",
			Nodes:   []*onnx.Node{{Name: "s", OpType: "Sigmoid", Inputs: []string{"x"}, Outputs: []string{"y"}}},
			Inputs:  []*onnx.ValueInfo{onnx.TensorValue("x", onnx.Float, 1, 4)},
			Outputs: []*onnx.ValueInfo{onnx.TensorValue("y", onnx.Float, 1, 4)},
		},
	}
	b, err := onnx.Marshal(m)
	if err != nil {
		panic(err)
	}
	back, err := onnx.Parse(b)
	if err != nil {
		panic(err)
	}
	n := back.Graph.Nodes[0]
	fmt.Println(len(b), "bytes:", n.OpType, n.Inputs, "->", n.Outputs, "opset", back.OpsetVersion(""))
	// Output: 79 bytes: Sigmoid [x] -> [y] opset 13
}
