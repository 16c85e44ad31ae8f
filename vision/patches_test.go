package vision

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestPatchesByHand: a 4x4 input, a 1x2 map, 2x2 sub-blocks per cell
// (each sub-block is 2 input rows by 1 column). Channel c of the input is
// c·100 + 10·y + x, so each sub-block's mean is the mean of its two rows.
func TestPatchesByHand(t *testing.T) {
	const inH, inW, h, w, p = 4, 4, 1, 2, 2
	if err := CheckPatches(inH, inW, h, w, p); err != nil {
		t.Fatal(err)
	}
	in := make([]float32, 3*inH*inW)
	for c := range 3 {
		for y := range inH {
			for x := range inW {
				in[(c*inH+y)*inW+x] = float32(c*100 + 10*y + x)
			}
		}
	}
	out := make([]float32, PatchChannels(p)*h*w)
	PatchesForward(out, in, inH, inW, h, w, p)
	for sy := range p {
		for sx := range p {
			for c := range 3 {
				for cx := range w {
					x := cx*p + sx
					want := float32(c*100) + 10*(float32(2*sy)+0.5) + float32(x) // rows 2sy and 2sy+1
					if got := out[((sy*p+sx)*3+c)*h*w+cx]; math.Abs(float64(got-want)) > 1e-5 {
						t.Errorf("sub-block (%d, %d) channel %d cell %d: %v, want %v", sy, sx, c, cx, got, want)
					}
				}
			}
		}
	}
	for _, bad := range [][5]int{{4, 4, 3, 2, 2}, {4, 4, 1, 2, 3}, {4, 4, 1, 2, 0}} {
		if CheckPatches(bad[0], bad[1], bad[2], bad[3], bad[4]) == nil {
			t.Errorf("CheckPatches%v accepted", bad)
		}
	}
}

// TestFrontEndColourPatches: with Config.Patches the feature map is the
// backbone's channels unchanged, then the colour patches of the network
// input; a head that does not count the patch channels is refused.
func TestFrontEndColourPatches(t *testing.T) {
	plainPath, _, c := testBackbone(t)
	open := func(patches, headChannels int) (*FrontEnd, error) {
		cfg := DefaultConfig(headChannels)
		cfg.Preprocess.Height, cfg.Preprocess.Width = backboneTestSize, backboneTestSize
		cfg.Head.Dim, cfg.Head.EmbeddingDim, cfg.Head.Tokens, cfg.History = 32, filmTestDim, 4, 1
		cfg.Patches = patches
		head := randomHead(t, cfg.Head, rand.New(rand.NewPCG(5, 1)))
		fe, err := OpenFrontEnd(cfg, head, plainPath, 1, hclog.NewNullLogger())
		if err == nil {
			t.Cleanup(func() { fe.Close() })
		}
		return fe, err
	}
	plain, err := open(0, c)
	if err != nil {
		t.Fatal(err)
	}
	withPatches, err := open(2, c+PatchChannels(2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open(2, c); err == nil {
		t.Error("a head without the patch channels accepted")
	}
	pc, h, w := withPatches.FeatureShape()
	if pc != c+12 {
		t.Fatalf("feature channels %d, want %d + 12", pc, c)
	}
	n := h * w
	frame := randomRGB(rand.New(rand.NewPCG(6, 7)), 80, 60)
	a, b := make([]float32, c*n), make([]float32, pc*n)
	if err := plain.EncodeFeatures(a, frame); err != nil {
		t.Fatal(err)
	}
	if err := withPatches.EncodeFeatures(b, frame); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b[:c*n]) {
		t.Error("the backbone's channels changed with colour patches")
	}
	// The patches are the input's sub-block means (the input is the
	// preprocessed frame the front end kept).
	in, S := withPatches.input, backboneTestSize
	bh := S / (h * 2)
	for sub := range 4 {
		for ch := range 3 {
			for cell := range n {
				y0, x0 := (cell/w*2+sub/2)*bh, (cell%w*2+sub%2)*bh
				var sum float64
				for y := y0; y < y0+bh; y++ {
					for x := x0; x < x0+bh; x++ {
						sum += float64(in[(ch*S+y)*S+x])
					}
				}
				want := sum / float64(bh*bh)
				if got := b[(c+sub*3+ch)*n+cell]; math.Abs(float64(got)-want) > 1e-4 {
					t.Fatalf("patch %d channel %d cell %d: %v, want %v", sub, ch, cell, got, want)
				}
			}
		}
	}
}
