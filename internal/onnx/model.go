package onnx

// DataType is TensorProto.DataType: the element type of a tensor.
type DataType int32

// The element types of onnx.proto.
const (
	Undefined  DataType = 0
	Float      DataType = 1
	Uint8      DataType = 2
	Int8       DataType = 3
	Uint16     DataType = 4
	Int16      DataType = 5
	Int32      DataType = 6
	Int64      DataType = 7
	String     DataType = 8
	Bool       DataType = 9
	Float16    DataType = 10
	Double     DataType = 11
	Uint32     DataType = 12
	Uint64     DataType = 13
	Complex64  DataType = 14
	Complex128 DataType = 15
	BFloat16   DataType = 16
)

var dataTypeNames = map[DataType]string{
	Undefined: "UNDEFINED", Float: "FLOAT", Uint8: "UINT8", Int8: "INT8", Uint16: "UINT16",
	Int16: "INT16", Int32: "INT32", Int64: "INT64", String: "STRING", Bool: "BOOL",
	Float16: "FLOAT16", Double: "DOUBLE", Uint32: "UINT32", Uint64: "UINT64",
	Complex64: "COMPLEX64", Complex128: "COMPLEX128", BFloat16: "BFLOAT16",
}

func (t DataType) String() string {
	if s, ok := dataTypeNames[t]; ok {
		return s
	}
	return "DataType(" + itoa(int64(t)) + ")"
}

// elemSize is the byte size of one element in raw_data, 0 for types that
// have no fixed size (STRING) or that this package does not know.
func (t DataType) elemSize() int {
	switch t {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16, Float16, BFloat16:
		return 2
	case Float, Int32, Uint32:
		return 4
	case Int64, Double, Uint64, Complex64:
		return 8
	case Complex128:
		return 16
	}
	return 0
}

// AttributeType is AttributeProto.AttributeType.
type AttributeType int32

// The attribute types of onnx.proto.
const (
	AttrUndefined     AttributeType = 0
	AttrFloat         AttributeType = 1
	AttrInt           AttributeType = 2
	AttrString        AttributeType = 3
	AttrTensor        AttributeType = 4
	AttrGraph         AttributeType = 5
	AttrFloats        AttributeType = 6
	AttrInts          AttributeType = 7
	AttrStrings       AttributeType = 8
	AttrTensors       AttributeType = 9
	AttrGraphs        AttributeType = 10
	AttrSparseTensor  AttributeType = 11
	AttrSparseTensors AttributeType = 12
	AttrTypeProto     AttributeType = 13
	AttrTypeProtos    AttributeType = 14
)

var attributeTypeNames = map[AttributeType]string{
	AttrUndefined: "UNDEFINED", AttrFloat: "FLOAT", AttrInt: "INT", AttrString: "STRING",
	AttrTensor: "TENSOR", AttrGraph: "GRAPH", AttrFloats: "FLOATS", AttrInts: "INTS",
	AttrStrings: "STRINGS", AttrTensors: "TENSORS", AttrGraphs: "GRAPHS",
	AttrSparseTensor: "SPARSE_TENSOR", AttrSparseTensors: "SPARSE_TENSORS",
	AttrTypeProto: "TYPE_PROTO", AttrTypeProtos: "TYPE_PROTOS",
}

func (t AttributeType) String() string {
	if s, ok := attributeTypeNames[t]; ok {
		return s
	}
	return "AttributeType(" + itoa(int64(t)) + ")"
}

// Model is ModelProto, the top-level ONNX file.
type Model struct {
	IRVersion       int64
	OpsetImports    []OperatorSetID
	ProducerName    string
	ProducerVersion string
	Domain          string
	ModelVersion    int64
	DocString       string
	Graph           *Graph // nil if the file has none
	MetadataProps   []StringStringEntry

	unknown []byte // fields not modelled here, as wire bytes
}

// OperatorSetID is OperatorSetIdProto: an operator domain ("" is the
// default ai.onnx domain) and its version.
type OperatorSetID struct {
	Domain  string
	Version int64

	unknown []byte
}

// StringStringEntry is StringStringEntryProto.
type StringStringEntry struct {
	Key, Value string

	unknown []byte
}

// Graph is GraphProto. Nodes are in topological order (the ONNX rule).
type Graph struct {
	Nodes        []*Node
	Name         string
	Initializers []*Tensor
	DocString    string
	Inputs       []*ValueInfo
	Outputs      []*ValueInfo
	ValueInfo    []*ValueInfo

	unknown []byte
}

// Node is NodeProto: one operator application. An empty input name means an
// omitted optional input.
type Node struct {
	Inputs     []string
	Outputs    []string
	Name       string
	OpType     string
	Domain     string
	Attributes []*Attribute
	DocString  string

	unknown []byte
}

// Attribute is AttributeProto. Type says which value field is meaningful.
type Attribute struct {
	Name        string
	RefAttrName string
	DocString   string
	Type        AttributeType

	F       float32
	I       int64
	S       []byte
	T       *Tensor
	G       *Graph
	Floats  []float32
	Ints    []int64
	Strings [][]byte
	Tensors []*Tensor
	Graphs  []*Graph

	unknown []byte
}

// Tensor is TensorProto. Data is in exactly one of the typed fields or in
// RawData (little-endian); RawData may alias the buffer given to Parse.
type Tensor struct {
	Dims       []int64
	DataType   DataType
	FloatData  []float32
	Int32Data  []int32 // also INT8/UINT8/INT16/UINT16/BOOL/FLOAT16 elements
	StringData [][]byte
	Int64Data  []int64
	Name       string
	DocString  string
	RawData    []byte
	DoubleData []float64
	Uint64Data []uint64
	// DataLocation is 0 (DEFAULT) or 1 (EXTERNAL: the data lives in
	// another file named by ExternalData, which this package does not read).
	DataLocation int32
	ExternalData []StringStringEntry

	unknown []byte
}

// ValueInfo is ValueInfoProto: a named value and its type.
type ValueInfo struct {
	Name      string
	Type      *Type // nil if absent
	DocString string

	unknown []byte
}

// Type is TypeProto; only tensor types are modelled, others are kept as
// unknown bytes.
type Type struct {
	Tensor     *TensorType // nil unless the value is a tensor
	Denotation string

	unknown []byte
}

// TensorType is TypeProto.Tensor.
type TensorType struct {
	ElemType DataType
	Shape    *Shape // nil means no shape information (not even the rank)

	unknown []byte
}

// Shape is TensorShapeProto.
type Shape struct {
	Dims []Dimension

	unknown []byte
}

// Dimension is TensorShapeProto.Dimension: a fixed size or a symbolic name.
// Marshal writes Param when it is set and Value otherwise.
type Dimension struct {
	Value      int64
	Param      string
	Denotation string

	unknown []byte
}
