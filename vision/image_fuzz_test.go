package vision

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/damage"
)

// fuzzPreprocessor is small so that fuzzing spends its time in the decoders.
func fuzzPreprocessor(t *testing.T) (*Preprocessor, []float32) {
	c := DefaultPreprocess()
	c.Width, c.Height = 8, 6
	p, err := NewPreprocessor(c)
	if err != nil {
		t.Fatal(err)
	}
	return p, make([]float32, p.InputLen())
}

func FuzzDecodeImage(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 1))
	pic := testPicture(6, 4)
	for _, enc := range []string{"rgb8", "bgr8", "rgba8", "bgra8"} {
		for _, pad := range []int{0, 3} {
			m := rawMessage(pic, 6, 4, enc, pad, r)
			f.Add(m.Height, m.Width, m.Step, m.Encoding, m.Data)
		}
	}
	g := rawMessage(expand(grey(pic)), 6, 4, "mono8", 2, r)
	f.Add(g.Height, g.Width, g.Step, g.Encoding, g.Data)
	f.Add(uint32(2), uint32(2), uint32(4), "16UC1", make([]byte, 8))
	f.Add(uint32(1), uint32(1), uint32(3), "rgb8", []byte{1, 2})
	f.Add(uint32(0), uint32(0), uint32(0), "", []byte(nil))
	f.Fuzz(func(t *testing.T, height, width, step uint32, encoding string, data []byte) {
		msg := &Image{Height: height, Width: width, Step: step, Encoding: encoding, Data: data}
		fr, err := DecodeImage(msg)
		if err != nil {
			if !errors.Is(err, ErrBadSize) && !errors.Is(err, ErrUnsupportedEncoding) && !errors.Is(err, ErrDepthImage) {
				t.Fatalf("error of no known kind: %v", err)
			}
			return
		}
		if fr.Width != int(width) || fr.Height != int(height) || len(data) != int(step)*int(height) {
			t.Fatalf("accepted %dx%d step %d with %d bytes as a %dx%d frame", width, height, step, len(data), fr.Width, fr.Height)
		}
		if err := fr.Validate(); err != nil {
			t.Fatalf("decoded frame does not validate: %v", err)
		}
		p, dst := fuzzPreprocessor(t)
		if err := p.Run(dst, fr); err != nil {
			t.Fatalf("preprocess a decoded frame: %v", err)
		}
	})
}

// FuzzDecodeCompressed runs libjpeg and libpng on whatever passes the Go
// checks: a crash here would abort the process, and fail the fuzzer.
func FuzzDecodeCompressed(f *testing.F) {
	pic := testPicture(12, 8)
	colourPNG := encodePNG(f, goImage(pic, 12, 8, false))
	greyPNG := encodePNG(f, goImage(expand(grey(pic)), 12, 8, true))
	colourJPEG := encodeJPEG(f, goImage(pic, 12, 8, false), 90)
	greyJPEG := encodeJPEG(f, goImage(expand(grey(pic)), 12, 8, true), 90)
	for _, d := range [][]byte{colourPNG, greyPNG, colourJPEG, greyJPEG} {
		f.Add("", d)
		f.Add("", d[:len(d)*2/3])
	}
	f.Add("png", colourPNG)
	f.Add("rgb8; jpeg compressed bgr8", colourJPEG)
	f.Add("16UC1; compressedDepth png", greyPNG)
	f.Add("jpeg", jpegSOF(0xC0, 8, 16, 16, 3))
	f.Add("png", pngWithIHDR(16, 16, 8, 6))
	f.Add("jpeg", progressiveJPEG(3))
	f.Add("png", damage.BadTextChunk(colourPNG))
	f.Fuzz(func(t *testing.T, format string, data []byte) {
		var dec Decoder
		msg := &CompressedImage{Format: format, Data: data}
		fr, err := dec.DecodeCompressed(msg)
		if err != nil {
			if !errors.Is(err, ErrBadSize) && !errors.Is(err, ErrUnsupportedEncoding) && !errors.Is(err, ErrDepthImage) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error of no known kind: %v", err)
			}
			return
		}
		info, err := InspectCompressed(msg)
		if err != nil {
			t.Fatalf("decoded data fails inspection: %v", err)
		}
		if fr.Width != info.Width || fr.Height != info.Height || fr.Format != BGR8 {
			t.Fatalf("header %dx%d, frame %dx%d %v", info.Width, info.Height, fr.Width, fr.Height, fr.Format)
		}
		p, dst := fuzzPreprocessor(t)
		if err := p.Run(dst, fr); err != nil {
			t.Fatalf("preprocess a decoded frame: %v", err)
		}
	})
}
