package vision

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/ttmrobot/ttm/internal/damage"
)

// testPicture is a smooth colour image with some structure (gradients, a
// disc, a bar), the kind of content JPEG keeps close to the original.
// pix (h, w, 3) RGB.
func testPicture(w, h int) []byte {
	pix := make([]byte, w*h*3)
	for y := range h {
		for x := range w {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			r := 128 + 100*math.Sin(6*fx+2*fy)
			g := 255 * fy
			b := 60 + 120*fx*fy
			if dx, dy := fx-0.6, fy-0.4; dx*dx+dy*dy < 0.04 {
				r, g, b = 240, 200, 40
			}
			if x > w/5 && x < w/5+w/10 {
				r, g, b = 20, 30, 200
			}
			p := pix[3*(y*w+x):]
			p[0], p[1], p[2] = byte(r), byte(g), byte(b)
		}
	}
	return pix
}

// grey returns the luma-like grey of an RGB picture, (h, w).
func grey(rgb []byte) []byte {
	g := make([]byte, len(rgb)/3)
	for i := range g {
		g[i] = byte((int(rgb[3*i]) + 2*int(rgb[3*i+1]) + int(rgb[3*i+2])) / 4)
	}
	return g
}

// rawMessage lays an RGB picture out as a sensor_msgs/Image of the given
// encoding, with pad extra bytes (filled with noise) at the end of each row.
func rawMessage(rgb []byte, w, h int, encoding string, pad int, r *rand.Rand) *Image {
	bpp := map[string]int{"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1}[encoding]
	step := w*bpp + pad
	data := make([]byte, step*h)
	for i := range data {
		data[i] = byte(r.IntN(256))
	}
	for y := range h {
		for x := range w {
			s := rgb[3*(y*w+x):]
			d := data[y*step+x*bpp:]
			switch encoding {
			case "rgb8", "rgba8":
				d[0], d[1], d[2] = s[0], s[1], s[2]
			case "bgr8", "bgra8":
				d[0], d[1], d[2] = s[2], s[1], s[0]
			case "mono8":
				d[0] = s[0] // callers pass a grey picture with r = g = b
			}
		}
	}
	return &Image{Height: uint32(h), Width: uint32(w), Encoding: encoding, Step: uint32(step), Data: data}
}

func goImage(rgb []byte, w, h int, grey bool) image.Image {
	if grey {
		g := image.NewGray(image.Rect(0, 0, w, h))
		for i := range w * h {
			g.Pix[i] = rgb[3*i]
		}
		return g
	}
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range w * h {
		m.Pix[4*i], m.Pix[4*i+1], m.Pix[4*i+2], m.Pix[4*i+3] = rgb[3*i], rgb[3*i+1], rgb[3*i+2], 255
	}
	return m
}

func encodePNG(t testing.TB, m image.Image) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t testing.TB, m image.Image, quality int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: quality}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// expand turns a grey picture (h, w) into RGB with r = g = b.
func expand(g []byte) []byte {
	rgb := make([]byte, 3*len(g))
	for i, v := range g {
		rgb[3*i], rgb[3*i+1], rgb[3*i+2] = v, v, v
	}
	return rgb
}

// TestEncodingsGiveIdenticalInputs decodes the same pixels sent in every
// way a camera driver can send them and checks that the preprocessed
// inputs are identical (raw encodings, PNG) or close (JPEG).
func TestEncodingsGiveIdenticalInputs(t *testing.T) {
	const w, h = 64, 48
	r := rand.New(rand.NewPCG(7, 8))
	colour := testPicture(w, h)
	grey3 := expand(grey(colour))
	cfg := DefaultPreprocess()
	cfg.Width, cfg.Height = 40, 30
	p, err := NewPreprocessor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	run := func(f Frame) []float32 {
		t.Helper()
		out := make([]float32, p.InputLen())
		if err := p.Run(out, f); err != nil {
			t.Fatal(err)
		}
		return out
	}
	var dec Decoder
	for _, pic := range []struct {
		name string
		rgb  []byte
		grey bool
	}{{"colour", colour, false}, {"grey", grey3, true}} {
		reference := run(Frame{Width: w, Height: h, Stride: 3 * w, Format: RGB8, Pix: pic.rgb})
		encodings := []string{"rgb8", "bgr8", "rgba8", "bgra8"}
		if pic.grey {
			encodings = append(encodings, "mono8")
		}
		for _, enc := range encodings {
			for _, pad := range []int{0, 1, 13} {
				msg := rawMessage(pic.rgb, w, h, enc, pad, r)
				f, err := DecodeImage(msg)
				if err != nil {
					t.Fatalf("%s %s pad %d: %v", pic.name, enc, pad, err)
				}
				if d, at := maxAbsDiff(run(f), reference); d != 0 {
					t.Errorf("%s %s pad %d: differs from rgb8 by %g at %d", pic.name, enc, pad, d, at)
				}
			}
		}
		pngData := encodePNG(t, goImage(pic.rgb, w, h, pic.grey))
		f, err := dec.DecodeCompressed(&CompressedImage{Format: "png", Data: pngData})
		if err != nil {
			t.Fatalf("%s png: %v", pic.name, err)
		}
		if d, at := maxAbsDiff(run(f), reference); d != 0 {
			t.Errorf("%s png: differs from rgb8 by %g at %d", pic.name, d, at)
		}
		jpegData := encodeJPEG(t, goImage(pic.rgb, w, h, pic.grey), 95)
		f, err = dec.DecodeCompressed(&CompressedImage{Format: "rgb8; jpeg compressed bgr8", Data: jpegData})
		if err != nil {
			t.Fatalf("%s jpeg: %v", pic.name, err)
		}
		got := run(f)
		// One grey level is 1/255/0.225 = 0.017 after normalisation. JPEG at
		// quality 95 with 4:2:0 chroma (Go's encoder) blurs the colour of
		// sharp edges, so allow about 6 levels on average; swapped channels
		// would be off by about 1.
		var sum float64
		for i := range got {
			sum += math.Abs(float64(got[i] - reference[i]))
		}
		if mean := sum / float64(len(got)); mean > 0.1 {
			t.Errorf("%s jpeg: mean |difference| %g after normalisation, want <= 0.1 (about 6 grey levels)", pic.name, mean)
		}
	}
}

func TestDecodeImageRejects(t *testing.T) {
	ok := func() *Image {
		return &Image{Height: 4, Width: 4, Encoding: "rgb8", Step: 12, Data: make([]byte, 48)}
	}
	cases := []struct {
		name   string
		edit   func(m *Image)
		err    error
		detail string
	}{
		{"16UC1", func(m *Image) { m.Encoding = "16UC1"; m.Step = 8; m.Data = make([]byte, 32) }, ErrDepthImage, `"16UC1"`},
		{"mono16", func(m *Image) { m.Encoding = "mono16" }, ErrDepthImage, "more than 8 bits"},
		{"32FC1", func(m *Image) { m.Encoding = "32FC1" }, ErrDepthImage, `"32FC1"`},
		{"64FC1", func(m *Image) { m.Encoding = "64FC1" }, ErrDepthImage, `"64FC1"`},
		{"rgb16", func(m *Image) { m.Encoding = "rgb16" }, ErrDepthImage, `"rgb16"`},
		{"bayer16", func(m *Image) { m.Encoding = "bayer_rggb16" }, ErrDepthImage, `"bayer_rggb16"`},
		{"bayer unknown pattern", func(m *Image) { m.Encoding = "bayer_rgbg8" }, ErrUnsupportedEncoding, "bayer_rggb8, bayer_bggr8, bayer_gbrg8 and bayer_grbg8"},
		{"bayer upper case", func(m *Image) { m.Encoding = "BAYER_RGGB8" }, ErrUnsupportedEncoding, `use "bayer_rggb8"`},
		{"bayer step", func(m *Image) { m.Encoding = "bayer_rggb8"; m.Step = 3; m.Data = make([]byte, 12) }, ErrBadSize, "step 3 is less than width 4 x 1 bytes per pixel = 4"},
		{"8UC3", func(m *Image) { m.Encoding = "8UC3" }, ErrUnsupportedEncoding, "channel order"},
		{"8UC1", func(m *Image) { m.Encoding = "8UC1" }, ErrUnsupportedEncoding, "mono8"},
		{"upper case", func(m *Image) { m.Encoding = "RGB8" }, ErrUnsupportedEncoding, `use "rgb8"`},
		{"yuv420", func(m *Image) { m.Encoding = "yuv420" }, ErrUnsupportedEncoding, "only 4:2:2 yuv422 (UYVY) and yuv422_yuy2 (YUYV)"},
		{"nv12", func(m *Image) { m.Encoding = "nv12" }, ErrUnsupportedEncoding, "only 4:2:2"},
		{"uyvy", func(m *Image) { m.Encoding = "uyvy" }, ErrUnsupportedEncoding, `ROS calls UYVY (U0 Y0 V0 Y1) "yuv422"`},
		{"yuyv", func(m *Image) { m.Encoding = "yuyv" }, ErrUnsupportedEncoding, `"yuv422_yuy2"`},
		{"yuv odd width", func(m *Image) { m.Encoding = "yuv422"; m.Width = 3; m.Step = 6; m.Data = make([]byte, 24) }, ErrBadSize, "width 3 is odd"},
		{"yuv step", func(m *Image) { m.Encoding = "yuv422_yuy2"; m.Step = 6; m.Data = make([]byte, 24) }, ErrBadSize, "step 6 is less than width 4 x 2 bytes per pixel = 8"},
		{"yuv bytes", func(m *Image) { m.Encoding = "yuv422"; m.Step = 8; m.Data = make([]byte, 31) }, ErrBadSize, "data has 31 bytes, height 4 x step 8 = 32"},
		{"bayer too many pixels", func(m *Image) { m.Encoding = "bayer_bggr8"; m.Width, m.Height = MaxSide, MaxSide }, ErrBadSize, "more than the limit"},
		{"empty encoding", func(m *Image) { m.Encoding = "" }, ErrUnsupportedEncoding, "empty encoding"},
		{"zero width", func(m *Image) { m.Width = 0 }, ErrBadSize, "0x4 (width x height) is empty"},
		{"zero height", func(m *Image) { m.Height = 0; m.Data = nil }, ErrBadSize, "4x0 (width x height) is empty"},
		{"step too small", func(m *Image) { m.Step = 11; m.Data = make([]byte, 44) }, ErrBadSize, "step 11 is less than width 4 x 3 bytes per pixel = 12"},
		{"rgba step", func(m *Image) { m.Encoding = "rgba8" }, ErrBadSize, "step 12 is less than width 4 x 4 bytes per pixel = 16"},
		{"one byte short", func(m *Image) { m.Data = m.Data[:47] }, ErrBadSize, "data has 47 bytes, height 4 x step 12 = 48"},
		{"one byte long", func(m *Image) { m.Data = make([]byte, 49) }, ErrBadSize, "data has 49 bytes, height 4 x step 12 = 48"},
		{"padding missing", func(m *Image) { m.Step = 16 }, ErrBadSize, "data has 48 bytes, height 4 x step 16 = 64"},
		{"wide", func(m *Image) { m.Width = MaxSide + 1 }, ErrBadSize, "exceeds the limit"},
		{"too many pixels", func(m *Image) { m.Width, m.Height = MaxSide, MaxSide }, ErrBadSize, "more than the limit"},
		{"huge uint32", func(m *Image) { m.Width, m.Height, m.Step = math.MaxUint32, math.MaxUint32, math.MaxUint32 }, ErrBadSize, "exceeds the limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := ok()
			c.edit(m)
			_, err := DecodeImage(m)
			if !errors.Is(err, c.err) {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if !strings.Contains(err.Error(), c.detail) {
				t.Errorf("error %q does not say %q", err, c.detail)
			}
		})
	}
	if _, err := DecodeImage(ok()); err != nil {
		t.Fatalf("the valid base case fails: %v", err)
	}
}

// pngWithIHDR returns a PNG signature, an IHDR with the given fields and an
// IEND: enough for the header checks (OpenCV would find no image data).
func pngWithIHDR(w, h uint32, depth, colour byte) []byte {
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, depth, colour, 0, 0, 0)
	d := append([]byte{}, pngMagic...)
	d = append(d, damage.Chunk("IHDR", ihdr, false)...)
	return append(d, pngIEND...)
}

// progressiveJPEG is an 8x8 grey progressive JPEG of scans DC scans, each
// one code of one bit (a DC difference of zero) padded with ones.
func progressiveJPEG(scans int) []byte {
	d := []byte{0xFF, 0xD8}
	d = append(d, 0xFF, 0xDB, 0, 67, 0)
	for range 64 {
		d = append(d, 1)
	}
	d = append(d, 0xFF, 0xC2, 0, 11, 8, 0, 8, 0, 8, 1, 1, 0x11, 0)
	d = append(d, 0xFF, 0xC4, 0, 20, 0x00, 1)
	d = append(d, make([]byte, 15)...)
	d = append(d, 0)
	for range scans {
		d = append(d, 0xFF, 0xDA, 0, 8, 1, 1, 0x00, 0, 0, 0x00, 0x7F)
	}
	return append(d, 0xFF, 0xD9)
}

// jpegSOF returns SOI, a SOF marker with the given fields, and EOI.
func jpegSOF(marker byte, precision byte, w, h uint16, nc byte) []byte {
	d := []byte{0xFF, 0xD8, 0xFF, marker}
	d = binary.BigEndian.AppendUint16(d, uint16(8+3*int(nc)))
	d = append(d, precision)
	d = binary.BigEndian.AppendUint16(d, h)
	d = binary.BigEndian.AppendUint16(d, w)
	d = append(d, nc)
	for i := range nc {
		d = append(d, i+1, 0x11, 0)
	}
	return append(d, 0xFF, 0xD9)
}

func TestDecodeCompressedRejects(t *testing.T) {
	pic := testPicture(32, 24)
	goodPNG := encodePNG(t, goImage(pic, 32, 24, false))
	goodJPEG := encodeJPEG(t, goImage(pic, 32, 24, false), 90)
	bigJPEG := encodeJPEG(t, goImage(testPicture(320, 240), 320, 240, false), 90)
	with := func(b []byte, f func([]byte) []byte) []byte { return f(append([]byte{}, b...)) }
	grey16 := image.NewGray16(image.Rect(0, 0, 8, 8))
	grey16.Set(3, 3, color.Gray16{Y: 40000})
	cases := []struct {
		name   string
		format string
		data   []byte
		err    error
		detail string
	}{
		{"empty", "jpeg", nil, ErrCorrupt, "no data"},
		{"noise", "", []byte("definitely not an image"), ErrCorrupt, "neither a JPEG"},
		{"format mismatch", "png", goodJPEG, ErrCorrupt, `format "png" says png but the data is jpeg`},
		{"unknown format", "tiff", goodPNG, ErrUnsupportedEncoding, `"tiff"`},
		{"compressedDepth", "16UC1; compressedDepth png", goodPNG, ErrDepthImage, "compressedDepth"},
		{"depth source", "mono16; png compressed mono16", goodPNG, ErrDepthImage, "mono16"},
		{"png 16-bit grey", "png", encodePNG(t, grey16), ErrDepthImage, "16-bit grey"},
		{"png truncated", "png", goodPNG[:len(goodPNG)-30], ErrCorrupt, "IEND"},
		{"png header only", "png", goodPNG[:20], ErrCorrupt, "too short"},
		{"png bad IHDR crc", "png", with(goodPNG, func(b []byte) []byte { b[20] ^= 1; return b }), ErrCorrupt, "IHDR checksum"},
		{"png zero width", "png", pngWithIHDR(0, 10, 8, 2), ErrBadSize, "is empty"},
		{"png huge", "png", pngWithIHDR(1<<30, 1<<30, 8, 2), ErrBadSize, "exceeds the limit"},
		{"png too many pixels", "png", pngWithIHDR(8000, 8000, 8, 2), ErrBadSize, "more than the limit"},
		{"png bad depth", "png", pngWithIHDR(10, 10, 3, 2), ErrCorrupt, "bit depth 3"},
		{"png bad colour", "png", pngWithIHDR(10, 10, 8, 5), ErrCorrupt, "colour type 5"},
		{"png no image data", "png", pngWithIHDR(10, 10, 8, 2), ErrCorrupt, "libpng: IEND: out of place"},
		{"png damaged image data", "png", with(goodPNG, func(b []byte) []byte {
			for i := 60; i < 90; i++ {
				b[i] ^= 0x5A
			}
			return b
		}), ErrCorrupt, "libpng: IDAT"},
		{"png bad IDAT crc", "png", with(goodPNG, func(b []byte) []byte { b[len(b)-13] ^= 1; return b }), ErrCorrupt, "libpng: IDAT: CRC error"},
		{"png ancillary chunk bad crc", "png", damage.BadTextChunk(goodPNG), ErrCorrupt, "libpng warns: tEXt: CRC error"},
		{"jpeg scan cut to a tenth", "jpeg", damage.CutScan(bigJPEG, 10), ErrCorrupt, "libjpeg warns: Corrupt JPEG data: premature end of data segment"},
		{"jpeg random scan bytes", "jpeg", damage.RandomScan(bigJPEG, 3), ErrCorrupt, "libjpeg"},
		{"jpeg progressive of 150 scans", "jpeg", progressiveJPEG(150), ErrCorrupt, "libjpeg: more than 100 scans"},
		{"jpeg truncated", "jpeg", goodJPEG[:len(goodJPEG)/2], ErrCorrupt, "EOI"},
		{"jpeg garbage between segments", "jpeg", with(goodJPEG, func(b []byte) []byte {
			end := 4 + int(binary.BigEndian.Uint16(b[4:])) // after the first segment
			return append(b[:end:end], append([]byte{0x12, 0x34}, b[end:]...)...)
		}), ErrCorrupt, "byte 0x12 at offset"},
		{"jpeg 12-bit", "jpeg", jpegSOF(0xC1, 12, 16, 16, 3), ErrDepthImage, "12-bit"},
		{"jpeg lossless", "jpeg", jpegSOF(0xC3, 8, 16, 16, 3), ErrUnsupportedEncoding, "SOF3"},
		{"jpeg cmyk", "jpeg", jpegSOF(0xC0, 8, 16, 16, 4), ErrUnsupportedEncoding, "4 components"},
		{"jpeg zero height", "jpeg", jpegSOF(0xC0, 8, 16, 0, 3), ErrBadSize, "is empty"},
		{"jpeg huge", "jpeg", jpegSOF(0xC0, 8, 65535, 65535, 3), ErrBadSize, "exceeds the limit"},
		{"jpeg no scan", "jpeg", jpegSOF(0xC0, 8, 16, 16, 3), ErrCorrupt, "libjpeg: Invalid JPEG file structure: missing SOS marker"},
		{"jpeg no frame header", "jpeg", []byte{0xFF, 0xD8, 0xFF, 0xFE, 0, 4, 'h', 'i', 0xFF, 0xD9}, ErrCorrupt, "unexpected marker 0xd9"},
		{"jpeg bad length", "jpeg", []byte{0xFF, 0xD8, 0xFF, 0xE0, 0xFF, 0xFF, 0xFF, 0xD9}, ErrCorrupt, "has length 65535"},
	}
	var dec Decoder
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := dec.DecodeCompressed(&CompressedImage{Format: c.format, Data: c.data})
			if !errors.Is(err, c.err) {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if !strings.Contains(err.Error(), c.detail) {
				t.Errorf("error %q does not say %q", err, c.detail)
			}
		})
	}
	for _, good := range []struct {
		format string
		data   []byte
	}{{"png", goodPNG}, {"jpeg", goodJPEG}, {"", goodJPEG}, {"bgr8; png compressed bgr8", goodPNG}, {"jpeg", append(append([]byte{}, goodJPEG...), 0, 0, 0)},
		{"png", damage.WithChunk(goodPNG, damage.Chunk("tEXt", []byte("k\x00v"), false))}} {
		f, err := dec.DecodeCompressed(&CompressedImage{Format: good.format, Data: good.data})
		if err != nil || f.Width != 32 || f.Height != 24 || f.Format != BGR8 {
			t.Errorf("valid %q image: frame %dx%d %v, error %v", good.format, f.Width, f.Height, f.Format, err)
		}
	}
}

// TestCorruptFramesPrintNothing: the codec libraries' messages about
// corrupt data come back in the error, never on the process's stderr
// (libjpeg under OpenCV printed one line per damaged frame).
func TestCorruptFramesPrintNothing(t *testing.T) {
	big := encodeJPEG(t, goImage(testPicture(320, 240), 320, 240, false), 90)
	png := encodePNG(t, goImage(testPicture(32, 24), 32, 24, false))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	saved, err := syscall.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Dup2(int(w.Fd()), 2); err != nil {
		t.Fatal(err)
	}
	var dec Decoder
	var errs []error
	for _, d := range [][]byte{damage.CutScan(big, 10), damage.RandomScan(big, 3), damage.BadTextChunk(png)} {
		_, err := dec.DecodeCompressed(&CompressedImage{Data: d})
		errs = append(errs, err)
	}
	if err := syscall.Dup2(saved, 2); err != nil {
		t.Fatal(err)
	}
	syscall.Close(saved)
	w.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("case %d: %v, want ErrCorrupt", i, err)
		}
	}
	if len(out) != 0 {
		t.Errorf("decoding printed %q on stderr", out)
	}
}

// TestProgressiveJPEGScans: a progressive JPEG decodes up to MaxJPEGScans
// scans and is refused beyond.
func TestProgressiveJPEGScans(t *testing.T) {
	var dec Decoder
	for _, scans := range []int{1, 2, MaxJPEGScans, MaxJPEGScans + 1, 1000} {
		f, err := dec.DecodeCompressed(&CompressedImage{Format: "jpeg", Data: progressiveJPEG(scans)})
		if scans <= MaxJPEGScans && (err != nil || f.Width != 8 || f.Height != 8) {
			t.Errorf("%d scans: %dx%d, %v", scans, f.Width, f.Height, err)
		}
		if scans > MaxJPEGScans && (!errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "more than 100 scans")) {
			t.Errorf("%d scans: %v, want refused for its scans", scans, err)
		}
	}
}

// TestDamagedJPEGStillDecodes records the limit of the corruption check:
// JPEG has no checksum, and damage to entropy-coded data that still decodes
// as valid codes draws no warning from libjpeg, so the frame decodes.
func TestDamagedJPEGStillDecodes(t *testing.T) {
	pic := testPicture(64, 48)
	data := encodeJPEG(t, goImage(pic, 64, 48, false), 90)
	for i := len(data) - 200; i < len(data)-150; i++ {
		if data[i] != 0xFF && data[i-1] != 0xFF {
			data[i] ^= 0x33
		}
	}
	var dec Decoder
	f, err := dec.DecodeCompressed(&CompressedImage{Format: "jpeg", Data: data})
	if err != nil {
		t.Fatalf("damaged scan data: %v", err)
	}
	if f.Width != 64 || f.Height != 48 {
		t.Errorf("decoded %dx%d", f.Width, f.Height)
	}
}

func TestDecodeImageDoesNotAllocate(t *testing.T) {
	msg := rawMessage(testPicture(320, 256), 320, 256, "bgr8", 0, rand.New(rand.NewPCG(1, 1)))
	if n := testing.AllocsPerRun(100, func() { _, _ = DecodeImage(msg) }); n != 0 {
		t.Errorf("%v allocations per raw frame", n)
	}
}

func TestDecodeCompressedDoesNotAllocate(t *testing.T) {
	pic := testPicture(64, 48)
	var dec Decoder
	for _, msg := range []*CompressedImage{
		{Format: "jpeg", Data: encodeJPEG(t, goImage(pic, 64, 48, false), 90)},
		{Format: "png", Data: encodePNG(t, goImage(pic, 64, 48, false))},
	} {
		if _, err := dec.DecodeCompressed(msg); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(20, func() { _, _ = dec.DecodeCompressed(msg) }); n != 0 {
			t.Errorf("%s: %v Go allocations per frame", msg.Format, n)
		}
	}
}
