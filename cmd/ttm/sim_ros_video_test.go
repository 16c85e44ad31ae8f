package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/internal/imagetest"
	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/sim/simnode"
)

// The colour cube's levels and the nearest level, against hand values.
func TestGIFPalette(t *testing.T) {
	if len(gifPalette) != 252 {
		t.Fatalf("palette of %d colours, want 6x7x6 = 252", len(gifPalette))
	}
	for _, tc := range []struct {
		i, n int
		want uint8
	}{{0, 6, 0}, {1, 6, 51}, {5, 6, 255}, {1, 7, 43}, {3, 7, 128}, {6, 7, 255}} {
		if got := level(tc.i, tc.n); got != tc.want {
			t.Errorf("level(%d, %d) = %d, want %d", tc.i, tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v    uint8
		n    int
		want int
	}{{0, 6, 0}, {25, 6, 0}, {26, 6, 1}, {255, 6, 5}, {21, 7, 0}, {22, 7, 1}, {128, 7, 3}} {
		if got := nearestLevel(tc.v, tc.n); got != tc.want {
			t.Errorf("nearestLevel(%d, %d) = %d, want %d", tc.v, tc.n, got, tc.want)
		}
	}
	// Every byte value lands on a level at most half a step (+1 for the
	// rounding of levels) away.
	for _, n := range []int{gifLevelsR, gifLevelsG} {
		bound := (255/(n-1)+1)/2 + 1
		for v := range 256 {
			if d := v - int(level(nearestLevel(uint8(v), n), n)); d > bound || -d > bound {
				t.Fatalf("%d levels: %d maps %d away", n, v, d)
			}
		}
	}
}

// A GIF written from frames decodes to the same number of frames, of the
// right size, each pixel within the palette's rounding of the original.
func TestWriteGIF(t *testing.T) {
	const h, w = 6, 10
	frames := make([][]byte, 3)
	for k := range frames {
		f := make([]byte, h*w*3)
		for i := range f {
			f[i] = byte(i*37 + k*91)
		}
		frames[k] = f
	}
	path := filepath.Join(t.TempDir(), "a.gif")
	if err := writeGIF(path, frames, h, w); err != nil {
		t.Fatal(err)
	}
	g := imagetest.GIF(t, path)
	if len(g.Image) != 3 || len(g.Delay) != 3 || g.Delay[0] != 33 || g.Delay[2] != 100 {
		t.Fatalf("%d frames, delays %v; want 3 frames at 33 cs, the last 100", len(g.Image), g.Delay)
	}
	for k, img := range g.Image {
		if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
			t.Fatalf("frame %d is %v", k, b)
		}
		for y := range h {
			for x := range w {
				r, gg, b, _ := img.At(x, y).RGBA()
				src := frames[k][3*(y*w+x):]
				for c, v := range []uint32{r >> 8, gg >> 8, b >> 8} {
					if d := int(v) - int(src[c]); d > 27 || d < -27 {
						t.Fatalf("frame %d pixel (%d,%d) channel %d: %d for %d", k, x, y, c, v, src[c])
					}
				}
			}
		}
	}
	if err := writeGIF(path, [][]byte{make([]byte, 5)}, h, w); err == nil || !strings.Contains(err.Error(), "frame 0 has 5 bytes") {
		t.Errorf("short frame: %v", err)
	}
}

// The recorder writes one strip and one GIF per episode, from the frames it
// was shown, reusing its buffers.
func TestEpisodeRecorder(t *testing.T) {
	const h, w = 8, 12
	dir := t.TempDir()
	r := &episodeRecorder{dir: dir, stripFrames: 4, h: h, w: w, gif: true, log: hclog.NewNullLogger()}
	img := make([]byte, h*w*3)
	for ep, steps := range []int{5, 2} {
		for s := range steps + 1 {
			for i := range img {
				img[i] = byte(40 * s)
			}
			r.frame(simnode.Episode{Index: ep}, s, img)
		}
		r.finish(simnode.Result{Index: ep, Result: sim.Result{Task: "pick", Seed: uint64(ep + 1), Success: ep == 0}})
	}
	if r.err != nil || len(r.written) != 4 {
		t.Fatalf("written %v, error %v", r.written, r.err)
	}
	for ep, name := range []string{"01-pick-seed1", "02-pick-seed2"} {
		strip := imagetest.PNG(t, filepath.Join(dir, name+".png"))
		if b := strip.Bounds(); b.Dx() != stripMargin+4*w || b.Dy() != h {
			t.Errorf("%s strip is %v", name, b)
		}
		// The first frame is black (step 0), the last is step `steps`.
		last := []int{5, 2}[ep]
		if r0, _, _, _ := strip.At(stripMargin+1, 1).RGBA(); r0 != 0 {
			t.Errorf("%s: first frame pixel %d, want 0", name, r0>>8)
		}
		if rl, _, _, _ := strip.At(stripMargin+3*w+1, 1).RGBA(); int(rl>>8) != 40*last {
			t.Errorf("%s: last frame pixel %d, want %d", name, rl>>8, 40*last)
		}
		g := imagetest.GIF(t, filepath.Join(dir, name+".gif"))
		if len(g.Image) != last+1 {
			t.Errorf("%s.gif has %d frames, want %d", name, len(g.Image), last+1)
		}
	}
}
