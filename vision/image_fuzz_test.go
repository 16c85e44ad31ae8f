package vision

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/damage"
	"github.com/ttmrobot/ttm/internal/rawimage"
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

// FuzzDecodeImage: any message is refused with an error of a known kind,
// or decodes to a valid frame of its size that preprocesses; converted
// frames (yuv422, Bayer) come out the same from DecodeImage and a reused
// Decoder, and do not depend on the row padding (nothing outside the
// pixels is read).
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
	for _, enc := range []string{"yuv422", "yuv422_yuy2"} {
		f.Add(uint32(4), uint32(6), uint32(12), enc, toYUV422(pic, 6, 4, enc))
		f.Add(uint32(4), uint32(6), uint32(15), enc, withStep(toYUV422(pic, 6, 4, enc), 12, 4, 3, r))
	}
	f.Add(uint32(4), uint32(5), uint32(10), "yuv422", make([]byte, 40))
	for _, enc := range []string{"bayer_rggb8", "bayer_bggr8", "bayer_gbrg8", "bayer_grbg8"} {
		f.Add(uint32(4), uint32(6), uint32(6), enc, mosaic(pic, 6, 4, enc[6:10]))
		f.Add(uint32(3), uint32(5), uint32(7), enc, make([]byte, 21))
		f.Add(uint32(2), uint32(2), uint32(2), enc, []byte{1, 2, 3, 4})
	}
	f.Add(uint32(2), uint32(2), uint32(4), "16UC1", make([]byte, 8))
	f.Add(uint32(2), uint32(2), uint32(4), "bayer_rggb16", make([]byte, 8))
	f.Add(uint32(2), uint32(2), uint32(2), "nv12", make([]byte, 6))
	f.Add(uint32(1), uint32(1), uint32(3), "rgb8", []byte{1, 2})
	f.Add(uint32(0), uint32(0), uint32(0), "", []byte(nil))
	var dec Decoder // reused across inputs, as the node's worker does
	f.Fuzz(func(t *testing.T, height, width, step uint32, encoding string, data []byte) {
		msg := &Image{Height: height, Width: width, Step: step, Encoding: encoding, Data: data}
		info, inspectErr := InspectImage(msg)
		fr, err := DecodeImage(msg)
		if (err == nil) != (inspectErr == nil) {
			t.Fatalf("InspectImage says %v, DecodeImage %v", inspectErr, err)
		}
		if err != nil {
			if !errors.Is(err, ErrBadSize) && !errors.Is(err, ErrUnsupportedEncoding) && !errors.Is(err, ErrDepthImage) {
				t.Fatalf("error of no known kind: %v", err)
			}
			return
		}
		if fr.Width != int(width) || fr.Height != int(height) || len(data) != int(step)*int(height) ||
			info.Width != fr.Width || info.Height != fr.Height {
			t.Fatalf("accepted %dx%d step %d with %d bytes as a %dx%d frame (inspected %+v)", width, height, step, len(data), fr.Width, fr.Height, info)
		}
		if err := fr.Validate(); err != nil {
			t.Fatalf("decoded frame does not validate: %v", err)
		}
		p, dst := fuzzPreprocessor(t)
		if err := p.Run(dst, fr); err != nil {
			t.Fatalf("preprocess a decoded frame: %v", err)
		}
		if !info.Converted {
			return
		}
		if fr.Format != RGB8 || fr.Stride != 3*fr.Width {
			t.Fatalf("%s converted to %v with stride %d", encoding, fr.Format, fr.Stride)
		}
		again, err := dec.DecodeImage(msg)
		if err != nil || !bytes.Equal(again.Pix, fr.Pix) {
			t.Fatalf("a reused Decoder gives another frame (%v)", err)
		}
		enc, _ := rawimage.Lookup(encoding)
		if rowBytes := int(width) * enc.BytesPerPixel; int(step) > rowBytes {
			flipped := bytes.Clone(data)
			for y := range int(height) {
				for i := y*int(step) + rowBytes; i < (y+1)*int(step); i++ {
					flipped[i] ^= 0xFF
				}
			}
			other, err := DecodeImage(&Image{Height: height, Width: width, Step: step, Encoding: encoding, Data: flipped})
			if err != nil || !bytes.Equal(other.Pix, fr.Pix) {
				t.Fatalf("the row padding changes the frame (%v)", err)
			}
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
