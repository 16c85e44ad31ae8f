package vision

import (
	"math/rand/v2"
	"testing"
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
	b.Run("jpeg/decode-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := dec.DecodeCompressed(jpegMsg); err != nil {
				b.Fatal(err)
			}
		}
	})
}
