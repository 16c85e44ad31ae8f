package node

import (
	"bytes"
	"image"
	"image/jpeg"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/vision"
)

// FuzzInputsFrames offers arbitrary raw and compressed frames to the
// subscriber side: nothing panics, a refused frame is counted and leaves
// the slot as it was, an accepted raw frame is readable, and an accepted
// compressed one passed the header checks (no OpenCV call happens here).
func FuzzInputsFrames(f *testing.F) {
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, image.NewGray(image.Rect(0, 0, 8, 6)), nil); err != nil {
		f.Fatal(err)
	}
	f.Add(uint32(2), uint32(3), "rgb8", uint32(9), make([]byte, 18), "jpeg", jpg.Bytes())
	f.Add(uint32(2), uint32(2), "mono8", uint32(4), make([]byte, 8), "png", []byte("\x89PNG\r\n\x1a\n"))
	f.Add(uint32(1), uint32(1), "16UC1", uint32(2), make([]byte, 2), "", jpg.Bytes()[:20])
	f.Add(uint32(0), uint32(5), "bgra8", uint32(0), []byte{}, "bgr8; jpeg compressed bgr8", []byte{0xff, 0xd8, 0xff})
	f.Add(uint32(1<<20), uint32(1<<20), "rgb8", uint32(3<<20), make([]byte, 16), "tiff", []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, h, w uint32, enc string, step uint32, data []byte, format string, comp []byte) {
		in := NewInputs(ros.NewManualClock(time.Unix(100, 0)))
		err := in.PutImage(&vision.Image{Height: h, Width: w, Encoding: enc, Step: step, Data: data}, time.Time{})
		got := in.takeFrame()
		switch {
		case err != nil && (got != nil || in.framesBad.Load() != 1):
			t.Fatalf("refused raw frame (%v) reached the slot or was not counted", err)
		case err == nil && (got == nil || got.frame.Validate() != nil):
			t.Fatalf("accepted raw frame %dx%d %q step %d is not readable", w, h, enc, step)
		}
		in.framesBad.Store(0)
		err = in.PutCompressed(&vision.CompressedImage{Format: format, Data: comp}, time.Unix(99, 0))
		got = in.takeFrame()
		switch {
		case err != nil && (got != nil || in.framesBad.Load() != 1):
			t.Fatalf("refused compressed frame (%v) reached the slot or was not counted", err)
		case err == nil && (got == nil || got.compressed == nil || !got.stamped):
			t.Fatalf("accepted compressed frame missing from the slot: %+v", got)
		}
	})
}
