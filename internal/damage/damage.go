// Package damage makes the corrupt JPEG and PNG frames the decoders must
// refuse: damage whose headers and trailers still pass, so that only the
// codec library sees it. The tests and `ttm attack` send the same frames.
package damage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
)

// scanStart is the offset of a baseline JPEG's entropy-coded data: after
// its first SOS segment. It panics on data without one (a JPEG encoder's
// output always has one).
func scanStart(jpeg []byte) int {
	i := bytes.Index(jpeg, []byte{0xFF, 0xDA})
	if i < 0 || i+4 > len(jpeg) {
		panic("damage: no SOS marker")
	}
	return i + 2 + int(binary.BigEndian.Uint16(jpeg[i+2:]))
}

// CutScan keeps 1/part of a JPEG's scan data, then the EOI marker:
// libjpeg warns of a premature end of the data segment.
func CutScan(jpeg []byte, part int) []byte {
	i := scanStart(jpeg)
	n := (len(jpeg) - 2 - i) / part
	return append(append([]byte{}, jpeg[:i+n]...), 0xFF, 0xD9)
}

// RandomScan replaces a JPEG's scan data with seeded random bytes of the
// same length (no 0xFF, so no marker).
func RandomScan(jpeg []byte, seed uint64) []byte {
	out := append([]byte{}, jpeg...)
	r := rand.New(rand.NewPCG(seed, seed+1))
	for j := scanStart(jpeg); j < len(out)-2; j++ {
		out[j] = byte(r.IntN(255))
	}
	return out
}

// Chunk is a PNG chunk of typ and data with its CRC; badCRC flips the CRC.
func Chunk(typ string, data []byte, badCRC bool) []byte {
	body := append([]byte(typ), data...)
	c := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	c = append(c, body...)
	crc := crc32.ChecksumIEEE(body)
	if badCRC {
		crc ^= 0xFFFFFFFF
	}
	return binary.BigEndian.AppendUint32(c, crc)
}

// iendLen is the length of a PNG's closing IEND chunk.
const iendLen = 12

// WithChunk inserts chunk before a PNG's IEND chunk.
func WithChunk(png, chunk []byte) []byte {
	end := len(png) - iendLen
	return append(append(append([]byte{}, png[:end]...), chunk...), png[end:]...)
}

// BadTextChunk is a PNG with a tEXt chunk whose CRC is wrong inserted
// before IEND: libpng warns "tEXt: CRC error".
func BadTextChunk(png []byte) []byte {
	return WithChunk(png, Chunk("tEXt", []byte("k\x00v"), true))
}
