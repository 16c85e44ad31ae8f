package onnx

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"
)

// sampleModel uses every modelled field at least once.
func sampleModel() *Model {
	w := FloatTensor("w", []float32{1, -2, 3.5, 0, 1e-3, -7}, 2, 3, 1, 1)
	shape := Int64Tensor("shape", []int64{1, -1}, 2)
	inner := &Graph{
		Name:    "body",
		Nodes:   []*Node{{OpType: "Identity", Inputs: []string{"a"}, Outputs: []string{"b"}}},
		Inputs:  []*ValueInfo{TensorValue("a", Float, 1)},
		Outputs: []*ValueInfo{TensorValue("b", Float, 1)},
	}
	return &Model{
		IRVersion:       8,
		OpsetImports:    []OperatorSetID{{Version: 13}, {Domain: "com.microsoft", Version: 1}},
		ProducerName:    "ttm",
		ProducerVersion: "test",
		Domain:          "org.example",
		ModelVersion:    3,
		DocString:       "a sample",
		MetadataProps:   []StringStringEntry{{Key: "k", Value: "v"}},
		Graph: &Graph{
			Name: "g",
			Nodes: []*Node{
				{
					Name: "conv", OpType: "Conv", Inputs: []string{"x", "w", ""}, Outputs: []string{"y"},
					Attributes: []*Attribute{
						IntsAttr("kernel_shape", 1, 1),
						IntsAttr("pads", 0, 0, 0, 0),
						IntAttr("group", 1),
						IntAttr("zero", 0),
						FloatAttr("alpha", 0),
						FloatsAttr("scales", 1, 2.5, -3),
						StringAttr("auto_pad", "NOTSET"),
						{Name: "strs", Type: AttrStrings, Strings: [][]byte{[]byte("a"), {}}},
						TensorAttr("value", FloatTensor("", []float32{42})),
						{Name: "ts", Type: AttrTensors, Tensors: []*Tensor{Int64Tensor("", []int64{-1}, 1)}},
						{Name: "body", Type: AttrGraph, G: inner},
						{Name: "bodies", Type: AttrGraphs, Graphs: []*Graph{inner}},
					},
					DocString: "doc",
					Domain:    "",
				},
				{Name: "reshape", OpType: "Reshape", Inputs: []string{"y", "shape"}, Outputs: []string{"z"}, Domain: "ai.onnx"},
			},
			Initializers: []*Tensor{
				w, shape,
				{Name: "typed", DataType: Float, Dims: []int64{2}, FloatData: []float32{1, 2}},
				{Name: "i32", DataType: Int32, Dims: []int64{3}, Int32Data: []int32{-1, 0, 7}},
				{Name: "i64", DataType: Int64, Dims: []int64{2}, Int64Data: []int64{math.MinInt64, math.MaxInt64}},
				{Name: "f64", DataType: Double, Dims: []int64{1}, DoubleData: []float64{math.Pi}},
				{Name: "u64", DataType: Uint64, Dims: []int64{1}, Uint64Data: []uint64{math.MaxUint64}},
				{Name: "str", DataType: String, Dims: []int64{1}, StringData: [][]byte{[]byte("hi")}, DocString: "d"},
				{Name: "ext", DataType: Float, Dims: []int64{1}, DataLocation: 1, ExternalData: []StringStringEntry{{Key: "location", Value: "w.bin"}}},
				{Name: "empty", DataType: Float, Dims: []int64{0, 3}, RawData: []byte{}},
			},
			DocString: "graph doc",
			Inputs:    []*ValueInfo{TensorValue("x", Float, 1, 3, 4, 4)},
			Outputs: []*ValueInfo{{Name: "z", Type: &Type{Tensor: &TensorType{ElemType: Float, Shape: &Shape{Dims: []Dimension{
				{Param: "batch"}, {Value: 0, Denotation: "DATA_CHANNEL"}}}}}, DocString: "out"}},
			ValueInfo: []*ValueInfo{
				{Name: "y", Type: &Type{Tensor: &TensorType{ElemType: Float}}},                  // no shape
				{Name: "s", Type: &Type{Tensor: &TensorType{ElemType: Float, Shape: &Shape{}}}}, // scalar
				{Name: "untyped"},
			},
		},
	}
}

func marshal(t testing.TB, m *Model) []byte {
	t.Helper()
	b, err := Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	want := sampleModel()
	b := marshal(t, want)
	got, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the model:\n got %+v\nwant %+v", got.Graph.Nodes[0], want.Graph.Nodes[0])
	}
	if again := marshal(t, got); !bytes.Equal(again, b) {
		t.Error("re-encoding a parsed model changed its bytes")
	}
}

// TestKnownEncoding checks the encoder against bytes worked out by hand
// from the protobuf wire format.
func TestKnownEncoding(t *testing.T) {
	m := &Model{
		IRVersion:    8,
		OpsetImports: []OperatorSetID{{Version: 13}},
		Graph: &Graph{Nodes: []*Node{{OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"},
			Attributes: []*Attribute{IntAttr("a", 0)}}}},
	}
	want := []byte{
		0x08, 0x08, // ir_version = 8
		0x3a, 0x18, // graph, 24 bytes
		0x0a, 0x16, // node, 22 bytes
		0x0a, 0x01, 'x', // input
		0x12, 0x01, 'y', // output
		0x22, 0x04, 'R', 'e', 'l', 'u', // op_type
		0x2a, 0x08, // attribute, 8 bytes
		0x0a, 0x01, 'a', // name
		0x18, 0x00, // i = 0, written although zero
		0xa0, 0x01, 0x02, // type = INT (field 20)
		0x42, 0x02, 0x10, 0x0d, // opset_import { version: 13 }
	}
	if got := marshal(t, m); !bytes.Equal(got, want) {
		t.Errorf("encoding\n got % x\nwant % x", got, want)
	}
}

// TestParseHandWritten decodes bytes written by hand, with unpacked and
// packed repeated fields, a field this package does not model, and an
// attribute without a type field (IR version 1).
func TestParseHandWritten(t *testing.T) {
	tensor := []byte{
		0x08, 0x02, 0x08, 0x03, // dims 2, 3 (unpacked)
		0x10, 0x01, // FLOAT
		0x25, 0x00, 0x00, 0x80, 0x3f, // float_data 1.0 (unpacked, fixed32)
		0x22, 0x04, 0x00, 0x00, 0x00, 0x40, // float_data [2.0] (packed)
		0x42, 0x01, 't', // name
	}
	attr := []byte{0x0a, 0x01, 'k', 0x42, 0x03, 0x01, 0x02, 0x7f} // name k, ints packed [1 2 127]
	node := append([]byte{0x22, 0x02, 'O', 'p', 0x2a, byte(len(attr))}, attr...)
	graph := append([]byte{0x0a, byte(len(node))}, node...)
	graph = append(graph, 0x2a, byte(len(tensor)))
	graph = append(graph, tensor...)
	b := []byte{0x08, 0x03}
	b = append(b, 0x3a, byte(len(graph)))
	b = append(b, graph...)
	unknown := []byte{0xa2, 0x06, 0x02, 'h', 'i'} // field 100, bytes "hi"
	b = append(b, unknown...)

	m, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.IRVersion != 3 {
		t.Errorf("ir_version %d", m.IRVersion)
	}
	a := m.Graph.Nodes[0].Attributes[0]
	if a.Type != AttrInts || !reflect.DeepEqual(a.Ints, []int64{1, 2, 127}) {
		t.Errorf("attribute %+v", a)
	}
	tn := m.Graph.Initializers[0]
	if !reflect.DeepEqual(tn.Dims, []int64{2, 3}) || !reflect.DeepEqual(tn.FloatData, []float32{1, 2}) || tn.Name != "t" {
		t.Errorf("tensor %+v", tn)
	}
	if !bytes.Equal(m.unknown, unknown) {
		t.Errorf("unknown field kept as % x", m.unknown)
	}
	if out := marshal(t, m); !bytes.HasSuffix(out, unknown) {
		t.Error("unknown field not written back")
	}
}

func TestParseErrors(t *testing.T) {
	valid := marshal(t, sampleModel())
	deep := []byte{}
	for i := 0; i < 40; i++ { // graph { node { attribute { g { node ...
		deep = append([]byte{0x32, byte(len(deep))}, deep...) // attribute.g
		deep = append([]byte{0x2a, byte(len(deep))}, deep...) // node.attribute
		deep = append([]byte{0x0a, byte(len(deep))}, deep...) // graph.node
		if len(deep) > 120 {
			break
		}
	}
	deepModel := append([]byte{0x3a, byte(len(deep))}, deep...)
	cases := []struct {
		name, want string
		b          []byte
	}{
		{"truncated varint", "truncated", []byte{0x08, 0x80}},
		{"varint too long", "varint", []byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}},
		{"length past end", "exceeds", []byte{0x3a, 0x05, 0x00}},
		{"huge length", "exceeds", []byte{0x3a, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"field zero", "field number", []byte{0x00, 0x01}},
		{"group wire type", "wire type 3", []byte{0x0b}},
		{"wrong wire type", "wire type 2, want 0", []byte{0x0a, 0x00}},
		{"truncated fixed32", "truncated", []byte{0x3a, 0x04, 0x0a, 0x02, 0x2a, 0x00, 0x15}},
		{"packed floats misaligned", "packed floats", []byte{0x3a, 0x05, 0x2a, 0x03, 0x22, 0x01, 0x00}},
		{"nested too deep", "nested", deepModel},
		{"truncated model", "truncated", valid[:len(valid)-3]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.b)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse(% x) = %v, want an error containing %q", c.b, err, c.want)
			}
		})
	}
}

// TestEveryPrefix parses every truncation of a valid model: each must give
// an error or a model, never a panic, and nothing may parse as the whole.
func TestEveryPrefix(t *testing.T) {
	valid := marshal(t, sampleModel())
	for i := 0; i < len(valid); i++ {
		m, err := Parse(valid[:i])
		if err == nil && reflect.DeepEqual(m, sampleModel()) {
			t.Fatalf("prefix of %d/%d bytes parsed as the whole model", i, len(valid))
		}
	}
}

func TestTensorCheck(t *testing.T) {
	raw := func(n int) []byte { return make([]byte, n) }
	cases := []struct {
		name string
		t    Tensor
		want string // "" = valid
	}{
		{"raw float", Tensor{DataType: Float, Dims: []int64{2, 3}, RawData: raw(24)}, ""},
		{"raw short", Tensor{DataType: Float, Dims: []int64{2, 3}, RawData: raw(20)}, "need 6 elements, raw_data has 5"},
		{"raw ragged", Tensor{DataType: Float, Dims: []int64{1}, RawData: raw(5)}, "whole number"},
		{"float_data long", Tensor{DataType: Float, Dims: []int64{1}, FloatData: []float32{1, 2}}, "need 1 elements, float_data has 2"},
		{"no data", Tensor{DataType: Float, Dims: []int64{4}}, "need 4 elements, data has 0"},
		{"empty tensor", Tensor{DataType: Float, Dims: []int64{0, 4}}, ""},
		{"scalar", Tensor{DataType: Int64, Int64Data: []int64{5}}, ""},
		{"negative dim", Tensor{DataType: Float, Dims: []int64{-1}}, "dim 0 is -1"},
		{"overflow", Tensor{DataType: Float, Dims: []int64{1 << 20, 1 << 20}}, "more than"},
		{"wrong field", Tensor{DataType: Int64, Dims: []int64{1}, FloatData: []float32{1}}, "float_data holds data for a INT64"},
		{"two fields", Tensor{DataType: Float, Dims: []int64{1}, FloatData: []float32{1}, RawData: raw(4)}, "more than one field"},
		{"undefined type", Tensor{Dims: []int64{1}, RawData: raw(4)}, "unsupported data type UNDEFINED"},
		{"external", Tensor{DataType: Float, Dims: []int64{1}, DataLocation: 1}, "external"},
		{"int8 in int32_data", Tensor{DataType: Int8, Dims: []int64{2}, Int32Data: []int32{-3, 4}}, ""},
		{"strings", Tensor{DataType: String, Dims: []int64{2}, StringData: [][]byte{{}, {}}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.t.Check()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("Check() = %v, want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("Check() = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestTensorValues(t *testing.T) {
	f, err := FloatTensor("f", []float32{1.5, -2, 0}, 3).Floats()
	if err != nil || !reflect.DeepEqual(f, []float32{1.5, -2, 0}) {
		t.Errorf("FloatTensor.Floats = %v, %v", f, err)
	}
	i, err := Int64Tensor("i", []int64{-1, 1 << 40}, 2).Int64s()
	if err != nil || !reflect.DeepEqual(i, []int64{-1, 1 << 40}) {
		t.Errorf("Int64Tensor.Int64s = %v, %v", i, err)
	}
	i32raw := make([]byte, 8)
	binary.LittleEndian.PutUint32(i32raw, uint32(0xffffffff)) // -1
	binary.LittleEndian.PutUint32(i32raw[4:], 3)
	i, err = (&Tensor{DataType: Int32, Dims: []int64{2}, RawData: i32raw}).Int64s()
	if err != nil || !reflect.DeepEqual(i, []int64{-1, 3}) {
		t.Errorf("raw int32 = %v, %v", i, err)
	}
	d, err := (&Tensor{DataType: Double, Dims: []int64{1}, DoubleData: []float64{0.25}}).Floats()
	if err != nil || d[0] != 0.25 {
		t.Errorf("double = %v, %v", d, err)
	}
	if _, err := Int64Tensor("i", []int64{1}, 1).Floats(); err == nil {
		t.Error("Floats of an INT64 tensor did not fail")
	}
	// Half precision: 1.0, -2.0, 65504 (max), 2^-24 (smallest subnormal), +Inf.
	halves := []uint16{0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00}
	want := []float32{1, -2, 65504, float32(math.Ldexp(1, -24)), float32(math.Inf(1))}
	h, err := (&Tensor{DataType: Float16, Dims: []int64{5}, Int32Data: []int32{
		int32(halves[0]), int32(halves[1]), int32(halves[2]), int32(halves[3]), int32(halves[4])}}).Floats()
	if err != nil || !reflect.DeepEqual(h, want) {
		t.Errorf("float16 = %v, %v, want %v", h, err, want)
	}
}

func TestNodeAttributes(t *testing.T) {
	n := &Node{Attributes: []*Attribute{IntAttr("axis", 2), IntsAttr("perm", 0, 2, 1), StringAttr("mode", "constant")}}
	if n.AttrInt("axis", 0) != 2 || n.AttrInt("missing", 7) != 7 {
		t.Error("AttrInt")
	}
	if !reflect.DeepEqual(n.AttrInts("perm"), []int64{0, 2, 1}) || n.AttrInts("axis") != nil {
		t.Error("AttrInts")
	}
	if n.AttrString("mode", "") != "constant" {
		t.Error("AttrString")
	}
	n.SetAttr(IntAttr("axis", 3))
	n.SetAttr(IntAttr("keepdims", 0))
	n.DeleteAttr("perm")
	if n.AttrInt("axis", 0) != 3 || n.Attr("keepdims") == nil || n.Attr("perm") != nil || len(n.Attributes) != 3 {
		t.Errorf("after edits: %v", n.Attributes)
	}
	m := &Model{OpsetImports: []OperatorSetID{{Domain: "ai.onnx", Version: 11}, {Domain: "x", Version: 2}}}
	if m.OpsetVersion("") != 11 || m.OpsetVersion("x") != 2 || m.OpsetVersion("y") != 0 {
		t.Error("OpsetVersion")
	}
}

func TestSizeLimits(t *testing.T) {
	if _, err := ReadFile("/nonexistent/model.onnx", 0); err == nil {
		t.Error("ReadFile of a missing file did not fail")
	}
	dir := t.TempDir()
	path := dir + "/m.onnx"
	if err := WriteFile(path, sampleModel()); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path, 10); err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Errorf("ReadFile over the size limit = %v", err)
	}
	if m, err := ReadFile(path, 0); err != nil || m.Graph.Name != "g" {
		t.Errorf("ReadFile = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	valid, _ := Marshal(sampleModel())
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add([]byte{0x08, 0x08, 0x3a, 0x00})
	f.Add([]byte{0x3a, 0x04, 0x2a, 0x02, 0x08, 0x01})
	f.Add([]byte{0x3a, 0x06, 0x0a, 0x04, 0x2a, 0x02, 0x32, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			return
		}
		// Whatever parses must encode, and its encoding must parse back to
		// the same encoding.
		once, err := Marshal(m)
		if err != nil {
			t.Fatalf("parsed model does not encode: %v", err)
		}
		m2, err := Parse(once)
		if err != nil {
			t.Fatalf("re-encoded model does not parse: %v", err)
		}
		twice, _ := Marshal(m2)
		if !bytes.Equal(once, twice) {
			t.Fatal("encoding is not stable")
		}
		// Check must not panic on anything that parses.
		if m.Graph != nil {
			for _, tn := range m.Graph.Initializers {
				if tn.Check() == nil {
					tn.Floats()
					tn.Int64s()
				}
			}
		}
	})
}
