// Package safetensors reads and writes the safetensors checkpoint format:
//
//	8 bytes    little-endian uint64 N, the length of the header
//	N bytes    JSON object: {"__metadata__": {string: string},
//	           "<name>": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...}
//	rest       the tensor bytes; offsets are relative to the start of this part
//
// Parse checks everything a hostile or damaged file could get wrong (header
// length, JSON, dtypes, shapes, offsets that overlap, leave gaps, or run past
// the end, byte counts that disagree with the shape) and returns an error
// that names the problem; it never panics.
package safetensors

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"sort"

	"github.com/ttmrobot/ttm/internal/atomicfile"
)

// MaxHeaderSize bounds the JSON header, as the reference implementation does.
const MaxHeaderSize = 100 << 20

// DType is a tensor element type as spelled in the header.
type DType string

// The element types of the format.
const (
	F64  DType = "F64"
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	I64  DType = "I64"
	I32  DType = "I32"
	I16  DType = "I16"
	I8   DType = "I8"
	U64  DType = "U64"
	U32  DType = "U32"
	U16  DType = "U16"
	U8   DType = "U8"
	Bool DType = "BOOL"
)

// Size returns the number of bytes of one element, or 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F64, I64, U64:
		return 8
	case F32, I32, U32:
		return 4
	case F16, BF16, I16, U16:
		return 2
	case I8, U8, Bool:
		return 1
	}
	return 0
}

// Tensor is one named array: its element type, shape and raw little-endian bytes.
type Tensor struct {
	DType DType
	Shape []int
	Data  []byte
}

// File is a parsed safetensors file.
type File struct {
	Metadata map[string]string
	Tensors  map[string]Tensor
}

// New returns an empty File ready to be filled.
func New() *File {
	return &File{Metadata: map[string]string{}, Tensors: map[string]Tensor{}}
}

// Names returns the tensor names in sorted order.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Tensors))
	for n := range f.Tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NumElements returns the product of the shape.
func NumElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// FromFloat32 makes an F32 tensor of the given shape from data.
func FromFloat32(data []float32, shape ...int) Tensor {
	if NumElements(shape) != len(data) {
		panic(fmt.Sprintf("safetensors: shape %v holds %d elements, data has %d", shape, NumElements(shape), len(data)))
	}
	b := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return Tensor{DType: F32, Shape: append([]int{}, shape...), Data: b}
}

// Float32 decodes an F32 tensor into dst, which must have exactly the
// tensor's number of elements.
func (t Tensor) Float32(dst []float32) error {
	if t.DType != F32 {
		return fmt.Errorf("dtype %s, want F32", t.DType)
	}
	if len(dst)*4 != len(t.Data) {
		return fmt.Errorf("%d elements, want %d", len(t.Data)/4, len(dst))
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return nil
}

// Floats decodes an F32 tensor into a new slice.
func (t Tensor) Floats() ([]float32, error) {
	dst := make([]float32, len(t.Data)/4)
	return dst, t.Float32(dst)
}

type headerEntry struct {
	DType       DType    `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// DigestKey is the metadata key of the SHA-256 (hex) of a file's data
// section, its tensors' bytes in file order: Encode writes it, Parse checks
// it when a file has it.
const DigestKey = "tensors_sha256"

// Parse decodes a whole file held in memory. The tensors' Data alias b.
func Parse(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("safetensors: file is %d bytes, shorter than the 8-byte header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the limit of %d bytes", n, MaxHeaderSize)
	}
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("safetensors: header length %d runs past the end of the %d-byte file (truncated?)", n, len(b))
	}
	header := b[8 : 8+n]
	data := b[8+n:]
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(header))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("safetensors: header is not a JSON object: %w", err)
	}
	if rest := bytes.TrimSpace(header[dec.InputOffset():]); len(rest) > 0 {
		return nil, fmt.Errorf("safetensors: %d bytes of trailing data after the JSON header", len(rest))
	}
	if raw == nil {
		return nil, errors.New("safetensors: header is null, want a JSON object")
	}
	f := New()
	type span struct {
		begin, end int64
		name       string
	}
	spans := make([]span, 0, len(raw))
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors: __metadata__ is not a map of strings: %w", err)
			}
			if f.Metadata == nil {
				f.Metadata = map[string]string{}
			}
			continue
		}
		var e headerEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: bad header entry: %w", name, err)
		}
		size := e.DType.Size()
		if size == 0 {
			return nil, fmt.Errorf("safetensors: tensor %q: unknown dtype %q", name, e.DType)
		}
		count := int64(1)
		for _, d := range e.Shape {
			if d < 0 {
				return nil, fmt.Errorf("safetensors: tensor %q: negative dimension in shape %v", name, e.Shape)
			}
			if d > 0 && count > math.MaxInt64/8/int64(d) {
				return nil, fmt.Errorf("safetensors: tensor %q: shape %v overflows", name, e.Shape)
			}
			count *= int64(d)
		}
		begin, end := e.DataOffsets[0], e.DataOffsets[1]
		if begin < 0 || end < begin {
			return nil, fmt.Errorf("safetensors: tensor %q: invalid data offsets [%d, %d]", name, begin, end)
		}
		if end > int64(len(data)) {
			return nil, fmt.Errorf("safetensors: tensor %q: data offsets [%d, %d] run past the %d-byte data section (truncated?)", name, begin, end, len(data))
		}
		if want := count * int64(size); end-begin != want {
			return nil, fmt.Errorf("safetensors: tensor %q: %d bytes at [%d, %d], but %s %v needs %d", name, end-begin, begin, end, e.DType, e.Shape, want)
		}
		f.Tensors[name] = Tensor{DType: e.DType, Shape: e.Shape, Data: data[begin:end:end]}
		spans = append(spans, span{begin, end, name})
	}
	// Tensors must tile the data section exactly: no overlap, no gap, no tail.
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].begin != spans[j].begin {
			return spans[i].begin < spans[j].begin
		}
		return spans[i].end < spans[j].end
	})
	var at int64
	for _, s := range spans {
		if s.begin < at {
			return nil, fmt.Errorf("safetensors: tensor %q at [%d, %d] overlaps the previous tensor", s.name, s.begin, s.end)
		}
		if s.begin > at {
			return nil, fmt.Errorf("safetensors: %d unused bytes before tensor %q", s.begin-at, s.name)
		}
		at = s.end
	}
	if at != int64(len(data)) {
		return nil, fmt.Errorf("safetensors: %d bytes after the last tensor", int64(len(data))-at)
	}
	if want, ok := f.Metadata[DigestKey]; ok {
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != want {
			return nil, fmt.Errorf("safetensors: the tensors' SHA-256 is %s, the header says %s (a corrupt file?)", got, want)
		}
	}
	for name, t := range f.Tensors {
		if t.Shape == nil {
			t.Shape = []int{}
			f.Tensors[name] = t
		}
	}
	return f, nil
}

// MaxFileBytes bounds the files ReadFile reads: the robot preset's
// training state is about 0.4 GB.
const MaxFileBytes = 8 << 30

// ReadFile reads and parses the file at path, a regular file of at most
// MaxFileBytes: a device or a pipe named by mistake is refused, not read
// without end.
func ReadFile(path string) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, st.Mode().Type())
	}
	if st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a safetensors file may have here", path, st.Size(), int64(MaxFileBytes))
	}
	r, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// Read only what the stat promised: a file that grows meanwhile is
	// caught by Parse's length checks.
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Encode writes f in the safetensors format. Tensors are laid out in name
// order and the header is padded with spaces to a multiple of 8 bytes, so
// the same File always gives the same bytes.
func Encode(w io.Writer, f *File) error {
	names := f.Names()
	header := make(map[string]any, len(names)+1)
	digest := sha256.New()
	for _, name := range names {
		digest.Write(f.Tensors[name].Data)
	}
	meta := maps.Clone(f.Metadata)
	if meta == nil {
		meta = map[string]string{}
	}
	meta[DigestKey] = hex.EncodeToString(digest.Sum(nil))
	header["__metadata__"] = meta
	var offset int64
	for _, name := range names {
		t := f.Tensors[name]
		if t.DType.Size() == 0 {
			return fmt.Errorf("safetensors: tensor %q: unknown dtype %q", name, t.DType)
		}
		if want := NumElements(t.Shape) * t.DType.Size(); want != len(t.Data) {
			return fmt.Errorf("safetensors: tensor %q: %d bytes, but %s %v needs %d", name, len(t.Data), t.DType, t.Shape, want)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[name] = headerEntry{DType: t.DType, Shape: shape, DataOffsets: [2]int64{offset, offset + int64(len(t.Data))}}
		offset += int64(len(t.Data))
	}
	js, err := json.Marshal(header) // map keys are sorted by encoding/json
	if err != nil {
		return fmt.Errorf("safetensors: encode header: %w", err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(js)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(js); err != nil {
		return err
	}
	for _, name := range names {
		if _, err := w.Write(f.Tensors[name].Data); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile writes f to path atomically: to a temporary file in the same
// directory, synced, then renamed, so a crash never leaves a partial file.
func WriteFile(path string, f *File) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Encode(w, f) })
}
