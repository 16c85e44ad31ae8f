package vision

// Decoder decodes compressed images into a pixel buffer it owns and reuses.
// A Decoder is not safe for concurrent use.
type Decoder struct {
	pix []byte    // (H, W, 3) BGR, grown to the largest frame seen
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
