package main

import (
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"math"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/sim/simnode"
)

// episodeRecorder keeps the frames of the episode in progress and, when it
// ends, writes its headcam strip (PNG: a success bar and stripFrames frames
// evenly spaced from first to last) and its rollout (animated GIF, every
// frame, one simulated step per frame).
type episodeRecorder struct {
	dir         string
	stripFrames int
	h, w        int
	gif         bool
	log         hclog.Logger

	frames  [][]byte // the current episode's frames, (h, w, 3) RGB each
	spare   [][]byte // buffers of earlier episodes, reused
	written []string // files written so far
	err     error    // the first write error
}

// frame keeps a copy of img; step 0 starts a new episode.
func (r *episodeRecorder) frame(_ simnode.Episode, step int, img []byte) {
	if step == 0 {
		r.spare = append(r.spare, r.frames...)
		r.frames = r.frames[:0]
	}
	var buf []byte
	if n := len(r.spare); n > 0 {
		buf, r.spare = r.spare[n-1], r.spare[:n-1]
	}
	r.frames = append(r.frames, append(buf[:0], img...))
}

// finish writes the episode's strip and GIF.
func (r *episodeRecorder) finish(res simnode.Result) {
	if len(r.frames) == 0 {
		return
	}
	base := filepath.Join(r.dir, fmt.Sprintf("%02d-%s-seed%d", res.Index+1, res.Task, res.Seed))
	strip := image.NewRGBA(image.Rect(0, 0, stripMargin+r.stripFrames*r.w, r.h))
	drawStripRow(strip, 0, r.frames, simConfig{h: r.h, w: r.w, frames: r.stripFrames}, res.Success)
	files := []string{base + ".png"}
	err := writePNG(base+".png", strip)
	if err == nil && r.gif {
		files = append(files, base+".gif")
		err = writeGIF(base+".gif", r.frames, r.h, r.w)
	}
	if err != nil {
		r.log.Error("writing the episode's images failed", "error", err)
		if r.err == nil {
			r.err = err
		}
		return
	}
	r.written = append(r.written, files...)
	r.log.Info("episode images written", "strip", files[0], "frames", len(r.frames), "gif", r.gif)
}

// GIF palette: a colour cube of gifLevelsR x gifLevelsG x gifLevelsB
// levels (252 colours), so a pixel's index is computed, not searched. Each
// channel is off by at most half a level step (25.5 for red and blue, 21.25
// for green).
const (
	gifLevelsR = 6
	gifLevelsG = 7
	gifLevelsB = 6
)

var gifPalette = func() color.Palette {
	p := make(color.Palette, 0, gifLevelsR*gifLevelsG*gifLevelsB)
	for r := range gifLevelsR {
		for g := range gifLevelsG {
			for b := range gifLevelsB {
				p = append(p, color.RGBA{level(r, gifLevelsR), level(g, gifLevelsG), level(b, gifLevelsB), 255})
			}
		}
	}
	return p
}()

// level is the value of level i of n, evenly spaced over [0, 255].
func level(i, n int) uint8 { return uint8((i*255 + (n-1)/2) / (n - 1)) }

// nearestLevel is the level of n nearest to v.
func nearestLevel(v uint8, n int) int { return (int(v)*(n-1) + 127) / 255 }

// quantizeRGB maps an (h, w, 3) RGB frame onto gifPalette into dst.Pix
// (dst is h x w, its Stride w).
func quantizeRGB(dst *image.Paletted, src []byte) {
	for i := range dst.Pix {
		s := src[3*i : 3*i+3 : 3*i+3]
		dst.Pix[i] = uint8((nearestLevel(s[0], gifLevelsR)*gifLevelsG+nearestLevel(s[1], gifLevelsG))*gifLevelsB + nearestLevel(s[2], gifLevelsB))
	}
}

// writeGIF writes frames ((h, w, 3) RGB each) as an animated GIF that loops,
// one simulated step (sim.StepSeconds) per frame and a second on the last.
func writeGIF(path string, frames [][]byte, h, w int) error {
	a := &gif.GIF{}
	step := int(math.Round(sim.StepSeconds * 100)) // hundredths of a second
	for i, f := range frames {
		if len(f) != h*w*3 {
			return fmt.Errorf("write %s: frame %d has %d bytes, want %dx%dx3", path, i, len(f), h, w)
		}
		p := image.NewPaletted(image.Rect(0, 0, w, h), gifPalette)
		quantizeRGB(p, f)
		a.Image = append(a.Image, p)
		a.Delay = append(a.Delay, step)
	}
	if n := len(a.Delay); n > 0 {
		a.Delay[n-1] = 100
	}
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := gif.EncodeAll(file, a); err != nil {
		file.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return file.Close()
}
