package safetensors

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func sample() *File {
	f := New()
	f.Metadata["ttm.config"] = `{"dim":4}`
	f.Tensors["a/kernel"] = FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	f.Tensors["b"] = FromFloat32([]float32{-1.5}, 1)
	f.Tensors["scalar"] = FromFloat32([]float32{7})
	f.Tensors["empty"] = FromFloat32(nil, 0, 4)
	return f
}

func encode(t testing.TB, f *File) []byte {
	var buf bytes.Buffer
	if err := Encode(&buf, f); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	want := sample()
	b := encode(t, want)
	if n := binary.LittleEndian.Uint64(b); n%8 != 0 {
		t.Errorf("header length %d is not a multiple of 8", n)
	}
	got, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	// The metadata, plus the digest of the data section: the tensors' bytes
	// in name order, hashed here independently of Encode.
	h := sha256.New()
	for _, name := range want.Names() {
		h.Write(want.Tensors[name].Data)
	}
	wantMeta := maps.Clone(want.Metadata)
	wantMeta[DigestKey] = hex.EncodeToString(h.Sum(nil))
	if !reflect.DeepEqual(got.Metadata, wantMeta) {
		t.Errorf("metadata %v, want %v", got.Metadata, wantMeta)
	}
	for name, wt := range want.Tensors {
		gt, ok := got.Tensors[name]
		if !ok {
			t.Fatalf("tensor %q missing", name)
		}
		if gt.DType != wt.DType || !reflect.DeepEqual(gt.Shape, wt.Shape) || !bytes.Equal(gt.Data, wt.Data) {
			t.Errorf("tensor %q: got %v %v, want %v %v", name, gt.DType, gt.Shape, wt.DType, wt.Shape)
		}
	}
	v, err := got.Tensors["a/kernel"].Floats()
	if err != nil || !reflect.DeepEqual(v, []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("Floats = %v, %v", v, err)
	}
	if !bytes.Equal(encode(t, got), b) {
		t.Error("encoding is not deterministic")
	}
}

// header builds a file from a raw JSON header and a data section.
func header(js string, data int) []byte {
	b := make([]byte, 8, 8+len(js)+data)
	binary.LittleEndian.PutUint64(b, uint64(len(js)))
	b = append(b, js...)
	return append(b, make([]byte, data)...)
}

func TestParseErrors(t *testing.T) {
	valid := encode(t, sample())
	huge := make([]byte, 16)
	binary.LittleEndian.PutUint64(huge, 1<<40)
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "shorter than the 8-byte header length"},
		{"truncated header", valid[:20], "runs past the end"},
		{"truncated data", valid[:len(valid)-3], "run past"},
		{"oversized header", huge, "exceeds the limit"},
		{"not json", header("hello!!!", 0), "not a JSON object"},
		{"json array", header("[1,2,3] ", 0), "not a JSON object"},
		{"null", header("null    ", 0), "header is null"},
		{"trailing garbage", header(`{} xx`, 0), "trailing data"},
		{"unknown dtype", header(`{"x":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}}`, 1), "unknown dtype"},
		{"negative dim", header(`{"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4), "negative dimension"},
		{"shape overflow", header(`{"x":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}}`, 4), "overflows"},
		{"reversed offsets", header(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}`, 4), "invalid data offsets"},
		{"wrong byte count", header(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4), "needs 8"},
		{"overlap", header(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}`, 6), "overlaps"},
		{"gap", header(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "unused bytes"},
		{"tail", header(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 8), "after the last tensor"},
		{"bad metadata", header(`{"__metadata__":{"a":1}}`, 0), "not a map of strings"},
		{"bad entry", header(`{"x":"y"}`, 0), "bad header entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.file)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestFloat32Checks(t *testing.T) {
	tt := FromFloat32([]float32{1, 2}, 2)
	if err := tt.Float32(make([]float32, 3)); err == nil {
		t.Error("decoding 2 elements into 3 succeeded")
	}
	tt.DType = I32
	if err := tt.Float32(make([]float32, 2)); err == nil {
		t.Error("decoding I32 as F32 succeeded")
	}
}

func TestWriteFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.safetensors")
	if err := WriteFile(path, sample()); err != nil {
		t.Fatal(err)
	}
	bad := New()
	bad.Tensors["x"] = Tensor{DType: F32, Shape: []int{3}, Data: make([]byte, 4)}
	if err := WriteFile(path, bad); err == nil {
		t.Fatal("writing an inconsistent tensor succeeded")
	}
	if _, err := ReadFile(path); err != nil {
		t.Errorf("failed write damaged the previous file: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// TestReadFileRefuses: what is not a regular file of a plausible size is
// refused before a byte is read; /dev/zero used to be read without end.
func TestReadFileRefuses(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.safetensors")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, MaxFileBytes+1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.safetensors")
	if err := os.WriteFile(short, encode(t, sample())[:12], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"device", "/dev/zero", "not a regular file"},
		{"directory", dir, "not a regular file"},
		{"too large", huge, "more than"},
		{"missing", filepath.Join(dir, "none.safetensors"), "no such file"},
		{"truncated", short, "safetensors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ReadFile(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadFile(%s): %v, want an error containing %q", tc.path, err, tc.want)
			}
		})
	}
}

// TestDigest: a file whose tensor bytes changed after writing (one bit of
// one weight) is refused; one without a digest (another writer's) parses.
func TestDigest(t *testing.T) {
	b := encode(t, sample())
	flipped := slices.Clone(b)
	flipped[len(flipped)-3] ^= 0x40
	if _, err := Parse(flipped); err == nil || !strings.Contains(err.Error(), "the header says") {
		t.Errorf("a flipped tensor bit: %v, want a digest mismatch", err)
	}
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	var hdr map[string]any
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	delete(hdr["__metadata__"].(map[string]any), DigestKey)
	js, _ := json.Marshal(hdr)
	plain := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	plain = append(append(plain, js...), b[8+n:]...)
	g, err := Parse(plain)
	if err != nil || g.Metadata[DigestKey] != "" || len(g.Tensors) != len(f.Tensors) {
		t.Errorf("a file without a digest: %v, %v", g, err)
	}
}

func FuzzParse(f *testing.F) {
	valid := encode(f, sample())
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add(header(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4))
	f.Add(header(`{"__metadata__":{"k":"v"}}`, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			return
		}
		// Whatever parses must survive a round trip unchanged.
		again, err := Parse(encode(t, file))
		if err != nil {
			t.Fatalf("re-encoded file does not parse: %v", err)
		}
		if len(again.Tensors) != len(file.Tensors) {
			t.Fatalf("round trip changed the tensor count")
		}
		for name, tt := range file.Tensors {
			if !bytes.Equal(again.Tensors[name].Data, tt.Data) {
				t.Fatalf("round trip changed tensor %q", name)
			}
		}
	})
}
