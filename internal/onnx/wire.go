package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireGroupSt = 3
	wireGroupEn = 4
	wireFixed32 = 5
)

var errTruncated = errors.New("truncated")

// field is one decoded protobuf field.
type field struct {
	num  int32
	wire int
	u    uint64 // varint, fixed32 or fixed64 value
	data []byte // length-delimited payload (aliases the input)
	raw  []byte // the whole field, tag included (aliases the input)
}

// consumeVarint decodes a varint from the start of b and returns it and its
// length.
func consumeVarint(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		c := b[i]
		if i == 9 && c > 1 {
			return 0, 0, errors.New("varint overflows 64 bits")
		}
		v |= uint64(c&0x7f) << (7 * uint(i))
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	if len(b) < 10 {
		return 0, 0, errTruncated
	}
	return 0, 0, errors.New("varint longer than 10 bytes")
}

// nextField decodes the field at the start of b and returns the rest.
func nextField(b []byte) (field, []byte, error) {
	tag, n, err := consumeVarint(b)
	if err != nil {
		return field{}, nil, fmt.Errorf("field tag: %w", err)
	}
	num := tag >> 3
	if num == 0 || num > math.MaxInt32>>2 {
		return field{}, nil, fmt.Errorf("invalid field number %d", num)
	}
	f := field{num: int32(num), wire: int(tag & 7)}
	rest := b[n:]
	switch f.wire {
	case wireVarint:
		v, m, err := consumeVarint(rest)
		if err != nil {
			return field{}, nil, fmt.Errorf("field %d: %w", num, err)
		}
		f.u, rest = v, rest[m:]
	case wireFixed64:
		if len(rest) < 8 {
			return field{}, nil, fmt.Errorf("field %d: %w", num, errTruncated)
		}
		f.u, rest = binary.LittleEndian.Uint64(rest), rest[8:]
	case wireFixed32:
		if len(rest) < 4 {
			return field{}, nil, fmt.Errorf("field %d: %w", num, errTruncated)
		}
		f.u, rest = uint64(binary.LittleEndian.Uint32(rest)), rest[4:]
	case wireBytes:
		l, m, err := consumeVarint(rest)
		if err != nil {
			return field{}, nil, fmt.Errorf("field %d length: %w", num, err)
		}
		rest = rest[m:]
		if l > uint64(len(rest)) {
			return field{}, nil, fmt.Errorf("field %d: length %d exceeds the %d bytes left: %w", num, l, len(rest), errTruncated)
		}
		f.data, rest = rest[:l:l], rest[l:]
	default:
		return field{}, nil, fmt.Errorf("field %d: unsupported wire type %d", num, f.wire)
	}
	f.raw = b[: len(b)-len(rest) : len(b)-len(rest)]
	return f, rest, nil
}

func (f field) want(wire int, msg string) error {
	if f.wire != wire {
		return fmt.Errorf("%s field %d: wire type %d, want %d", msg, f.num, f.wire, wire)
	}
	return nil
}

func (f field) int64(msg string) (int64, error) {
	if err := f.want(wireVarint, msg); err != nil {
		return 0, err
	}
	return int64(f.u), nil
}

func (f field) int32(msg string) (int32, error) {
	if err := f.want(wireVarint, msg); err != nil {
		return 0, err
	}
	return int32(f.u), nil
}

func (f field) float32(msg string) (float32, error) {
	if err := f.want(wireFixed32, msg); err != nil {
		return 0, err
	}
	return math.Float32frombits(uint32(f.u)), nil
}

func (f field) str(msg string) (string, error) {
	if err := f.want(wireBytes, msg); err != nil {
		return "", err
	}
	return string(f.data), nil
}

func (f field) bytes(msg string) ([]byte, error) {
	if err := f.want(wireBytes, msg); err != nil {
		return nil, err
	}
	return append([]byte{}, f.data...), nil
}

// appendInt64s decodes a repeated int64 (or int32/uint64) field, packed or not.
func (f field) appendVarints(dst []uint64, msg string) ([]uint64, error) {
	switch f.wire {
	case wireVarint:
		return append(dst, f.u), nil
	case wireBytes:
		b := f.data
		for len(b) > 0 {
			v, n, err := consumeVarint(b)
			if err != nil {
				return nil, fmt.Errorf("%s field %d: packed varint: %w", msg, f.num, err)
			}
			dst, b = append(dst, v), b[n:]
		}
		return dst, nil
	}
	return nil, fmt.Errorf("%s field %d: wire type %d for a repeated varint", msg, f.num, f.wire)
}

func (f field) appendInt64s(dst []int64, msg string) ([]int64, error) {
	vs, err := f.appendVarints(nil, msg)
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		dst = append(dst, int64(v))
	}
	return dst, nil
}

// appendFloat32s decodes a repeated float field, packed or not.
func (f field) appendFloat32s(dst []float32, msg string) ([]float32, error) {
	switch f.wire {
	case wireFixed32:
		return append(dst, math.Float32frombits(uint32(f.u))), nil
	case wireBytes:
		if len(f.data)%4 != 0 {
			return nil, fmt.Errorf("%s field %d: packed floats of %d bytes", msg, f.num, len(f.data))
		}
		if dst == nil {
			dst = make([]float32, 0, len(f.data)/4)
		}
		for b := f.data; len(b) > 0; b = b[4:] {
			dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(b)))
		}
		return dst, nil
	}
	return nil, fmt.Errorf("%s field %d: wire type %d for a repeated float", msg, f.num, f.wire)
}

// appendFloat64s decodes a repeated double field, packed or not.
func (f field) appendFloat64s(dst []float64, msg string) ([]float64, error) {
	switch f.wire {
	case wireFixed64:
		return append(dst, math.Float64frombits(f.u)), nil
	case wireBytes:
		if len(f.data)%8 != 0 {
			return nil, fmt.Errorf("%s field %d: packed doubles of %d bytes", msg, f.num, len(f.data))
		}
		for b := f.data; len(b) > 0; b = b[8:] {
			dst = append(dst, math.Float64frombits(binary.LittleEndian.Uint64(b)))
		}
		return dst, nil
	}
	return nil, fmt.Errorf("%s field %d: wire type %d for a repeated double", msg, f.num, f.wire)
}

// Encoding helpers. Sizes are computed first so that a model is written
// into one buffer of the right size.

func sizeVarint(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func sizeTag(num int) int { return sizeVarint(uint64(num) << 3) }

func appendTag(b []byte, num, wire int) []byte {
	return appendVarint(b, uint64(num)<<3|uint64(wire))
}

// Sizes and writers of whole fields (tag included).

func sizeVarintField(num int, v uint64) int { return sizeTag(num) + sizeVarint(v) }

func appendVarintField(b []byte, num int, v uint64) []byte {
	return appendVarint(appendTag(b, num, wireVarint), v)
}

func sizeBytesField(num, n int) int { return sizeTag(num) + sizeVarint(uint64(n)) + n }

func appendBytesField(b []byte, num int, data []byte) []byte {
	b = appendVarint(appendTag(b, num, wireBytes), uint64(len(data)))
	return append(b, data...)
}

func appendStringField(b []byte, num int, s string) []byte {
	b = appendVarint(appendTag(b, num, wireBytes), uint64(len(s)))
	return append(b, s...)
}

// appendMessageHeader writes the tag and length of an embedded message of n bytes.
func appendMessageHeader(b []byte, num, n int) []byte {
	return appendVarint(appendTag(b, num, wireBytes), uint64(n))
}

func sizeFixed32Field(num int) int { return sizeTag(num) + 4 }

func appendFloatField(b []byte, num int, v float32) []byte {
	b = appendTag(b, num, wireFixed32)
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
