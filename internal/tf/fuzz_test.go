package tf

import (
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// fuzzReader decodes a byte stream; reads past the end give zeros.
type fuzzReader struct{ data []byte }

func (r *fuzzReader) byte() byte {
	if len(r.data) == 0 {
		return 0
	}
	c := r.data[0]
	r.data = r.data[1:]
	return c
}

// name is mostly one of a few frames, so that trees form, and sometimes
// arbitrary bytes (empty, slashes, invalid UTF-8).
func (r *fuzzReader) name() string {
	c := r.byte()
	if c < 224 {
		return [...]string{"a", "b", "c", "d", "/a", "/b", "e", "f"}[c%8]
	}
	n := int(c % 8)
	s := make([]byte, n)
	for i := range s {
		s[i] = r.byte()
	}
	return string(s)
}

func (r *fuzzReader) float() float64 {
	c := r.byte()
	if c < 240 {
		return float64(int8(c)) / 16
	}
	var b [8]byte
	for i := range b {
		b[i] = r.byte()
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
}

func (r *fuzzReader) stamp() time.Time {
	v := int64(r.byte())<<8 | int64(r.byte())
	if v == 0xFFFF {
		return time.Unix(-int64(r.byte()), 0)
	}
	return time.Unix(0, v*int64(10*time.Millisecond))
}

func FuzzBuffer(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 10, 1, 2, 3, 0, 4, 5, 6, 2, 0, 1, 0, 10, 5})
	f.Add([]byte{0, 0, 1, 0, 10, 1, 2, 3, 0, 4, 5, 6, 0, 1, 0, 0, 20, 0, 0, 0, 1, 1, 1, 1, 2, 2, 0, 0, 15, 0})
	f.Add([]byte{1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 0, 0, 0})
	f.Add([]byte{0, 240, 1, 2, 3, 4, 5, 6, 7, 0, 1, 255, 255, 3, 240, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f})
	f.Fuzz(func(t *testing.T, data []byte) {
		b := NewBuffer(BufferConf{History: 2 * time.Second, MaxFrames: 16, MaxSamples: 32})
		r := &fuzzReader{data}
		for len(r.data) > 0 {
			switch op := r.byte(); op % 8 {
			case 0, 1, 2, 3:
				parent, child, stamp := r.name(), r.name(), r.stamp()
				x := Transform{Translation: [3]float64{r.float(), r.float(), r.float()}}
				if op&8 == 0 {
					x.Rotation = FromRPY(r.float(), r.float(), r.float())
				} else {
					x.Rotation = [4]float64{r.float(), r.float(), r.float(), r.float()}
				}
				_ = b.Add(parent, child, stamp, x, op%4 == 3)
			case 4, 5, 6:
				target, source, when := r.name(), r.name(), r.stamp()
				if op&8 != 0 {
					when = time.Time{}
				}
				x, err := b.Lookup(target, source, when, time.Duration(r.byte())*10*time.Millisecond)
				if err == nil && !x.finite() {
					t.Fatalf("Lookup(%q, %q, %v) = %v without an error", target, source, when, x)
				}
				if err == nil && math.Abs(math.Sqrt(dot(x.Rotation, x.Rotation))-1) > 1e-9 {
					t.Fatalf("Lookup(%q, %q, %v): |q| = %v", target, source, when, math.Sqrt(dot(x.Rotation, x.Rotation)))
				}
			case 7:
				if op&0x70 == 0x70 {
					b.Clear()
				} else if op&0x70 == 0x60 {
					b.ClearDynamic()
				} else if n := len(b.Frames()); n > 16 {
					t.Fatalf("%d frames, bound 16", n)
				}
			}
		}
	})
}
