package vision

import (
	"fmt"

	"gocv.io/x/gocv"
)

// Decoder decodes compressed images into a pixel buffer it owns and reuses.
// A Decoder is not safe for concurrent use.
type Decoder struct {
	pix []byte // (H, W, 3) BGR, grown to the largest frame seen
}

// imdecodeFlags: always 8-bit BGR, and the pixels as stored (an EXIF
// orientation tag must not turn a 320x256 camera frame into 256x320).
const imdecodeFlags = gocv.IMReadColor | gocv.IMReadIgnoreOrientation

// DecodeCompressed checks msg with InspectCompressed and decodes it with
// OpenCV's imdecode into a BGR8 Frame. The frame views the decoder's
// buffer and is valid until the next call. Grey images come out as three
// equal channels; PNG alpha is dropped. Data OpenCV cannot decode, or that
// decodes to other dimensions than its header states, is ErrCorrupt.
func (d *Decoder) DecodeCompressed(msg *CompressedImage) (Frame, error) {
	info, err := InspectCompressed(msg)
	if err != nil {
		return Frame{}, err
	}
	mat, err := gocv.IMDecode(msg.Data, imdecodeFlags)
	if err != nil {
		return Frame{}, fmt.Errorf("%w: %v: %v", ErrCorrupt, info.Codec, err)
	}
	defer mat.Close()
	if mat.Empty() {
		return Frame{}, fmt.Errorf("%w: %v %dx%d: OpenCV could not decode the data", ErrCorrupt, info.Codec, info.Width, info.Height)
	}
	if mat.Cols() != info.Width || mat.Rows() != info.Height || mat.Type() != gocv.MatTypeCV8UC3 {
		return Frame{}, fmt.Errorf("%w: %v header says %dx%d, OpenCV decoded %dx%d of type %v",
			ErrCorrupt, info.Codec, info.Width, info.Height, mat.Cols(), mat.Rows(), mat.Type())
	}
	src, err := mat.DataPtrUint8()
	if err != nil {
		return Frame{}, fmt.Errorf("%w: %v: %v", ErrCorrupt, info.Codec, err)
	}
	n := info.Width * info.Height * 3
	if len(src) != n {
		return Frame{}, fmt.Errorf("%w: %v: OpenCV returned %d bytes for %dx%d BGR", ErrCorrupt, info.Codec, len(src), info.Width, info.Height)
	}
	if cap(d.pix) < n {
		d.pix = make([]byte, n)
	}
	pix := d.pix[:n]
	copy(pix, src)
	return Frame{Width: info.Width, Height: info.Height, Stride: info.Width * 3, Format: BGR8, Pix: pix}, nil
}
