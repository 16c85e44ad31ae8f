package vision

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ttmrobot/ttm/internal/onnx"
)

// Rewrite records one change PrepareONNX made to a graph.
type Rewrite struct {
	Kind   string // what was rewritten, e.g. "swish-fusion"
	Node   string // the node concerned (its name, or its first output)
	Detail string
}

func (r Rewrite) String() string { return r.Kind + " " + r.Node + ": " + r.Detail }

// The kinds of rewrite.
const (
	RewriteOpset          = "opset"               // IR version / opset import OpenCV needs to use its op handlers
	RewriteInitInputs     = "initializer-inputs"  // initializers listed as graph inputs
	RewritePinInput       = "pin-input"           // symbolic input dims fixed to the backbone's size
	RewriteConstantForm   = "constant-form"       // Constant value_float/value_ints/... to a value tensor
	RewriteInputAttribute = "input-to-attribute"  // opset 11-18 constant inputs (axes, min/max, split, Pad axes) to attributes
	RewriteIdentity       = "identity"            // Identity and inference-time Dropout removed
	RewriteNHWCInput      = "nhwc-input"          // tf2onnx input Transpose NHWC->NCHW removed, input made NCHW
	RewriteNHWCOutput     = "nhwc-output"         // trailing Transpose NCHW->NHWC removed, output left NCHW
	RewriteTransposePair  = "transpose-pair"      // Transpose pairs that cancel
	RewriteFlatten        = "flatten-chain"       // Shape->Gather->Unsqueeze->Concat->Reshape to Flatten
	RewriteReduceMean     = "reducemean-gap"      // ReduceMean over H, W to GlobalAveragePool
	RewritePadConv        = "pad-into-conv"       // zero Pad before a Conv folded into the Conv's pads
	RewriteAddOrder       = "broadcast-add-order" // full-size operand of a broadcasting Add put first
	RewriteGemm           = "gemm-attributes"     // Gemm alpha, beta folded into the constants, B stored for transB=1
	RewriteOutputShape    = "output-shape"        // graph outputs given the shape OpenCV asserts they have
	RewriteSwish          = "swish-fusion"        // Sigmoid(x)*x to OpenCV's Swish layer
	RewriteDepthwise      = "depthwise"           // Conv with group = channels to the TTMDepthwise layer
	RewritePointwise      = "pointwise"           // 1x1 Conv (with swish, excitation scale, residual) to TTMPointwise
	RewriteExcitation     = "excitation"          // Conv-swish-Conv-Sigmoid of a squeeze-excitation to TTMExcitation
	RewriteConv           = "conv"                // small k x k Conv (a stem, with its swish) to TTMConv
	RewriteDeadCode       = "dead-code"           // nodes and initializers nothing reads
)

// PrepareOptions says what the caller feeds and reads.
type PrepareOptions struct {
	// Inputs pins graph inputs to fixed shapes: symbolic or missing dims are
	// set, fixed dims must agree. OpenCV needs fixed input shapes.
	Inputs map[string][]int64
	// ImageInput is the input fed NCHW; a Transpose NHWC->NCHW right after
	// it (tf2onnx's wrapper) is removed and the input made NCHW.
	ImageInput string
	// Output is the value read; a Transpose NCHW->NHWC right before it is
	// removed, leaving it NCHW.
	Output string
	// SwishOp is the op type Sigmoid+Mul pairs are fused into: "TTMSwish"
	// (this package's fast layer) or "Swish" (OpenCV's); "" keeps them.
	SwishOp string
	// DepthwiseOp is the op type depthwise Convs (group = input channels =
	// output channels, dilation 1, constant weights) are turned into:
	// DepthwiseOp (this package's layer) or "" to keep them.
	DepthwiseOp string
	// PointwiseOp is the op type 1x1 Convs (group 1, stride 1, no
	// padding, constant weights, more than one pixel) are turned into,
	// with the TTMSwish after them, the excitation Mul before them and the
	// residual Add after them fused in: PointwiseOp (this package's layer)
	// or "" to keep them.
	PointwiseOp string
	// ExcitationOp is the op type the gates of squeeze-excitation blocks
	// (Conv 1x1, TTMSwish, Conv 1x1, Sigmoid over a 1x1 map, constant
	// weights and biases) are turned into: ExcitationOp or "" to keep
	// them.
	ExcitationOp string
	// ConvOp is the op type Convs with group 1, a kernel larger than 1x1
	// and at most ConvMaxK = C·kh·kw (a network's stem) are turned into,
	// with the TTMSwish after them fused in: ConvOp or "" to keep them.
	ConvOp string
	// DepthwiseSeparateSwish keeps a TTMSwish that follows a depthwise
	// convolution as its own layer instead of fusing it into the
	// DepthwiseOp node.
	DepthwiseSeparateSwish bool
	// DepthwiseExpansion fuses into a DepthwiseOp node of 16k channels
	// the PointwiseOp node that computes its input from nothing but a 1x1
	// convolution and its swish (an MBConv block's expansion), so that the
	// expanded map is computed a few rows at a time and never stored.
	DepthwiseExpansion bool
}

// PrepareONNX rewrites a model in place into a form OpenCV 4.6 DNN imports
// and runs well, and reports each change. The rewrites are exact
// equivalences (same numbers up to float rounding), except that the NHWC
// wrappers change the layout the caller feeds and reads to NCHW, which is
// what Backbone.Run uses. Run CheckONNX on the result.
func PrepareONNX(m *onnx.Model, opts PrepareOptions) ([]Rewrite, error) {
	if m.Graph == nil {
		return nil, errors.New("onnx: model has no graph")
	}
	var all []Rewrite
	all = append(all, fixOpset(m)...)
	all = append(all, dropInitializerInputs(m.Graph)...)
	passes := []func(*graphIndex, PrepareOptions) ([]Rewrite, error){
		constantForms,
		removeIdentity,
		nhwcWrappers,
		pinInputs,
		inputsToAttributes,
		transposePairs,
		flattenChains,
		reduceMeanToGAP,
		padIntoConv,
		gemmAttributes,
		addOperandOrder,
		swishFusion,
		outputShapes,
		excitationGates,
		stemConvs,
		pointwiseConvs,
		depthwiseConvs, // last: shape inference does not know the layer
	}
	for _, pass := range passes {
		r, err := pass(indexGraph(m.Graph), opts)
		if err != nil {
			return all, err
		}
		all = append(all, r...)
	}
	if n := pruneDead(m.Graph); n > 0 {
		all = append(all, Rewrite{RewriteDeadCode, m.Graph.Name, fmt.Sprintf("removed %d nodes whose outputs nothing reads", n)})
	}
	return all, nil
}

func nodeName(n *onnx.Node) string {
	if n.Name != "" {
		return n.Name
	}
	if len(n.Outputs) > 0 {
		return n.Outputs[0]
	}
	return "?"
}

func fixOpset(m *onnx.Model) []Rewrite {
	var r []Rewrite
	if m.IRVersion < 3 {
		r = append(r, Rewrite{RewriteOpset, "model", fmt.Sprintf("IR version %d raised to 3: below 3 OpenCV 4.6 ignores the opset and has no handler for any op", m.IRVersion)})
		m.IRVersion = 3
	}
	if m.OpsetVersion("") == 0 {
		m.OpsetImports = append(m.OpsetImports, onnx.OperatorSetID{Version: 1})
		r = append(r, Rewrite{RewriteOpset, "model", "no ai.onnx opset import: added one (OpenCV 4.6 builds its op handlers only for declared opsets)"})
	}
	return r
}

func dropInitializerInputs(g *onnx.Graph) []Rewrite {
	inits := map[string]bool{}
	for _, t := range g.Initializers {
		inits[t.Name] = true
	}
	kept := g.Inputs[:0]
	n := 0
	for _, v := range g.Inputs {
		if inits[v.Name] {
			n++
			continue
		}
		kept = append(kept, v)
	}
	g.Inputs = kept
	if n == 0 {
		return nil
	}
	return []Rewrite{{RewriteInitInputs, g.Name, fmt.Sprintf("%d initializers were also listed as graph inputs (IR < 4 style); now initializers only", n)}}
}

// constantForms turns the scalar and list forms of Constant (opset 12) into
// the tensor form, the only one OpenCV 4.6 reads.
func constantForms(x *graphIndex, _ PrepareOptions) ([]Rewrite, error) {
	var r []Rewrite
	for _, n := range x.g.Nodes {
		if n.OpType != "Constant" || n.Attr("value") != nil || len(n.Attributes) != 1 {
			continue
		}
		a := n.Attributes[0]
		var t *onnx.Tensor
		switch {
		case a.Name == "value_float" && a.Type == onnx.AttrFloat:
			t = onnx.FloatTensor("", []float32{a.F})
		case a.Name == "value_floats" && a.Type == onnx.AttrFloats:
			t = onnx.FloatTensor("", a.Floats, int64(len(a.Floats)))
		case a.Name == "value_int" && a.Type == onnx.AttrInt:
			t = onnx.Int64Tensor("", []int64{a.I})
		case a.Name == "value_ints" && a.Type == onnx.AttrInts:
			t = onnx.Int64Tensor("", a.Ints, int64(len(a.Ints)))
		default:
			continue
		}
		n.Attributes = []*onnx.Attribute{onnx.TensorAttr("value", t)}
		r = append(r, Rewrite{RewriteConstantForm, nodeName(n), a.Name + " as a value tensor"})
	}
	return r, nil
}

// removeIdentity drops Identity nodes and Dropout nodes whose mask nobody
// reads (Dropout is the identity at inference).
func removeIdentity(x *graphIndex, _ PrepareOptions) ([]Rewrite, error) {
	g := x.g
	var r []Rewrite
	dead := map[*onnx.Node]bool{}
	graphInputs := map[string]bool{}
	for _, v := range g.Inputs {
		graphInputs[v.Name] = true
	}
	for _, n := range g.Nodes {
		if (n.OpType != "Identity" && n.OpType != "Dropout") || len(n.Inputs) < 1 || len(n.Outputs) < 1 {
			continue
		}
		if n.OpType == "Dropout" && len(n.Outputs) > 1 && n.Outputs[1] != "" && (len(x.consumers[n.Outputs[1]]) > 0 || x.outputs[n.Outputs[1]]) {
			continue
		}
		in, out := n.Inputs[0], n.Outputs[0]
		if in == "" || out == "" || in == out {
			continue
		}
		if x.outputs[out] {
			// The output name must survive: rename the producer's output.
			p := x.producer[in]
			if p == nil || x.outputs[in] || graphInputs[in] || dead[p] {
				continue
			}
			for i, o := range p.Outputs {
				if o == in {
					p.Outputs[i] = out
				}
			}
			replaceInput(g, in, out)
		} else {
			replaceInput(g, out, in)
		}
		dead[n] = true
		r = append(r, Rewrite{RewriteIdentity, nodeName(n), n.OpType + " removed"})
	}
	removeNodes(g, dead)
	return r, nil
}

// nhwcWrappers removes the layout Transposes tf2onnx puts around a Keras
// model: NHWC->NCHW after the image input and NCHW->NHWC before the
// output. The input is then fed NCHW and the output read NCHW.
func nhwcWrappers(x *graphIndex, opts PrepareOptions) ([]Rewrite, error) {
	g := x.g
	var r []Rewrite
	dead := map[*onnx.Node]bool{}
	if v := findInput(g, opts.ImageInput); v != nil {
		cs := x.consumers[v.Name]
		if len(cs) == 1 && cs[0].OpType == "Transpose" && slices.Equal(cs[0].AttrInts("perm"), []int64{0, 3, 1, 2}) && len(cs[0].Outputs) == 1 {
			t := cs[0]
			if s := inputShape(v); s != nil && len(s.Dims) == 4 {
				d := s.Dims
				s.Dims = []onnx.Dimension{d[0], d[3], d[1], d[2]}
			}
			replaceInput(g, t.Outputs[0], v.Name)
			dead[t] = true
			r = append(r, Rewrite{RewriteNHWCInput, nodeName(t), fmt.Sprintf("input %q is now fed NCHW; its NHWC->NCHW Transpose is removed", v.Name)})
		}
	}
	if opts.Output != "" && x.outputs[opts.Output] {
		t := x.producer[opts.Output]
		if t != nil && t.OpType == "Transpose" && slices.Equal(t.AttrInts("perm"), []int64{0, 2, 3, 1}) && len(t.Inputs) == 1 {
			z := t.Inputs[0]
			p := x.producer[z]
			if p != nil && x.onlyConsumer(z, t) {
				for i, o := range p.Outputs {
					if o == z {
						p.Outputs[i] = opts.Output
					}
				}
				for _, v := range g.Outputs {
					if s := inputShape(v); v.Name == opts.Output && s != nil && len(s.Dims) == 4 {
						d := s.Dims
						s.Dims = []onnx.Dimension{d[0], d[3], d[1], d[2]}
					}
				}
				dead[t] = true
				r = append(r, Rewrite{RewriteNHWCOutput, nodeName(t), fmt.Sprintf("output %q is now NCHW; its NCHW->NHWC Transpose is removed", opts.Output)})
			}
		}
	}
	removeNodes(g, dead)
	return r, nil
}

func findInput(g *onnx.Graph, name string) *onnx.ValueInfo {
	for _, v := range g.Inputs {
		if v.Name == name {
			return v
		}
	}
	return nil
}

func inputShape(v *onnx.ValueInfo) *onnx.Shape {
	if v.Type == nil || v.Type.Tensor == nil {
		return nil
	}
	return v.Type.Tensor.Shape
}

// pinInputs fixes the named inputs' shapes.
func pinInputs(x *graphIndex, opts PrepareOptions) ([]Rewrite, error) {
	var r []Rewrite
	names := make([]string, 0, len(opts.Inputs))
	for k := range opts.Inputs {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, name := range names {
		want := opts.Inputs[name]
		v := findInput(x.g, name)
		if v == nil {
			have := make([]string, len(x.g.Inputs))
			for i, in := range x.g.Inputs {
				have[i] = in.Name
			}
			return r, fmt.Errorf("onnx: graph has no input %q (inputs: %s)", name, strings.Join(have, ", "))
		}
		if v.Type == nil {
			v.Type = &onnx.Type{}
		}
		if v.Type.Tensor == nil {
			v.Type.Tensor = &onnx.TensorType{ElemType: onnx.Float}
		}
		tt := v.Type.Tensor
		if tt.Shape == nil || len(tt.Shape.Dims) == 0 {
			tt.Shape = &onnx.Shape{Dims: make([]onnx.Dimension, len(want))}
		}
		if len(tt.Shape.Dims) != len(want) {
			return r, fmt.Errorf("onnx: graph input %q has %d dimensions, the backbone feeds %v", name, len(tt.Shape.Dims), want)
		}
		var changed []string
		for i, d := range tt.Shape.Dims {
			if d.Param == "" && d.Value > 0 {
				if d.Value != want[i] {
					return r, fmt.Errorf("onnx: graph input %q has shape %s, the backbone feeds %v", name, shapeString(tt.Shape), want)
				}
				continue
			}
			changed = append(changed, fmt.Sprintf("dim %d %s->%d", i, dimString(d), want[i]))
			tt.Shape.Dims[i] = onnx.Dimension{Value: want[i]}
		}
		if len(changed) > 0 {
			r = append(r, Rewrite{RewritePinInput, name, strings.Join(changed, ", ")})
		}
	}
	return r, nil
}

func shapeString(s *onnx.Shape) string {
	parts := make([]string, len(s.Dims))
	for i, d := range s.Dims {
		if d.Param != "" {
			parts[i] = d.Param
		} else {
			parts[i] = fmt.Sprint(d.Value)
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// inputsToAttributes turns the constant inputs newer opsets introduced
// back into the attributes OpenCV 4.6 reads: Squeeze axes (opset 13),
// ReduceMean/Sum/Max axes (opset 18), Clip min/max (opset 11), Split
// sizes (opset 13), and Pad axes (opset 18) into full pads.
func inputsToAttributes(x *graphIndex, _ PrepareOptions) ([]Rewrite, error) {
	var r []Rewrite
	for _, n := range x.g.Nodes {
		switch n.OpType {
		case "Squeeze", "ReduceMean", "ReduceSum", "ReduceMax", "Split":
			if len(n.Inputs) != 2 {
				continue
			}
			attr := "axes"
			if n.OpType == "Split" {
				attr = "split"
			}
			if n.Inputs[1] == "" {
				n.Inputs = n.Inputs[:1]
				r = append(r, Rewrite{RewriteInputAttribute, nodeName(n), "empty " + attr + " input dropped"})
				continue
			}
			v := x.constInts(n.Inputs[1])
			if v == nil {
				continue
			}
			if n.OpType == "Squeeze" && len(v) == 0 {
				continue
			}
			n.SetAttr(onnx.IntsAttr(attr, v...))
			n.Inputs = n.Inputs[:1]
			r = append(r, Rewrite{RewriteInputAttribute, nodeName(n), fmt.Sprintf("%s input %v as an attribute", attr, v)})
		case "Clip":
			if len(n.Inputs) < 2 {
				continue
			}
			ok := true
			var attrs []*onnx.Attribute
			for i, name := range []string{"min", "max"} {
				if i+1 >= len(n.Inputs) || n.Inputs[i+1] == "" {
					continue
				}
				v := x.constFloats(n.Inputs[i+1])
				if len(v) != 1 {
					ok = false
					break
				}
				attrs = append(attrs, onnx.FloatAttr(name, v[0]))
			}
			if !ok {
				continue
			}
			for _, a := range attrs {
				n.SetAttr(a)
			}
			n.Inputs = n.Inputs[:1]
			r = append(r, Rewrite{RewriteInputAttribute, nodeName(n), "min/max inputs as attributes"})
		case "Pad":
			if len(n.Inputs) != 4 || n.Inputs[3] == "" {
				continue
			}
			axes, pads := x.constInts(n.Inputs[3]), x.constInts(n.Inputs[1])
			rank := len(x.shapes[n.Inputs[0]])
			if axes == nil || pads == nil || rank == 0 || len(pads) != 2*len(axes) {
				continue
			}
			full := make([]int64, 2*rank)
			valid := true
			for i, a := range axes {
				if a < 0 {
					a += int64(rank)
				}
				if a < 0 || a >= int64(rank) {
					valid = false
					break
				}
				full[a], full[int64(rank)+a] = pads[i], pads[len(axes)+i]
			}
			if !valid {
				continue
			}
			name := nodeName(n) + "/pads"
			x.g.Initializers = append(x.g.Initializers, onnx.Int64Tensor(name, full, int64(len(full))))
			n.Inputs = []string{n.Inputs[0], name, n.Inputs[2]}
			if n.Inputs[2] == "" {
				n.Inputs = n.Inputs[:2]
			}
			r = append(r, Rewrite{RewriteInputAttribute, nodeName(n), fmt.Sprintf("Pad over axes %v expanded to pads %v", axes, full)})
		}
	}
	return r, nil
}

// transposePairs removes Transposes that undo each other.
func transposePairs(x *graphIndex, _ PrepareOptions) ([]Rewrite, error) {
	g := x.g
	var r []Rewrite
	dead := map[*onnx.Node]bool{}
	for _, t2 := range g.Nodes {
		if t2.OpType != "Transpose" || len(t2.Inputs) != 1 || len(t2.Outputs) != 1 || dead[t2] || x.outputs[t2.Outputs[0]] {
			continue
		}
		t1 := x.producer[t2.Inputs[0]]
		if t1 == nil || t1.OpType != "Transpose" || dead[t1] || len(t1.Inputs) != 1 || !x.onlyConsumer(t2.Inputs[0], t2) {
			continue
		}
		p, q := t1.AttrInts("perm"), t2.AttrInts("perm")
		if len(p) == 0 || len(p) != len(q) || !isPerm(p, len(p)) || !isPerm(q, len(q)) {
			continue
		}
		identity := true
		for i := range q {
			identity = identity && p[q[i]] == int64(i)
		}
		if !identity {
			continue
		}
		replaceInput(g, t2.Outputs[0], t1.Inputs[0])
		dead[t1], dead[t2] = true, true
		r = append(r, Rewrite{RewriteTransposePair, nodeName(t1) + "+" + nodeName(t2), fmt.Sprintf("perm %v then %v cancel", p, q)})
	}
	removeNodes(g, dead)
	return r, nil
}

// flattenChains replaces x.view(x.size(0), -1) as PyTorch exports it,
// Reshape(X, Concat(Unsqueeze(Gather(Shape(X), 0)), [-1])), by
// Flatten(X, axis=1). The chain computes its shape at run time from a
// possibly symbolic batch dimension.
func flattenChains(x *graphIndex, _ PrepareOptions) ([]Rewrite, error) {
	var r []Rewrite
	for _, n := range x.g.Nodes {
		if n.OpType != "Reshape" || len(n.Inputs) != 2 || x.consts[n.Inputs[1]] != nil {
			continue
		}
		data := n.Inputs[0]
		c := x.producer[n.Inputs[1]]
		if c == nil || c.OpType != "Concat" || len(c.Inputs) != 2 || c.AttrInt("axis", 0) != 0 {
			continue
		}
		if rest := x.constInts(c.Inputs[1]); !slices.Equal(rest, []int64{-1}) {
			continue
		}
		u := x.producer[c.Inputs[0]]
		if u == nil || u.OpType != "Unsqueeze" || len(u.Inputs) == 0 {
			continue
		}
		axes := u.AttrInts("axes")
		if len(u.Inputs) == 2 {
			axes = x.constInts(u.Inputs[1])
		}
		if !slices.Equal(axes, []int64{0}) {
			continue
		}
		ga := x.producer[u.Inputs[0]]
		if ga == nil || ga.OpType != "Gather" || len(ga.Inputs) != 2 || ga.AttrInt("axis", 0) != 0 {
			continue
		}
		if idx := x.constInts(ga.Inputs[1]); !slices.Equal(idx, []int64{0}) {
			continue
		}
		sh := x.producer[ga.Inputs[0]]
		if sh == nil || sh.OpType != "Shape" || len(sh.Inputs) != 1 || sh.Inputs[0] != data || len(sh.Attributes) != 0 {
			continue
		}
		n.OpType = "Flatten"
		n.Inputs = []string{data}
		n.Attributes = []*onnx.Attribute{onnx.IntAttr("axis", 1)}
		r = append(r, Rewrite{RewriteFlatten, nodeName(n), "Reshape to [batch, -1] computed through Shape/Gather/Unsqueeze/Concat is Flatten(axis=1)"})
	}
	return r, nil
}

// reduceMeanToGAP turns ReduceMean over the spatial axes of a 4-D tensor
// (how Keras/tf2onnx and some PyTorch exports write global pooling) into
// GlobalAveragePool, followed by Flatten when keepdims is 0.
func reduceMeanToGAP(x *graphIndex, _ PrepareOptions) ([]Rewrite, error) {
	g := x.g
	var r []Rewrite
	var out []*onnx.Node
	for _, n := range g.Nodes {
		out = append(out, n)
		if n.OpType != "ReduceMean" || len(n.Inputs) != 1 || len(n.Outputs) != 1 || len(x.shapes[n.Inputs[0]]) != 4 {
			continue
		}
		mask, ok := normAxes(n.AttrInts("axes"), 4)
		if !ok || !slices.Equal(mask, []bool{false, false, true, true}) {
			continue
		}
		keep := n.AttrInt("keepdims", 1) != 0
		n.OpType = "GlobalAveragePool"
		n.Attributes = nil
		if keep {
			r = append(r, Rewrite{RewriteReduceMean, nodeName(n), "ReduceMean over axes 2, 3 is GlobalAveragePool"})
			continue
		}
		final := n.Outputs[0]
		n.Outputs = []string{final + "/gap"}
		out = append(out, &onnx.Node{Name: nodeName(n) + "/flatten", OpType: "Flatten", Inputs: n.Outputs, Outputs: []string{final},
			Attributes: []*onnx.Attribute{onnx.IntAttr("axis", 1)}})
		r = append(r, Rewrite{RewriteReduceMean, nodeName(n), "ReduceMean over axes 2, 3 without keepdims is GlobalAveragePool then Flatten"})
	}
	g.Nodes = out
	return r, nil
}

// padIntoConv folds a zero Pad of the spatial axes into the Conv that
// reads it (Keras' ZeroPadding2D before a VALID convolution, as tf2onnx
// exports it).
func padIntoConv(x *graphIndex, _ PrepareOptions) ([]Rewrite, error) {
	g := x.g
	var r []Rewrite
	dead := map[*onnx.Node]bool{}
	for _, p := range g.Nodes {
		if p.OpType != "Pad" || len(p.Inputs) < 1 || len(p.Outputs) != 1 || p.AttrString("mode", "constant") != "constant" {
			continue
		}
		pads := p.AttrInts("pads")
		if len(p.Inputs) >= 2 {
			pads = x.constInts(p.Inputs[1])
		}
		value := float32(0)
		if a := p.Attr("value"); a != nil && a.Type == onnx.AttrFloat {
			value = a.F
		}
		if len(p.Inputs) >= 3 && p.Inputs[2] != "" {
			v := x.constFloats(p.Inputs[2])
			if len(v) != 1 {
				continue
			}
			value = v[0]
		}
		if len(pads) != 8 || value != 0 || pads[0] != 0 || pads[1] != 0 || pads[4] != 0 || pads[5] != 0 || slices.Min(pads) < 0 {
			continue
		}
		cs := x.consumers[p.Outputs[0]]
		if len(cs) != 1 || x.outputs[p.Outputs[0]] {
			continue
		}
		c := cs[0]
		if c.OpType != "Conv" || len(c.Inputs) < 2 || c.Inputs[0] != p.Outputs[0] || c.Inputs[1] == p.Outputs[0] {
			continue
		}
		if ap := c.AttrString("auto_pad", "NOTSET"); ap != "NOTSET" && ap != "VALID" {
			continue
		}
		cp := c.AttrInts("pads")
		if cp == nil {
			cp = make([]int64, 4)
		}
		if len(cp) != 4 {
			continue
		}
		merged := []int64{cp[0] + pads[2], cp[1] + pads[3], cp[2] + pads[6], cp[3] + pads[7]}
		c.DeleteAttr("auto_pad")
		c.SetAttr(onnx.IntsAttr("pads", merged...))
		c.Inputs[0] = p.Inputs[0]
		dead[p] = true
		r = append(r, Rewrite{RewritePadConv, nodeName(p), fmt.Sprintf("zero padding folded into %s: pads %v", nodeName(c), merged)})
	}
	removeNodes(g, dead)
	return r, nil
}

// gemmAttributes rewrites Gemms into the one form OpenCV 4.6 imports
// correctly: it ignores alpha and beta (computing A·B + C), takes an absent
// transB for 1 where ONNX's default is 0, and with transB=0 transposes B
// but then reads the output size from the wrong axis. So alpha and beta
// are folded into the constant B and C, and B is stored transposed with
// transB=1.
func gemmAttributes(x *graphIndex, _ PrepareOptions) ([]Rewrite, error) {
	var r []Rewrite
	for _, n := range x.g.Nodes {
		if n.OpType != "Gemm" || len(n.Inputs) < 2 || n.AttrInt("transA", 0) != 0 {
			continue
		}
		var did []string
		for i, name := range []string{"alpha", "beta"} {
			a := n.Attr(name)
			if a == nil || a.Type != onnx.AttrFloat || a.F == 1 {
				continue
			}
			in := i + 1
			if in >= len(n.Inputs) || n.Inputs[in] == "" {
				n.DeleteAttr(name) // beta without C scales nothing
				continue
			}
			v := x.constFloats(n.Inputs[in])
			if v == nil {
				continue // left for CheckONNX to reject
			}
			for j := range v {
				v[j] *= a.F
			}
			scaled := nodeName(n) + "/" + name + "*" + n.Inputs[in]
			x.g.Initializers = append(x.g.Initializers, onnx.FloatTensor(scaled, v, x.consts[n.Inputs[in]].Dims...))
			x.consts[scaled] = x.g.Initializers[len(x.g.Initializers)-1]
			n.Inputs[in] = scaled
			n.DeleteAttr(name)
			did = append(did, fmt.Sprintf("%s=%g folded into %s", name, a.F, []string{"B", "C"}[i]))
		}
		if n.AttrInt("transB", 0) == 0 {
			b := x.consts[n.Inputs[1]]
			v := x.constFloats(n.Inputs[1])
			if b == nil || v == nil || len(b.Dims) != 2 {
				continue
			}
			k, m := int(b.Dims[0]), int(b.Dims[1])
			tr := make([]float32, len(v))
			for i := 0; i < k; i++ {
				for j := 0; j < m; j++ {
					tr[j*k+i] = v[i*m+j]
				}
			}
			name := n.Inputs[1] + "/transposed"
			x.g.Initializers = append(x.g.Initializers, onnx.FloatTensor(name, tr, int64(m), int64(k)))
			n.Inputs[1] = name
			n.SetAttr(onnx.IntAttr("transB", 1))
			did = append(did, "B stored transposed, transB=1")
		}
		if len(did) > 0 {
			r = append(r, Rewrite{RewriteGemm, nodeName(n), strings.Join(did, ", ")})
		}
	}
	return r, nil
}

// outputShapes gives every graph output a tensor type with a shape (the
// inferred one, or an empty one): OpenCV 4.6 asserts that outputs have
// one.
func outputShapes(x *graphIndex, _ PrepareOptions) ([]Rewrite, error) {
	var r []Rewrite
	for _, v := range x.g.Outputs {
		if v.Type == nil {
			v.Type = &onnx.Type{}
		}
		if v.Type.Tensor == nil {
			v.Type.Tensor = &onnx.TensorType{ElemType: onnx.Float}
		}
		if v.Type.Tensor.Shape != nil {
			continue
		}
		s := &onnx.Shape{}
		for _, d := range x.shapes[v.Name] {
			s.Dims = append(s.Dims, onnx.Dimension{Value: d})
		}
		v.Type.Tensor.Shape = s
		r = append(r, Rewrite{RewriteOutputShape, v.Name, fmt.Sprintf("output given shape %v", x.shapes[v.Name])})
	}
	return r, nil
}

// addOperandOrder puts the full-size operand of a broadcasting Add or Sum
// of two computed tensors first: OpenCV 4.6 turns it into a Scale layer
// that takes its output size from the first input.
func addOperandOrder(x *graphIndex, _ PrepareOptions) ([]Rewrite, error) {
	var r []Rewrite
	for _, n := range x.g.Nodes {
		if (n.OpType != "Add" && n.OpType != "Sum") || len(n.Inputs) != 2 {
			continue
		}
		a, b := n.Inputs[0], n.Inputs[1]
		if x.consts[a] != nil || x.consts[b] != nil {
			continue
		}
		sa, sb := x.shapes[a], x.shapes[b]
		if sa == nil || sb == nil || slices.Equal(sa, sb) || dimsProduct(sa) >= dimsProduct(sb) {
			continue
		}
		n.Inputs[0], n.Inputs[1] = b, a
		r = append(r, Rewrite{RewriteAddOrder, nodeName(n), fmt.Sprintf("operands swapped: %v + %v", sb, sa)})
	}
	return r, nil
}

// swishAfter returns the TTMSwish node that is the only reader of value
// (not a graph output), for a layer to take in as its activation; nil if
// there is none, or if a rewrite already removed it.
func swishAfter(x *graphIndex, value string, dead map[*onnx.Node]bool) *onnx.Node {
	cs := x.consumers[value]
	if len(cs) != 1 || x.outputs[value] || dead[cs[0]] {
		return nil
	}
	if sw := cs[0]; sw.OpType == "TTMSwish" && len(sw.Inputs) == 1 && len(sw.Outputs) == 1 {
		return sw
	}
	return nil
}

// swishFusion turns Mul(x, Sigmoid(x)) into one node of type opts.SwishOp,
// a layer type registered with OpenCV (reached through the importer's
// fallback to registered layer types), which OpenCV fuses into the
// preceding convolution. PyTorch exports SiLU and TF exports swish as the
// two-node form; OpenCV 4.6 cannot fuse that, and runs the Sigmoid and the
// Mul as two extra passes over the activations.
func swishFusion(x *graphIndex, opts PrepareOptions) ([]Rewrite, error) {
	if opts.SwishOp == "" {
		return nil, nil
	}
	g := x.g
	dead := map[*onnx.Node]bool{}
	count := 0
	first := ""
	for _, m := range g.Nodes {
		if m.OpType != "Mul" || len(m.Inputs) != 2 || len(m.Outputs) != 1 {
			continue
		}
		for i := 0; i < 2; i++ {
			s := x.producer[m.Inputs[i]]
			other := m.Inputs[1-i]
			if s == nil || s.OpType != "Sigmoid" || len(s.Inputs) != 1 || s.Inputs[0] != other || dead[s] || !x.onlyConsumer(m.Inputs[i], m) {
				continue
			}
			m.OpType = opts.SwishOp
			m.Inputs = []string{other}
			m.Attributes = nil
			dead[s] = true
			if count == 0 {
				first = nodeName(m)
			}
			count++
			break
		}
	}
	removeNodes(g, dead)
	if count == 0 {
		return nil, nil
	}
	return []Rewrite{{RewriteSwish, first, fmt.Sprintf("%d Sigmoid+Mul pairs fused into %s layers", count, opts.SwishOp)}}, nil
}

// depthwiseConvs turns depthwise Convs into nodes of type opts.DepthwiseOp
// (see DepthwiseOp): same inputs, attributes kernel, strides and explicit
// pads (auto_pad SAME_UPPER/SAME_LOWER/VALID resolved from the input
// shape; SAME_LOWER puts the odd padding row and column first, as ONNX
// says, where OpenCV 4.6's own convolution puts them last). A TTMSwish
// that is the convolution's only reader is fused into the node
// (activation "swish"), unless opts.DepthwiseSeparateSwish, and so is a
// GlobalAveragePool of the output (attribute mean 1, a second output). Convs the
// layer cannot run (dilation, non-float or computed weights, unknown input
// shape, sizes beyond the layer's limits) are left to OpenCV.
func depthwiseConvs(x *graphIndex, opts PrepareOptions) ([]Rewrite, error) {
	if opts.DepthwiseOp == "" {
		return nil, nil
	}
	dead := map[*onnx.Node]bool{}
	count, fused, pooled, expanded := 0, 0, 0, 0
	first := ""
	for _, n := range x.g.Nodes {
		attrs := depthwiseAttributes(x, n)
		if attrs == nil {
			continue
		}
		n.OpType = opts.DepthwiseOp
		n.Attributes = attrs
		if len(n.Inputs) == 3 && n.Inputs[2] == "" {
			n.Inputs = n.Inputs[:2]
		}
		if opts.DepthwiseExpansion && !opts.DepthwiseSeparateSwish && fuseExpansion(x, n, opts.PointwiseOp, dead) {
			expanded++
		}
		if count == 0 {
			first = nodeName(n)
		}
		count++
		if sw := swishAfter(x, n.Outputs[0], dead); sw != nil && !opts.DepthwiseSeparateSwish {
			n.Outputs = []string{sw.Outputs[0]}
			n.SetAttr(onnx.StringAttr("activation", "swish"))
			dead[sw] = true
			fused++
		}
		for _, c := range x.consumers[n.Outputs[0]] {
			if c.OpType == "GlobalAveragePool" && len(c.Inputs) == 1 && len(c.Outputs) == 1 && !dead[c] && !x.outputs[n.Outputs[0]] {
				n.Outputs = append(n.Outputs, c.Outputs[0])
				n.SetAttr(onnx.IntAttr("mean", 1))
				dead[c] = true
				pooled++
				break
			}
		}
	}
	removeNodes(x.g, dead)
	if count == 0 {
		return nil, nil
	}
	detail := fmt.Sprintf("%d depthwise Conv nodes to %s layers, %d with the TTMSwish after them fused", count, opts.DepthwiseOp, fused)
	if pooled > 0 {
		detail += fmt.Sprintf(", %d with the global average pooling of their output", pooled)
	}
	if expanded > 0 {
		detail += fmt.Sprintf(", %d with the expansion before them", expanded)
	}
	return []Rewrite{{RewriteDepthwise, first, detail}}, nil
}

// expansionMaxInputs is the most input channels an expansion fused into a
// depthwise layer has: its product, a broadcast per input channel and
// pixel, is slower than the pointwise layer's tiles, which only the
// strided depthwise layers' saving repays when the expansion is narrow
// (EfficientNet-B0 at 224: 16 to 40 input channels repay it, 112 do not;
// at stride 1 none do).
const expansionMaxInputs = 48

// fuseExpansion makes the depthwise node n (of type DepthwiseOp, inputs x,
// weights and maybe a bias) compute its input itself when that input is
// the output of a node of type pointwiseOp that n alone reads, with a
// constant 1x1 kernel and bias, a swish and nothing else fused, at most
// expansionMaxInputs input channels, and n has a stride of 2 or more and a
// multiple of 16 channels (the layer's fused path): n then reads the
// expansion's input, its weights, its bias (zeros if it had none), the
// expansion's weights and bias (zeros if none), with the attributes expand
// 1 and expand_activation "swish". It reports whether it did.
func fuseExpansion(x *graphIndex, n *onnx.Node, pointwiseOp string, dead map[*onnx.Node]bool) bool {
	e := x.producer[n.Inputs[0]]
	if e == nil || e.OpType != pointwiseOp || dead[e] || !x.onlyConsumer(n.Inputs[0], n) ||
		len(e.Attributes) != 1 || e.AttrString("activation", "") != "swish" || len(e.Inputs) < 2 || len(e.Inputs) > 3 {
		return false
	}
	w, ew := x.consts[n.Inputs[1]], x.consts[e.Inputs[1]]
	if w == nil || ew == nil || len(ew.Dims) != 4 || ew.Dims[0] != w.Dims[0] || w.Dims[0]%16 != 0 ||
		ew.Dims[1] > expansionMaxInputs || slices.Max(n.AttrInts("strides")) < 2 {
		return false
	}
	c := w.Dims[0]
	bias := func(node *onnx.Node, suffix string) string {
		if len(node.Inputs) == 3 {
			return node.Inputs[2]
		}
		name := node.Outputs[0] + suffix
		x.g.Initializers = append(x.g.Initializers, onnx.FloatTensor(name, make([]float32, c), c))
		return name
	}
	n.Inputs = []string{e.Inputs[0], n.Inputs[1], bias(n, "_zero_bias"), e.Inputs[1], bias(e, "_zero_bias")}
	n.SetAttr(onnx.IntAttr("expand", 1))
	n.SetAttr(onnx.StringAttr("expand_activation", "swish"))
	dead[e] = true
	return true
}

// Limits of the TTMDepthwise layer (depthwise_cv.cpp).
const (
	depthwiseMaxKernel = 64
	depthwiseMaxStride = 64
	depthwiseMaxPad    = 1 << 12
)

// depthwiseAttributes returns the TTMDepthwise attributes of a Conv the
// layer can run, nil for any other node.
func depthwiseAttributes(x *graphIndex, n *onnx.Node) []*onnx.Attribute {
	if !plainConv(n) {
		return nil
	}
	w := x.consts[n.Inputs[1]]
	if w == nil || w.DataType != onnx.Float || len(w.Dims) != 4 || w.Dims[1] != 1 {
		return nil
	}
	c, kh, kw := w.Dims[0], w.Dims[2], w.Dims[3]
	in := x.shapes[n.Inputs[0]]
	if len(in) != 4 || in[1] != c || n.AttrInt("group", 1) != c || c < 1 ||
		kh < 1 || kw < 1 || kh > depthwiseMaxKernel || kw > depthwiseMaxKernel {
		return nil
	}
	if len(n.Inputs) == 3 && n.Inputs[2] != "" {
		b := x.consts[n.Inputs[2]]
		if b == nil || b.DataType != onnx.Float || dimsProduct(b.Dims) != c {
			return nil
		}
	}
	strides, pads := convGeometry(n, in, kh, kw)
	if strides == nil || max(strides[0], strides[1]) > depthwiseMaxStride || slices.Max(pads) > depthwiseMaxPad {
		return nil
	}
	return []*onnx.Attribute{
		onnx.IntsAttr("kernel", kh, kw),
		onnx.IntsAttr("strides", strides...),
		onnx.IntsAttr("pads", pads...),
	}
}

// pointwiseConvs turns 1x1 Convs into nodes of type opts.PointwiseOp (see
// PointwiseOp) and fuses into each, where the Conv is the only reader:
//   - a Mul(a, s) before it with s of shape (N, K, 1, 1), the
//     squeeze-excitation scale: inputs a and s, attribute scale 1;
//   - a TTMSwish after it: attribute activation "swish";
//   - an Add(y, r) after that with r of y's shape, computed before the
//     Conv: input r, attribute residual 1;
//   - FiLM after that, Add(Mul(y, g), b) with g and b computed, of shape
//     (N, M, 1, 1): inputs g and b, attribute film 1; or, where g and b
//     are Reshapes of Gemms of one embedding e (N, D) with constant
//     weights (M, D) and biases (M) (filmGenerator), inputs e, g's weights
//     and bias, b's weights and bias, attribute film 2: the layer then
//     computes g and b itself, once for each new embedding.
//
// Convs over a single pixel (the excitation's own) stay with OpenCV: the
// layer's tiles are 32 pixels wide.
func pointwiseConvs(x *graphIndex, opts PrepareOptions) ([]Rewrite, error) {
	if opts.PointwiseOp == "" {
		return nil, nil
	}
	position := map[string]int{} // value -> index of the node producing it; graph inputs -1
	for i, n := range x.g.Nodes {
		for _, o := range n.Outputs {
			position[o] = i
		}
	}
	for _, v := range x.g.Inputs {
		position[v.Name] = -1
	}
	only := func(value string) *onnx.Node {
		if cs := x.consumers[value]; len(cs) == 1 && !x.outputs[value] {
			return cs[0]
		}
		return nil
	}
	dead := map[*onnx.Node]bool{}
	movedTo := map[*onnx.Node]*onnx.Node{} // a fused FiLM's Add -> the node that takes its place
	count, scaled, swished, added, filmed, generated := 0, 0, 0, 0, 0, 0
	first := ""
	for i, n := range x.g.Nodes {
		if !isPointwiseConv(x, n) {
			continue
		}
		var extra []string // computed inputs after x: scale, residual
		var attrs []*onnx.Attribute
		if mul := x.producer[n.Inputs[0]]; mul != nil && mul.OpType == "Mul" && len(mul.Inputs) == 2 && !dead[mul] && only(n.Inputs[0]) == n {
			k := x.shapes[n.Inputs[0]][1]
			for j := 0; j < 2; j++ {
				a, s := mul.Inputs[j], mul.Inputs[1-j]
				if slices.Equal(x.shapes[a], x.shapes[n.Inputs[0]]) && x.consts[s] == nil &&
					slices.Equal(x.shapes[s], []int64{x.shapes[a][0], k, 1, 1}) {
					n.Inputs[0] = a
					extra = append(extra, s)
					attrs = append(attrs, onnx.IntAttr("scale", 1))
					dead[mul] = true
					scaled++
					break
				}
			}
		}
		out := n.Outputs[0]
		shape := x.shapes[out]
		if sw := swishAfter(x, out, dead); sw != nil {
			out = sw.Outputs[0]
			attrs = append(attrs, onnx.StringAttr("activation", "swish"))
			dead[sw] = true
			swished++
		}
		if add := only(out); add != nil && add.OpType == "Add" && len(add.Inputs) == 2 && len(add.Outputs) == 1 && !dead[add] {
			r := add.Inputs[0]
			if r == out {
				r = add.Inputs[1]
			}
			if p, ok := position[r]; ok && p < i && r != out && x.consts[r] == nil && slices.Equal(x.shapes[r], shape) {
				out = add.Outputs[0]
				extra = append(extra, r)
				attrs = append(attrs, onnx.IntAttr("residual", 1))
				dead[add] = true
				added++
			}
		}
		// FiLM after the block: Add(Mul(out, γ'), β) with γ' and β
		// computed (N, M, 1, 1), possibly after the Conv (the node then
		// takes the Add's place).
		perChannel := func(v string) bool {
			return x.consts[v] == nil && slices.Equal(x.shapes[v], []int64{shape[0], shape[1], 1, 1})
		}
		if mul := only(out); mul != nil && mul.OpType == "Mul" && len(mul.Inputs) == 2 && len(mul.Outputs) == 1 && !dead[mul] && mul.Inputs[0] == out && perChannel(mul.Inputs[1]) {
			if add := only(mul.Outputs[0]); add != nil && add.OpType == "Add" && len(add.Inputs) == 2 && len(add.Outputs) == 1 && !dead[add] && add.Inputs[0] == mul.Outputs[0] && perChannel(add.Inputs[1]) {
				out = add.Outputs[0]
				dead[mul], dead[add] = true, true
				movedTo[add] = n
				filmed++
				gm, rm := filmGenerator(x, mul.Inputs[1], mul)
				ga, ra := filmGenerator(x, add.Inputs[1], add)
				if gm != nil && ga != nil && gm.Inputs[0] == ga.Inputs[0] {
					extra = append(extra, gm.Inputs[0], gm.Inputs[1], gm.Inputs[2], ga.Inputs[1], ga.Inputs[2])
					attrs = append(attrs, onnx.IntAttr("film", 2))
					dead[gm], dead[rm], dead[ga], dead[ra] = true, true, true, true
					generated++
				} else {
					extra = append(extra, mul.Inputs[1], add.Inputs[1])
					attrs = append(attrs, onnx.IntAttr("film", 1))
				}
			}
		}
		n.OpType = opts.PointwiseOp
		n.Attributes = attrs
		if len(n.Inputs) == 3 && n.Inputs[2] == "" {
			n.Inputs = n.Inputs[:2]
		}
		n.Inputs = append(n.Inputs, extra...)
		n.Outputs = []string{out}
		if count == 0 {
			first = nodeName(n)
		}
		count++
	}
	if len(movedTo) > 0 {
		moved := map[*onnx.Node]bool{}
		for _, n := range movedTo {
			moved[n] = true
		}
		nodes := make([]*onnx.Node, 0, len(x.g.Nodes))
		for _, n := range x.g.Nodes {
			if m := movedTo[n]; m != nil {
				nodes = append(nodes, m)
			} else if !moved[n] {
				nodes = append(nodes, n)
			}
		}
		x.g.Nodes = nodes
	}
	removeNodes(x.g, dead)
	if count == 0 {
		return nil, nil
	}
	return []Rewrite{{RewritePointwise, first, fmt.Sprintf("%d 1x1 Conv nodes to %s layers, with %d excitation scales, %d swishes, %d residual additions and %d FiLMs fused, %d with their coefficients' Gemms", count, opts.PointwiseOp, scaled, swished, added, filmed, generated)}}, nil
}

// filmGenerator returns the Gemm and Reshape that compute v, a FiLM
// coefficient read only by user, as e · Wᵀ + c (transB 1, as
// gemmAttributes leaves every Gemm) with W (M, D) and c (M) constant,
// each node read only by the next; nil if v is not that.
func filmGenerator(x *graphIndex, v string, user *onnx.Node) (gemm, reshape *onnx.Node) {
	reshape = x.producer[v]
	if reshape == nil || reshape.OpType != "Reshape" || len(reshape.Inputs) != 2 || !x.onlyConsumer(v, user) {
		return nil, nil
	}
	gemm = x.producer[reshape.Inputs[0]]
	if gemm == nil || gemm.OpType != "Gemm" || len(gemm.Inputs) != 3 || !x.onlyConsumer(reshape.Inputs[0], reshape) ||
		gemm.AttrInt("transA", 0) != 0 || gemm.AttrInt("transB", 0) != 1 || gemm.Attr("alpha") != nil || gemm.Attr("beta") != nil {
		return nil, nil
	}
	w, c := x.consts[gemm.Inputs[1]], x.consts[gemm.Inputs[2]]
	e := x.shapes[gemm.Inputs[0]]
	if w == nil || c == nil || w.DataType != onnx.Float || c.DataType != onnx.Float || len(w.Dims) != 2 ||
		dimsProduct(c.Dims) != w.Dims[0] || len(e) != 2 || e[1] != w.Dims[1] || x.consts[gemm.Inputs[0]] != nil {
		return nil, nil
	}
	return gemm, reshape
}

// isPointwiseConv reports whether n is a Conv the TTMPointwise layer runs.
func isPointwiseConv(x *graphIndex, n *onnx.Node) bool {
	if !plainConv(n) {
		return false
	}
	w := x.consts[n.Inputs[1]]
	if w == nil || w.DataType != onnx.Float || len(w.Dims) != 4 || w.Dims[2] != 1 || w.Dims[3] != 1 {
		return false
	}
	in := x.shapes[n.Inputs[0]]
	if len(in) != 4 || in[1] != w.Dims[1] || in[2]*in[3] < 2 || n.AttrInt("group", 1) != 1 {
		return false
	}
	if len(n.Inputs) == 3 && n.Inputs[2] != "" {
		b := x.consts[n.Inputs[2]]
		if b == nil || b.DataType != onnx.Float || dimsProduct(b.Dims) != w.Dims[0] {
			return false
		}
	}
	return unitGeometry(n)
}

// excitationGates turns each squeeze-excitation gate, Sigmoid(Conv(
// TTMSwish(Conv(m)))) over a map of one pixel with constant weights and
// biases, each node the only reader of the one before, into one node of
// type opts.ExcitationOp with inputs m, W1, B1, W2, B2 (see ExcitationOp).
func excitationGates(x *graphIndex, opts PrepareOptions) ([]Rewrite, error) {
	if opts.ExcitationOp == "" {
		return nil, nil
	}
	next := func(n *onnx.Node, op string) *onnx.Node {
		out := n.Outputs[0]
		if cs := x.consumers[out]; len(cs) == 1 && !x.outputs[out] && cs[0].OpType == op && len(cs[0].Inputs) >= 1 &&
			cs[0].Inputs[0] == out && len(cs[0].Outputs) == 1 {
			return cs[0]
		}
		return nil
	}
	dead := map[*onnx.Node]bool{}
	count := 0
	first := ""
	for _, reduce := range x.g.Nodes {
		w1 := gateConv(x, reduce)
		if w1 == nil || dead[reduce] {
			continue
		}
		swish := next(reduce, "TTMSwish")
		if swish == nil || len(swish.Inputs) != 1 {
			continue
		}
		expand := next(swish, "Conv")
		if expand == nil {
			continue
		}
		w2 := gateConv(x, expand)
		sigmoid := next(expand, "Sigmoid")
		if w2 == nil || sigmoid == nil || len(sigmoid.Inputs) != 1 || w2.Dims[0] != w1.Dims[1] || w2.Dims[1] != w1.Dims[0] {
			continue
		}
		reduce.OpType = opts.ExcitationOp
		reduce.Inputs = []string{reduce.Inputs[0], reduce.Inputs[1], reduce.Inputs[2], expand.Inputs[1], expand.Inputs[2]}
		reduce.Outputs = sigmoid.Outputs
		reduce.Attributes = nil
		dead[swish], dead[expand], dead[sigmoid] = true, true, true
		if count == 0 {
			first = nodeName(reduce)
		}
		count++
	}
	removeNodes(x.g, dead)
	if count == 0 {
		return nil, nil
	}
	return []Rewrite{{RewriteExcitation, first, fmt.Sprintf("%d squeeze-excitation gates to %s layers", count, opts.ExcitationOp)}}, nil
}

// gateConv returns the weights of n if it is a Conv of an excitation gate:
// 1x1 over a 1x1 map, group 1, no stride, dilation or padding, constant
// float weights and bias.
func gateConv(x *graphIndex, n *onnx.Node) *onnx.Tensor {
	if !plainConv(n) || len(n.Inputs) != 3 {
		return nil
	}
	w, b := x.consts[n.Inputs[1]], x.consts[n.Inputs[2]]
	in := x.shapes[n.Inputs[0]]
	if w == nil || b == nil || w.DataType != onnx.Float || b.DataType != onnx.Float || len(w.Dims) != 4 ||
		w.Dims[2] != 1 || w.Dims[3] != 1 || dimsProduct(b.Dims) != w.Dims[0] ||
		len(in) != 4 || in[1] != w.Dims[1] || in[2] != 1 || in[3] != 1 || n.AttrInt("group", 1) != 1 {
		return nil
	}
	if !unitGeometry(n) {
		return nil
	}
	return w
}

// unitGeometry reports whether a Conv has strides and dilations of 1 and
// no padding, as its attributes state them (auto_pad aside: a 1x1 kernel
// needs none).
func unitGeometry(n *onnx.Node) bool {
	for _, attr := range []string{"strides", "dilations"} {
		for _, v := range n.AttrInts(attr) {
			if v != 1 {
				return false
			}
		}
	}
	for _, v := range n.AttrInts("pads") {
		if v != 0 {
			return false
		}
	}
	return true
}

// convAttributes are the attributes of Conv; a node with any other (a
// subgraph, say) is left as it is for CheckONNX to judge.
var convAttributes = map[string]bool{"kernel_shape": true, "strides": true, "pads": true, "dilations": true, "group": true, "auto_pad": true}

// plainConv reports whether n is an ONNX Conv with one output, two or three
// inputs and only Conv's attributes.
func plainConv(n *onnx.Node) bool {
	if n.OpType != "Conv" || (n.Domain != "" && n.Domain != "ai.onnx") || len(n.Inputs) < 2 || len(n.Inputs) > 3 || len(n.Outputs) != 1 {
		return false
	}
	for _, a := range n.Attributes {
		if !convAttributes[a.Name] {
			return false
		}
	}
	return true
}

// convGeometry returns the strides and explicit pads (top, left, bottom,
// right; auto_pad resolved from the input shape in, SAME_LOWER putting the
// odd row and column first as ONNX says) of a Conv with a kh x kw kernel,
// or nil if the layers here cannot run it: dilation, a kernel_shape that
// disagrees with the weights, an unknown auto_pad, or an output side
// under 1.
func convGeometry(n *onnx.Node, in []int64, kh, kw int64) (strides, pads []int64) {
	if k := n.AttrInts("kernel_shape"); k != nil && !slices.Equal(k, []int64{kh, kw}) {
		return nil, nil
	}
	for _, d := range n.AttrInts("dilations") {
		if d != 1 {
			return nil, nil
		}
	}
	strides = n.AttrInts("strides")
	if strides == nil {
		strides = []int64{1, 1}
	}
	if len(strides) != 2 || min(strides[0], strides[1]) < 1 {
		return nil, nil
	}
	switch n.AttrString("auto_pad", "NOTSET") {
	case "NOTSET":
		pads = n.AttrInts("pads")
		if pads == nil {
			pads = make([]int64, 4)
		}
	case "VALID":
		pads = make([]int64, 4)
	case "SAME_UPPER", "SAME_LOWER":
		pads = make([]int64, 4)
		for i, k := range []int64{kh, kw} {
			size, s := in[2+i], strides[i]
			total := max(((size+s-1)/s-1)*s+k-size, 0)
			small, big := total/2, total-total/2
			if n.AttrString("auto_pad", "") == "SAME_UPPER" {
				pads[i], pads[i+2] = small, big
			} else {
				pads[i], pads[i+2] = big, small
			}
		}
	default:
		return nil, nil
	}
	if len(pads) != 4 || slices.Min(pads) < 0 {
		return nil, nil
	}
	// Both output sides at least 1.
	if in[2]+pads[0]+pads[2] < kh || in[3]+pads[1]+pads[3] < kw {
		return nil, nil
	}
	return strides, pads
}

// ConvMaxK bounds C·kh·kw of the Convs stemConvs takes: the TTMConv layer
// gathers each of the K inputs of a pixel one by one, which pays where K
// is small (an RGB stem: 27).
const ConvMaxK = 64

// stemConvs turns Convs with group 1, constant weights, a kernel larger
// than 1x1 and C·kh·kw at most ConvMaxK into nodes of type opts.ConvOp
// (attributes kernel, strides, explicit pads), with the TTMSwish that is
// their only reader fused in.
func stemConvs(x *graphIndex, opts PrepareOptions) ([]Rewrite, error) {
	if opts.ConvOp == "" {
		return nil, nil
	}
	dead := map[*onnx.Node]bool{}
	count, swished := 0, 0
	first := ""
	for _, n := range x.g.Nodes {
		if !plainConv(n) || n.AttrInt("group", 1) != 1 {
			continue
		}
		w := x.consts[n.Inputs[1]]
		in := x.shapes[n.Inputs[0]]
		if w == nil || w.DataType != onnx.Float || len(w.Dims) != 4 || len(in) != 4 || in[1] != w.Dims[1] ||
			w.Dims[2]*w.Dims[3] < 2 || w.Dims[1]*w.Dims[2]*w.Dims[3] > ConvMaxK || max(w.Dims[2], w.Dims[3]) > convMaxKernel {
			continue
		}
		if len(n.Inputs) == 3 && n.Inputs[2] != "" {
			if b := x.consts[n.Inputs[2]]; b == nil || b.DataType != onnx.Float || dimsProduct(b.Dims) != w.Dims[0] {
				continue
			}
		}
		strides, pads := convGeometry(n, in, w.Dims[2], w.Dims[3])
		if strides == nil || max(strides[0], strides[1]) > convMaxKernel || slices.Max(pads) >= convMaxKernel {
			continue
		}
		n.OpType = opts.ConvOp
		n.Attributes = []*onnx.Attribute{onnx.IntsAttr("kernel", w.Dims[2], w.Dims[3]), onnx.IntsAttr("strides", strides...), onnx.IntsAttr("pads", pads...)}
		if len(n.Inputs) == 3 && n.Inputs[2] == "" {
			n.Inputs = n.Inputs[:2]
		}
		if sw := swishAfter(x, n.Outputs[0], dead); sw != nil {
			n.Outputs = []string{sw.Outputs[0]}
			n.SetAttr(onnx.StringAttr("activation", "swish"))
			dead[sw] = true
			swished++
		}
		if count == 0 {
			first = nodeName(n)
		}
		count++
	}
	removeNodes(x.g, dead)
	if count == 0 {
		return nil, nil
	}
	return []Rewrite{{RewriteConv, first, fmt.Sprintf("%d Conv nodes to %s layers, %d with the TTMSwish after them fused", count, opts.ConvOp, swished)}}, nil
}

// convMaxKernel bounds the kernel side, strides and pads of TTMConv
// (pointwise_cv.cpp's max_kernel).
const convMaxKernel = 64
