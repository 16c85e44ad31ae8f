package vision

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/ttmrobot/ttm/internal/rawimage"
)

// Codec is a compressed image format.
type Codec uint8

// The codecs DecodeCompressed reads.
const (
	JPEG Codec = iota + 1
	PNG
)

func (c Codec) String() string {
	switch c {
	case JPEG:
		return "jpeg"
	case PNG:
		return "png"
	}
	return fmt.Sprintf("Codec(%d)", uint8(c))
}

// CompressedInfo is what the header of a compressed image says.
type CompressedInfo struct {
	Codec         Codec
	Width, Height int
	Channels      int // 1 (grey) or 3 (colour); for PNG, 4 with alpha (dropped when decoded)
	BitDepth      int // bits per sample: 8 for JPEG; 1, 2, 4, 8 or 16 for PNG
}

var (
	jpegMagic = []byte{0xFF, 0xD8, 0xFF}
	pngMagic  = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}
	pngIEND   = []byte{0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82}
)

// formatCodec reads the codec a CompressedImage.Format names: "jpeg",
// "png", image_transport's "<encoding>; <codec> compressed <encoding>", or
// empty (0: let the data decide). compressedDepth and 16-bit or float
// source encodings are depth images.
func formatCodec(format string) (Codec, error) {
	f := strings.ToLower(strings.TrimSpace(format))
	if f == "" {
		return 0, nil
	}
	if strings.Contains(f, "compresseddepth") {
		return 0, fmt.Errorf("%w: format %q is a compressedDepth image", ErrDepthImage, format)
	}
	if enc, _, ok := strings.Cut(f, ";"); ok && rawimage.IsDepth(strings.TrimSpace(enc)) {
		return 0, fmt.Errorf("%w: format %q compresses a %s image", ErrDepthImage, format, strings.TrimSpace(enc))
	}
	hasJPEG := strings.Contains(f, "jpeg") || strings.Contains(f, "jpg")
	hasPNG := strings.Contains(f, "png")
	switch {
	case hasJPEG && !hasPNG:
		return JPEG, nil
	case hasPNG && !hasJPEG:
		return PNG, nil
	}
	return 0, fmt.Errorf("%w: compressed format %q (supported: jpeg, png)", ErrUnsupportedEncoding, format)
}

// InspectCompressed checks a compressed image without decoding it: the
// format string against the magic bytes, the header (dimensions within
// MaxSide and MaxPixels, bit depth, components) and the trailer (JPEG EOI,
// PNG IEND), so that a frame truncated in transport is refused. Everything
// DecodeCompressed hands to OpenCV has passed this check.
func InspectCompressed(msg *CompressedImage) (CompressedInfo, error) {
	named, err := formatCodec(msg.Format)
	if err != nil {
		return CompressedInfo{}, err
	}
	d := msg.Data
	var info CompressedInfo
	switch {
	case len(d) == 0:
		return CompressedInfo{}, fmt.Errorf("%w: compressed image has no data", ErrCorrupt)
	case bytes.HasPrefix(d, jpegMagic):
		info, err = inspectJPEG(d)
	case bytes.HasPrefix(d, pngMagic):
		info, err = inspectPNG(d)
	default:
		n := min(len(d), 8)
		return CompressedInfo{}, fmt.Errorf("%w: data starts with % x, neither a JPEG (ff d8 ff) nor a PNG signature", ErrCorrupt, d[:n])
	}
	if err != nil {
		return CompressedInfo{}, err
	}
	if named != 0 && named != info.Codec {
		return CompressedInfo{}, fmt.Errorf("%w: format %q says %v but the data is %v", ErrCorrupt, msg.Format, named, info.Codec)
	}
	return info, nil
}

// inspectJPEG walks the markers from SOI to the first frame header (SOF),
// as libjpeg does, but refuses anything libjpeg would only warn about, so
// that the dimensions read here are the ones libjpeg will decode.
func inspectJPEG(d []byte) (CompressedInfo, error) {
	bad := func(format string, args ...any) (CompressedInfo, error) {
		return CompressedInfo{}, fmt.Errorf("%w: jpeg: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
	i := 2 // after SOI
	for {
		if i+1 >= len(d) {
			return bad("no frame header (SOF marker) in %d bytes", len(d))
		}
		if d[i] != 0xFF {
			return bad("byte 0x%02x at offset %d where a marker should start", d[i], i)
		}
		for i < len(d) && d[i] == 0xFF { // fill bytes
			i++
		}
		if i >= len(d) {
			return bad("no frame header (SOF marker) in %d bytes", len(d))
		}
		marker := d[i]
		i++
		sof := marker == 0xC0 || marker == 0xC1 || marker == 0xC2
		switch {
		case sof:
		case marker >= 0xC3 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
			return CompressedInfo{}, fmt.Errorf("%w: jpeg: frame type SOF%d (lossless, hierarchical or arithmetic coding); only baseline and progressive JPEG are decoded", ErrUnsupportedEncoding, marker-0xC0)
		case marker >= 0xE0 && marker <= 0xEF, // APPn
			marker == 0xFE, // COM
			marker == 0xDB, // DQT
			marker == 0xC4, // DHT
			marker == 0xDD, // DRI
			marker == 0xCC: // DAC
		default:
			return bad("unexpected marker 0x%02x at offset %d before the frame header", marker, i-1)
		}
		if i+2 > len(d) {
			return bad("marker 0x%02x at offset %d has no length", marker, i-1)
		}
		length := int(binary.BigEndian.Uint16(d[i:]))
		if length < 2 || i+length > len(d) {
			return bad("marker 0x%02x at offset %d has length %d, %d bytes remain", marker, i-1, length, len(d)-i)
		}
		if sof {
			info, err := jpegFrameHeader(d[i : i+length])
			if err != nil {
				return CompressedInfo{}, err
			}
			return info, jpegEnd(d)
		}
		i += length
	}
}

// jpegFrameHeader reads a SOF0/1/2 segment (seg starts at its length).
func jpegFrameHeader(seg []byte) (CompressedInfo, error) {
	if len(seg) < 8 {
		return CompressedInfo{}, fmt.Errorf("%w: jpeg: frame header of %d bytes, need 8", ErrCorrupt, len(seg))
	}
	precision := int(seg[2])
	h := int(binary.BigEndian.Uint16(seg[3:]))
	w := int(binary.BigEndian.Uint16(seg[5:]))
	nc := int(seg[7])
	if len(seg) != 8+3*nc {
		return CompressedInfo{}, fmt.Errorf("%w: jpeg: frame header length %d does not match %d components", ErrCorrupt, len(seg), nc)
	}
	if precision != 8 {
		return CompressedInfo{}, fmt.Errorf("%w: jpeg: %d-bit samples; only 8-bit JPEG is decoded", ErrDepthImage, precision)
	}
	if nc != 1 && nc != 3 {
		return CompressedInfo{}, fmt.Errorf("%w: jpeg: %d components; only grey (1) and colour (3) are decoded", ErrUnsupportedEncoding, nc)
	}
	if err := checkDims(w, h); err != nil {
		return CompressedInfo{}, fmt.Errorf("jpeg: %w", err)
	}
	return CompressedInfo{Codec: JPEG, Width: w, Height: h, Channels: nc, BitDepth: 8}, nil
}

// jpegEnd checks that the data ends with the EOI marker, allowing zero
// padding after it (some MJPEG cameras pad frames).
func jpegEnd(d []byte) error {
	end := len(d)
	for end > 0 && d[end-1] == 0 {
		end--
	}
	if end < 4 || d[end-2] != 0xFF || d[end-1] != 0xD9 {
		return fmt.Errorf("%w: jpeg: data does not end with the EOI marker (ff d9): truncated?", ErrCorrupt)
	}
	return nil
}

// inspectPNG reads the IHDR chunk, which the PNG format requires first,
// checks its CRC, and checks that the file ends with the IEND chunk.
func inspectPNG(d []byte) (CompressedInfo, error) {
	if len(d) < 8+25 {
		return CompressedInfo{}, fmt.Errorf("%w: png: %d bytes, too short for the signature and IHDR chunk", ErrCorrupt, len(d))
	}
	c := d[8:]
	if n := binary.BigEndian.Uint32(c); n != 13 || string(c[4:8]) != "IHDR" {
		return CompressedInfo{}, fmt.Errorf("%w: png: first chunk is %q of %d bytes, want IHDR of 13", ErrCorrupt, printable(c[4:8]), n)
	}
	if want, got := crc32.ChecksumIEEE(c[4:21]), binary.BigEndian.Uint32(c[21:]); want != got {
		return CompressedInfo{}, fmt.Errorf("%w: png: IHDR checksum %08x, computed %08x", ErrCorrupt, got, want)
	}
	w32, h32 := binary.BigEndian.Uint32(c[8:]), binary.BigEndian.Uint32(c[12:])
	depth, colour, compression, filter, interlace := int(c[16]), int(c[17]), c[18], c[19], c[20]
	if w32 > MaxSide || h32 > MaxSide {
		return CompressedInfo{}, fmt.Errorf("png: %w: %dx%d exceeds the limit of %d pixels per side", ErrBadSize, w32, h32, MaxSide)
	}
	w, h := int(w32), int(h32)
	if err := checkDims(w, h); err != nil {
		return CompressedInfo{}, fmt.Errorf("png: %w", err)
	}
	if compression != 0 || filter != 0 || interlace > 1 {
		return CompressedInfo{}, fmt.Errorf("%w: png: compression %d, filter %d, interlace %d (want 0, 0, 0 or 1)", ErrCorrupt, compression, filter, interlace)
	}
	var channels int
	okDepth := false
	switch colour {
	case 0: // grey
		channels, okDepth = 1, depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16
	case 2: // RGB
		channels, okDepth = 3, depth == 8 || depth == 16
	case 3: // palette
		channels, okDepth = 3, depth == 1 || depth == 2 || depth == 4 || depth == 8
	case 4: // grey + alpha
		channels, okDepth = 1, depth == 8 || depth == 16
	case 6: // RGBA
		channels, okDepth = 4, depth == 8 || depth == 16
	default:
		return CompressedInfo{}, fmt.Errorf("%w: png: colour type %d", ErrCorrupt, colour)
	}
	if !okDepth {
		return CompressedInfo{}, fmt.Errorf("%w: png: bit depth %d is not allowed with colour type %d", ErrCorrupt, depth, colour)
	}
	if depth == 16 && channels == 1 {
		return CompressedInfo{}, fmt.Errorf("%w: png: 16-bit grey image (a depth map?); the policy takes 8-bit frames", ErrDepthImage)
	}
	if !bytes.HasSuffix(d, pngIEND) {
		return CompressedInfo{}, fmt.Errorf("%w: png: data does not end with the IEND chunk: truncated?", ErrCorrupt)
	}
	return CompressedInfo{Codec: PNG, Width: w, Height: h, Channels: channels, BitDepth: depth}, nil
}

// printable quotes a chunk type safely for an error message.
func printable(b []byte) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7E {
			return '?'
		}
		return r
	}, string(b))
}
