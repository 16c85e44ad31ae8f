package vision

// Decoder decodes compressed images, and raw ones that need converting,
// into a pixel buffer it owns and reuses. A Decoder is not safe for
// concurrent use.
type Decoder struct {
	pix []byte    // (H, W, 3) BGR or RGB (see the Frame), grown to the largest frame seen
	msg [256]byte // the codec library's last message
}

// DecodeCompressed checks msg with InspectCompressed and decodes it with
// libjpeg-turbo or libpng (the libraries OpenCV's imdecode uses) into a
// BGR8 Frame. The frame views the decoder's buffer and is valid until the
// next call. Grey images come out as three equal channels; PNG alpha is
// dropped, 16-bit samples keep their high byte. Data the library cannot
// decode, or decodes with a warning (libjpeg's "Corrupt JPEG data: premature
// end of data segment", a PNG chunk's bad checksum), is ErrCorrupt: the
// pixels of a damaged frame are not acted on.
func (d *Decoder) DecodeCompressed(msg *CompressedImage) (Frame, error) {
	info, err := InspectCompressed(msg)
	if err != nil {
		return Frame{}, err
	}
	n := info.Width * info.Height * 3
	if cap(d.pix) < n {
		d.pix = make([]byte, n)
	}
	pix := d.pix[:n]
	if err := decodeInto(info, msg.Data, pix, d.msg[:]); err != nil {
		return Frame{}, err
	}
	return Frame{Width: info.Width, Height: info.Height, Stride: info.Width * 3, Format: BGR8, Pix: pix}, nil
}

// DecodeImage is DecodeImage (the function) with the decoder's buffer: a
// frame that views msg.Data is returned as it is; yuv422, yuv422_yuy2 and
// Bayer frames are converted into the buffer, as an rgb8 Frame valid until
// the next call. Once the buffer has grown to the frame size it does not
// allocate.
func (d *Decoder) DecodeImage(msg *Image) (Frame, error) {
	l, view, err := inspectImage(msg)
	if err != nil {
		return Frame{}, err
	}
	w, h := int(msg.Width), int(msg.Height)
	if view != 0 {
		return Frame{Width: w, Height: h, Stride: int(msg.Step), Format: view, Pix: msg.Data}, nil
	}
	n := 3 * w * h
	if cap(d.pix) < n {
		d.pix = make([]byte, n)
	}
	pix := d.pix[:n]
	l.ToRGB(pix, msg.Data, int(msg.Step), w, h)
	return Frame{Width: w, Height: h, Stride: 3 * w, Format: RGB8, Pix: pix}, nil
}
