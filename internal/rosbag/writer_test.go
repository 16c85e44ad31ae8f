package rosbag

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// sent is a message as written.
type sent struct {
	topic string
	t     Time
	data  []byte
}

// writeSample writes n rounds of an image, an action and, every fifth
// round, a string, with times that go back and forth, to a bag in memory.
func writeSample(t testing.TB, n, chunkSize int) ([]byte, []sent) {
	t.Helper()
	var f memFile
	w, err := NewWriter(&f, WriterOptions{ChunkSize: chunkSize})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddConnection(Connection{Topic: "/instruction", Type: StringType.Name, MD5Sum: StringType.MD5Sum,
		MessageDefinition: StringType.Definition, CallerID: "/recorder", Latching: true}); err != nil {
		t.Fatal(err)
	}
	var out []sent
	put := func(topic string, tm Time, m Message) {
		if err := w.Write(topic, tm, m); err != nil {
			t.Fatal(err)
		}
		out = append(out, sent{topic, tm, m.MarshalROS(nil)})
	}
	for k := range n {
		tm := Time{Sec: 1700000000 + uint32(k/3), Nsec: uint32(k%3) * 333333333}
		if k%4 == 3 { // a late message, stamped before the previous one
			tm.Sec--
		}
		img := &Image{Header: Header{Seq: uint32(k), Stamp: tm, FrameID: "headcam"}, Height: 2, Width: 2, Encoding: "rgb8", Step: 6, Data: bytes.Repeat([]byte{byte(k)}, 12)}
		put("/headcam/image_raw", tm, img)
		put("/action", tm, &Float32MultiArray{Layout: MultiArrayLayout{Dim: []MultiArrayDimension{{Label: "a", Size: 2, Stride: 2}}}, Data: []float32{float32(k), -1}})
		if k%5 == 0 {
			put("/instruction", tm, &String{Data: fmt.Sprintf("instruction %d", k)})
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return f.b, out
}

// timeOrder sorts what was written as a reader must return it: by time,
// ties in writing order.
func timeOrder(in []sent) []sent {
	out := append([]sent(nil), in...)
	for i := 1; i < len(out); i++ { // insertion sort: stable
		for j := i; j > 0 && out[j].t.Less(out[j-1].t); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func readAll(t testing.TB, b []byte, topics ...string) []sent {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var got []sent
	for rec, err := range r.Messages(topics...) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, sent{rec.Conn.Topic, rec.Time, bytes.Clone(rec.Data)})
	}
	return got
}

func TestWriteReadRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name      string
		chunkSize int
		chunks    int
	}{
		{"one chunk", 0, 1},
		{"many chunks", 400, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, in := writeSample(t, 40, tc.chunkSize)
			got := readAll(t, b)
			if want := timeOrder(in); !reflect.DeepEqual(got, want) {
				t.Fatalf("read %d messages, wrote %d; first difference at %d", len(got), len(want), firstDiff(got, want))
			}
			r, err := NewReader(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if len(r.chunks) < tc.chunks {
				t.Errorf("%d chunks, want at least %d", len(r.chunks), tc.chunks)
			}
			if r.MessageCount() != len(in) || r.Count("/action") != 40 || r.Count("/instruction") != 8 || r.Count("/nothing") != 0 {
				t.Errorf("counts: %d messages, %d actions, %d instructions", r.MessageCount(), r.Count("/action"), r.Count("/instruction"))
			}
			start, end := r.TimeRange()
			if want := timeOrder(in); start != want[0].t || end != want[len(want)-1].t {
				t.Errorf("time range %v..%v", start, end)
			}
			conns := r.Connections()
			if len(conns) != 3 {
				t.Fatalf("%d connections", len(conns))
			}
			c := conns[0]
			if c.Topic != "/instruction" || c.Type != StringType.Name || c.MD5Sum != StringType.MD5Sum || c.MessageDefinition != StringType.Definition ||
				c.CallerID != "/recorder" || !c.Latching || c.Header["latching"] != "1" || c.Header["topic"] != "/instruction" {
				t.Errorf("connection %+v", c)
			}
			if conns[1].Latching || conns[1].CallerID != "" {
				t.Errorf("connection %+v", conns[1])
			}
			// A topic filter.
			var want []sent
			for _, s := range timeOrder(in) {
				if s.topic == "/instruction" {
					want = append(want, s)
				}
			}
			if got := readAll(t, b, "/instruction"); !reflect.DeepEqual(got, want) {
				t.Errorf("topic filter: %v", got)
			}
		})
	}
}

func firstDiff(a, b []sent) int {
	for i := range min(len(a), len(b)) {
		if !reflect.DeepEqual(a[i], b[i]) {
			return i
		}
	}
	return min(len(a), len(b))
}

// The layout rosbag expects: the format line, a bag header record whose
// header and padding are 4096 bytes, the first chunk right after it, and
// the header rewritten with the index position and counts.
func TestWriterLayout(t *testing.T) {
	b, _ := writeSample(t, 5, 0)
	if string(b[:13]) != "#ROSBAG V2.0\n" {
		t.Fatalf("format line %q", b[:13])
	}
	hlen := binary.LittleEndian.Uint32(b[13:])
	dlen := binary.LittleEndian.Uint32(b[17+hlen:])
	if hlen+dlen != 4096 {
		t.Errorf("bag header %d + padding %d bytes, want 4096", hlen, dlen)
	}
	if !bytes.Equal(b[21+hlen:21+hlen+dlen], bytes.Repeat([]byte(" "), int(dlen))) {
		t.Error("padding is not spaces")
	}
	h, err := parseHeader(b[17:17+hlen], 13, "file")
	if err != nil {
		t.Fatal(err)
	}
	pos, _ := h.u64("index_pos")
	conns, _ := h.u32("conn_count")
	chunks, _ := h.u32("chunk_count")
	if conns != 3 || chunks != 1 || pos <= 4117 || pos >= uint64(len(b)) {
		t.Errorf("header: index_pos %d conn_count %d chunk_count %d (file %d bytes)", pos, conns, chunks, len(b))
	}
	rec, err := readRecordHeader(bytes.NewReader(b), int64(len(b)), 4117)
	if err != nil || rec.op != opChunk {
		t.Fatalf("record at 4117: op %x, %v", rec.op, err)
	}
	if c, _ := rec.str("compression"); c != "none" {
		t.Errorf("compression %q", c)
	}
	rec, err = readRecordHeader(bytes.NewReader(b), int64(len(b)), int64(pos))
	if err != nil || rec.op != opConnection {
		t.Errorf("record at index_pos: op %x, %v", rec.op, err)
	}
}

func TestAppendMessageHeader(t *testing.T) {
	tm := Time{Sec: 1700000000, Nsec: 42}
	want := appendHeader(nil, opField(opMessageData), u32Field("conn", 7), timeField("time", tm))
	if got := appendMessageHeader(nil, 7, tm); !bytes.Equal(got, want) {
		t.Errorf("appendMessageHeader = %v, want %v", got, want)
	}
}

func TestEmptyBag(t *testing.T) {
	var f memFile
	w, err := NewWriter(&f, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(f.b), int64(len(f.b)))
	if err != nil {
		t.Fatal(err)
	}
	if r.MessageCount() != 0 || len(r.Connections()) != 0 {
		t.Errorf("empty bag has %d messages", r.MessageCount())
	}
	if len(f.b) != 13+4104 {
		t.Errorf("empty bag is %d bytes, want %d", len(f.b), 13+4104)
	}
}

func TestWriterErrors(t *testing.T) {
	var f memFile
	w, err := NewWriter(&f, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddConnection(Connection{Topic: "/a"}); err == nil {
		t.Error("a connection without type accepted")
	}
	if err := w.WriteMessage(3, Time{}, nil); err == nil {
		t.Error("a message on an unknown connection accepted")
	}
	id1, _ := w.AddConnection(Connection{Topic: "/a", Type: "std_msgs/Bool", MD5Sum: BoolType.MD5Sum})
	id2, _ := w.AddConnection(Connection{Topic: "/a", Type: "std_msgs/Bool", MD5Sum: BoolType.MD5Sum})
	if id1 != id2 {
		t.Errorf("the same topic and type got connections %d and %d", id1, id2)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write("/a", Time{}, &Bool{}); !errors.Is(err, ErrClosed) {
		t.Errorf("write after Close: %v", err)
	}
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

// Create's file appears under its name only when complete.
func TestCreateIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ep.bag")
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	w, err := Create(path, WriterOptions{ChunkSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	for k := range 10 {
		if err := w.Write("/s", Time{Sec: uint32(k + 1)}, &String{Data: "some text to fill a chunk"}); err != nil {
			t.Fatal(err)
		}
	}
	if exists(path) || !exists(path+ActiveSuffix) {
		t.Fatalf("while writing: %s exists %v, .active exists %v", path, exists(path), exists(path+ActiveSuffix))
	}
	// What a crash leaves: complete chunks, no index.
	if _, err := Open(path + ActiveSuffix); !errors.Is(err, ErrUnindexed) {
		t.Errorf("reading the .active file: %v, want ErrUnindexed", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !exists(path) || exists(path+ActiveSuffix) {
		t.Fatalf("after Close: %s exists %v, .active exists %v", path, exists(path), exists(path+ActiveSuffix))
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.MessageCount() != 10 {
		t.Errorf("%d messages", r.MessageCount())
	}
	if err := w.Abort(); err != nil || !exists(path) {
		t.Errorf("Abort after Close: %v; the bag exists: %v", err, exists(path))
	}

	// Abort leaves nothing.
	p2 := filepath.Join(dir, "aborted.bag")
	w, err = Create(p2, WriterOptions{ChunkSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	for k := range 10 {
		w.Write("/s", Time{Sec: uint32(k + 1)}, &String{Data: "some text to fill a chunk"})
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if exists(p2) || exists(p2+ActiveSuffix) {
		t.Errorf("after Abort: bag %v, .active %v", exists(p2), exists(p2+ActiveSuffix))
	}
	if err := w.Write("/s", Time{}, &String{}); !errors.Is(err, ErrClosed) {
		t.Errorf("write after Abort: %v", err)
	}
	if _, err := Create(filepath.Join(dir, "no", "such", "dir.bag"), WriterOptions{}); err == nil {
		t.Error("Create in a missing directory succeeded")
	}
}

// discard is an io.WriteSeeker that keeps nothing.
type discard struct{ pos int64 }

func (d *discard) Write(p []byte) (int, error) { d.pos += int64(len(p)); return len(p), nil }
func (d *discard) Seek(off int64, whence int) (int64, error) {
	if whence == 0 {
		d.pos = off
	}
	return d.pos, nil
}

// Writing a frame and an action allocates nothing once the buffers have
// grown, apart from a little bookkeeping per chunk (one chunk per 3 frames
// of 256x320 here).
func TestWriteAllocations(t *testing.T) {
	w, err := NewWriter(&discard{}, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	img := &Image{Height: 256, Width: 320, Encoding: "rgb8", Step: 960, Data: make([]byte, 256*320*3)}
	act := &Float32MultiArray{Layout: MultiArrayLayout{Dim: []MultiArrayDimension{{Label: "a", Size: 11, Stride: 11}}}, Data: make([]float32, 11)}
	k := uint32(0)
	step := func() {
		k++
		if err := w.Write("/headcam/image_raw", Time{Sec: k}, img); err != nil {
			t.Fatal(err)
		}
		if err := w.Write("/action", Time{Sec: k}, act); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		step()
	}
	if a := testing.AllocsPerRun(60, step); a > 1 {
		t.Errorf("%v allocations per frame and action", a)
	}
}

// BenchmarkWriteFrame: one 256x320 rgb8 frame and its action per op, to a
// discarding writer.
func BenchmarkWriteFrame(b *testing.B) {
	w, _ := NewWriter(&discard{}, WriterOptions{})
	img := &Image{Height: 256, Width: 320, Encoding: "rgb8", Step: 960, Data: make([]byte, 256*320*3)}
	act := &Float32MultiArray{Data: make([]float32, 11)}
	b.SetBytes(int64(len(img.Data)))
	b.ReportAllocs()
	for i := range b.N {
		w.Write("/headcam/image_raw", Time{Sec: uint32(i)}, img)
		w.Write("/action", Time{Sec: uint32(i)}, act)
	}
}
