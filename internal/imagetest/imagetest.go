// Package imagetest reads back the PNG and GIF files (plots, strips,
// curves, episode videos) that tests check a command or a plotter wrote.
package imagetest

import (
	"image"
	"image/gif"
	"image/png"
	"os"
	"testing"
)

// PNG decodes the PNG file at path; it fails t if the file cannot be
// opened or is not a PNG.
func PNG(t testing.TB, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", path, err)
	}
	return img
}

// GIF decodes every frame of the GIF file at path; it fails t if the file
// cannot be opened or is not a GIF.
func GIF(t testing.TB, path string) *gif.GIF {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := gif.DecodeAll(f)
	if err != nil {
		t.Fatalf("%s: not a GIF: %v", path, err)
	}
	return g
}
