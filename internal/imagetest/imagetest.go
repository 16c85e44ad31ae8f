// Package imagetest reads back the PNG and GIF files (plots, strips,
// curves, episode videos) that tests check a command or a plotter wrote.
package imagetest

import (
	"image"
	"image/gif"
	"image/png"
	"io"
	"os"
	"testing"
)

// PNG decodes the PNG file at path; it fails t if the file cannot be
// opened or is not a PNG.
func PNG(t testing.TB, path string) image.Image {
	t.Helper()
	return read(t, path, "PNG", png.Decode)
}

// GIF decodes every frame of the GIF file at path; it fails t if the file
// cannot be opened or is not a GIF.
func GIF(t testing.TB, path string) *gif.GIF {
	t.Helper()
	return read(t, path, "GIF", gif.DecodeAll)
}

func read[T any](t testing.TB, path, format string, decode func(io.Reader) (T, error)) T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := decode(f)
	if err != nil {
		t.Fatalf("%s: not a %s: %v", path, format, err)
	}
	return v
}
