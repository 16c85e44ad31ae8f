package onnx

// Helpers to build and inspect graphs.

// IntAttr returns an INT attribute.
func IntAttr(name string, v int64) *Attribute { return &Attribute{Name: name, Type: AttrInt, I: v} }

// FloatAttr returns a FLOAT attribute.
func FloatAttr(name string, v float32) *Attribute {
	return &Attribute{Name: name, Type: AttrFloat, F: v}
}

// StringAttr returns a STRING attribute.
func StringAttr(name, v string) *Attribute {
	return &Attribute{Name: name, Type: AttrString, S: []byte(v)}
}

// IntsAttr returns an INTS attribute.
func IntsAttr(name string, v ...int64) *Attribute {
	return &Attribute{Name: name, Type: AttrInts, Ints: append([]int64(nil), v...)}
}

// FloatsAttr returns a FLOATS attribute.
func FloatsAttr(name string, v ...float32) *Attribute {
	return &Attribute{Name: name, Type: AttrFloats, Floats: append([]float32(nil), v...)}
}

// TensorAttr returns a TENSOR attribute.
func TensorAttr(name string, t *Tensor) *Attribute {
	return &Attribute{Name: name, Type: AttrTensor, T: t}
}

// Attr returns the node's attribute of that name, or nil.
func (n *Node) Attr(name string) *Attribute {
	for _, a := range n.Attributes {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// AttrInt returns an INT attribute's value, or def if the node has none.
func (n *Node) AttrInt(name string, def int64) int64 {
	if a := n.Attr(name); a != nil && a.Type == AttrInt {
		return a.I
	}
	return def
}

// AttrInts returns an INTS attribute's values, or nil.
func (n *Node) AttrInts(name string) []int64 {
	if a := n.Attr(name); a != nil && a.Type == AttrInts {
		return a.Ints
	}
	return nil
}

// AttrString returns a STRING attribute's value, or def.
func (n *Node) AttrString(name, def string) string {
	if a := n.Attr(name); a != nil && a.Type == AttrString {
		return string(a.S)
	}
	return def
}

// SetAttr replaces the attribute of a's name, or adds it.
func (n *Node) SetAttr(a *Attribute) {
	for i, b := range n.Attributes {
		if b.Name == a.Name {
			n.Attributes[i] = a
			return
		}
	}
	n.Attributes = append(n.Attributes, a)
}

// DeleteAttr removes the attribute of that name, if any.
func (n *Node) DeleteAttr(name string) {
	out := n.Attributes[:0]
	for _, a := range n.Attributes {
		if a.Name != name {
			out = append(out, a)
		}
	}
	n.Attributes = out
}

// TensorValue returns a ValueInfo for a tensor of the given element type
// and fixed dims.
func TensorValue(name string, elem DataType, dims ...int64) *ValueInfo {
	s := &Shape{Dims: make([]Dimension, len(dims))}
	for i, d := range dims {
		s.Dims[i].Value = d
	}
	return &ValueInfo{Name: name, Type: &Type{Tensor: &TensorType{ElemType: elem, Shape: s}}}
}

// OpsetVersion returns the model's version of an operator domain ("" and
// "ai.onnx" are the default domain), or 0 if it imports none.
func (m *Model) OpsetVersion(domain string) int64 {
	if domain == "ai.onnx" {
		domain = ""
	}
	for _, o := range m.OpsetImports {
		d := o.Domain
		if d == "ai.onnx" {
			d = ""
		}
		if d == domain {
			return o.Version
		}
	}
	return 0
}

// Initializer returns the graph's initializer of that name, or nil.
func (g *Graph) Initializer(name string) *Tensor {
	for _, t := range g.Initializers {
		if t.Name == name {
			return t
		}
	}
	return nil
}
