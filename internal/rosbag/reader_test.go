package rosbag

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// readErr opens b and reads every message, decoding each as its type, and
// returns the first error.
func readErr(b []byte) error {
	r, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return err
	}
	for rec, err := range r.Messages() {
		if err != nil {
			return err
		}
		var m Message
		switch rec.Conn.Type {
		case ImageType.Name:
			m = &Image{}
		case StringType.Name:
			m = &String{}
		case Float32MultiArrayType.Name:
			m = &Float32MultiArray{}
		case BoolType.Name:
			m = &Bool{}
		case CompressedImageType.Name:
			m = &CompressedImage{}
		default:
			continue
		}
		if err := rec.Decode(m); err != nil {
			return err
		}
	}
	return nil
}

// patch returns a copy of b with old (which must occur once) replaced.
func patch(t *testing.T, b []byte, old, new []byte) []byte {
	t.Helper()
	if n := bytes.Count(b, old); n < 1 {
		t.Fatalf("%q occurs %d times", old, n)
	}
	return bytes.Replace(bytes.Clone(b), old, new, 1)
}

// setField overwrites the value of the first header field called name.
func setField(t *testing.T, b []byte, name string, value []byte) []byte {
	t.Helper()
	i := bytes.Index(b, []byte(name+"="))
	if i < 0 {
		t.Fatalf("no field %s", name)
	}
	b = bytes.Clone(b)
	copy(b[i+len(name)+1:], value)
	return b
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func TestCorruptBags(t *testing.T) {
	good, _ := writeSample(t, 6, 0)
	r, err := NewReader(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	firstEntry := r.entries[0]
	chunkData := r.chunks[0].dataPos
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty file", nil, ErrTruncated},
		{"cut in the format line", good[:7], ErrTruncated},
		{"not a bag", []byte("hello, world: this is no bag at all"), ErrNotBag},
		{"version 1.2", append([]byte("#ROSBAG V1.2\n"), good[13:]...), ErrVersion},
		{"no index", setField(t, good, "index_pos", make([]byte, 8)), ErrUnindexed},
		{"index past the end", setField(t, good, "index_pos", []byte{0xff, 0xff, 0xff, 0, 0, 0, 0, 0}), ErrTruncated},
		{"index_pos field too short", patch(t, good, []byte("\x12\x00\x00\x00index_pos="), []byte("\x11\x00\x00\x00index_pos")), ErrCorrupt},
		{"lz4 chunk", patch(t, good, []byte("compression=none"), []byte("compression=lz4x")), ErrCompression},
		{"chunk without size", patch(t, good, []byte("size="), []byte("sizf=")), ErrCorrupt},
		{"connection without md5", bytes.ReplaceAll(good, []byte("md5sum="), []byte("md5sux=")), ErrCorrupt},
		{"index entry off the record", func() []byte {
			// Point the first entry of the instruction's index 3 bytes
			// into its message record.
			b := bytes.Clone(good)
			e := bytes.Index(b, append(append([]byte("count="), le32(2)...), le32(24)...)) // count and data length
			if e < 0 {
				t.Fatal("no index record with two entries")
			}
			off := e + 10 + 8
			binary.LittleEndian.PutUint32(b[off:], binary.LittleEndian.Uint32(b[off:])+3)
			return b
		}(), ErrCorrupt},
		{"message record garbled", func() []byte {
			b := bytes.Clone(good)
			b[chunkData+int64(firstEntry.offset)+8] ^= 0xff // inside the message record's header
			return b
		}(), ErrCorrupt},
		{"image data cut", patch(t, good, append(le32(6), le32(12)...), append(le32(6), le32(13)...)), ErrMessage}, // step, then the data's length
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := readErr(tc.b)
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			t.Log(err)
		})
	}
}

// Every prefix of a bag is refused as truncated, and flipping any single
// byte gives either the same messages' count or a named error, never a
// panic.
func TestTruncatedAndFlippedBags(t *testing.T) {
	good, _ := writeSample(t, 4, 300)
	for n := range len(good) {
		if err := readErr(good[:n]); !errors.Is(err, ErrTruncated) {
			t.Fatalf("first %d of %d bytes: err = %v, want ErrTruncated", n, len(good), err)
		}
	}
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x5a
		if err := readErr(b); err != nil && !isNamed(err) {
			t.Fatalf("byte %d flipped: unnamed error %v", i, err)
		}
	}
}

func TestDecodeChecksType(t *testing.T) {
	b, _ := writeSample(t, 2, 0)
	r, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range r.Messages("/action") {
		if err != nil {
			t.Fatal(err)
		}
		if err := rec.Decode(&Image{}); !errors.Is(err, ErrType) {
			t.Errorf("decoding an action as an image: %v", err)
		}
		var a Float32MultiArray
		if err := rec.Decode(&a); err != nil || len(a.Data) != 2 {
			t.Errorf("decode: %v %v", a, err)
		}
	}
}

func FuzzReadBag(f *testing.F) {
	for _, c := range []struct{ n, chunk int }{{0, 0}, {1, 0}, {3, 0}, {4, 200}} {
		b, _ := writeSample(f, c.n, c.chunk)
		f.Add(b)
	}
	b, _ := writeSample(f, 2, 0)
	f.Add(b[:len(b)-20])
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := readErr(b); err != nil && !isNamed(err) {
			t.Fatalf("unnamed error: %v", err)
		}
	})
}
