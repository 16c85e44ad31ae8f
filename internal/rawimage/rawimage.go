// Package rawimage knows the raw sensor_msgs/Image encodings the project
// reads: each one's bytes per pixel, and its conversion to rgb8 with the
// arithmetic of OpenCV 4.6's cvtColor, which cv_bridge uses (convert.go).
// It is plain Go, so that the node's vision package (which checks the
// conversions against OpenCV byte for byte) and the simulator's bag reader
// share one table.
package rawimage

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Errors of Lookup; the wrapped message says why the encoding is refused.
var (
	// ErrUnsupported: an encoding this package does not read (YUV 4:2:0,
	// nv12, multi-channel 8UC3 ...).
	ErrUnsupported = errors.New("unsupported image encoding")
	// ErrDepth: a 16-bit, 32-bit or 64-bit encoding, typically a depth
	// image (16UC1, mono16, 32FC1, bayer_rggb16 ...).
	ErrDepth = errors.New("depth or high-bit-depth image")
)

// Encoding is how a raw encoding lays out its pixels: rows of Step bytes
// (Step >= Width·BytesPerPixel), 8-bit samples.
type Encoding struct {
	Name          string
	BytesPerPixel int
	// Pairs: 4:2:2, two pixels share U and V, so the width is even.
	Pairs bool
	toRGB func(dst, src []byte, step, w, h int)
}

// ToRGB converts h rows of step bytes of src into dst, (h, w, 3) RGB,
// tight. src holds at least (h-1)·step + w·BytesPerPixel bytes, dst
// 3·w·h, and w is even for Pairs; ToRGB does not allocate.
func (e Encoding) ToRGB(dst, src []byte, step, w, h int) { e.toRGB(dst, src, step, w, h) }

// encodings are the encodings this package reads, by name.
var encodings = map[string]Encoding{
	"rgb8":        {"rgb8", 3, false, rgb8ToRGB},
	"bgr8":        {"bgr8", 3, false, bgr8ToRGB},
	"rgba8":       {"rgba8", 4, false, rgba8ToRGB},
	"bgra8":       {"bgra8", 4, false, bgra8ToRGB},
	"mono8":       {"mono8", 1, false, mono8ToRGB},
	"yuv422":      {"yuv422", 2, true, uyvyToRGB},
	"yuv422_yuy2": {"yuv422_yuy2", 2, true, yuy2ToRGB},
	"bayer_rggb8": {"bayer_rggb8", 1, false, bayerRGGBToRGB},
	"bayer_bggr8": {"bayer_bggr8", 1, false, bayerBGGRToRGB},
	"bayer_gbrg8": {"bayer_gbrg8", 1, false, bayerGBRGToRGB},
	"bayer_grbg8": {"bayer_grbg8", 1, false, bayerGRBGToRGB},
}

// Names lists the encodings Lookup accepts, sorted.
func Names() []string {
	names := make([]string, 0, len(encodings))
	for n := range encodings {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the encoding called name (ROS's exact, lower-case name),
// or an error wrapping ErrDepth or ErrUnsupported that says why it is
// refused and what to publish instead. It does not allocate unless it
// returns an error.
func Lookup(name string) (Encoding, error) {
	if e, ok := encodings[name]; ok {
		return e, nil
	}
	return Encoding{}, problem(name)
}

// problem explains why an encoding is refused.
func problem(enc string) error {
	supported := strings.Join(Names(), ", ")
	e := strings.ToLower(enc)
	_, lowerKnown := encodings[e]
	switch {
	case IsDepth(e):
		return fmt.Errorf("%w: encoding %q has more than 8 bits per channel; the policy takes 8-bit colour or grey frames (%s)", ErrDepth, enc, supported)
	case enc != e && lowerKnown:
		return fmt.Errorf("%w: encoding %q: ROS encodings are lower case, use %q", ErrUnsupported, enc, e)
	case strings.HasPrefix(e, "bayer_"):
		return fmt.Errorf("%w: encoding %q is not an 8-bit Bayer mosaic of a known pattern; decoded are bayer_rggb8, bayer_bggr8, bayer_gbrg8 and bayer_grbg8 (supported: %s)", ErrUnsupported, enc, supported)
	case e == "uyvy" || e == "yuv422_uyvy":
		return fmt.Errorf("%w: encoding %q: ROS calls UYVY (U0 Y0 V0 Y1) %q", ErrUnsupported, enc, "yuv422")
	case e == "yuyv" || e == "yuy2":
		return fmt.Errorf("%w: encoding %q: ROS calls YUYV (Y0 U0 Y1 V0) %q", ErrUnsupported, enc, "yuv422_yuy2")
	case strings.HasPrefix(e, "yuv") || strings.HasPrefix(e, "nv") || e == "i420" || e == "iyuv" || e == "yv12" || e == "yvyu":
		return fmt.Errorf("%w: encoding %q: of the YUV layouts only 4:2:2 yuv422 (UYVY) and yuv422_yuy2 (YUYV) are decoded; publish one of them or rgb8 (supported: %s)", ErrUnsupported, enc, supported)
	case e == "8uc1":
		return fmt.Errorf("%w: encoding %q does not say it is grey; publish it as mono8 (supported: %s)", ErrUnsupported, enc, supported)
	case strings.HasPrefix(e, "8uc") || strings.HasPrefix(e, "8sc"):
		return fmt.Errorf("%w: encoding %q does not say its channel order; publish rgb8, bgr8, rgba8 or bgra8 (supported: %s)", ErrUnsupported, enc, supported)
	case enc == "":
		return fmt.Errorf("%w: empty encoding (supported: %s)", ErrUnsupported, supported)
	}
	return fmt.Errorf("%w: encoding %q (supported: %s)", ErrUnsupported, enc, supported)
}

// IsDepth reports whether a lower-case ROS encoding has samples wider
// than 8 bits: mono16, rgb16 ..., 16UC1, 32FC1, bayer_rggb16 ...
func IsDepth(e string) bool {
	switch e {
	case "mono16", "rgb16", "bgr16", "rgba16", "bgra16":
		return true
	}
	for _, p := range []string{"16u", "16s", "32s", "32f", "64f"} {
		if strings.HasPrefix(e, p) {
			return true
		}
	}
	return strings.HasPrefix(e, "bayer_") && strings.HasSuffix(e, "16")
}
