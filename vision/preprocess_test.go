package vision

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"testing"

	"gocv.io/x/gocv"
)

// randomRGB returns an (h, w, 3) RGB frame of random bytes.
func randomRGB(r *rand.Rand, w, h int) Frame {
	pix := make([]byte, w*h*3)
	for i := range pix {
		pix[i] = byte(r.IntN(256))
	}
	return Frame{Width: w, Height: h, Stride: w * 3, Format: RGB8, Pix: pix}
}

// identityNorm is a configuration whose normalisation leaves values as
// they are, so the output is the resized image itself.
func identityNorm(w, h int, interp Interpolation) PreprocessConfig {
	c := DefaultPreprocess()
	c.Width, c.Height, c.Interpolation = w, h, interp
	c.Scale, c.Mean, c.Std = 1, [3]float32{}, [3]float32{1, 1, 1}
	return c
}

var cvInterp = map[Interpolation]gocv.InterpolationFlags{
	Bilinear: gocv.InterpolationLinear,
	Nearest:  gocv.InterpolationNearestNeighbor,
	Area:     gocv.InterpolationArea,
}

// opencvResize resizes an RGB8 frame with cv::resize on a float copy and
// returns it planar (3, h, w), the independent oracle for Preprocessor.
func opencvResize(t testing.TB, f Frame, w, h int, interp Interpolation) []float32 {
	t.Helper()
	src, err := gocv.NewMatFromBytes(f.Height, f.Width, gocv.MatTypeCV8UC3, f.Pix)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fsrc := gocv.NewMat()
	defer fsrc.Close()
	src.ConvertTo(&fsrc, gocv.MatTypeCV32FC3)
	dst := gocv.NewMat()
	defer dst.Close()
	gocv.Resize(fsrc, &dst, image.Pt(w, h), 0, 0, cvInterp[interp])
	data, err := dst.DataPtrFloat32()
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 3*w*h {
		t.Fatalf("OpenCV returned %d floats, want %d", len(data), 3*w*h)
	}
	out := make([]float32, 3*w*h)
	for i := range w * h {
		for c := range 3 {
			out[c*w*h+i] = data[3*i+c]
		}
	}
	return out
}

func maxAbsDiff(a, b []float32) (float64, int) {
	worst, at := 0.0, -1
	for i := range a {
		if d := math.Abs(float64(a[i]) - float64(b[i])); d > worst || math.IsNaN(d) {
			worst, at = d, i
		}
	}
	return worst, at
}

func TestResizeMatchesOpenCV(t *testing.T) {
	sizes := []struct{ sw, sh, dw, dh int }{
		{320, 256, 300, 300}, // RT-1: x shrinks, y grows
		{320, 256, 224, 224}, // both shrink, non-integer
		{200, 100, 100, 50},  // exactly half
		{90, 60, 30, 20},     // exactly a third
		{64, 48, 200, 150},   // both grow
		{97, 61, 40, 33},     // odd sizes
		{5, 3, 17, 11},       // tiny source
		{40, 30, 40, 30},     // same size
		{1, 1, 4, 3},         // one pixel
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, interp := range []Interpolation{Bilinear, Nearest, Area} {
		for _, s := range sizes {
			t.Run(fmt.Sprintf("%s/%dx%d-%dx%d", interp, s.sw, s.sh, s.dw, s.dh), func(t *testing.T) {
				f := randomRGB(r, s.sw, s.sh)
				p, err := NewPreprocessor(identityNorm(s.dw, s.dh, interp))
				if err != nil {
					t.Fatal(err)
				}
				got := make([]float32, p.InputLen())
				if err := p.Run(got, f); err != nil {
					t.Fatal(err)
				}
				want := opencvResize(t, f, s.dw, s.dh, interp)
				// Values are 0..255; float32 rounding of the two
				// summation orders stays far below 1e-3.
				if d, at := maxAbsDiff(got, want); d > 1e-3 {
					t.Errorf("max |Go - OpenCV| = %g at %d (got %v, want %v)", d, at, got[at], want[at])
				}
			})
		}
	}
}

func TestNormalisationHandComputed(t *testing.T) {
	// A 2x1 frame resized to its own size: only the normalisation acts.
	f := Frame{Width: 2, Height: 1, Stride: 6, Format: RGB8, Pix: []byte{0, 128, 255, 10, 20, 30}}
	for _, order := range []ChannelOrder{RGB, BGR} {
		c := DefaultPreprocess()
		c.Width, c.Height, c.ChannelOrder = 2, 1, order
		p, err := NewPreprocessor(c)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float32, 6)
		if err := p.Run(got, f); err != nil {
			t.Fatal(err)
		}
		mean := []float64{0.485, 0.456, 0.406}
		std := []float64{0.229, 0.224, 0.225}
		for ch := range 3 {
			src := ch // RGB: plane c is colour c
			if order == BGR {
				src = 2 - ch
			}
			for x := range 2 {
				v := float64(f.Pix[3*x+src])
				want := (v/255 - mean[ch]) / std[ch]
				if g := float64(got[ch*2+x]); math.Abs(g-want) > 1e-5 {
					t.Errorf("%s: plane %d pixel %d = %v, want (%v/255 - %v)/%v = %v", order, ch, x, g, v, mean[ch], std[ch], want)
				}
			}
		}
	}
}

func TestPreprocessorFollowsFrameSize(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	p, err := NewPreprocessor(identityNorm(30, 20, Bilinear))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, p.InputLen())
	for _, s := range [][2]int{{64, 48}, {50, 50}, {64, 48}} {
		f := randomRGB(r, s[0], s[1])
		if err := p.Run(got, f); err != nil {
			t.Fatal(err)
		}
		if d, at := maxAbsDiff(got, opencvResize(t, f, 30, 20, Bilinear)); d > 1e-3 {
			t.Errorf("%dx%d: max diff %g at %d", s[0], s[1], d, at)
		}
	}
}

func TestPreprocessRejectsBadFrames(t *testing.T) {
	p, err := NewPreprocessor(DefaultPreprocess())
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, p.InputLen())
	for _, f := range []Frame{
		{},
		{Width: 4, Height: 4, Stride: 12, Format: RGB8, Pix: make([]byte, 47)},
		{Width: 4, Height: 4, Stride: 8, Format: RGB8, Pix: make([]byte, 48)},
		{Width: 4, Height: 4, Stride: 12, Format: 0, Pix: make([]byte, 48)},
		{Width: 4, Height: 4, Stride: 1 << 62, Format: RGB8, Pix: make([]byte, 48)},
		{Width: 4, Height: 4, Stride: -12, Format: RGB8, Pix: make([]byte, 48)},
	} {
		if err := p.Run(dst, f); err == nil {
			t.Errorf("frame %dx%d stride %d format %v with %d bytes accepted", f.Width, f.Height, f.Stride, f.Format, len(f.Pix))
		}
	}
}

func TestPreprocessConfigJSON(t *testing.T) {
	c := DefaultPreprocess()
	c.Height, c.Width, c.Interpolation, c.ChannelOrder = 224, 256, Area, BGR
	back, err := ParsePreprocessConfig([]byte(c.JSON()))
	if err != nil {
		t.Fatal(err)
	}
	if back != c {
		t.Errorf("round trip changed the config:\n got %+v\nwant %+v", back, c)
	}
	partial, err := ParsePreprocessConfig([]byte(`{"height": 224, "width": 224}`))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultPreprocess()
	want.Height, want.Width = 224, 224
	if partial != want {
		t.Errorf("omitted fields not defaulted: %+v", partial)
	}
	for _, bad := range []string{
		`{"height": 0}`,
		`{"interpolation": "bicubic"}`,
		`{"channel_order": "rbg"}`,
		`{"chanel_order": "bgr"}`,
		`{"std": [0.2, 0, 0.2]}`,
		`{"scale": 0}`,
		`{"layout": "NHWC"}`,
		`{"aspect": "pad"}`,
		`{"height": 300} {}`,
		`[1]`,
	} {
		if _, err := ParsePreprocessConfig([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestPreprocessDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	f := randomRGB(r, 320, 256)
	for _, interp := range []Interpolation{Bilinear, Nearest, Area} {
		c := DefaultPreprocess()
		c.Interpolation = interp
		p, err := NewPreprocessor(c)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]float32, p.InputLen())
		if err := p.Run(dst, f); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(10, func() { _ = p.Run(dst, f) }); n != 0 {
			t.Errorf("%s: %v allocations per frame", interp, n)
		}
	}
}
