// Package pngtest reads back the PNG files (plots, strips, curves) that
// tests check a command or a plotter wrote.
package pngtest

import (
	"image"
	"image/png"
	"os"
	"testing"
)

// Read decodes the PNG file at path; it fails t if the file cannot be
// opened or is not a PNG.
func Read(t testing.TB, path string) image.Image {
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
