package vision

import (
	"github.com/ttmrobot/ttm/internal/onnx"
)

// graphIndex answers the questions the rewrites ask about a graph: who
// produces and who reads a value, which values are constants, what static
// shape a value has. It is rebuilt after each rewrite pass.
type graphIndex struct {
	g         *onnx.Graph
	producer  map[string]*onnx.Node
	consumers map[string][]*onnx.Node
	consts    map[string]*onnx.Tensor // initializers and Constant outputs
	outputs   map[string]bool         // graph outputs
	shapes    map[string][]int64      // static shapes, where known
}

func indexGraph(g *onnx.Graph) *graphIndex {
	x := &graphIndex{
		g:         g,
		producer:  map[string]*onnx.Node{},
		consumers: map[string][]*onnx.Node{},
		consts:    map[string]*onnx.Tensor{},
		outputs:   map[string]bool{},
	}
	for _, t := range g.Initializers {
		x.consts[t.Name] = t
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o != "" {
				if _, dup := x.producer[o]; !dup {
					x.producer[o] = n
				}
			}
		}
		for _, in := range n.Inputs {
			if in != "" {
				x.consumers[in] = append(x.consumers[in], n)
			}
		}
		if n.OpType == "Constant" && len(n.Outputs) == 1 {
			if a := n.Attr("value"); a != nil && a.Type == onnx.AttrTensor && a.T != nil {
				x.consts[n.Outputs[0]] = a.T
			}
		}
	}
	for _, v := range g.Outputs {
		x.outputs[v.Name] = true
	}
	x.shapes = inferShapes(g, x.consts)
	return x
}

// constInts returns a constant integer tensor's values, or nil.
func (x *graphIndex) constInts(name string) []int64 {
	t := x.consts[name]
	if t == nil {
		return nil
	}
	v, err := t.Int64s()
	if err != nil {
		return nil
	}
	return v
}

// constFloats returns a constant float tensor's values, or nil.
func (x *graphIndex) constFloats(name string) []float32 {
	t := x.consts[name]
	if t == nil {
		return nil
	}
	v, err := t.Floats()
	if err != nil {
		return nil
	}
	return v
}

// onlyConsumer reports whether value is read by exactly the node n and is
// not a graph output.
func (x *graphIndex) onlyConsumer(value string, n *onnx.Node) bool {
	c := x.consumers[value]
	return !x.outputs[value] && len(c) == 1 && c[0] == n
}

// replaceInput makes every node that reads from read to instead.
func replaceInput(g *onnx.Graph, from, to string) {
	for _, n := range g.Nodes {
		for i, in := range n.Inputs {
			if in == from {
				n.Inputs[i] = to
			}
		}
	}
}

// removeNodes drops the marked nodes, keeping the order of the rest.
func removeNodes(g *onnx.Graph, dead map[*onnx.Node]bool) {
	if len(dead) == 0 {
		return
	}
	out := g.Nodes[:0]
	for _, n := range g.Nodes {
		if !dead[n] {
			out = append(out, n)
		}
	}
	clear(g.Nodes[len(out):])
	g.Nodes = out
}

// pruneDead removes nodes none of whose outputs is read or is a graph
// output, repeatedly, and initializers nothing reads. It returns the
// number of nodes removed.
func pruneDead(g *onnx.Graph) int {
	removed := 0
	for {
		used := map[string]bool{}
		for _, v := range g.Outputs {
			used[v.Name] = true
		}
		for _, n := range g.Nodes {
			for _, in := range n.Inputs {
				used[in] = true
			}
		}
		dead := map[*onnx.Node]bool{}
		for _, n := range g.Nodes {
			live := false
			for _, o := range n.Outputs {
				live = live || (o != "" && used[o])
			}
			if !live {
				dead[n] = true
			}
		}
		if len(dead) == 0 {
			inits := g.Initializers[:0]
			for _, t := range g.Initializers {
				if used[t.Name] {
					inits = append(inits, t)
				}
			}
			clear(g.Initializers[len(inits):])
			g.Initializers = inits
			return removed
		}
		removed += len(dead)
		removeNodes(g, dead)
	}
}

// inferShapes computes the static shapes of the values it can: graph
// inputs with fixed dims, constants, and the outputs of the operators
// backbones are made of. Anything it cannot work out is left out.
func inferShapes(g *onnx.Graph, consts map[string]*onnx.Tensor) map[string][]int64 {
	s := map[string][]int64{}
	for name, t := range consts {
		s[name] = append([]int64{}, t.Dims...)
	}
	for _, v := range g.Inputs {
		if v.Type == nil || v.Type.Tensor == nil || v.Type.Tensor.Shape == nil {
			continue
		}
		dims := make([]int64, 0, len(v.Type.Tensor.Shape.Dims))
		for _, d := range v.Type.Tensor.Shape.Dims {
			if d.Param != "" || d.Value <= 0 {
				dims = nil
				break
			}
			dims = append(dims, d.Value)
		}
		if dims != nil {
			s[v.Name] = dims
		}
	}
	ints := func(name string) []int64 {
		t := consts[name]
		if t == nil {
			return nil
		}
		v, err := t.Int64s()
		if err != nil {
			return nil
		}
		return v
	}
	for _, n := range g.Nodes {
		if len(n.Outputs) == 0 {
			continue
		}
		if out := inferNode(n, s, ints); out != nil {
			s[n.Outputs[0]] = out
		}
	}
	return s
}

// elementwise ops whose output has the shape of their first input.
var sameShapeOps = map[string]bool{
	"Sigmoid": true, "Relu": true, "Swish": true, "TTMSwish": true, "TTMExcitation": true, "Mish": true, "Identity": true, "Dropout": true,
	"Tanh": true, "Clip": true, "LeakyRelu": true, "Elu": true, "Exp": true, "Log": true,
	"Sqrt": true, "Neg": true, "Abs": true, "HardSwish": true, "HardSigmoid": true,
	"Softmax": true, "SoftMax": true, "LogSoftmax": true, "Cast": true, "BatchNormalization": true,
	"InstanceNormalization": true, "LRN": true, "Softplus": true, "Erf": true, "Reciprocal": true,
	"PRelu": true, "Floor": true, "Ceil": true, "Round": true, "Sign": true, "Selu": true,
}

var broadcastOps = map[string]bool{
	"Add": true, "Sub": true, "Mul": true, "Div": true, "Pow": true, "Max": true, "Min": true,
	"Sum": true, "Equal": true, "Greater": true, "Less": true,
}

func inferNode(n *onnx.Node, s map[string][]int64, ints func(string) []int64) []int64 {
	in := func(i int) []int64 {
		if i < len(n.Inputs) {
			return s[n.Inputs[i]]
		}
		return nil
	}
	x := in(0)
	switch {
	case sameShapeOps[n.OpType]:
		return cloneDims(x)
	case broadcastOps[n.OpType]:
		out := cloneDims(x)
		for i := 1; i < len(n.Inputs); i++ {
			out = broadcastDims(out, in(i))
		}
		return out
	}
	switch n.OpType {
	case "Conv", "MaxPool", "AveragePool":
		return inferConv(n, x, in(1))
	case "TTMConv":
		w := in(1)
		k, st, pads := n.AttrInts("kernel"), n.AttrInts("strides"), n.AttrInts("pads")
		if len(x) != 4 || len(w) != 4 || len(k) != 2 || len(st) != 2 || len(pads) != 4 || min(st[0], st[1]) < 1 {
			return nil
		}
		return []int64{x[0], w[0], (x[2]+pads[0]+pads[2]-k[0])/st[0] + 1, (x[3]+pads[1]+pads[3]-k[1])/st[1] + 1}
	case "TTMPointwise":
		if w := in(1); len(x) == 4 && len(w) == 4 {
			return []int64{x[0], w[0], x[2], x[3]}
		}
		return nil
	case "GlobalAveragePool", "GlobalMaxPool":
		if len(x) < 3 {
			return nil
		}
		out := cloneDims(x)
		for i := 2; i < len(out); i++ {
			out[i] = 1
		}
		return out
	case "ReduceMean", "ReduceSum", "ReduceMax":
		axes := n.AttrInts("axes")
		if len(n.Inputs) > 1 {
			axes = ints(n.Inputs[1])
		}
		return reduceShape(x, axes, n.AttrInt("keepdims", 1) != 0)
	case "Gemm":
		a, b := in(0), in(1)
		if len(a) != 2 || len(b) != 2 {
			return nil
		}
		m, nn := a[0], b[1]
		if n.AttrInt("transA", 0) != 0 {
			m = a[1]
		}
		if n.AttrInt("transB", 0) != 0 {
			nn = b[0]
		}
		return []int64{m, nn}
	case "MatMul":
		a, b := in(0), in(1)
		if len(a) < 2 || len(b) != 2 {
			return nil
		}
		out := cloneDims(a)
		out[len(out)-1] = b[1]
		return out
	case "Flatten":
		if x == nil {
			return nil
		}
		axis := n.AttrInt("axis", 1)
		if axis < 0 {
			axis += int64(len(x))
		}
		if axis < 0 || axis > int64(len(x)) {
			return nil
		}
		return []int64{dimsProduct(x[:axis]), dimsProduct(x[axis:])}
	case "Reshape":
		var shape []int64
		if a := n.Attr("shape"); a != nil {
			shape = a.Ints
		} else if len(n.Inputs) > 1 {
			shape = ints(n.Inputs[1])
		}
		return reshapeShape(x, shape)
	case "Transpose":
		perm := n.AttrInts("perm")
		if x == nil {
			return nil
		}
		if perm == nil {
			for i := len(x) - 1; i >= 0; i-- {
				perm = append(perm, int64(i))
			}
		}
		if !isPerm(perm, len(x)) {
			return nil
		}
		out := make([]int64, len(x))
		for i, p := range perm {
			out[i] = x[p]
		}
		return out
	case "Squeeze", "Unsqueeze":
		axes := n.AttrInts("axes")
		if len(n.Inputs) > 1 {
			axes = ints(n.Inputs[1])
		}
		if n.OpType == "Squeeze" {
			return squeezeShape(x, axes)
		}
		return unsqueezeShape(x, axes)
	case "Concat":
		if x == nil {
			return nil
		}
		axis := n.AttrInt("axis", 1)
		if axis < 0 {
			axis += int64(len(x))
		}
		if axis < 0 || axis >= int64(len(x)) {
			return nil
		}
		out := cloneDims(x)
		for i := 1; i < len(n.Inputs); i++ {
			y := in(i)
			if len(y) != len(x) {
				return nil
			}
			out[axis] += y[axis]
		}
		return out
	case "Pad":
		pads := n.AttrInts("pads")
		if len(n.Inputs) > 1 {
			pads = ints(n.Inputs[1])
		}
		if x == nil || len(pads) != 2*len(x) {
			return nil
		}
		out := cloneDims(x)
		for i := range out {
			out[i] += pads[i] + pads[i+len(x)]
			if out[i] <= 0 {
				return nil
			}
		}
		return out
	case "Shape":
		if x == nil {
			return nil
		}
		return []int64{int64(len(x))}
	}
	return nil
}

func cloneDims(x []int64) []int64 {
	if x == nil {
		return nil
	}
	return append([]int64{}, x...)
}

func dimsProduct(x []int64) int64 {
	p := int64(1)
	for _, v := range x {
		p *= v
	}
	return p
}

func isPerm(p []int64, n int) bool {
	if len(p) != n {
		return false
	}
	seen := make([]bool, n)
	for _, v := range p {
		if v < 0 || v >= int64(n) || seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}

// broadcast is the numpy broadcast of two shapes, nil if either is unknown
// or they do not broadcast.
func broadcastDims(a, b []int64) []int64 {
	if a == nil || b == nil {
		return nil
	}
	if len(a) < len(b) {
		a, b = b, a
	}
	out := cloneDims(a)
	off := len(a) - len(b)
	for i, d := range b {
		switch o := out[off+i]; {
		case o == d || d == 1:
		case o == 1:
			out[off+i] = d
		default:
			return nil
		}
	}
	return out
}

func normAxes(axes []int64, rank int) ([]bool, bool) {
	mask := make([]bool, rank)
	for _, a := range axes {
		if a < 0 {
			a += int64(rank)
		}
		if a < 0 || a >= int64(rank) {
			return nil, false
		}
		mask[a] = true
	}
	return mask, true
}

func reduceShape(x, axes []int64, keep bool) []int64 {
	if x == nil {
		return nil
	}
	mask, ok := normAxes(axes, len(x))
	if !ok {
		return nil
	}
	if len(axes) == 0 {
		for i := range mask {
			mask[i] = true
		}
	}
	var out []int64
	for i, d := range x {
		switch {
		case !mask[i]:
			out = append(out, d)
		case keep:
			out = append(out, 1)
		}
	}
	return out
}

func reshapeShape(x, shape []int64) []int64 {
	if x == nil || shape == nil {
		return nil
	}
	out := cloneDims(shape)
	infer := -1
	for i, d := range out {
		switch {
		case d == 0 && i < len(x):
			out[i] = x[i]
		case d == -1 && infer < 0:
			infer = i
		case d <= 0:
			return nil
		}
	}
	total := dimsProduct(x)
	if infer >= 0 {
		out[infer] = 1
		p := dimsProduct(out)
		if p == 0 || total%p != 0 {
			return nil
		}
		out[infer] = total / p
	}
	if dimsProduct(out) != total {
		return nil
	}
	return out
}

func squeezeShape(x, axes []int64) []int64 {
	if x == nil {
		return nil
	}
	mask, ok := normAxes(axes, len(x))
	if !ok {
		return nil
	}
	var out []int64
	for i, d := range x {
		if (len(axes) == 0 && d == 1) || mask[i] {
			if d != 1 {
				return nil
			}
			continue
		}
		out = append(out, d)
	}
	return out
}

func unsqueezeShape(x, axes []int64) []int64 {
	if x == nil || len(axes) == 0 {
		return nil
	}
	rank := len(x) + len(axes)
	mask, ok := normAxes(axes, rank)
	if !ok {
		return nil
	}
	out := make([]int64, 0, rank)
	j := 0
	for i := 0; i < rank; i++ {
		if mask[i] {
			out = append(out, 1)
			continue
		}
		if j >= len(x) {
			return nil
		}
		out = append(out, x[j])
		j++
	}
	return out
}

// inferConv is the output shape of Conv, MaxPool and AveragePool.
func inferConv(n *onnx.Node, x, w []int64) []int64 {
	if len(x) < 3 {
		return nil
	}
	sp := len(x) - 2
	kernel := n.AttrInts("kernel_shape")
	if kernel == nil && n.OpType == "Conv" && len(w) == len(x) {
		kernel = w[2:]
	}
	if len(kernel) != sp {
		return nil
	}
	strides := n.AttrInts("strides")
	if strides == nil {
		strides = make([]int64, sp)
		for i := range strides {
			strides[i] = 1
		}
	}
	dil := n.AttrInts("dilations")
	if dil == nil {
		dil = make([]int64, sp)
		for i := range dil {
			dil[i] = 1
		}
	}
	pads := n.AttrInts("pads")
	if pads == nil {
		pads = make([]int64, 2*sp)
	}
	if len(strides) != sp || len(dil) != sp || len(pads) != 2*sp {
		return nil
	}
	out := cloneDims(x)
	if n.OpType == "Conv" {
		if len(w) < 1 {
			return nil
		}
		out[1] = w[0]
	}
	autoPad := n.AttrString("auto_pad", "NOTSET")
	ceil := n.AttrInt("ceil_mode", 0) != 0
	for i := 0; i < sp; i++ {
		size, k, st := x[2+i], (kernel[i]-1)*dil[i]+1, strides[i]
		if st <= 0 || k <= 0 {
			return nil
		}
		var o int64
		switch autoPad {
		case "SAME_UPPER", "SAME_LOWER":
			o = (size + st - 1) / st
		case "VALID":
			o = (size-k)/st + 1
		default:
			span := size + pads[i] + pads[i+sp] - k
			if span < 0 {
				return nil
			}
			o = span/st + 1
			if ceil && span%st != 0 {
				o++
			}
		}
		if o <= 0 {
			return nil
		}
		out[2+i] = o
	}
	return out
}
