package vision

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/internal/onnx"
)

// OpenCV's ONNX importer aborts the process on a malformed model when it is
// called through gocv, so every file is checked here first: it exists, its
// size is within bounds, its SHA-256 is the one expected, it parses, its
// tensors hold as much data as their shapes say, its nodes are in
// topological order, and every operator is one OpenCV 4.6 DNN imports, in a
// form it accepts.

// Size bounds of a backbone file.
const (
	MinONNXBytes = 32
	MaxONNXBytes = 1 << 30
)

// ReadONNXFile reads an ONNX file after checking that it exists and is a
// regular file of MinONNXBytes..MaxONNXBytes, verifies its SHA-256 against
// wantSHA256 (hex; "" skips the check with a warning in log), and parses
// it. It returns the model and the file's actual SHA-256.
func ReadONNXFile(path, wantSHA256 string, log hclog.Logger) (*onnx.Model, string, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, "", fmt.Errorf("onnx file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, "", fmt.Errorf("onnx file %s: not a regular file", path)
	}
	if st.Size() < MinONNXBytes || st.Size() > MaxONNXBytes {
		return nil, "", fmt.Errorf("onnx file %s: %d bytes, outside %d..%d", path, st.Size(), MinONNXBytes, MaxONNXBytes)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("onnx file: %w", err)
	}
	defer f.Close()
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, "", fmt.Errorf("onnx file %s: %w", path, err)
	}
	sum := sha256.Sum256(b)
	got := hex.EncodeToString(sum[:])
	switch want := strings.ToLower(strings.TrimSpace(wantSHA256)); {
	case want == "":
		log.Warn("backbone file not verified: no expected SHA-256 given", "path", path, "sha256", got)
	case len(want) != 64:
		return nil, got, fmt.Errorf("onnx file %s: expected SHA-256 %q is not 64 hex digits", path, wantSHA256)
	case want != got:
		return nil, got, fmt.Errorf("onnx file %s: SHA-256 is %s, expected %s", path, got, want)
	}
	m, err := onnx.Parse(b)
	if err != nil {
		return nil, got, fmt.Errorf("onnx file %s: %w", path, err)
	}
	return m, got, nil
}

// opencvOps lists the operators OpenCV 4.6 DNN imports from the default
// ai.onnx domain. Most are handled by the importer's dispatch table
// (modules/dnn/src/onnx/onnx_importer.cpp, buildDispatchMap_ONNX_AI); the
// rest have no handler but share their name with a layer type registered in
// OpenCV's layer factory, which the importer falls back to (the test
// TestAllowListMatchesOpenCV checks those against the library).
var opencvOps = map[string]bool{
	// Dispatch table.
	"Abs": true, "Add": true, "ArgMax": true, "ArgMin": true, "AveragePool": true,
	"BatchNormalization": true, "Cast": true, "Clip": true, "Concat": true, "Constant": true,
	"ConstantFill": true, "ConstantOfShape": true, "Conv": true, "ConvTranspose": true,
	"CumSum": true, "DequantizeLinear": true, "Div": true, "Elu": true,
	"Equal": true, "Expand": true, "Flatten": true, "GRU": true, "Gather": true, "Gemm": true,
	"GlobalAveragePool": true, "GlobalMaxPool": true, "Greater": true, "ImageScaler": true,
	"InstanceNormalization": true, "LRN": true, "LSTM": true, "LeakyRelu": true, "Less": true,
	"LogSoftmax": true, "MatMul": true, "Max": true, "MaxPool": true, "MaxUnpool": true,
	"Min": true, "Mul": true, "Neg": true, "PRelu": true, "Pad": true, "Pow": true,
	"QLinearConv": true, "QLinearMatMul": true, "QuantizeLinear": true, "ReduceMax": true,
	"ReduceMean": true, "ReduceSum": true, "Relu": true, "Reshape": true, "Resize": true,
	"Shape": true, "Slice": true, "SoftMax": true, "Split": true, "Squeeze": true, "Sub": true,
	"Sum": true, "Tanh": true, "Transpose": true, "Unsqueeze": true, "Upsample": true,
	// Layer types of the same name (element-wise, no parameters).
	"Acos": true, "Acosh": true, "Asin": true, "Asinh": true, "Atan": true, "Atanh": true,
	"Ceil": true, "Celu": true, "Cos": true, "Cosh": true, "Dropout": true, "Erf": true,
	"Exp": true, "Floor": true, "HardSigmoid": true, "HardSwish": true, "Identity": true,
	"Log": true, "Not": true, "Reciprocal": true, "Round": true, "Selu": true, "Shrink": true,
	"Sigmoid": true, "Sign": true, "Sin": true, "Sinh": true, "Softmax": true,
	"Softplus": true, "Softsign": true, "Sqrt": true, "Tan": true, "ThresholdedRelu": true,
}

// opencvLayerOps are non-standard op types that only the rewrites emit:
// layer types reached through the importer's fallback, OpenCV's own
// (Swish, Mish) or registered by this package's shim (TTMSwish).
var opencvLayerOps = map[string]bool{"Swish": true, "Mish": true, "TTMSwish": true, "TTMDepthwise": true, "TTMPointwise": true, "TTMExcitation": true, "TTMConv": true}

// opencvMicrosoftOps are the com.microsoft operators OpenCV 4.6 imports.
var opencvMicrosoftOps = map[string]bool{
	"QLinearAdd": true, "QLinearMul": true, "QLinearAveragePool": true,
	"QLinearGlobalAveragePool": true, "QLinearLeakyRelu": true, "QLinearSigmoid": true,
	"QLinearConcat": true,
}

// opencvTensorTypes are the initializer element types OpenCV 4.6 converts.
var opencvTensorTypes = map[onnx.DataType]bool{
	onnx.Float: true, onnx.Float16: true, onnx.Double: true, onnx.Int32: true,
	onnx.Int64: true, onnx.Int8: true, onnx.Uint8: true,
}

// nodeRef names a node in messages: its name, or its position and output.
func nodeRef(i int, n *onnx.Node) string {
	if n.Name != "" {
		return fmt.Sprintf("node %q", n.Name)
	}
	out := ""
	if len(n.Outputs) > 0 {
		out = n.Outputs[0]
	}
	return fmt.Sprintf("node #%d (output %q)", i, out)
}

// CheckONNX verifies that OpenCV 4.6 DNN can import the model: the model
// structure, every tensor's data, topological order, the operator of every
// node against an explicit allow-list, and the input forms OpenCV's
// importer requires for some operators (constant weights, attributes
// instead of inputs, ...). Run it after PrepareONNX, whose rewrites turn
// several rejected forms into accepted ones. Errors name the node and op.
func CheckONNX(m *onnx.Model) error {
	g := m.Graph
	if g == nil {
		return errors.New("onnx: model has no graph")
	}
	if m.IRVersion < 3 {
		return fmt.Errorf("onnx: IR version %d; OpenCV 4.6 needs 3 or later", m.IRVersion)
	}
	if v := m.OpsetVersion(""); v < 1 || v > 21 {
		return fmt.Errorf("onnx: default-domain opset version %d outside 1..21", v)
	}
	defined := map[string]bool{}
	consts := map[string]bool{}
	for _, t := range g.Initializers {
		if t.Name == "" {
			return errors.New("onnx: initializer without a name")
		}
		if defined[t.Name] {
			return fmt.Errorf("onnx: initializer %q defined twice", t.Name)
		}
		if err := checkTensor(t); err != nil {
			return fmt.Errorf("onnx: initializer: %w", err)
		}
		defined[t.Name], consts[t.Name] = true, true
	}
	inputs := 0
	for _, v := range g.Inputs {
		if consts[v.Name] {
			continue
		}
		inputs++
		if err := checkInput(v); err != nil {
			return err
		}
		if defined[v.Name] {
			return fmt.Errorf("onnx: graph input %q defined twice", v.Name)
		}
		defined[v.Name] = true
	}
	if inputs == 0 {
		return errors.New("onnx: graph has no input")
	}
	if len(g.Nodes) == 0 {
		return errors.New("onnx: graph has no nodes")
	}
	for i, n := range g.Nodes {
		ref := nodeRef(i, n)
		if err := checkOp(m, n); err != nil {
			return fmt.Errorf("onnx: %s: %w", ref, err)
		}
		if len(n.Outputs) == 0 || n.Outputs[0] == "" {
			return fmt.Errorf("onnx: %s (op %s) has no output", ref, n.OpType)
		}
		for _, in := range n.Inputs {
			if in != "" && !defined[in] {
				return fmt.Errorf("onnx: %s (op %s) reads %q, which no earlier node, input or initializer defines (nodes must be in topological order)", ref, n.OpType, in)
			}
		}
		if err := checkAttributes(n); err != nil {
			return fmt.Errorf("onnx: %s (op %s): %w", ref, n.OpType, err)
		}
		if err := checkForm(n, consts); err != nil {
			return fmt.Errorf("onnx: %s (op %s): %w", ref, n.OpType, err)
		}
		for _, out := range n.Outputs {
			if out == "" {
				continue
			}
			if defined[out] {
				return fmt.Errorf("onnx: %s (op %s) redefines %q", ref, n.OpType, out)
			}
			defined[out] = true
			if n.OpType == "Constant" {
				consts[out] = true
			}
		}
	}
	if len(g.Outputs) == 0 {
		return errors.New("onnx: graph has no output")
	}
	for _, v := range g.Outputs {
		if !defined[v.Name] {
			return fmt.Errorf("onnx: graph output %q is not produced by any node", v.Name)
		}
		if v.Type == nil || v.Type.Tensor == nil || v.Type.Tensor.Shape == nil {
			return fmt.Errorf("onnx: graph output %q has no tensor shape; OpenCV 4.6 asserts one", v.Name)
		}
	}
	return nil
}

// checkOp rejects operators OpenCV 4.6 cannot import.
func checkOp(m *onnx.Model, n *onnx.Node) error {
	switch n.Domain {
	case "", "ai.onnx":
		if opencvOps[n.OpType] || opencvLayerOps[n.OpType] {
			return nil
		}
	case "com.microsoft":
		if opencvMicrosoftOps[n.OpType] {
			if m.OpsetVersion("com.microsoft") == 0 {
				return fmt.Errorf("op %s of domain com.microsoft, which the model does not import", n.OpType)
			}
			return nil
		}
	}
	domain := n.Domain
	if domain == "" {
		domain = "ai.onnx"
	}
	return fmt.Errorf("op %q (domain %s) is not supported by OpenCV 4.6 DNN", n.OpType, domain)
}

func checkTensor(t *onnx.Tensor) error {
	if err := t.Check(); err != nil {
		return err
	}
	if !opencvTensorTypes[t.DataType] {
		return fmt.Errorf("tensor %q: element type %v is not supported by OpenCV 4.6", t.Name, t.DataType)
	}
	if len(t.Dims) > 6 {
		return fmt.Errorf("tensor %q: %d dimensions", t.Name, len(t.Dims))
	}
	return nil
}

// checkInput requires a float tensor with a known shape: OpenCV's importer
// asserts that every input has one.
func checkInput(v *onnx.ValueInfo) error {
	if v.Name == "" {
		return errors.New("onnx: graph input without a name")
	}
	if v.Type == nil || v.Type.Tensor == nil {
		return fmt.Errorf("onnx: graph input %q is not a tensor", v.Name)
	}
	tt := v.Type.Tensor
	if tt.ElemType != onnx.Float {
		return fmt.Errorf("onnx: graph input %q has element type %v, want FLOAT", v.Name, tt.ElemType)
	}
	if tt.Shape == nil {
		return fmt.Errorf("onnx: graph input %q has no shape", v.Name)
	}
	if len(tt.Shape.Dims) == 0 || len(tt.Shape.Dims) > 6 {
		return fmt.Errorf("onnx: graph input %q has %d dimensions", v.Name, len(tt.Shape.Dims))
	}
	for i, d := range tt.Shape.Dims {
		if d.Param != "" || d.Value < 1 || d.Value > math.MaxInt32 {
			return fmt.Errorf("onnx: graph input %q dimension %d is %s; OpenCV needs fixed sizes", v.Name, i, dimString(d))
		}
	}
	return nil
}

func dimString(d onnx.Dimension) string {
	if d.Param != "" {
		return fmt.Sprintf("%q (symbolic)", d.Param)
	}
	return fmt.Sprint(d.Value)
}

// checkAttributes rejects attribute kinds OpenCV's importer throws on, and
// values it would truncate.
func checkAttributes(n *onnx.Node) error {
	for _, a := range n.Attributes {
		switch a.Type {
		case onnx.AttrGraph, onnx.AttrGraphs:
			return fmt.Errorf("attribute %q holds a subgraph (control flow), which OpenCV 4.6 does not support", a.Name)
		case onnx.AttrTensors, onnx.AttrSparseTensor, onnx.AttrSparseTensors, onnx.AttrTypeProto, onnx.AttrTypeProtos:
			return fmt.Errorf("attribute %q has type %v, which OpenCV 4.6 does not support", a.Name, a.Type)
		case onnx.AttrStrings:
			if !(n.OpType == "LSTM" && a.Name == "activations") {
				return fmt.Errorf("attribute %q has type STRINGS, which OpenCV 4.6 does not support", a.Name)
			}
		case onnx.AttrInt:
			if a.I < math.MinInt32 || a.I > math.MaxInt32 {
				return fmt.Errorf("attribute %q = %d is outside OpenCV's 32-bit range", a.Name, a.I)
			}
		case onnx.AttrTensor:
			if a.T == nil {
				return fmt.Errorf("attribute %q has no tensor", a.Name)
			}
			if err := checkTensor(a.T); err != nil {
				return fmt.Errorf("attribute %q: %w", a.Name, err)
			}
		case onnx.AttrUndefined:
			return fmt.Errorf("attribute %q has no value", a.Name)
		}
		switch a.Name {
		case "kernel_shape", "strides", "dilations":
			if len(a.Ints) < 1 || len(a.Ints) > 3 {
				return fmt.Errorf("attribute %s has %d values, want 1..3", a.Name, len(a.Ints))
			}
			for _, v := range a.Ints {
				if v < 1 || v > 1<<16 {
					return fmt.Errorf("attribute %s value %d out of range", a.Name, v)
				}
			}
		case "pads":
			if len(a.Ints)%2 != 0 {
				return fmt.Errorf("attribute pads has %d values, want an even number", len(a.Ints))
			}
			for _, v := range a.Ints {
				if v < -(1<<16) || v > 1<<16 {
					return fmt.Errorf("attribute pads value %d out of range", v)
				}
			}
		}
	}
	return nil
}

// checkForm checks operator-specific forms OpenCV 4.6's importer requires.
func checkForm(n *onnx.Node, consts map[string]bool) error {
	in := func(i int) string {
		if i < len(n.Inputs) {
			return n.Inputs[i]
		}
		return ""
	}
	needConst := func(i int, what string) error {
		if !consts[in(i)] {
			return fmt.Errorf("its %s (input %d, %q) must be a constant for OpenCV 4.6", what, i, in(i))
		}
		return nil
	}
	nIn := func(lo, hi int) error {
		if len(n.Inputs) < lo || len(n.Inputs) > hi {
			return fmt.Errorf("%d inputs, OpenCV 4.6 handles %d..%d", len(n.Inputs), lo, hi)
		}
		return nil
	}
	switch n.OpType {
	case "Conv", "ConvTranspose":
		if err := nIn(2, 3); err != nil {
			return err
		}
		if n.OpType == "ConvTranspose" {
			return needConst(1, "weight")
		}
	case "Gemm":
		if err := nIn(2, 3); err != nil {
			return err
		}
		if n.AttrInt("transA", 0) != 0 {
			return errors.New("transA=1: OpenCV 4.6 ignores transA")
		}
		for _, a := range []string{"alpha", "beta"} {
			if at := n.Attr(a); at != nil && at.F != 1 {
				return fmt.Errorf("%s=%g: OpenCV 4.6 ignores %s", a, at.F, a)
			}
		}
		if n.AttrInt("transB", 0) != 1 {
			return errors.New("transB=0: OpenCV 4.6 imports only transB=1 correctly")
		}
		if len(n.Inputs) == 3 {
			if err := needConst(2, "C"); err != nil {
				return err
			}
		}
		return needConst(1, "B matrix")
	case "MatMul":
		if err := nIn(2, 2); err != nil {
			return err
		}
		if consts[in(0)] {
			return errors.New("its first input must not be a constant for OpenCV 4.6")
		}
	case "Reshape":
		if n.Attr("shape") == nil {
			if err := nIn(2, 2); err != nil {
				return err
			}
			return needConst(1, "shape")
		}
	case "Pow":
		if err := nIn(2, 2); err != nil {
			return err
		}
		return needConst(1, "exponent")
	case "Squeeze":
		if len(n.Inputs) != 1 || n.Attr("axes") == nil {
			return errors.New("OpenCV 4.6 needs one input and an axes attribute")
		}
	case "Unsqueeze":
		if err := nIn(1, 2); err != nil {
			return err
		}
		if len(n.Inputs) == 2 {
			return needConst(1, "axes")
		}
		if n.Attr("axes") == nil {
			return errors.New("no axes")
		}
	case "ReduceMean", "ReduceSum", "ReduceMax", "GlobalAveragePool", "GlobalMaxPool", "Clip", "Split", "Flatten", "Transpose":
		if err := nIn(1, 1); err != nil {
			return err
		}
	case "Pad":
		if err := nIn(1, 3); err != nil {
			return err
		}
		for i := 1; i < len(n.Inputs); i++ {
			if in(i) != "" {
				if err := needConst(i, "pads/value"); err != nil {
					return err
				}
			}
		}
	case "Gather":
		if err := nIn(2, 2); err != nil {
			return err
		}
		return needConst(1, "indices")
	case "Expand":
		if err := nIn(2, 2); err != nil {
			return err
		}
		return needConst(1, "shape")
	case "Slice":
		for i := 1; i < len(n.Inputs); i++ {
			if err := needConst(i, "starts/ends/axes/steps"); err != nil {
				return err
			}
		}
	case "PRelu":
		if err := nIn(2, 2); err != nil {
			return err
		}
		return needConst(1, "slope")
	case "BatchNormalization":
		if err := nIn(5, 5); err != nil {
			return err
		}
		for i := 1; i < 5; i++ {
			if err := needConst(i, "statistics"); err != nil {
				return err
			}
		}
	case "Add", "Sub", "Mul", "Div":
		return nIn(2, 2)
	case "Constant":
		if len(n.Inputs) != 0 {
			return errors.New("a Constant with inputs")
		}
		a := n.Attr("value")
		if a == nil || a.Type != onnx.AttrTensor {
			return errors.New("OpenCV 4.6 reads only the tensor 'value' form of Constant")
		}
	}
	return nil
}

// sortedOps lists an op set, for messages and tests.
func sortedOps(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
