package rosbag

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// toolSample writes a bag with a message of every type, over two chunks.
func toolSample(t *testing.T, path string) []Message {
	t.Helper()
	w, err := Create(path, WriterOptions{ChunkSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	base := Time{Sec: 1700000000, Nsec: 5}
	img := &Image{Header: Header{Seq: 3, Stamp: base, FrameID: "headcam"}, Height: 2, Width: 3, Encoding: "rgb8", Step: 9,
		Data: []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 250, 251, 252, 253, 254, 255, 9, 10, 11}}
	msgs := []Message{
		&String{Data: "pick up the coke can"},
		img,
		&CompressedImage{Header: Header{Seq: 4, Stamp: Time{Sec: base.Sec, Nsec: 6}, FrameID: "headcam"}, Format: "png", Data: []byte{137, 80, 78, 71}},
		&Float32MultiArray{Layout: MultiArrayLayout{Dim: []MultiArrayDimension{{Label: "mode;world_vector/x;gripper", Size: 3, Stride: 3}}},
			Data: []float32{1, -0.5, 0.25}},
		&Bool{Data: true},
		&Header{Seq: 9, Stamp: Time{Sec: 1, Nsec: 2}, FrameID: "map"},
		sampleTF(Header{Stamp: base, FrameID: "odom"}),
		&JointState{Header: Header{Seq: 5, Stamp: base}, Name: []string{"gripper_finger_joint"}, Position: []float64{0.01}},
		sampleCameraInfo(Header{Seq: 3, Stamp: base, FrameID: "head_camera_optical_frame"}),
	}
	topics := []string{"/instruction", "/headcam/image_raw", "/headcam/image_raw/compressed", "/action", "/episode_done", "/header",
		"/tf", "/joint_states", "/headcam/camera_info"}
	for i, m := range msgs {
		if err := w.Write(topics[i], Time{Sec: base.Sec, Nsec: base.Nsec + uint32(i)}, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// pyDump is what the python script below prints for each message.
type pyDump struct {
	Topic  string
	Type   string
	Secs   uint32
	Nsecs  uint32
	Fields map[string]any
}

// dumpScript reads a bag with ROS's own Python rosbag module and prints
// every message's topic, type, time and fields as JSON, in the order
// rosbag's read_messages gives.
const dumpScript = `import json, sys, rosbag
out = []
def fields(m):
    if hasattr(m, "__slots__"):
        return {k: fields(getattr(m, k)) for k in m.__slots__}
    if isinstance(m, (bytes, bytearray)):
        return list(m)
    if isinstance(m, (list, tuple)):
        return [fields(x) for x in m]
    return m
with rosbag.Bag(sys.argv[1]) as bag:
    for topic, msg, t in bag.read_messages():
        out.append({"Topic": topic, "Type": msg._type, "Secs": t.secs, "Nsecs": t.nsecs, "Fields": fields(msg)})
print(json.dumps(out))`

func pyRead(t *testing.T, path string) []pyDump {
	t.Helper()
	cmd := exec.Command("/usr/bin/python3", "-c", dumpScript, path)
	cmd.Env = toolEnv(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python rosbag: %v\n%s", err, stderrOf(err))
	}
	var d []pyDump
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// goFields renders a message as dumpScript does, via JSON.
func goFields(t *testing.T, m Message) map[string]any {
	t.Helper()
	var v any
	switch m := m.(type) {
	case *String:
		v = map[string]any{"data": m.Data}
	case *Bool:
		v = map[string]any{"data": m.Data}
	case *Header:
		v = hdr(m)
	case *Image:
		v = map[string]any{"header": hdr(&m.Header), "height": m.Height, "width": m.Width, "encoding": m.Encoding,
			"is_bigendian": m.IsBigendian, "step": m.Step, "data": ints(m.Data)}
	case *CompressedImage:
		v = map[string]any{"header": hdr(&m.Header), "format": m.Format, "data": ints(m.Data)}
	case *Float32MultiArray:
		var dims []any
		for _, d := range m.Layout.Dim {
			dims = append(dims, map[string]any{"label": d.Label, "size": d.Size, "stride": d.Stride})
		}
		v = map[string]any{"layout": map[string]any{"dim": dims, "data_offset": m.Layout.DataOffset}, "data": m.Data}
	case *TFMessage:
		ts := []any{}
		for _, x := range m.Transforms {
			tr, r := x.Transform.Translation, x.Transform.Rotation
			ts = append(ts, map[string]any{"header": hdr(&x.Header), "child_frame_id": x.ChildFrameID, "transform": map[string]any{
				"translation": map[string]any{"x": tr.X, "y": tr.Y, "z": tr.Z}, "rotation": map[string]any{"x": r.X, "y": r.Y, "z": r.Z, "w": r.W}}})
		}
		v = map[string]any{"transforms": ts}
	case *JointState:
		v = map[string]any{"header": hdr(&m.Header), "name": m.Name, "position": floats(m.Position), "velocity": floats(m.Velocity), "effort": floats(m.Effort)}
	case *CameraInfo:
		r := m.ROI
		v = map[string]any{"header": hdr(&m.Header), "height": m.Height, "width": m.Width, "distortion_model": m.DistortionModel,
			"D": floats(m.D), "K": m.K, "R": m.R, "P": m.P, "binning_x": m.BinningX, "binning_y": m.BinningY,
			"roi": map[string]any{"x_offset": r.XOffset, "y_offset": r.YOffset, "height": r.Height, "width": r.Width, "do_rectify": r.DoRectify}}
	default:
		t.Fatalf("no rendering of %T", m)
	}
	b, _ := json.Marshal(v)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

func hdr(h *Header) map[string]any {
	return map[string]any{"seq": h.Seq, "stamp": map[string]uint32{"secs": h.Stamp.Sec, "nsecs": h.Stamp.Nsec}, "frame_id": h.FrameID}
}

// floats renders a nil slice as python's empty list.
func floats(x []float64) []float64 {
	if x == nil {
		return []float64{}
	}
	return x
}

func ints(b []byte) []int {
	out := make([]int, len(b))
	for i, v := range b {
		out[i] = int(v)
	}
	return out
}

// Bags this package writes pass rosbag info and check, and ROS's own
// reader and rostopic echo -b decode every message to the values written.
func TestROSToolsReadOurBags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sample.bag")
	msgs := toolSample(t, path)

	t.Run("info", func(t *testing.T) {
		t.Parallel()
		out := runTool(t, "rosbag", "info", "--yaml", path)
		for _, want := range []string{"version: 2.0", "messages: 9", "compression: none", "indexed: True",
			"topic: /headcam/image_raw", "type: sensor_msgs/Image", "md5: " + ImageType.MD5Sum,
			"type: std_msgs/Float32MultiArray", "md5: " + Float32MultiArrayType.MD5Sum, "type: sensor_msgs/CompressedImage",
			"type: tf2_msgs/TFMessage", "md5: " + TFMessageType.MD5Sum, "type: sensor_msgs/JointState", "type: sensor_msgs/CameraInfo"} {
			if !strings.Contains(out, want) {
				t.Errorf("rosbag info lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("check", func(t *testing.T) {
		t.Parallel()
		if out := runTool(t, "rosbag", "check", path); !strings.Contains(out, "Bag file does not need any migrations.") {
			t.Errorf("rosbag check:\n%s", out)
		}
	})
	t.Run("echo", func(t *testing.T) {
		t.Parallel()
		if out := runTool(t, "rostopic", "echo", "-b", path, "-n", "1", "/instruction"); !strings.Contains(out, `data: "pick up the coke can"`) {
			t.Errorf("rostopic echo /instruction:\n%s", out)
		}
		if out := runTool(t, "rostopic", "echo", "-b", path, "-n", "1", "/tf"); !strings.Contains(out, `child_frame_id: "hand"`) {
			t.Errorf("rostopic echo /tf:\n%s", out)
		}
		out := runTool(t, "rostopic", "echo", "-b", path, "-n", "1", "/action")
		for _, want := range []string{`label: "mode;world_vector/x;gripper"`, "size: 3", "stride: 3", "data: [1.0, -0.5, 0.25]"} {
			if !strings.Contains(out, want) {
				t.Errorf("rostopic echo /action lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("python", func(t *testing.T) {
		t.Parallel()
		got := pyRead(t, path)
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		i := 0
		for rec, err := range r.Messages() {
			if err != nil {
				t.Fatal(err)
			}
			if i >= len(got) {
				t.Fatalf("python read %d messages, this reader more", len(got))
			}
			p := got[i]
			if p.Topic != rec.Conn.Topic || p.Type != rec.Conn.Type || p.Secs != rec.Time.Sec || p.Nsecs != rec.Time.Nsec {
				t.Errorf("message %d: python %s %s %d.%09d, here %s %s %v", i, p.Topic, p.Type, p.Secs, p.Nsecs, rec.Conn.Topic, rec.Conn.Type, rec.Time)
			}
			if want := goFields(t, msgs[i]); !reflect.DeepEqual(p.Fields, want) {
				t.Errorf("message %d on %s: python decodes\n%v\nwritten\n%v", i, p.Topic, p.Fields, want)
			}
			i++
		}
		if i != len(got) || i != len(msgs) {
			t.Errorf("%d messages here, %d in python, %d written", i, len(got), len(msgs))
		}
	})
}

// writeScript writes a bag with ROS's Python rosbag module.
const writeScript = `import sys, rosbag, rospy
from std_msgs.msg import String, Bool, Float32MultiArray, MultiArrayDimension
from sensor_msgs.msg import Image
with rosbag.Bag(sys.argv[1], "w", compression=sys.argv[2]) as bag:
    bag.chunk_threshold = 300
    for k in range(5):
        t = rospy.Time(1700000000 + k, 1000 * k)
        img = Image(height=1, width=2, encoding="bgr8", step=6, data=bytes([k, 1, 2, 3, 4, 5]))
        img.header.seq, img.header.stamp, img.header.frame_id = k, t, "cam"
        bag.write("/cam", img, t)
        a = Float32MultiArray(data=[k, 0.5])
        a.layout.dim.append(MultiArrayDimension(label="x;y", size=2, stride=2))
        bag.write("/action", a, t)
    bag.write("/instruction", String(data="open the drawer"), rospy.Time(1700000000, 0))
    bag.write("/done", Bool(data=True), rospy.Time(1700000010, 0))`

// Bags written by ROS's own rosbag module, uncompressed and bz2, read here.
func TestReadPythonBags(t *testing.T) {
	for _, comp := range []string{"none", "bz2"} {
		t.Run(comp, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), comp+".bag")
			cmd := exec.Command("/usr/bin/python3", "-c", writeScript, path, comp)
			cmd.Env = toolEnv(t)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("python: %v\n%s", err, out)
			}
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if len(r.chunks) < 2 || r.chunks[0].compression != comp {
				t.Errorf("%d chunks, compression %q", len(r.chunks), r.chunks[0].compression)
			}
			var log []string
			for rec, err := range r.Messages() {
				if err != nil {
					t.Fatal(err)
				}
				switch rec.Conn.Topic {
				case "/cam":
					var m Image
					if err := rec.Decode(&m); err != nil {
						t.Fatal(err)
					}
					log = append(log, fmt.Sprintf("cam %v %d %s %v %v", rec.Time, m.Header.Seq, m.Encoding, m.Data, m.Header.Stamp == rec.Time))
				case "/action":
					var m Float32MultiArray
					if err := rec.Decode(&m); err != nil {
						t.Fatal(err)
					}
					log = append(log, fmt.Sprintf("action %v %v %s", rec.Time, m.Data, m.Layout.Dim[0].Label))
				case "/instruction":
					var m String
					if err := rec.Decode(&m); err != nil {
						t.Fatal(err)
					}
					log = append(log, "instruction "+m.Data)
				case "/done":
					var m Bool
					if err := rec.Decode(&m); err != nil {
						t.Fatal(err)
					}
					log = append(log, fmt.Sprintf("done %v", m.Data))
				}
			}
			var want []string
			for k := range 5 {
				tm := Time{Sec: 1700000000 + uint32(k), Nsec: 1000 * uint32(k)}
				want = append(want, fmt.Sprintf("cam %v %d bgr8 %v true", tm, k, []byte{byte(k), 1, 2, 3, 4, 5}),
					fmt.Sprintf("action %v [%d 0.5] x;y", tm, k))
				if k == 0 { // written last at the first frame's time: ties go in file order
					want = append(want, "instruction open the drawer")
				}
			}
			want = append(want, "done true")
			if !reflect.DeepEqual(log, want) {
				t.Errorf("read\n%s\nwant\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// What a crash leaves (the .active file, never indexed) is refused here
// and recovered by rosbag reindex up to the last complete chunk.
func TestReindexRecoversACrash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "crashed.bag")
	w, err := Create(path, WriterOptions{ChunkSize: 200})
	if err != nil {
		t.Fatal(err)
	}
	for k := range 10 {
		if err := w.Write("/s", Time{Sec: 1700000000 + uint32(k)}, &String{Data: strings.Repeat("x", 60)}); err != nil {
			t.Fatal(err)
		}
	}
	flushed := 0
	for _, c := range w.chunks {
		flushed += int(c.counts[0])
	}
	// The process dies here: no Close, no Abort.
	b, err := os.ReadFile(path + ActiveSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewReader(bytes.NewReader(b), int64(len(b))); !errors.Is(err, ErrUnindexed) {
		t.Fatalf("crashed bag: %v, want ErrUnindexed", err)
	}
	recovered := filepath.Join(dir, "recovered.bag")
	if err := os.WriteFile(recovered, b, 0o644); err != nil {
		t.Fatal(err)
	}
	runTool(t, "rosbag", "reindex", "--output-dir", dir, recovered)
	r, err := Open(recovered)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if flushed == 0 || r.MessageCount() != flushed {
		t.Errorf("reindexed bag has %d messages, %d were in complete chunks", r.MessageCount(), flushed)
	}
	w.Abort()
}
