package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/damage"
	"github.com/ttmrobot/ttm/vision"
)

// TestAttackFrames: the damaged frames the attack sends pass the header
// checks a node makes on arrival and are refused by the decoder; the
// frames they are made from decode.
func TestAttackFrames(t *testing.T) {
	var dec vision.Decoder
	for _, c := range []struct {
		name   string
		data   []byte
		refuse string
	}{
		{"good jpeg", goodJPEG(), ""},
		{"good png", goodPNG(), ""},
		{"scan cut to a tenth", damage.CutScan(goodJPEG(), 10), "libjpeg warns: Corrupt JPEG data: premature end of data segment"},
		{"random scan bytes", damage.RandomScan(goodJPEG(), 3), "libjpeg"},
		{"damaged chunk checksum", damage.BadTextChunk(goodPNG()), "libpng warns: tEXt: CRC error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg := &vision.CompressedImage{Data: c.data}
			if _, err := vision.InspectCompressed(msg); err != nil {
				t.Fatalf("refused on arrival: %v", err)
			}
			f, err := dec.DecodeCompressed(msg)
			switch {
			case c.refuse == "" && (err != nil || f.Width != 320 || f.Height != 256):
				t.Fatalf("decoded %dx%d, %v", f.Width, f.Height, err)
			case c.refuse != "" && (!errors.Is(err, vision.ErrCorrupt) || !strings.Contains(err.Error(), c.refuse)):
				t.Fatalf("%v, want ErrCorrupt saying %q", err, c.refuse)
			}
		})
	}
}

// TestAttackFiles runs the file attacks on a fresh small checkpoint: every
// damaged copy is refused.
func TestAttackFiles(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "small.safetensors")
	if code, _, stderr := runCmd(t, "init", "--policy", "--preset", "small", "--seed", "1", "--out", ckpt); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	a := &attacker{outDir: filepath.Join(dir, "attack"), ckpt: ckpt}
	for _, c := range fileAttacks() {
		obs, ok := c.run(a)
		if !ok || !strings.HasPrefix(obs, "refused: ") {
			t.Errorf("%s: %s", c.name, obs)
		}
	}
}

func TestFormatAttackTable(t *testing.T) {
	got := formatAttackTable([]attackRow{
		{"a | b", "x", "line one\n  line two", true},
		{"c", "y", "z", false},
	}, 10, 2)
	want := "| # | case | expected | observed | held |\n|---|---|---|---|---|\n" +
		"| 1 | a \\| b | x | line one line two | yes |\n" +
		"| 2 | c | y | z | **no** |\n" +
		"| 3 | every action published | finite | 10 actions, 2 with NaN or Inf | **no** |\n"
	if got != want {
		t.Errorf("table\n%s\nwant\n%s", got, want)
	}
}
