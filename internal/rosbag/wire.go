package rosbag

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Time is ROS time: seconds and nanoseconds since the Unix epoch, two
// unsigned 32-bit words on the wire (little endian, seconds first).
type Time struct {
	Sec, Nsec uint32
}

// FromTime converts t to ROS time; times before 1970 or from 2106 on are
// ErrTime. The zero time.Time maps to the zero ROS time.
func FromTime(t time.Time) (Time, error) {
	if t.IsZero() {
		return Time{}, nil
	}
	s := t.Unix()
	if s < 0 || s > math.MaxUint32 {
		return Time{}, fmt.Errorf("%w: %v", ErrTime, t)
	}
	return Time{Sec: uint32(s), Nsec: uint32(t.Nanosecond())}, nil
}

// Time returns t as a time.Time (UTC); the zero ROS time gives the Unix
// epoch.
func (t Time) Time() time.Time { return time.Unix(int64(t.Sec), int64(t.Nsec)).UTC() }

// Nanos returns t in nanoseconds since the epoch.
func (t Time) Nanos() uint64 { return uint64(t.Sec)*1e9 + uint64(t.Nsec) }

// Less orders times.
func (t Time) Less(o Time) bool { return t.Sec < o.Sec || t.Sec == o.Sec && t.Nsec < o.Nsec }

// IsZero reports whether t is the zero ROS time.
func (t Time) IsZero() bool { return t == Time{} }

func (t Time) String() string { return fmt.Sprintf("%d.%09d", t.Sec, t.Nsec) }

// Appending encoders of the ROS 1 serialisation: little endian, strings and
// variable-length arrays prefixed by a uint32 length.

func putU8(b []byte, v uint8) []byte { return append(b, v) }
func putBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}
func putU32(b []byte, v uint32) []byte  { return binary.LittleEndian.AppendUint32(b, v) }
func putU64(b []byte, v uint64) []byte  { return binary.LittleEndian.AppendUint64(b, v) }
func putTime(b []byte, t Time) []byte   { return putU32(putU32(b, t.Sec), t.Nsec) }
func putF64(b []byte, v float64) []byte { return putU64(b, math.Float64bits(v)) }

// putF64s appends a variable-length float64 array.
func putF64s(b []byte, v []float64) []byte {
	b = putU32(b, uint32(len(v)))
	for _, x := range v {
		b = putF64(b, x)
	}
	return b
}

func putBytes(b []byte, v []byte) []byte {
	b = putU32(b, uint32(len(v)))
	return append(b, v...)
}

func putString(b []byte, s string) []byte {
	b = putU32(b, uint32(len(s)))
	return append(b, s...)
}

// decoder reads the ROS 1 serialisation with bounds checks: the first
// problem is kept in err and every later read returns zero values.
type decoder struct {
	b   []byte
	off int
	err error
	ctx string // what is being decoded, for the error
}

func (d *decoder) fail(what string, n int) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s: %s needs %d bytes at offset %d, %d left", ErrMessage, d.ctx, what, n, d.off, len(d.b)-d.off)
	}
}

func (d *decoder) take(what string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.fail(what, n)
		return nil
	}
	s := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return s
}

func (d *decoder) u8(what string) uint8 {
	if s := d.take(what, 1); s != nil {
		return s[0]
	}
	return 0
}

func (d *decoder) u32(what string) uint32 {
	if s := d.take(what, 4); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (d *decoder) f64(what string) float64 {
	if s := d.take(what, 8); s != nil {
		return math.Float64frombits(binary.LittleEndian.Uint64(s))
	}
	return 0
}

// f64s reads a variable-length float64 array, appending it to dst.
func (d *decoder) f64s(what string, dst []float64) []float64 {
	n := d.count(what, 8)
	for range n {
		dst = append(dst, d.f64(what))
	}
	return dst
}

func (d *decoder) time(what string) Time {
	return Time{Sec: d.u32(what), Nsec: d.u32(what)}
}

// bytes returns a length-prefixed byte array as a view of the input.
func (d *decoder) bytes(what string) []byte {
	n := d.u32(what)
	if d.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(d.b)-d.off) {
		d.fail(what, int(min(uint64(n), math.MaxInt32)))
		return nil
	}
	return d.take(what, int(n))
}

func (d *decoder) string(what string) string { return string(d.bytes(what)) }

// count reads an array length and checks that elem bytes per element fit.
func (d *decoder) count(what string, elem int) int {
	n := d.u32(what)
	if d.err != nil {
		return 0
	}
	if uint64(n)*uint64(elem) > uint64(len(d.b)-d.off) {
		d.fail(what, int(min(uint64(n)*uint64(elem), math.MaxInt32)))
		return 0
	}
	return int(n)
}

// end reports trailing bytes as an error.
func (d *decoder) end() error {
	if d.err == nil && d.off != len(d.b) {
		d.err = fmt.Errorf("%w: %s: %d bytes left over after the last field", ErrMessage, d.ctx, len(d.b)-d.off)
	}
	return d.err
}
