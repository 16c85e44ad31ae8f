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
	_ Message = (*TFMessage)(nil)
	_ Message = (*JointState)(nil)
	_ Message = (*CameraInfo)(nil)
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

func (m *Bool) MarshalROS(b []byte) []byte { return putBool(b, m.Data) }

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

// Vector3 is geometry_msgs/Vector3.
type Vector3 struct{ X, Y, Z float64 }

// Quaternion is geometry_msgs/Quaternion.
type Quaternion struct{ X, Y, Z, W float64 }

// Transform is geometry_msgs/Transform.
type Transform struct {
	Translation Vector3
	Rotation    Quaternion
}

// TransformStamped is geometry_msgs/TransformStamped: the pose of frame
// ChildFrameID in frame Header.FrameID.
type TransformStamped struct {
	Header       Header
	ChildFrameID string
	Transform    Transform
}

func (m *TransformStamped) marshal(b []byte) []byte {
	b = putString(m.Header.MarshalROS(b), m.ChildFrameID)
	t := &m.Transform
	for _, v := range [7]float64{t.Translation.X, t.Translation.Y, t.Translation.Z, t.Rotation.X, t.Rotation.Y, t.Rotation.Z, t.Rotation.W} {
		b = putF64(b, v)
	}
	return b
}

func (m *TransformStamped) decode(d *decoder) {
	m.Header.decode(d)
	m.ChildFrameID = d.string("child_frame_id")
	t := &m.Transform
	t.Translation = Vector3{d.f64("translation.x"), d.f64("translation.y"), d.f64("translation.z")}
	t.Rotation = Quaternion{d.f64("rotation.x"), d.f64("rotation.y"), d.f64("rotation.z"), d.f64("rotation.w")}
}

// TFMessage is tf2_msgs/TFMessage, the message of /tf and /tf_static.
type TFMessage struct {
	Transforms []TransformStamped
}

func (*TFMessage) MessageType() MessageType { return TFMessageType }

func (m *TFMessage) MarshalROS(b []byte) []byte {
	b = putU32(b, uint32(len(m.Transforms)))
	for i := range m.Transforms {
		b = m.Transforms[i].marshal(b)
	}
	return b
}

func (m *TFMessage) UnmarshalROS(b []byte) error {
	d := decoder{b: b, ctx: TFMessageType.Name}
	n := d.count("transforms", 12+4+7*8) // header, child_frame_id, transform: at least 72 bytes
	m.Transforms = m.Transforms[:0]
	for range n {
		var t TransformStamped
		t.decode(&d)
		m.Transforms = append(m.Transforms, t)
	}
	return d.end()
}

// JointState is sensor_msgs/JointState.
type JointState struct {
	Header   Header
	Name     []string
	Position []float64
	Velocity []float64
	Effort   []float64
}

func (*JointState) MessageType() MessageType { return JointStateType }

func (m *JointState) MarshalROS(b []byte) []byte {
	b = m.Header.MarshalROS(b)
	b = putU32(b, uint32(len(m.Name)))
	for _, s := range m.Name {
		b = putString(b, s)
	}
	for _, v := range [][]float64{m.Position, m.Velocity, m.Effort} {
		b = putF64s(b, v)
	}
	return b
}

func (m *JointState) UnmarshalROS(b []byte) error {
	d := decoder{b: b, ctx: JointStateType.Name}
	m.Header.decode(&d)
	n := d.count("name", 4)
	m.Name = m.Name[:0]
	for range n {
		m.Name = append(m.Name, d.string("name"))
	}
	m.Position = d.f64s("position", m.Position[:0])
	m.Velocity = d.f64s("velocity", m.Velocity[:0])
	m.Effort = d.f64s("effort", m.Effort[:0])
	return d.end()
}

// RegionOfInterest is sensor_msgs/RegionOfInterest.
type RegionOfInterest struct {
	XOffset, YOffset, Height, Width uint32
	DoRectify                       bool
}

// CameraInfo is sensor_msgs/CameraInfo. K, R (3x3) and P (3x4) are
// row-major.
type CameraInfo struct {
	Header          Header
	Height, Width   uint32
	DistortionModel string
	D               []float64
	K               [9]float64
	R               [9]float64
	P               [12]float64
	BinningX        uint32
	BinningY        uint32
	ROI             RegionOfInterest
}

func (*CameraInfo) MessageType() MessageType { return CameraInfoType }

func (m *CameraInfo) MarshalROS(b []byte) []byte {
	b = m.Header.MarshalROS(b)
	b = putU32(putU32(b, m.Height), m.Width)
	b = putF64s(putString(b, m.DistortionModel), m.D)
	for _, a := range [][]float64{m.K[:], m.R[:], m.P[:]} {
		for _, v := range a {
			b = putF64(b, v)
		}
	}
	b = putU32(putU32(b, m.BinningX), m.BinningY)
	r := &m.ROI
	b = putU32(putU32(putU32(putU32(b, r.XOffset), r.YOffset), r.Height), r.Width)
	return putBool(b, r.DoRectify)
}

func (m *CameraInfo) UnmarshalROS(b []byte) error {
	d := decoder{b: b, ctx: CameraInfoType.Name}
	m.Header.decode(&d)
	m.Height = d.u32("height")
	m.Width = d.u32("width")
	m.DistortionModel = d.string("distortion_model")
	m.D = d.f64s("D", m.D[:0])
	for _, f := range []struct {
		name string
		a    []float64
	}{{"K", m.K[:]}, {"R", m.R[:]}, {"P", m.P[:]}} {
		for i := range f.a {
			f.a[i] = d.f64(f.name)
		}
	}
	m.BinningX = d.u32("binning_x")
	m.BinningY = d.u32("binning_y")
	m.ROI = RegionOfInterest{XOffset: d.u32("roi.x_offset"), YOffset: d.u32("roi.y_offset"), Height: d.u32("roi.height"), Width: d.u32("roi.width"),
		DoRectify: d.u8("roi.do_rectify") != 0}
	return d.end()
}
