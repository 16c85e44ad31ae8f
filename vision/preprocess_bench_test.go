package vision

import (
	"math/rand/v2"
	"testing"

	"gocv.io/x/gocv"
)

// Decode + preprocess of one 256x320 camera frame to the 300x300 RT-1
// input, from each kind of message. Run with -benchmem: the raw path
// allocates nothing per frame.

func benchmarkDecodePreprocess(b *testing.B, decode func() (Frame, error), cfg PreprocessConfig) {
	p, err := NewPreprocessor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]float32, p.InputLen())
	if f, err := decode(); err != nil || p.Run(dst, f) != nil { // warm-up: sizes the resize tables
		b.Fatal("warm-up failed")
	}
	b.ReportAllocs()
	for b.Loop() {
		f, err := decode()
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Run(dst, f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodePreprocess(b *testing.B) {
	const w, h = 320, 256
	pic := testPicture(w, h)
	r := rand.New(rand.NewPCG(1, 1))
	rgb := rawMessage(pic, w, h, "rgb8", 0, r)
	bgra := rawMessage(pic, w, h, "bgra8", 64, r)
	jpegMsg := &CompressedImage{Format: "jpeg", Data: encodeJPEG(b, goImage(pic, w, h, false), 90)}
	pngMsg := &CompressedImage{Format: "png", Data: encodePNG(b, goImage(pic, w, h, false))}
	var dec Decoder
	for _, interp := range []Interpolation{Bilinear, Area, Nearest} {
		cfg := DefaultPreprocess()
		cfg.Interpolation = interp
		b.Run("rgb8/"+string(interp), func(b *testing.B) {
			benchmarkDecodePreprocess(b, func() (Frame, error) { return DecodeImage(rgb) }, cfg)
		})
	}
	cfg := DefaultPreprocess()
	b.Run("bgra8-padded/bilinear", func(b *testing.B) {
		benchmarkDecodePreprocess(b, func() (Frame, error) { return DecodeImage(bgra) }, cfg)
	})
	b.Run("jpeg/bilinear", func(b *testing.B) {
		benchmarkDecodePreprocess(b, func() (Frame, error) { return dec.DecodeCompressed(jpegMsg) }, cfg)
	})
	b.Run("png/bilinear", func(b *testing.B) {
		benchmarkDecodePreprocess(b, func() (Frame, error) { return dec.DecodeCompressed(pngMsg) }, cfg)
	})
	// The decoder against OpenCV's imdecode (the same libjpeg-turbo and
	// libpng) on the same data: the ratio is the cost of decoding straight
	// into the decoder's buffer with the warnings caught.
	for _, msg := range []*CompressedImage{jpegMsg, pngMsg} {
		b.Run(msg.Format+"/decode-only", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := dec.DecodeCompressed(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(msg.Format+"/opencv-imdecode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m, err := gocv.IMDecode(msg.Data, gocv.IMReadColor|gocv.IMReadIgnoreOrientation)
				if err != nil || m.Empty() {
					b.Fatal(err)
				}
				m.Close()
			}
		})
	}
}
