package vision

// Go side of image_codec.c: JPEG and PNG decoding straight into the
// Decoder's buffer with libjpeg-turbo and libpng. OpenCV's imdecode uses the
// same libraries but lets their warnings about corrupt data go to stderr
// and returns the damaged pixels as a good image; here a warning refuses
// the frame.

/*
#cgo pkg-config: libjpeg libpng
#cgo noescape ttm_decode_jpeg
#cgo noescape ttm_decode_png
#cgo nocallback ttm_decode_jpeg
#cgo nocallback ttm_decode_png
#include "image_codec.h"
*/
import "C"

import (
	"bytes"
	"fmt"
	"unsafe"
)

// MaxJPEGScans bounds the scans of a progressive JPEG: each is a pass over
// the whole image, so a small file of thousands of scans would cost
// seconds. Encoders write about ten.
const MaxJPEGScans = 100

// decodeInto decodes data, whose header InspectCompressed read as info,
// into dst, (info.Height, info.Width, 3) BGR. msg is scratch for the
// library's message.
func decodeInto(info CompressedInfo, data, dst []byte, msg []byte) error {
	if len(data) == 0 || len(dst) < info.Width*info.Height*3 || len(msg) == 0 {
		return fmt.Errorf("%w: %v: nothing to decode into", ErrCorrupt, info.Codec)
	}
	src := (*C.uchar)(unsafe.Pointer(&data[0]))
	out := (*C.uchar)(unsafe.Pointer(&dst[0]))
	m := (*C.char)(unsafe.Pointer(&msg[0]))
	var rc C.int
	var lib string
	switch info.Codec {
	case JPEG:
		lib = "libjpeg"
		rc = C.ttm_decode_jpeg(src, C.size_t(len(data)), out, C.int(info.Width), C.int(info.Height), MaxJPEGScans, m, C.size_t(len(msg)))
	case PNG:
		lib = "libpng"
		rc = C.ttm_decode_png(src, C.size_t(len(data)), out, C.int(info.Width), C.int(info.Height), m, C.size_t(len(msg)))
	default:
		return fmt.Errorf("%w: codec %v", ErrUnsupportedEncoding, info.Codec)
	}
	text := func() string {
		if i := bytes.IndexByte(msg, 0); i >= 0 {
			return string(msg[:i])
		}
		return string(msg)
	}
	switch rc {
	case C.TTM_DECODE_OK:
		return nil
	case C.TTM_DECODE_CORRUPT:
		return fmt.Errorf("%w: %v %dx%d: %s warns: %s", ErrCorrupt, info.Codec, info.Width, info.Height, lib, text())
	default:
		return fmt.Errorf("%w: %v %dx%d: %s: %s", ErrCorrupt, info.Codec, info.Width, info.Height, lib, text())
	}
}
