package pngtest

import (
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

func TestReadDecodesWhatWasWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, image.NewGray(image.Rect(0, 0, 7, 3))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b := Read(t, path).Bounds(); b.Dx() != 7 || b.Dy() != 3 {
		t.Errorf("bounds %v, want 7x3", b)
	}
}

// recorder notes a failure instead of stopping the test, so that Read's
// failures can be checked.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(r) }

func (r *recorder) Fatal(...any) { r.failed = true; panic(r) }

func TestReadFailsOnWhatIsNotAPNG(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text.png")
	if err := os.WriteFile(text, []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path string }{
		{"missing file", filepath.Join(dir, "missing.png")},
		{"not a PNG", text},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			func() {
				defer func() {
					if p := recover(); p != nil && p != r {
						panic(p)
					}
				}()
				Read(r, tc.path)
			}()
			if !r.failed {
				t.Errorf("Read(%s) did not fail", tc.path)
			}
		})
	}
}
