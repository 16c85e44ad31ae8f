package rawimage

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// toRGB converts a message-like buffer with the named encoding.
func toRGB(t *testing.T, enc string, src []byte, step, w, h int) []byte {
	t.Helper()
	e, err := Lookup(enc)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 3*w*h)
	e.ToRGB(dst, src, step, w, h)
	return dst
}

// TestInterleaved: the encodings whose samples are used as they are, with
// row padding (0xEE, never read) and the last row unpadded.
func TestInterleaved(t *testing.T) {
	const w, h = 2, 2
	want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	for _, tc := range []struct {
		enc  string
		src  []byte
		step int
		want []byte
	}{
		{"rgb8", []byte{1, 2, 3, 4, 5, 6, 0xEE, 7, 8, 9, 10, 11, 12}, 7, want},
		{"bgr8", []byte{3, 2, 1, 6, 5, 4, 0xEE, 9, 8, 7, 12, 11, 10}, 7, want},
		{"rgba8", []byte{1, 2, 3, 0xEE, 4, 5, 6, 0xEE, 7, 8, 9, 0xEE, 10, 11, 12, 0xEE}, 8, want},
		{"bgra8", []byte{3, 2, 1, 0xEE, 6, 5, 4, 0xEE, 0xEE, 9, 8, 7, 0xEE, 12, 11, 10, 0xEE}, 9, want},
		{"mono8", []byte{1, 2, 0xEE, 3, 4}, 3, []byte{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4}},
	} {
		if got := toRGB(t, tc.enc, tc.src, tc.step, w, h); !bytes.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.enc, got, tc.want)
		}
	}
}

// TestYUV422Values: hand-computed pixels of the fixed-point BT.601
// formula, and the two byte orders of the same pixel pair.
func TestYUV422Values(t *testing.T) {
	cases := []struct {
		name       string
		y0, y1     byte
		u, v       byte
		rgb0, rgb1 [3]byte
	}{
		// (219·1220542 + 2^19) >> 20 = 255; Y = 16 is black.
		{"white and black", 235, 16, 128, 128, [3]byte{255, 255, 255}, [3]byte{0, 0, 0}},
		// Y 81, U 90, V 240 is BT.601 red: R = (65·1220542 + 112·1673527 + 2^19) >> 20 = 254;
		// G and B come out at -1 and are saturated to 0.
		{"red", 81, 81, 90, 240, [3]byte{254, 0, 0}, [3]byte{254, 0, 0}},
		// Y below 16 counts as 16.
		{"below black", 0, 15, 128, 128, [3]byte{0, 0, 0}, [3]byte{0, 0, 0}},
	}
	for _, c := range cases {
		for enc, src := range map[string][]byte{"yuv422": {c.u, c.y0, c.v, c.y1}, "yuv422_yuy2": {c.y0, c.u, c.y1, c.v}} {
			got := toRGB(t, enc, src, 4, 2, 1)
			if got0, got1 := [3]byte(got[0:3]), [3]byte(got[3:6]); got0 != c.rgb0 || got1 != c.rgb1 {
				t.Errorf("%s %s: %v %v, want %v %v", c.name, enc, got0, got1, c.rgb0, c.rgb1)
			}
		}
	}
}

// TestBayerFlatColours: a uniformly coloured scene mosaicked through each
// pattern converts to that colour everywhere, borders included: a pattern
// read as another would swap red and blue or mix green into them.
func TestBayerFlatColours(t *testing.T) {
	const w, h = 8, 6
	channel := map[byte]int{'r': 0, 'g': 1, 'b': 2}
	for _, enc := range []string{"bayer_rggb8", "bayer_bggr8", "bayer_gbrg8", "bayer_grbg8"} {
		pattern := enc[6:10] // the top-left 2x2 cell, row by row
		for _, c := range [][3]byte{{200, 0, 0}, {0, 200, 0}, {0, 0, 200}, {10, 120, 240}} {
			src := make([]byte, w*h)
			for i := range src {
				src[i] = c[channel[pattern[2*(i/w%2)+i%w%2]]]
			}
			got := toRGB(t, enc, src, w, w, h)
			for i := 0; i < len(got); i += 3 {
				if p := [3]byte(got[i : i+3]); p != c {
					t.Errorf("%s scene %v: pixel (%d, %d) is %v", enc, c, i/3%w, i/3/w, p)
					break
				}
			}
		}
	}
}

// TestLookup: every name of Names is found with its bytes per pixel;
// other names are refused with the kind of error and a hint.
func TestLookup(t *testing.T) {
	bpp := map[string]int{"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1, "yuv422": 2, "yuv422_yuy2": 2,
		"bayer_rggb8": 1, "bayer_bggr8": 1, "bayer_gbrg8": 1, "bayer_grbg8": 1}
	names := Names()
	if len(names) != len(bpp) {
		t.Errorf("Names() = %v, want the %d of the table", names, len(bpp))
	}
	for _, n := range names {
		e, err := Lookup(n)
		if err != nil || e.Name != n || e.BytesPerPixel != bpp[n] || e.Pairs != strings.HasPrefix(n, "yuv") {
			t.Errorf("Lookup(%q) = %+v, %v", n, e, err)
		}
	}
	for _, tc := range []struct {
		enc  string
		kind error
		msg  string
	}{
		{"16UC1", ErrDepth, "more than 8 bits per channel"},
		{"bayer_rggb16", ErrDepth, "more than 8 bits per channel"},
		{"RGB8", ErrUnsupported, `use "rgb8"`},
		{"bayer_xyzw8", ErrUnsupported, "not an 8-bit Bayer mosaic"},
		{"yuyv", ErrUnsupported, `"yuv422_yuy2"`},
		{"nv12", ErrUnsupported, "only 4:2:2"},
		{"8UC1", ErrUnsupported, "publish it as mono8"},
		{"8UC3", ErrUnsupported, "channel order"},
		{"", ErrUnsupported, "empty encoding"},
		{"jpeg", ErrUnsupported, "supported: bayer_bggr8"},
	} {
		if _, err := Lookup(tc.enc); !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Lookup(%q) = %v, want %v saying %q", tc.enc, err, tc.kind, tc.msg)
		}
	}
}

// TestToRGBDoesNotAllocate: conversions write into the caller's buffer.
func TestToRGBDoesNotAllocate(t *testing.T) {
	const w, h = 64, 48
	src, dst := make([]byte, 4*w*h), make([]byte, 3*w*h)
	for _, n := range Names() {
		e, _ := Lookup(n)
		if a := testing.AllocsPerRun(5, func() { e.ToRGB(dst, src, e.BytesPerPixel*w, w, h) }); a != 0 {
			t.Errorf("%s: %v allocations", n, a)
		}
	}
}
