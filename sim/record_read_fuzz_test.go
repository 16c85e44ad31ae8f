package sim

import (
	"testing"

	"github.com/ttmrobot/ttm/internal/rosbag"
)

// FuzzRawToRGB: whatever a bag's raw frame says of itself, the reader
// either refuses it or returns an rgb8 frame of its size, without
// panicking or reading beyond the data.
func FuzzRawToRGB(f *testing.F) {
	for _, enc := range []string{"rgb8", "bgra8", "mono8", "yuv422", "yuv422_yuy2", "bayer_gbrg8", "16UC1", ""} {
		f.Add(enc, uint32(3), uint32(4), uint32(16), make([]byte, 48))
	}
	f.Add("yuv422", uint32(2), uint32(3), uint32(6), make([]byte, 11))
	f.Fuzz(func(t *testing.T, enc string, h, w, step uint32, data []byte) {
		rgb, err := rawToRGB(&rosbag.Image{Height: h, Width: w, Encoding: enc, Step: step, Data: data})
		if err != nil {
			return
		}
		if len(rgb) != 3*int(h)*int(w) {
			t.Fatalf("%dx%d %s frame gave %d bytes", h, w, enc, len(rgb))
		}
	})
}
