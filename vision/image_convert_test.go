package vision

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gocv.io/x/gocv"
)

// convertedEncodings are the encodings DecodeImage converts, with the
// OpenCV conversions cv_bridge uses for them (to RGB and to BGR), and
// their bytes per pixel. gocv names only the Bayer*2BGR codes; the *2RGB
// ones are OpenCV's aliases: BayerBG2RGB = BayerRG2BGR (48), BayerRG2RGB =
// BayerBG2BGR (46), BayerGR2RGB = BayerGB2BGR (47), BayerGB2RGB =
// BayerGR2BGR (49).
var convertedEncodings = []struct {
	enc      string
	rgb, bgr gocv.ColorConversionCode
	bpp      int
}{
	{"yuv422", gocv.ColorYUVToRGBUYVY, gocv.ColorYUVToBGRUYVY, 2},
	{"yuv422_yuy2", gocv.ColorYUVToRGBYUY2, gocv.ColorYUVToBGRYUY2, 2},
	{"bayer_rggb8", gocv.ColorConversionCode(48), gocv.ColorBayerBGToBGR, 1},
	{"bayer_bggr8", gocv.ColorConversionCode(46), gocv.ColorBayerRGToBGR, 1},
	{"bayer_gbrg8", gocv.ColorConversionCode(47), gocv.ColorBayerGRToBGR, 1},
	{"bayer_grbg8", gocv.ColorConversionCode(49), gocv.ColorBayerGBToBGR, 1},
}

// opencvCvtColor converts a tight (h, w, bpp) image with cv::cvtColor and
// returns the (h, w, 3) result.
func opencvCvtColor(t testing.TB, src []byte, w, h, bpp int, code gocv.ColorConversionCode) []byte {
	t.Helper()
	typ := gocv.MatTypeCV8UC1
	if bpp == 2 {
		typ = gocv.MatTypeCV8UC2
	}
	m, err := gocv.NewMatFromBytes(h, w, typ, src)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	dst := gocv.NewMat()
	defer dst.Close()
	gocv.CvtColor(m, &dst, code)
	if dst.Rows() != h || dst.Cols() != w || dst.Channels() != 3 {
		t.Fatalf("OpenCV returned %dx%d with %d channels for %dx%d", dst.Cols(), dst.Rows(), dst.Channels(), w, h)
	}
	return append([]byte(nil), dst.ToBytes()...)
}

// withStep lays tight rows of rowBytes out with pad extra bytes of noise
// at the end of each.
func withStep(tight []byte, rowBytes, h, pad int, r *rand.Rand) []byte {
	step := rowBytes + pad
	data := make([]byte, step*h)
	for i := range data {
		data[i] = byte(r.IntN(256))
	}
	for y := range h {
		copy(data[y*step:y*step+rowBytes], tight[y*rowBytes:(y+1)*rowBytes])
	}
	return data
}

// mosaic samples an RGB picture (h, w, 3) through a Bayer pattern ("rggb"
// ...: the top-left 2x2 cell row by row).
func mosaic(rgb []byte, w, h int, pattern string) []byte {
	ch := map[byte]int{'r': 0, 'g': 1, 'b': 2}
	out := make([]byte, w*h)
	for y := range h {
		for x := range w {
			out[y*w+x] = rgb[3*(y*w+x)+ch[pattern[2*(y&1)+(x&1)]]]
		}
	}
	return out
}

// toYUV422 encodes an RGB picture (h, w, 3), w even, as 4:2:2 in the byte
// order of enc, with BT.601 limited-range coefficients (any plausible
// content will do: the conversion back is what is tested).
func toYUV422(rgb []byte, w, h int, enc string) []byte {
	out := make([]byte, 2*w*h)
	luma := func(p []byte) byte {
		return byte(16 + (66*int(p[0])+129*int(p[1])+25*int(p[2])+128)>>8)
	}
	for i := 0; i < w*h; i += 2 {
		p0, p1 := rgb[3*i:3*i+3], rgb[3*i+3:3*i+6]
		r, g, b := (int(p0[0])+int(p1[0]))/2, (int(p0[1])+int(p1[1]))/2, (int(p0[2])+int(p1[2]))/2
		u := byte(128 + (-38*r-74*g+112*b+128)>>8)
		v := byte(128 + (112*r-94*g-18*b+128)>>8)
		o := out[2*i : 2*i+4]
		if enc == "yuv422" {
			o[0], o[1], o[2], o[3] = u, luma(p0), v, luma(p1)
		} else {
			o[0], o[1], o[2], o[3] = luma(p0), u, luma(p1), v
		}
	}
	return out
}

// firstDiff returns the largest |a[i]-b[i]| and the first index where it
// occurs, or 0, -1 when a and b are equal.
func firstDiff(a, b []byte) (int, int) {
	worst, at := 0, -1
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		if d > worst {
			worst, at = d, i
		}
	}
	return worst, at
}

// TestConvertMatchesOpenCV: every converted encoding, on random and
// structured content of many sizes (the 2x2 minimum, odd heights, odd
// widths for Bayer, widths that do not fill OpenCV's SIMD blocks, 640x480)
// and with row padding, gives exactly the bytes of cv::cvtColor, to RGB and
// (channels reversed) to BGR.
func TestConvertMatchesOpenCV(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 3))
	sizes := [][2]int{{2, 1}, {2, 2}, {3, 3}, {4, 3}, {2, 7}, {5, 4}, {6, 5}, {17, 9}, {34, 21}, {70, 11}, {127, 33}, {640, 480}}
	var dec Decoder
	for _, ce := range convertedEncodings {
		for _, sz := range sizes {
			w, h := sz[0], sz[1]
			if ce.bpp == 2 && w%2 != 0 {
				continue
			}
			pic := testPicture(w, h)
			random := make([]byte, w*h*ce.bpp)
			for i := range random {
				random[i] = byte(r.IntN(256))
			}
			extremes := make([]byte, w*h*ce.bpp) // 0 and 255 in a checkerboard: saturation, overflow
			for i := range extremes {
				if (i/ce.bpp+i/(w*ce.bpp))%2 == 0 {
					extremes[i] = 255
				}
			}
			var structured []byte
			if ce.bpp == 2 {
				structured = toYUV422(pic, w, h, ce.enc)
			} else {
				structured = mosaic(pic, w, h, ce.enc[6:10])
			}
			for _, content := range []struct {
				name string
				data []byte
			}{{"random", random}, {"structured", structured}, {"extremes", extremes}} {
				wantRGB := opencvCvtColor(t, content.data, w, h, ce.bpp, ce.rgb)
				wantBGR := opencvCvtColor(t, content.data, w, h, ce.bpp, ce.bgr)
				for i := 0; i < len(wantBGR); i += 3 {
					wantBGR[i], wantBGR[i+2] = wantBGR[i+2], wantBGR[i]
				}
				for _, pad := range []int{0, 1, 6} {
					name := fmt.Sprintf("%s %dx%d %s pad %d", ce.enc, w, h, content.name, pad)
					msg := &Image{Width: uint32(w), Height: uint32(h), Encoding: ce.enc, Step: uint32(w*ce.bpp + pad),
						Data: withStep(content.data, w*ce.bpp, h, pad, r)}
					f, err := dec.DecodeImage(msg)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if f.Format != RGB8 || f.Stride != 3*w || len(f.Pix) != 3*w*h {
						t.Fatalf("%s: frame %v stride %d with %d bytes", name, f.Format, f.Stride, len(f.Pix))
					}
					if d, at := firstDiff(f.Pix, wantRGB); d != 0 {
						t.Errorf("%s: differs from OpenCV's *2RGB by %d at pixel (%d, %d) channel %d", name, d, at/3%w, at/3/w, at%3)
					}
					if d, at := firstDiff(f.Pix, wantBGR); d != 0 {
						t.Errorf("%s: differs from OpenCV's *2BGR by %d at pixel (%d, %d) channel %d", name, d, at/3%w, at/3/w, at%3)
					}
				}
			}
		}
	}
}

func TestInspectImage(t *testing.T) {
	for _, c := range []struct {
		msg       *Image
		converted bool
	}{
		{&Image{Width: 4, Height: 2, Encoding: "rgb8", Step: 12, Data: make([]byte, 24)}, false},
		{&Image{Width: 4, Height: 2, Encoding: "mono8", Step: 5, Data: make([]byte, 10)}, false},
		{&Image{Width: 4, Height: 2, Encoding: "yuv422", Step: 8, Data: make([]byte, 16)}, true},
		{&Image{Width: 4, Height: 2, Encoding: "bayer_gbrg8", Step: 4, Data: make([]byte, 8)}, true},
	} {
		info, err := InspectImage(c.msg)
		if err != nil {
			t.Fatalf("%s: %v", c.msg.Encoding, err)
		}
		if info != (ImageInfo{Width: 4, Height: 2, Converted: c.converted}) {
			t.Errorf("%s: %+v", c.msg.Encoding, info)
		}
	}
	if _, err := InspectImage(&Image{Width: 3, Height: 2, Encoding: "yuv422_yuy2", Step: 6, Data: make([]byte, 12)}); !errors.Is(err, ErrBadSize) || !strings.Contains(err.Error(), "width 3 is odd") {
		t.Errorf("odd yuv422_yuy2 width: %v", err)
	}
}

// TestConvertDoesNotAllocate: once the decoder's buffer has the frame's
// size, converting a frame allocates nothing, and neither does the
// arrival check.
func TestConvertDoesNotAllocate(t *testing.T) {
	const w, h = 640, 480
	r := rand.New(rand.NewPCG(5, 5))
	var dec Decoder
	for _, ce := range convertedEncodings {
		data := make([]byte, w*h*ce.bpp)
		for i := range data {
			data[i] = byte(r.IntN(256))
		}
		msg := &Image{Width: w, Height: h, Encoding: ce.enc, Step: uint32(w * ce.bpp), Data: data}
		if _, err := dec.DecodeImage(msg); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(10, func() { _, _ = dec.DecodeImage(msg) }); n != 0 {
			t.Errorf("%s: %v allocations per frame", ce.enc, n)
		}
		if n := testing.AllocsPerRun(10, func() { _, _ = InspectImage(msg) }); n != 0 {
			t.Errorf("%s: InspectImage makes %v allocations", ce.enc, n)
		}
	}
}

// BenchmarkConvert640x480: the conversion of a 640x480 frame alone, and
// followed by the default preprocessing; rgb8, which the preprocessing
// reads as it is, for comparison.
func BenchmarkConvert640x480(b *testing.B) {
	const w, h = 640, 480
	r := rand.New(rand.NewPCG(5, 5))
	pic := testPicture(w, h)
	msgs := []*Image{rawMessage(pic, w, h, "rgb8", 0, r)}
	for _, ce := range convertedEncodings {
		var data []byte
		if ce.bpp == 2 {
			data = toYUV422(pic, w, h, ce.enc)
		} else {
			data = mosaic(pic, w, h, ce.enc[6:10])
		}
		msgs = append(msgs, &Image{Width: w, Height: h, Encoding: ce.enc, Step: uint32(w * ce.bpp), Data: data})
	}
	var dec Decoder
	for _, msg := range msgs {
		b.Run(msg.Encoding+"/decode", func(b *testing.B) {
			if _, err := dec.DecodeImage(msg); err != nil { // sizes the buffer
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := dec.DecodeImage(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(msg.Encoding+"/decode+preprocess", func(b *testing.B) {
			benchmarkDecodePreprocess(b, func() (Frame, error) { return dec.DecodeImage(msg) }, DefaultPreprocess())
		})
	}
}
