package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
)

// Marshal encodes a model. The output is deterministic: fields in field
// number order of onnx.proto as listed below, unknown fields last.
func Marshal(m *Model) ([]byte, error) {
	n := m.size()
	if n > MaxSize {
		return nil, fmt.Errorf("onnx: encoded model would have %d bytes, more than the protobuf limit of %d", n, MaxSize)
	}
	b := m.appendTo(make([]byte, 0, n))
	if len(b) != n {
		// A size/append mismatch is a bug in this package.
		panic(fmt.Sprintf("onnx: encoded %d bytes, computed %d", len(b), n))
	}
	return b, nil
}

// WriteFile encodes a model into a file.
func WriteFile(path string, m *Model) error {
	b, err := Marshal(m)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("onnx: %w", err)
	}
	return nil
}

func sizeString(num int, s string) int {
	if s == "" {
		return 0
	}
	return sizeBytesField(num, len(s))
}

func appendOptString(b []byte, num int, s string) []byte {
	if s == "" {
		return b
	}
	return appendStringField(b, num, s)
}

func (m *Model) size() int {
	n := sizeVarintField(1, uint64(m.IRVersion))
	n += sizeString(2, m.ProducerName) + sizeString(3, m.ProducerVersion) + sizeString(4, m.Domain)
	if m.ModelVersion != 0 {
		n += sizeVarintField(5, uint64(m.ModelVersion))
	}
	n += sizeString(6, m.DocString)
	if m.Graph != nil {
		n += sizeBytesField(7, m.Graph.size())
	}
	for i := range m.OpsetImports {
		n += sizeBytesField(8, m.OpsetImports[i].size())
	}
	for i := range m.MetadataProps {
		n += sizeBytesField(14, m.MetadataProps[i].size())
	}
	return n + len(m.unknown)
}

func (m *Model) appendTo(b []byte) []byte {
	b = appendVarintField(b, 1, uint64(m.IRVersion))
	b = appendOptString(b, 2, m.ProducerName)
	b = appendOptString(b, 3, m.ProducerVersion)
	b = appendOptString(b, 4, m.Domain)
	if m.ModelVersion != 0 {
		b = appendVarintField(b, 5, uint64(m.ModelVersion))
	}
	b = appendOptString(b, 6, m.DocString)
	if m.Graph != nil {
		b = appendMessageHeader(b, 7, m.Graph.size())
		b = m.Graph.appendTo(b)
	}
	for i := range m.OpsetImports {
		o := &m.OpsetImports[i]
		b = appendMessageHeader(b, 8, o.size())
		b = o.appendTo(b)
	}
	for i := range m.MetadataProps {
		e := &m.MetadataProps[i]
		b = appendMessageHeader(b, 14, e.size())
		b = e.appendTo(b)
	}
	return append(b, m.unknown...)
}

func (o *OperatorSetID) size() int {
	return sizeString(1, o.Domain) + sizeVarintField(2, uint64(o.Version)) + len(o.unknown)
}

func (o *OperatorSetID) appendTo(b []byte) []byte {
	b = appendOptString(b, 1, o.Domain)
	b = appendVarintField(b, 2, uint64(o.Version))
	return append(b, o.unknown...)
}

func (e *StringStringEntry) size() int {
	return sizeString(1, e.Key) + sizeString(2, e.Value) + len(e.unknown)
}

func (e *StringStringEntry) appendTo(b []byte) []byte {
	b = appendOptString(b, 1, e.Key)
	b = appendOptString(b, 2, e.Value)
	return append(b, e.unknown...)
}

func (g *Graph) size() int {
	n := 0
	for _, nd := range g.Nodes {
		n += sizeBytesField(1, nd.size())
	}
	n += sizeString(2, g.Name)
	for _, t := range g.Initializers {
		n += sizeBytesField(5, t.size())
	}
	n += sizeString(10, g.DocString)
	for _, v := range g.Inputs {
		n += sizeBytesField(11, v.size())
	}
	for _, v := range g.Outputs {
		n += sizeBytesField(12, v.size())
	}
	for _, v := range g.ValueInfo {
		n += sizeBytesField(13, v.size())
	}
	return n + len(g.unknown)
}

func (g *Graph) appendTo(b []byte) []byte {
	for _, nd := range g.Nodes {
		b = appendMessageHeader(b, 1, nd.size())
		b = nd.appendTo(b)
	}
	b = appendOptString(b, 2, g.Name)
	for _, t := range g.Initializers {
		b = appendMessageHeader(b, 5, t.size())
		b = t.appendTo(b)
	}
	b = appendOptString(b, 10, g.DocString)
	for _, v := range g.Inputs {
		b = appendMessageHeader(b, 11, v.size())
		b = v.appendTo(b)
	}
	for _, v := range g.Outputs {
		b = appendMessageHeader(b, 12, v.size())
		b = v.appendTo(b)
	}
	for _, v := range g.ValueInfo {
		b = appendMessageHeader(b, 13, v.size())
		b = v.appendTo(b)
	}
	return append(b, g.unknown...)
}

func (nd *Node) size() int {
	n := 0
	for _, s := range nd.Inputs {
		n += sizeBytesField(1, len(s)) // empty names are meaningful here
	}
	for _, s := range nd.Outputs {
		n += sizeBytesField(2, len(s))
	}
	n += sizeString(3, nd.Name) + sizeString(4, nd.OpType)
	for _, a := range nd.Attributes {
		n += sizeBytesField(5, a.size())
	}
	n += sizeString(6, nd.DocString) + sizeString(7, nd.Domain)
	return n + len(nd.unknown)
}

func (nd *Node) appendTo(b []byte) []byte {
	for _, s := range nd.Inputs {
		b = appendStringField(b, 1, s)
	}
	for _, s := range nd.Outputs {
		b = appendStringField(b, 2, s)
	}
	b = appendOptString(b, 3, nd.Name)
	b = appendOptString(b, 4, nd.OpType)
	for _, a := range nd.Attributes {
		b = appendMessageHeader(b, 5, a.size())
		b = a.appendTo(b)
	}
	b = appendOptString(b, 6, nd.DocString)
	b = appendOptString(b, 7, nd.Domain)
	return append(b, nd.unknown...)
}

// The value field of the attribute's type is always written, even when it
// is zero: readers with proto2 semantics ask whether it is present.

func (a *Attribute) size() int {
	n := sizeString(1, a.Name)
	if a.Type == AttrFloat || a.F != 0 {
		n += sizeFixed32Field(2)
	}
	if a.Type == AttrInt || a.I != 0 {
		n += sizeVarintField(3, uint64(a.I))
	}
	if a.Type == AttrString || len(a.S) > 0 {
		n += sizeBytesField(4, len(a.S))
	}
	if a.T != nil {
		n += sizeBytesField(5, a.T.size())
	}
	if a.G != nil {
		n += sizeBytesField(6, a.G.size())
	}
	n += len(a.Floats) * sizeFixed32Field(7)
	for _, v := range a.Ints {
		n += sizeVarintField(8, uint64(v))
	}
	for _, s := range a.Strings {
		n += sizeBytesField(9, len(s))
	}
	for _, t := range a.Tensors {
		n += sizeBytesField(10, t.size())
	}
	for _, g := range a.Graphs {
		n += sizeBytesField(11, g.size())
	}
	n += sizeString(13, a.DocString)
	if a.Type != AttrUndefined {
		n += sizeVarintField(20, uint64(a.Type))
	}
	n += sizeString(21, a.RefAttrName)
	return n + len(a.unknown)
}

func (a *Attribute) appendTo(b []byte) []byte {
	b = appendOptString(b, 1, a.Name)
	if a.Type == AttrFloat || a.F != 0 {
		b = appendFloatField(b, 2, a.F)
	}
	if a.Type == AttrInt || a.I != 0 {
		b = appendVarintField(b, 3, uint64(a.I))
	}
	if a.Type == AttrString || len(a.S) > 0 {
		b = appendBytesField(b, 4, a.S)
	}
	if a.T != nil {
		b = appendMessageHeader(b, 5, a.T.size())
		b = a.T.appendTo(b)
	}
	if a.G != nil {
		b = appendMessageHeader(b, 6, a.G.size())
		b = a.G.appendTo(b)
	}
	for _, v := range a.Floats {
		b = appendFloatField(b, 7, v)
	}
	for _, v := range a.Ints {
		b = appendVarintField(b, 8, uint64(v))
	}
	for _, s := range a.Strings {
		b = appendBytesField(b, 9, s)
	}
	for _, t := range a.Tensors {
		b = appendMessageHeader(b, 10, t.size())
		b = t.appendTo(b)
	}
	for _, g := range a.Graphs {
		b = appendMessageHeader(b, 11, g.size())
		b = g.appendTo(b)
	}
	b = appendOptString(b, 13, a.DocString)
	if a.Type != AttrUndefined {
		b = appendVarintField(b, 20, uint64(a.Type))
	}
	b = appendOptString(b, 21, a.RefAttrName)
	return append(b, a.unknown...)
}

// Packed repeated numeric fields.

func sizePackedVarints[T int32 | int64 | uint64](num int, vs []T) (int, int) {
	if len(vs) == 0 {
		return 0, 0
	}
	p := 0
	for _, v := range vs {
		p += sizeVarint(uint64(int64(v)))
	}
	return sizeBytesField(num, p), p
}

func appendPackedVarints[T int32 | int64 | uint64](b []byte, num int, vs []T) []byte {
	_, p := sizePackedVarints(num, vs)
	if p == 0 {
		return b
	}
	b = appendMessageHeader(b, num, p)
	for _, v := range vs {
		b = appendVarint(b, uint64(int64(v)))
	}
	return b
}

func (t *Tensor) size() int {
	n := 0
	for _, d := range t.Dims {
		n += sizeVarintField(1, uint64(d)) // unpacked, as onnx.proto declares it
	}
	n += sizeVarintField(2, uint64(int64(t.DataType)))
	if len(t.FloatData) > 0 {
		n += sizeBytesField(4, 4*len(t.FloatData))
	}
	s, _ := sizePackedVarints(5, t.Int32Data)
	n += s
	for _, v := range t.StringData {
		n += sizeBytesField(6, len(v))
	}
	s, _ = sizePackedVarints(7, t.Int64Data)
	n += s
	n += sizeString(8, t.Name)
	if t.RawData != nil {
		n += sizeBytesField(9, len(t.RawData))
	}
	if len(t.DoubleData) > 0 {
		n += sizeBytesField(10, 8*len(t.DoubleData))
	}
	s, _ = sizePackedVarints(11, t.Uint64Data)
	n += s
	n += sizeString(12, t.DocString)
	for i := range t.ExternalData {
		n += sizeBytesField(13, t.ExternalData[i].size())
	}
	if t.DataLocation != 0 {
		n += sizeVarintField(14, uint64(int64(t.DataLocation)))
	}
	return n + len(t.unknown)
}

func (t *Tensor) appendTo(b []byte) []byte {
	for _, d := range t.Dims {
		b = appendVarintField(b, 1, uint64(d))
	}
	b = appendVarintField(b, 2, uint64(int64(t.DataType)))
	if len(t.FloatData) > 0 {
		b = appendMessageHeader(b, 4, 4*len(t.FloatData))
		for _, v := range t.FloatData {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	b = appendPackedVarints(b, 5, t.Int32Data)
	for _, v := range t.StringData {
		b = appendBytesField(b, 6, v)
	}
	b = appendPackedVarints(b, 7, t.Int64Data)
	b = appendOptString(b, 8, t.Name)
	if t.RawData != nil {
		b = appendBytesField(b, 9, t.RawData)
	}
	if len(t.DoubleData) > 0 {
		b = appendMessageHeader(b, 10, 8*len(t.DoubleData))
		for _, v := range t.DoubleData {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
	}
	b = appendPackedVarints(b, 11, t.Uint64Data)
	b = appendOptString(b, 12, t.DocString)
	for i := range t.ExternalData {
		e := &t.ExternalData[i]
		b = appendMessageHeader(b, 13, e.size())
		b = e.appendTo(b)
	}
	if t.DataLocation != 0 {
		b = appendVarintField(b, 14, uint64(int64(t.DataLocation)))
	}
	return append(b, t.unknown...)
}

func (v *ValueInfo) size() int {
	n := sizeString(1, v.Name)
	if v.Type != nil {
		n += sizeBytesField(2, v.Type.size())
	}
	return n + sizeString(3, v.DocString) + len(v.unknown)
}

func (v *ValueInfo) appendTo(b []byte) []byte {
	b = appendOptString(b, 1, v.Name)
	if v.Type != nil {
		b = appendMessageHeader(b, 2, v.Type.size())
		b = v.Type.appendTo(b)
	}
	b = appendOptString(b, 3, v.DocString)
	return append(b, v.unknown...)
}

func (t *Type) size() int {
	n := 0
	if t.Tensor != nil {
		n += sizeBytesField(1, t.Tensor.size())
	}
	return n + sizeString(6, t.Denotation) + len(t.unknown)
}

func (t *Type) appendTo(b []byte) []byte {
	if t.Tensor != nil {
		b = appendMessageHeader(b, 1, t.Tensor.size())
		b = t.Tensor.appendTo(b)
	}
	b = appendOptString(b, 6, t.Denotation)
	return append(b, t.unknown...)
}

func (t *TensorType) size() int {
	n := sizeVarintField(1, uint64(int64(t.ElemType)))
	if t.Shape != nil {
		n += sizeBytesField(2, t.Shape.size())
	}
	return n + len(t.unknown)
}

func (t *TensorType) appendTo(b []byte) []byte {
	b = appendVarintField(b, 1, uint64(int64(t.ElemType)))
	if t.Shape != nil {
		b = appendMessageHeader(b, 2, t.Shape.size())
		b = t.Shape.appendTo(b)
	}
	return append(b, t.unknown...)
}

func (s *Shape) size() int {
	n := 0
	for i := range s.Dims {
		n += sizeBytesField(1, s.Dims[i].size())
	}
	return n + len(s.unknown)
}

func (s *Shape) appendTo(b []byte) []byte {
	for i := range s.Dims {
		d := &s.Dims[i]
		b = appendMessageHeader(b, 1, d.size())
		b = d.appendTo(b)
	}
	return append(b, s.unknown...)
}

func (d *Dimension) size() int {
	n := 0
	if d.Param != "" {
		n += sizeBytesField(2, len(d.Param))
	} else {
		n += sizeVarintField(1, uint64(d.Value))
	}
	return n + sizeString(3, d.Denotation) + len(d.unknown)
}

func (d *Dimension) appendTo(b []byte) []byte {
	if d.Param != "" {
		b = appendStringField(b, 2, d.Param)
	} else {
		b = appendVarintField(b, 1, uint64(d.Value))
	}
	b = appendOptString(b, 3, d.Denotation)
	return append(b, d.unknown...)
}
