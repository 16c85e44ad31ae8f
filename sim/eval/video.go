package eval

import (
	"fmt"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"os"
	"path/filepath"
)

// gifRecorder collects an episode's frames as an animated GIF, one frame
// per simulator step at the simulator's pace (1/3 s), with a bar at the
// bottom that fills as the episode goes and turns green (success) or red
// on the last frame, which is held for 2 s.
type gifRecorder struct {
	h, w   int
	frames []*image.Paletted
	index  map[[3]byte]uint8 // colour -> palette index, memoised
}

const barHeight = 4

func newGIFRecorder(h, w int) *gifRecorder {
	return &gifRecorder{h: h, w: w, index: map[[3]byte]uint8{}}
}

// add appends a frame, (h, w, 3) RGB.
func (g *gifRecorder) add(img []byte) {
	p := image.NewPaletted(image.Rect(0, 0, g.w, g.h+barHeight), palette.Plan9)
	for y := range g.h {
		row := img[3*y*g.w : 3*(y+1)*g.w]
		dst := p.Pix[y*p.Stride : y*p.Stride+g.w]
		for x := range g.w {
			c := [3]byte{row[3*x], row[3*x+1], row[3*x+2]}
			i, ok := g.index[c]
			if !ok {
				i = uint8(p.Palette.Index(color.RGBA{c[0], c[1], c[2], 255}))
				g.index[c] = i
			}
			dst[x] = i
		}
	}
	g.frames = append(g.frames, p)
}

// write fills in the progress bars and writes the GIF to path, creating
// its directory.
func (g *gifRecorder) write(path string, success bool) error {
	if len(g.frames) == 0 {
		return fmt.Errorf("video %s: no frames", path)
	}
	pal := color.Palette(palette.Plan9)
	grey := uint8(pal.Index(color.RGBA{90, 90, 90, 255}))
	blue := uint8(pal.Index(color.RGBA{60, 120, 230, 255}))
	end := uint8(pal.Index(color.RGBA{210, 40, 40, 255}))
	if success {
		end = uint8(pal.Index(color.RGBA{40, 180, 70, 255}))
	}
	n := len(g.frames)
	delays := make([]int, n)
	for k, f := range g.frames {
		fill := blue
		if k == n-1 {
			fill = end
		}
		filled := g.w
		if n > 1 {
			filled = k * g.w / (n - 1)
		}
		for y := g.h; y < g.h+barHeight; y++ {
			row := f.Pix[y*f.Stride : y*f.Stride+g.w]
			for x := range row {
				row[x] = grey
				if x < filled || k == n-1 {
					row[x] = fill
				}
			}
		}
		delays[k] = 33 // hundredths of a second: one simulator step
	}
	delays[n-1] = 200
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := gif.EncodeAll(f, &gif.GIF{Image: g.frames, Delay: delays}); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
