package onnx

import (
	"errors"
	"fmt"
	"os"
)

// MaxSize is the largest model Parse accepts: protobuf's 2 GiB limit.
const MaxSize = 1<<31 - 1

// maxDepth bounds how deeply graphs may nest (through graph attributes of
// control-flow nodes), so hostile input cannot exhaust the stack.
const maxDepth = 16

// Parse decodes an ONNX model. Tensor RawData fields alias b; b must not be
// modified while the model is in use.
func Parse(b []byte) (*Model, error) {
	if len(b) > MaxSize {
		return nil, fmt.Errorf("onnx: model of %d bytes exceeds the protobuf limit of %d", len(b), MaxSize)
	}
	m := new(Model)
	if err := m.unmarshal(b); err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	return m, nil
}

// ReadFile reads and parses an ONNX file, refusing files larger than
// maxBytes (0 means MaxSize) before reading them.
func ReadFile(path string, maxBytes int64) (*Model, error) {
	if maxBytes <= 0 || maxBytes > MaxSize {
		maxBytes = MaxSize
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	if st.Size() > maxBytes {
		return nil, fmt.Errorf("onnx: %s has %d bytes, more than the limit of %d", path, st.Size(), maxBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	m, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return m, nil
}

func (m *Model) unmarshal(b []byte) error {
	const msg = "ModelProto"
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return fmt.Errorf("%s: %w", msg, err)
		}
		b = rest
		switch f.num {
		case 1:
			m.IRVersion, err = f.int64(msg)
		case 2:
			m.ProducerName, err = f.str(msg)
		case 3:
			m.ProducerVersion, err = f.str(msg)
		case 4:
			m.Domain, err = f.str(msg)
		case 5:
			m.ModelVersion, err = f.int64(msg)
		case 6:
			m.DocString, err = f.str(msg)
		case 7:
			if err = f.want(wireBytes, msg); err == nil {
				if m.Graph == nil {
					m.Graph = new(Graph)
				}
				err = m.Graph.unmarshal(f.data, 1)
			}
		case 8:
			var o OperatorSetID
			if err = f.want(wireBytes, msg); err == nil {
				err = o.unmarshal(f.data)
				m.OpsetImports = append(m.OpsetImports, o)
			}
		case 14:
			var e StringStringEntry
			if err = f.want(wireBytes, msg); err == nil {
				err = e.unmarshal(f.data)
				m.MetadataProps = append(m.MetadataProps, e)
			}
		default:
			m.unknown = append(m.unknown, f.raw...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (o *OperatorSetID) unmarshal(b []byte) error {
	const msg = "OperatorSetIdProto"
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return fmt.Errorf("%s: %w", msg, err)
		}
		b = rest
		switch f.num {
		case 1:
			o.Domain, err = f.str(msg)
		case 2:
			o.Version, err = f.int64(msg)
		default:
			o.unknown = append(o.unknown, f.raw...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (e *StringStringEntry) unmarshal(b []byte) error {
	const msg = "StringStringEntryProto"
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return fmt.Errorf("%s: %w", msg, err)
		}
		b = rest
		switch f.num {
		case 1:
			e.Key, err = f.str(msg)
		case 2:
			e.Value, err = f.str(msg)
		default:
			e.unknown = append(e.unknown, f.raw...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (g *Graph) unmarshal(b []byte, depth int) error {
	const msg = "GraphProto"
	if depth > maxDepth {
		return errors.New("graphs nested more than 16 deep")
	}
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return fmt.Errorf("%s: %w", msg, err)
		}
		b = rest
		switch f.num {
		case 1:
			n := new(Node)
			if err = f.want(wireBytes, msg); err == nil {
				err = n.unmarshal(f.data, depth)
				g.Nodes = append(g.Nodes, n)
			}
		case 2:
			g.Name, err = f.str(msg)
		case 5:
			t := new(Tensor)
			if err = f.want(wireBytes, msg); err == nil {
				err = t.unmarshal(f.data)
				g.Initializers = append(g.Initializers, t)
			}
		case 10:
			g.DocString, err = f.str(msg)
		case 11, 12, 13:
			v := new(ValueInfo)
			if err = f.want(wireBytes, msg); err == nil {
				err = v.unmarshal(f.data)
			}
			switch f.num {
			case 11:
				g.Inputs = append(g.Inputs, v)
			case 12:
				g.Outputs = append(g.Outputs, v)
			default:
				g.ValueInfo = append(g.ValueInfo, v)
			}
		default:
			g.unknown = append(g.unknown, f.raw...)
		}
		if err != nil {
			return fmt.Errorf("graph %q: %w", g.Name, err)
		}
	}
	return nil
}

func (n *Node) unmarshal(b []byte, depth int) error {
	const msg = "NodeProto"
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return fmt.Errorf("%s: %w", msg, err)
		}
		b = rest
		var s string
		switch f.num {
		case 1:
			s, err = f.str(msg)
			n.Inputs = append(n.Inputs, s)
		case 2:
			s, err = f.str(msg)
			n.Outputs = append(n.Outputs, s)
		case 3:
			n.Name, err = f.str(msg)
		case 4:
			n.OpType, err = f.str(msg)
		case 5:
			a := new(Attribute)
			if err = f.want(wireBytes, msg); err == nil {
				err = a.unmarshal(f.data, depth)
				n.Attributes = append(n.Attributes, a)
			}
		case 6:
			n.DocString, err = f.str(msg)
		case 7:
			n.Domain, err = f.str(msg)
		default:
			n.unknown = append(n.unknown, f.raw...)
		}
		if err != nil {
			return fmt.Errorf("node %q: %w", n.Name, err)
		}
	}
	return nil
}

func (a *Attribute) unmarshal(b []byte, depth int) error {
	const msg = "AttributeProto"
	var seen AttributeType // value field seen, for files without a type field
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return fmt.Errorf("%s: %w", msg, err)
		}
		b = rest
		switch f.num {
		case 1:
			a.Name, err = f.str(msg)
		case 21:
			a.RefAttrName, err = f.str(msg)
		case 13:
			a.DocString, err = f.str(msg)
		case 20:
			var t int32
			t, err = f.int32(msg)
			a.Type = AttributeType(t)
		case 2:
			a.F, err = f.float32(msg)
			seen = AttrFloat
		case 3:
			a.I, err = f.int64(msg)
			seen = AttrInt
		case 4:
			a.S, err = f.bytes(msg)
			seen = AttrString
		case 5:
			if err = f.want(wireBytes, msg); err == nil {
				a.T = new(Tensor)
				err = a.T.unmarshal(f.data)
				seen = AttrTensor
			}
		case 6:
			if err = f.want(wireBytes, msg); err == nil {
				a.G = new(Graph)
				err = a.G.unmarshal(f.data, depth+1)
				seen = AttrGraph
			}
		case 7:
			a.Floats, err = f.appendFloat32s(a.Floats, msg)
			seen = AttrFloats
		case 8:
			a.Ints, err = f.appendInt64s(a.Ints, msg)
			seen = AttrInts
		case 9:
			var s []byte
			s, err = f.bytes(msg)
			a.Strings = append(a.Strings, s)
			seen = AttrStrings
		case 10:
			if err = f.want(wireBytes, msg); err == nil {
				t := new(Tensor)
				err = t.unmarshal(f.data)
				a.Tensors = append(a.Tensors, t)
				seen = AttrTensors
			}
		case 11:
			if err = f.want(wireBytes, msg); err == nil {
				g := new(Graph)
				err = g.unmarshal(f.data, depth+1)
				a.Graphs = append(a.Graphs, g)
				seen = AttrGraphs
			}
		default:
			a.unknown = append(a.unknown, f.raw...)
		}
		if err != nil {
			return fmt.Errorf("attribute %q: %w", a.Name, err)
		}
	}
	if a.Type == AttrUndefined {
		a.Type = seen // IR version 1 files have no type field
	}
	return nil
}

func (t *Tensor) unmarshal(b []byte) error {
	const msg = "TensorProto"
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return fmt.Errorf("%s: %w", msg, err)
		}
		b = rest
		switch f.num {
		case 1:
			t.Dims, err = f.appendInt64s(t.Dims, msg)
		case 2:
			var d int32
			d, err = f.int32(msg)
			t.DataType = DataType(d)
		case 4:
			t.FloatData, err = f.appendFloat32s(t.FloatData, msg)
		case 5:
			var vs []uint64
			vs, err = f.appendVarints(nil, msg)
			for _, v := range vs {
				t.Int32Data = append(t.Int32Data, int32(v))
			}
		case 6:
			var s []byte
			s, err = f.bytes(msg)
			t.StringData = append(t.StringData, s)
		case 7:
			t.Int64Data, err = f.appendInt64s(t.Int64Data, msg)
		case 8:
			t.Name, err = f.str(msg)
		case 9:
			if err = f.want(wireBytes, msg); err == nil {
				t.RawData = f.data
			}
		case 10:
			t.DoubleData, err = f.appendFloat64s(t.DoubleData, msg)
		case 11:
			var vs []uint64
			vs, err = f.appendVarints(nil, msg)
			t.Uint64Data = append(t.Uint64Data, vs...)
		case 12:
			t.DocString, err = f.str(msg)
		case 13:
			var e StringStringEntry
			if err = f.want(wireBytes, msg); err == nil {
				err = e.unmarshal(f.data)
				t.ExternalData = append(t.ExternalData, e)
			}
		case 14:
			t.DataLocation, err = f.int32(msg)
		default:
			t.unknown = append(t.unknown, f.raw...)
		}
		if err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
	}
	return nil
}

func (v *ValueInfo) unmarshal(b []byte) error {
	const msg = "ValueInfoProto"
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return fmt.Errorf("%s: %w", msg, err)
		}
		b = rest
		switch f.num {
		case 1:
			v.Name, err = f.str(msg)
		case 2:
			if err = f.want(wireBytes, msg); err == nil {
				v.Type = new(Type)
				err = v.Type.unmarshal(f.data)
			}
		case 3:
			v.DocString, err = f.str(msg)
		default:
			v.unknown = append(v.unknown, f.raw...)
		}
		if err != nil {
			return fmt.Errorf("value %q: %w", v.Name, err)
		}
	}
	return nil
}

func (t *Type) unmarshal(b []byte) error {
	const msg = "TypeProto"
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return fmt.Errorf("%s: %w", msg, err)
		}
		b = rest
		switch f.num {
		case 1:
			if err = f.want(wireBytes, msg); err == nil {
				t.Tensor = new(TensorType)
				err = t.Tensor.unmarshal(f.data)
			}
		case 6:
			t.Denotation, err = f.str(msg)
		default:
			t.unknown = append(t.unknown, f.raw...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (t *TensorType) unmarshal(b []byte) error {
	const msg = "TypeProto.Tensor"
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return fmt.Errorf("%s: %w", msg, err)
		}
		b = rest
		switch f.num {
		case 1:
			var e int32
			e, err = f.int32(msg)
			t.ElemType = DataType(e)
		case 2:
			if err = f.want(wireBytes, msg); err == nil {
				t.Shape = new(Shape)
				err = t.Shape.unmarshal(f.data)
			}
		default:
			t.unknown = append(t.unknown, f.raw...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Shape) unmarshal(b []byte) error {
	const msg = "TensorShapeProto"
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return fmt.Errorf("%s: %w", msg, err)
		}
		b = rest
		switch f.num {
		case 1:
			var d Dimension
			if err = f.want(wireBytes, msg); err == nil {
				err = d.unmarshal(f.data)
				s.Dims = append(s.Dims, d)
			}
		default:
			s.unknown = append(s.unknown, f.raw...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *Dimension) unmarshal(b []byte) error {
	const msg = "TensorShapeProto.Dimension"
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return fmt.Errorf("%s: %w", msg, err)
		}
		b = rest
		switch f.num {
		case 1:
			d.Value, err = f.int64(msg)
		case 2:
			d.Param, err = f.str(msg)
		case 3:
			d.Denotation, err = f.str(msg)
		default:
			d.unknown = append(d.unknown, f.raw...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
