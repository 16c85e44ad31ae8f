package imagetest

import (
	"image"
	"image/color/palette"
	"image/gif"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// readers are the package's two readers, each returning the first frame's
// bounds and the number of frames.
var readers = []struct {
	ext  string
	read func(testing.TB, string) (image.Rectangle, int)
}{
	{".png", func(t testing.TB, path string) (image.Rectangle, int) { return PNG(t, path).Bounds(), 1 }},
	{".gif", func(t testing.TB, path string) (image.Rectangle, int) {
		g := GIF(t, path)
		return g.Image[0].Bounds(), len(g.Image)
	}},
}

func TestReadDecodesWhatWasWritten(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, enc func(*os.File) error) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := enc(f); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("a.png", func(f *os.File) error { return png.Encode(f, image.NewGray(image.Rect(0, 0, 7, 3))) })
	write("a.gif", func(f *os.File) error {
		frame := image.NewPaletted(image.Rect(0, 0, 7, 3), palette.Plan9)
		return gif.EncodeAll(f, &gif.GIF{Image: []*image.Paletted{frame, frame}, Delay: []int{10, 10}})
	})
	wantFrames := map[string]int{".png": 1, ".gif": 2}
	for _, r := range readers {
		t.Run(r.ext, func(t *testing.T) {
			b, n := r.read(t, filepath.Join(dir, "a"+r.ext))
			if b.Dx() != 7 || b.Dy() != 3 || n != wantFrames[r.ext] {
				t.Errorf("%d frames of %v, want %d of 7x3", n, b, wantFrames[r.ext])
			}
		})
	}
}

// recorder notes a failure instead of stopping the test, so that the
// readers' failures can be checked.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(r) }

func (r *recorder) Fatal(...any) { r.failed = true; panic(r) }

func TestReadFailsOnWhatIsNotItsFormat(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text")
	if err := os.WriteFile(text, []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, r := range readers {
		for _, tc := range []struct{ name, path string }{
			{"missing file", filepath.Join(dir, "missing"+r.ext)},
			{"not an image", text},
		} {
			t.Run(r.ext+"/"+tc.name, func(t *testing.T) {
				rec := &recorder{TB: t}
				func() {
					defer func() {
						if p := recover(); p != nil && p != rec {
							panic(p)
						}
					}()
					r.read(rec, tc.path)
				}()
				if !rec.failed {
					t.Errorf("reading %s as %s did not fail", tc.path, r.ext)
				}
			})
		}
	}
}
