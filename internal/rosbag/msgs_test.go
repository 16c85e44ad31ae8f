package rosbag

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

var allTypes = []MessageType{HeaderType, ImageType, CompressedImageType, StringType, BoolType, Float32MultiArrayType,
	TFMessageType, JointStateType, CameraInfoType}

// sampleMessages has one message of each type with every field set.
func sampleMessages() []Message {
	hdr := Header{Seq: 7, Stamp: Time{Sec: 1700000000, Nsec: 123456789}, FrameID: "headcam"}
	return []Message{
		&hdr,
		&Image{Header: hdr, Height: 2, Width: 3, Encoding: "rgb8", IsBigendian: 1, Step: 9, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}},
		&CompressedImage{Header: hdr, Format: "jpeg", Data: []byte{0xff, 0xd8, 0xff, 0xd9}},
		&String{Data: "pick up the coke can"},
		&Bool{Data: true},
		&Float32MultiArray{Layout: MultiArrayLayout{Dim: []MultiArrayDimension{{Label: "mode;world_vector/x", Size: 2, Stride: 2}}, DataOffset: 0},
			Data: []float32{1, -0.25}},
		sampleTF(hdr),
		&JointState{Header: hdr, Name: []string{"gripper_finger_joint", "wrist"}, Position: []float64{0.04, -1.5}, Velocity: []float64{0.25}, Effort: []float64{1, 2}},
		sampleCameraInfo(hdr),
	}
}

func sampleTF(h Header) *TFMessage {
	h2 := h
	h2.FrameID = "base_link"
	return &TFMessage{Transforms: []TransformStamped{
		{Header: h, ChildFrameID: "base_link", Transform: Transform{Translation: Vector3{1, -2, 0.5}, Rotation: Quaternion{0, 0, 0.6, 0.8}}},
		{Header: h2, ChildFrameID: "hand", Transform: Transform{Translation: Vector3{0.25, 0.125, -0.5}, Rotation: Quaternion{-0.5, 0.5, -0.5, 0.5}}},
	}}
}

func sampleCameraInfo(h Header) *CameraInfo {
	return &CameraInfo{Header: h, Height: 256, Width: 320, DistortionModel: "plumb_bob", D: []float64{0.5, 0, 0, 0, -0.25},
		K: [9]float64{250, 0, 159.5, 0, 250, 127.5, 0, 0, 1}, R: [9]float64{1, 0, 0, 0, 1, 0, 0, 0, 1},
		P: [12]float64{250, 0, 159.5, 0, 0, 250, 127.5, 0, 0, 0, 1, 0}, BinningX: 2, BinningY: 3,
		ROI: RegionOfInterest{XOffset: 1, YOffset: 2, Height: 3, Width: 4, DoRectify: true}}
}

// The wire bytes of small messages, written out by hand from the ROS 1
// serialisation rules.
func TestMessageWireBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  Message
		want []byte
	}{
		{"String", &String{Data: "ab"}, []byte{2, 0, 0, 0, 'a', 'b'}},
		{"Bool true", &Bool{Data: true}, []byte{1}},
		{"Bool false", &Bool{}, []byte{0}},
		{"Header", &Header{Seq: 1, Stamp: Time{Sec: 2, Nsec: 3}, FrameID: "f"}, []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 'f'}},
		{"Float32MultiArray", &Float32MultiArray{Layout: MultiArrayLayout{Dim: []MultiArrayDimension{{Label: "x", Size: 1, Stride: 1}}, DataOffset: 5}, Data: []float32{1}},
			[]byte{1, 0, 0, 0, 1, 0, 0, 0, 'x', 1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0x80, 0x3f}},
		{"CompressedImage", &CompressedImage{Format: "png", Data: []byte{9}},
			[]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 'p', 'n', 'g', 1, 0, 0, 0, 9}},
		{"Image", &Image{Height: 1, Width: 1, Encoding: "mono8", Step: 1, Data: []byte{200}},
			[]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 'm', 'o', 'n', 'o', '8', 0, 1, 0, 0, 0, 1, 0, 0, 0, 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.msg.MarshalROS(nil); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("MarshalROS = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMessageRoundTrip(t *testing.T) {
	for _, m := range sampleMessages() {
		t.Run(m.MessageType().Name, func(t *testing.T) {
			b := m.MarshalROS([]byte("prefix"))[len("prefix"):]
			got := reflect.New(reflect.TypeOf(m).Elem()).Interface().(Message)
			if err := got.UnmarshalROS(b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Errorf("round trip: got %+v, want %+v", got, m)
			}
			// Every strict prefix and one byte too many are errors.
			for n := range len(b) {
				if err := got.UnmarshalROS(b[:n]); !errors.Is(err, ErrMessage) {
					t.Fatalf("%d of %d bytes: err = %v, want ErrMessage", n, len(b), err)
				}
			}
			if err := got.UnmarshalROS(append(b, 0)); !errors.Is(err, ErrMessage) {
				t.Errorf("a trailing byte: err = %v, want ErrMessage", err)
			}
		})
	}
}

// A length prefix larger than the data must fail without allocating it.
func TestMessageHugeLength(t *testing.T) {
	b := []byte{0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0} // Float32MultiArray with 2^31 dims
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var m Float32MultiArray
	if err := m.UnmarshalROS(b); !errors.Is(err, ErrMessage) {
		t.Fatalf("err = %v", err)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<16 {
		t.Errorf("%d bytes allocated for a rejected message", n)
	}
}

// rosMD5 recomputes a message type's MD5 sum from its full definition,
// following genmsg's compute_md5_text: comments and blank lines dropped,
// constants first, then the fields, each nested message type replaced by
// its own MD5 sum (without array brackets).
func rosMD5(t *testing.T, typ, full string) string {
	t.Helper()
	texts := map[string]string{}
	parts := strings.Split(full, "\n"+strings.Repeat("=", 80)+"\n")
	texts[typ] = parts[0]
	for _, p := range parts[1:] {
		name, body, ok := strings.Cut(p, "\n")
		if !ok || !strings.HasPrefix(name, "MSG: ") {
			t.Fatalf("%s: dependency block %q does not start with MSG:", typ, name)
		}
		texts[strings.TrimPrefix(name, "MSG: ")] = body
	}
	builtin := map[string]bool{"bool": true, "int8": true, "uint8": true, "int16": true, "uint16": true, "int32": true, "uint32": true,
		"int64": true, "uint64": true, "float32": true, "float64": true, "string": true, "time": true, "duration": true, "byte": true, "char": true}
	var md5of func(typ string) string
	md5of = func(typ string) string {
		text, ok := texts[typ]
		if !ok {
			t.Fatalf("no definition of %s", typ)
		}
		pkg, _, _ := strings.Cut(typ, "/")
		var consts, fields []string
		for _, line := range strings.Split(text, "\n") {
			if i := strings.Index(line, "#"); i >= 0 {
				line = line[:i]
			}
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			if strings.Contains(line, "=") {
				consts = append(consts, strings.Join(strings.Fields(strings.Replace(line, "=", " = ", 1)), " "))
				continue
			}
			ftype, name := f[0], f[1]
			base, _, _ := strings.Cut(ftype, "[")
			if builtin[base] {
				fields = append(fields, ftype+" "+name)
				continue
			}
			switch {
			case base == "Header":
				base = "std_msgs/Header"
			case !strings.Contains(base, "/"):
				base = pkg + "/" + base
			}
			fields = append(fields, md5of(base)+" "+name)
		}
		sum := md5.Sum([]byte(strings.Join(append(consts, fields...), "\n")))
		return hex.EncodeToString(sum[:])
	}
	return md5of(typ)
}

// The MD5 sums are those of the definitions (recomputed here), and both
// are what ROS's own message packages hold.
func TestMessageTypesMatchROS(t *testing.T) {
	var names []string
	for _, mt := range allTypes {
		if got := rosMD5(t, mt.Name, mt.Definition); got != mt.MD5Sum {
			t.Errorf("%s: MD5 of the definition is %s, the constant says %s", mt.Name, got, mt.MD5Sum)
		}
		names = append(names, mt.Name)
	}
	script := `import json, sys, roslib.message
out = {}
for name in sys.argv[1:]:
    c = roslib.message.get_message_class(name)
    out[name] = {"md5": c._md5sum, "text": c._full_text}
print(json.dumps(out))`
	cmd := exec.Command("/usr/bin/python3", append([]string{"-c", script}, names...)...)
	cmd.Env = toolEnv(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 message classes: %v (%s)", err, stderrOf(err))
	}
	var ros map[string]struct{ MD5, Text string }
	if err := json.Unmarshal(out, &ros); err != nil {
		t.Fatal(err)
	}
	for _, mt := range allTypes {
		r, ok := ros[mt.Name]
		switch {
		case !ok:
			t.Errorf("%s: not reported by python", mt.Name)
		case r.MD5 != mt.MD5Sum:
			t.Errorf("%s: md5 %s, ROS says %s", mt.Name, mt.MD5Sum, r.MD5)
		case r.Text != mt.Definition:
			t.Errorf("%s: definition differs from ROS's _full_text:\n%q\n%q", mt.Name, mt.Definition, r.Text)
		}
	}
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

func TestFromTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Time
		err  bool
	}{
		{"1970-01-01T00:00:00Z", Time{}, false},
		{"2023-11-14T22:13:20.000000005Z", Time{1700000000, 5}, false},
		{"1969-12-31T23:59:59Z", Time{}, true},
		{"2106-02-07T06:28:16Z", Time{}, true}, // 2^32 s
	} {
		tm, err := time.Parse(time.RFC3339Nano, tc.in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := FromTime(tm)
		if (err != nil) != tc.err || !tc.err && got != tc.want {
			t.Errorf("FromTime(%s) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
		if err == nil && !got.Time().Equal(tm) {
			t.Errorf("Time() of %v = %v", got, got.Time())
		}
	}
	if got, err := FromTime(time.Time{}); err != nil || !got.IsZero() {
		t.Errorf("zero time.Time -> %v, %v", got, err)
	}
	if (Time{1, 2}).String() != "1.000000002" || (Time{1, 2}).Nanos() != 1000000002 {
		t.Error("String or Nanos")
	}
}
