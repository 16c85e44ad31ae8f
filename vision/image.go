package vision

import (
	"errors"
	"fmt"

	"github.com/ttmrobot/ttm/internal/rawimage"
)

// Errors returned by the decoders; the wrapped message says exactly what is
// wrong with the frame. Test with errors.Is.
var (
	// ErrUnsupportedEncoding: an encoding or compressed format this package
	// does not decode (YUV 4:2:0, nv12, multi-channel 8UC3 ...).
	ErrUnsupportedEncoding = rawimage.ErrUnsupported
	// ErrDepthImage: a 16-bit, 32-bit or 64-bit encoding, typically a depth
	// image (16UC1, mono16, 32FC1, bayer_rggb16, compressedDepth ...).
	ErrDepthImage = rawimage.ErrDepth
	// ErrBadSize: dimensions, step and byte count do not agree, or exceed
	// MaxSide / MaxPixels.
	ErrBadSize = errors.New("inconsistent image size")
	// ErrCorrupt: compressed data that is malformed, truncated, or that
	// OpenCV could not decode.
	ErrCorrupt = errors.New("corrupt image data")
)

// Limits on a frame's dimensions, well inside OpenCV's own limits
// (2^20 per side, 2^30 pixels), which throw (and so abort) when exceeded.
const (
	MaxSide   = 8192
	MaxPixels = 1 << 24
)

// Image mirrors sensor_msgs/Image (the header is not needed here).
type Image struct {
	Height      uint32 // rows
	Width       uint32 // columns
	Encoding    string // see DecodeImage
	IsBigendian uint8  // byte order of multi-byte pixels; irrelevant for 8-bit encodings
	Step        uint32 // bytes from the start of one row to the next
	Data        []byte // Step * Height bytes
}

// CompressedImage mirrors sensor_msgs/CompressedImage.
type CompressedImage struct {
	// Format is "jpeg", "png", or image_transport's long form such as
	// "bgr8; jpeg compressed bgr8". It may be empty: the data's magic
	// bytes decide.
	Format string
	Data   []byte
}

// PixelFormat is the layout of one pixel of a Frame.
type PixelFormat uint8

// The pixel formats a Frame can hold: 8 bits per channel, interleaved.
const (
	RGB8 PixelFormat = iota + 1
	BGR8
	RGBA8
	BGRA8
	Gray8
)

// BytesPerPixel returns 3, 4 or 1, or 0 for an unknown format.
func (f PixelFormat) BytesPerPixel() int {
	switch f {
	case RGB8, BGR8:
		return 3
	case RGBA8, BGRA8:
		return 4
	case Gray8:
		return 1
	}
	return 0
}

// rgbOffsets returns the byte offsets of the red, green and blue samples
// within one pixel (all zero for grey).
func (f PixelFormat) rgbOffsets() [3]int {
	switch f {
	case BGR8, BGRA8:
		return [3]int{2, 1, 0}
	case Gray8:
		return [3]int{0, 0, 0}
	}
	return [3]int{0, 1, 2}
}

func (f PixelFormat) String() string {
	switch f {
	case RGB8:
		return "rgb8"
	case BGR8:
		return "bgr8"
	case RGBA8:
		return "rgba8"
	case BGRA8:
		return "bgra8"
	case Gray8:
		return "mono8"
	}
	return fmt.Sprintf("PixelFormat(%d)", uint8(f))
}

// Frame is a decoded 8-bit image: the single input of the preprocessing,
// whatever the source (raw or compressed message, simulator, replay).
// Row y occupies Pix[y*Stride : y*Stride + Width*BytesPerPixel].
type Frame struct {
	Width, Height int
	Stride        int // bytes from one row to the next, >= Width * BytesPerPixel
	Format        PixelFormat
	Pix           []byte
}

// Validate reports why f cannot be read, or nil.
func (f Frame) Validate() error {
	bpp := f.Format.BytesPerPixel()
	if bpp == 0 {
		return fmt.Errorf("%w: frame pixel format %v", ErrUnsupportedEncoding, f.Format)
	}
	if err := checkDims(f.Width, f.Height); err != nil {
		return err
	}
	if f.Stride < f.Width*bpp {
		return fmt.Errorf("%w: stride %d is less than width %d x %d bytes per pixel = %d", ErrBadSize, f.Stride, f.Width, bpp, f.Width*bpp)
	}
	if f.Height > 1 && f.Stride > len(f.Pix) {
		return fmt.Errorf("%w: stride %d exceeds the %d bytes of pixels of a %d-row frame", ErrBadSize, f.Stride, len(f.Pix), f.Height)
	}
	if need := (f.Height-1)*f.Stride + f.Width*bpp; len(f.Pix) < need {
		return fmt.Errorf("%w: %d bytes of pixels, %dx%d %v with stride %d needs %d", ErrBadSize, len(f.Pix), f.Width, f.Height, f.Format, f.Stride, need)
	}
	return nil
}

// checkDims checks width and height against the limits.
func checkDims(w, h int) error {
	switch {
	case w <= 0 || h <= 0:
		return fmt.Errorf("%w: %dx%d (width x height) is empty", ErrBadSize, w, h)
	case w > MaxSide || h > MaxSide:
		return fmt.Errorf("%w: %dx%d exceeds the limit of %d pixels per side", ErrBadSize, w, h, MaxSide)
	case w*h > MaxPixels:
		return fmt.Errorf("%w: %dx%d is %d pixels, more than the limit of %d", ErrBadSize, w, h, w*h, MaxPixels)
	}
	return nil
}

// views are the encodings a Frame views as they are; the others are
// converted to rgb8 (rawimage).
var views = map[string]PixelFormat{"rgb8": RGB8, "bgr8": BGR8, "rgba8": RGBA8, "bgra8": BGRA8, "mono8": Gray8}

// SupportedEncodings lists the raw encodings DecodeImage accepts.
func SupportedEncodings() []string { return rawimage.Names() }

// ImageInfo is what a raw image message's header says.
type ImageInfo struct {
	Width, Height int
	// Converted is true for the encodings whose pixels are converted to
	// rgb8 when decoded (yuv422, yuv422_yuy2, 8-bit Bayer), false for
	// those a Frame views as they are.
	Converted bool
}

// InspectImage checks a raw image message as DecodeImage does, without
// touching its pixels, and does not allocate.
func InspectImage(msg *Image) (ImageInfo, error) {
	_, view, err := inspectImage(msg)
	if err != nil {
		return ImageInfo{}, err
	}
	return ImageInfo{Width: int(msg.Width), Height: int(msg.Height), Converted: view == 0}, nil
}

// inspectImage checks msg and returns its encoding, and the format of a
// Frame that views it (0: it is converted).
func inspectImage(msg *Image) (rawimage.Encoding, PixelFormat, error) {
	l, err := rawimage.Lookup(msg.Encoding)
	if err != nil {
		return l, 0, err
	}
	w, h, step := int(msg.Width), int(msg.Height), int(msg.Step)
	if err := checkDims(w, h); err != nil {
		return l, 0, fmt.Errorf("%s image: %w", msg.Encoding, err)
	}
	if l.Pairs && w%2 != 0 {
		return l, 0, fmt.Errorf("%w: %s image: width %d is odd; 4:2:2 pixels come in pairs that share U and V",
			ErrBadSize, msg.Encoding, w)
	}
	if step < w*l.BytesPerPixel {
		return l, 0, fmt.Errorf("%w: %s image: step %d is less than width %d x %d bytes per pixel = %d",
			ErrBadSize, msg.Encoding, step, w, l.BytesPerPixel, w*l.BytesPerPixel)
	}
	if len(msg.Data) != step*h {
		return l, 0, fmt.Errorf("%w: %s image: data has %d bytes, height %d x step %d = %d",
			ErrBadSize, msg.Encoding, len(msg.Data), h, step, step*h)
	}
	return l, views[msg.Encoding], nil
}

// DecodeImage checks a raw image message and returns its Frame. It accepts
// the encodings SupportedEncodings lists, with any row padding
// (Step >= Width * bytes per pixel); Data must hold exactly Step * Height
// bytes, as sensor_msgs/Image requires. IsBigendian does not matter for
// 8-bit samples and is ignored.
//
// For rgb8, bgr8, rgba8, bgra8 and mono8 the Frame views msg.Data (no copy,
// no allocation: it is valid as long as msg.Data is). yuv422 (UYVY),
// yuv422_yuy2 (YUYV, both of even width) and the 8-bit Bayer mosaics are
// converted into a new rgb8 buffer with the arithmetic of OpenCV's
// cvtColor, as cv_bridge does (see Decoder.DecodeImage to reuse a buffer).
func DecodeImage(msg *Image) (Frame, error) {
	var d Decoder
	return d.DecodeImage(msg)
}
