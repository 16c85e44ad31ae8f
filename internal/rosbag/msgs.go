package rosbag

import "math"

// MessageType names a ROS message type: its name ("std_msgs/String"), MD5
// sum and full definition (see msgdefs.go).
type MessageType struct {
	Name       string
	MD5Sum     string
	Definition string
}

// Message is a ROS message this package can serialise. MarshalROS appends
// the serialised message to dst; UnmarshalROS replaces the message with
// the decoding of b, which must be consumed exactly (ErrMessage otherwise).
// Decoded byte slices (Image.Data, CompressedImage.Data) are views of b.
type Message interface {
	MessageType() MessageType
	MarshalROS(dst []byte) []byte
	UnmarshalROS(b []byte) error
}

var (
	_ Message = (*Header)(nil)
	_ Message = (*Image)(nil)
	_ Message = (*CompressedImage)(nil)
	_ Message = (*String)(nil)
	_ Message = (*Bool)(nil)
	_ Message = (*Float32MultiArray)(nil)
)

// Header is std_msgs/Header.
type Header struct {
	Seq     uint32
	Stamp   Time
	FrameID string
}

func (*Header) MessageType() MessageType { return HeaderType }

func (m *Header) MarshalROS(b []byte) []byte {
	return putString(putTime(putU32(b, m.Seq), m.Stamp), m.FrameID)
}

func (m *Header) UnmarshalROS(b []byte) error {
	d := decoder{b: b, ctx: HeaderType.Name}
	m.decode(&d)
	return d.end()
}

func (m *Header) decode(d *decoder) {
	m.Seq = d.u32("header.seq")
	m.Stamp = d.time("header.stamp")
	m.FrameID = d.string("header.frame_id")
}

// Image is sensor_msgs/Image.
type Image struct {
	Header      Header
	Height      uint32
	Width       uint32
	Encoding    string
	IsBigendian uint8
	Step        uint32
	Data        []byte
}

func (*Image) MessageType() MessageType { return ImageType }

func (m *Image) MarshalROS(b []byte) []byte {
	b = m.Header.MarshalROS(b)
	b = putU32(putU32(b, m.Height), m.Width)
	b = putString(b, m.Encoding)
	b = putU32(putU8(b, m.IsBigendian), m.Step)
	return putBytes(b, m.Data)
}

func (m *Image) UnmarshalROS(b []byte) error {
	d := decoder{b: b, ctx: ImageType.Name}
	m.Header.decode(&d)
	m.Height = d.u32("height")
	m.Width = d.u32("width")
	m.Encoding = d.string("encoding")
	m.IsBigendian = d.u8("is_bigendian")
	m.Step = d.u32("step")
	m.Data = d.bytes("data")
	return d.end()
}

// CompressedImage is sensor_msgs/CompressedImage.
type CompressedImage struct {
	Header Header
	Format string
	Data   []byte
}

func (*CompressedImage) MessageType() MessageType { return CompressedImageType }

func (m *CompressedImage) MarshalROS(b []byte) []byte {
	return putBytes(putString(m.Header.MarshalROS(b), m.Format), m.Data)
}

func (m *CompressedImage) UnmarshalROS(b []byte) error {
	d := decoder{b: b, ctx: CompressedImageType.Name}
	m.Header.decode(&d)
	m.Format = d.string("format")
	m.Data = d.bytes("data")
	return d.end()
}

// String is std_msgs/String.
type String struct{ Data string }

func (*String) MessageType() MessageType { return StringType }

func (m *String) MarshalROS(b []byte) []byte { return putString(b, m.Data) }

func (m *String) UnmarshalROS(b []byte) error {
	d := decoder{b: b, ctx: StringType.Name}
	m.Data = d.string("data")
	return d.end()
}

// Bool is std_msgs/Bool (one byte, 0 or 1; any non-zero byte reads as
// true, as roscpp and rospy do).
type Bool struct{ Data bool }

func (*Bool) MessageType() MessageType { return BoolType }

func (m *Bool) MarshalROS(b []byte) []byte {
	var v uint8
	if m.Data {
		v = 1
	}
	return putU8(b, v)
}

func (m *Bool) UnmarshalROS(b []byte) error {
	d := decoder{b: b, ctx: BoolType.Name}
	m.Data = d.u8("data") != 0
	return d.end()
}

// MultiArrayDimension is std_msgs/MultiArrayDimension.
type MultiArrayDimension struct {
	Label  string
	Size   uint32
	Stride uint32
}

// MultiArrayLayout is std_msgs/MultiArrayLayout.
type MultiArrayLayout struct {
	Dim        []MultiArrayDimension
	DataOffset uint32
}

// Float32MultiArray is std_msgs/Float32MultiArray.
type Float32MultiArray struct {
	Layout MultiArrayLayout
	Data   []float32
}

func (*Float32MultiArray) MessageType() MessageType { return Float32MultiArrayType }

func (m *Float32MultiArray) MarshalROS(b []byte) []byte {
	b = putU32(b, uint32(len(m.Layout.Dim)))
	for _, dm := range m.Layout.Dim {
		b = putU32(putU32(putString(b, dm.Label), dm.Size), dm.Stride)
	}
	b = putU32(b, m.Layout.DataOffset)
	b = putU32(b, uint32(len(m.Data)))
	for _, v := range m.Data {
		b = putU32(b, math.Float32bits(v))
	}
	return b
}

func (m *Float32MultiArray) UnmarshalROS(b []byte) error {
	d := decoder{b: b, ctx: Float32MultiArrayType.Name}
	n := d.count("layout.dim", 12) // a dimension is at least 12 bytes
	m.Layout.Dim = m.Layout.Dim[:0]
	for range n {
		m.Layout.Dim = append(m.Layout.Dim, MultiArrayDimension{Label: d.string("layout.dim.label"), Size: d.u32("layout.dim.size"), Stride: d.u32("layout.dim.stride")})
	}
	m.Layout.DataOffset = d.u32("layout.data_offset")
	n = d.count("data", 4)
	m.Data = m.Data[:0]
	for range n {
		m.Data = append(m.Data, math.Float32frombits(d.u32("data")))
	}
	return d.end()
}
