package damage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/jpeg"
	"image/png"
	"testing"
)

func encoded(t *testing.T) (j, p []byte) {
	m := image.NewGray(image.Rect(0, 0, 64, 48))
	for i := range m.Pix {
		m.Pix[i] = byte(i * 7)
	}
	var jb, pb bytes.Buffer
	if err := jpeg.Encode(&jb, m, nil); err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(&pb, m); err != nil {
		t.Fatal(err)
	}
	return jb.Bytes(), pb.Bytes()
}

// TestDamage checks the damage by hand: the JPEG keeps its header and
// ends with EOI, the scan is cut or replaced; the PNG keeps IEND last and
// the inserted chunk's CRC is wrong exactly when asked.
func TestDamage(t *testing.T) {
	j, p := encoded(t)
	s := scanStart(j)
	cut := CutScan(j, 10)
	if !bytes.Equal(cut[:s], j[:s]) || !bytes.HasSuffix(cut, []byte{0xFF, 0xD9}) || len(cut) != s+(len(j)-2-s)/10+2 {
		t.Errorf("CutScan: %d bytes from %d, scan at %d", len(cut), len(j), s)
	}
	r := RandomScan(j, 3)
	if len(r) != len(j) || !bytes.Equal(r[:s], j[:s]) || !bytes.HasSuffix(r, []byte{0xFF, 0xD9}) || bytes.Equal(r, j) ||
		bytes.IndexByte(r[s:len(r)-2], 0xFF) >= 0 {
		t.Error("RandomScan: header, trailer or scan wrong")
	}
	for _, bad := range []bool{false, true} {
		c := Chunk("tEXt", []byte("k\x00v"), bad)
		if n := binary.BigEndian.Uint32(c); n != 3 || string(c[4:8]) != "tEXt" {
			t.Fatalf("chunk header % x", c[:8])
		}
		if ok := binary.BigEndian.Uint32(c[len(c)-4:]) == crc32.ChecksumIEEE(c[4:len(c)-4]); ok == bad {
			t.Errorf("badCRC %v: CRC right %v", bad, ok)
		}
	}
	w := BadTextChunk(p)
	if len(w) != len(p)+15 || !bytes.Equal(w[len(w)-12:], p[len(p)-12:]) || !bytes.Equal(w[:len(p)-12], p[:len(p)-12]) {
		t.Error("BadTextChunk: not inserted before IEND")
	}
}
