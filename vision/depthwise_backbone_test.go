package vision

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"gocv.io/x/gocv"
)

// gocvPhotos returns photographs that ship with the gocv module (its
// images/ directory, found next to gocv's source files), decoded and
// preprocessed for an h x w backbone; nil if the module's sources are not
// at hand (a -trimpath build).
func gocvPhotos(t *testing.T, h, w int) [][]float32 {
	t.Helper()
	pc := reflect.ValueOf(gocv.IMDecode).Pointer()
	file, _ := runtime.FuncForPC(pc).FileLine(pc)
	cfg := DefaultPreprocess()
	cfg.Height, cfg.Width = h, w
	p, err := NewPreprocessor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]float32
	var dec Decoder
	for _, name := range []string{"space_shuttle.jpg", "face.jpg"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "images", name))
		if err != nil {
			t.Logf("no photograph: %v", err)
			return nil
		}
		f, err := dec.DecodeCompressed(&CompressedImage{Format: "jpeg", Data: b})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		in := make([]float32, p.InputLen())
		if err := p.Run(in, f); err != nil {
			t.Fatal(err)
		}
		out = append(out, in)
	}
	return out
}

// TestDepthwiseBackbones runs B0 at 224 (Keras and SAME padding) and B3 at
// 300 with the depthwise convolutions in TTMDepthwise layers (swish fused,
// and separate) and in OpenCV's own Convolution layers: the features must
// agree to float rounding on synthetic images and on photographs, and
// OpenCV's profile must show every depthwise convolution in the layer type
// the mode asks for.
func TestDepthwiseBackbones(t *testing.T) {
	if testing.Short() {
		t.Skip("generates B0 and B3")
	}
	cases := []struct {
		cfg    EfficientNetConfig
		blocks int
	}{
		{EfficientNetConfig{Variant: "b0", Seed: 1}, 16},
		{EfficientNetConfig{Variant: "b0", Seed: 1, Padding: PaddingSame}, 16},
		{EfficientNetConfig{Variant: "b3", Seed: 1, Padding: PaddingKeras}, 26},
	}
	for _, c := range cases {
		t.Run(c.cfg.Variant+"-"+c.cfg.Padding.String(), func(t *testing.T) {
			g := generate(t, c.cfg)
			h, w := g.net.InputSize()
			path := g.write(t)
			r := rand.New(rand.NewPCG(21, 22))
			images := [][]float32{syntheticImage(r, h, w), syntheticImage(r, h, w)}
			images = append(images, gocvPhotos(t, h, w)...)
			ref := openTest(t, BackboneSpec{Path: path, Height: h, Width: w, Depthwise: DepthwiseOpenCV, Pointwise: PointwiseOpenCV})
			// Swish after the stem, each expansion, depthwise convolution and
			// SE reduction, and the head; B3 has two blocks without expansion.
			swishes := layerTypes(ref.LayerTimings())["TTMSwish"]
			modes := []struct {
				mode    DepthwiseMode
				types   map[string]int // layers of these types in OpenCV's net
				rewrite string
			}{
				{DepthwiseFast, map[string]int{DepthwiseOp: c.blocks, "TTMSwish": swishes - c.blocks}, fmt.Sprintf("%d depthwise Conv nodes to TTMDepthwise layers, %[1]d with the TTMSwish after them fused, %[1]d with the global average pooling of their output", c.blocks)},
				{DepthwiseSeparateSwish, map[string]int{DepthwiseOp: c.blocks, "TTMSwish": swishes}, fmt.Sprintf("%d depthwise Conv nodes to TTMDepthwise layers, 0 with the TTMSwish after them fused", c.blocks)},
			}
			for _, m := range modes {
				b := openTest(t, BackboneSpec{Path: path, Height: h, Width: w, Depthwise: m.mode, Pointwise: PointwiseOpenCV})
				if !hasRewrite(b.Rewrites(), RewriteDepthwise, m.rewrite) {
					t.Errorf("%s: rewrites %v, want %q", m.mode, b.Rewrites(), m.rewrite)
				}
				for i, img := range images {
					want := run(t, ref, img, nil)
					got := run(t, b, img, nil)
					_, std, maxAbs := moments(want)
					d := maxDiff(got, want)
					if d > 1e-4*(1+maxAbs) {
						t.Errorf("%s, image %d: features differ from OpenCV's depthwise by %g (features up to %g)", m.mode, i, d, maxAbs)
					}
					if i == 0 || i == 2 {
						t.Logf("%s, image %d: max difference %.2g, features std %.2f, max %.1f", m.mode, i, d, std, maxAbs)
					}
				}
				types := layerTypes(b.LayerTimings())
				for typ, n := range m.types {
					if types[typ] != n {
						t.Errorf("%s: %d %s layers, want %d (all: %v)", m.mode, types[typ], typ, n, types)
					}
				}
				if n := depthwiseConvolutions(b.LayerTimings()); n != 0 {
					t.Errorf("%s: %d depthwise convolutions left to OpenCV", m.mode, n)
				}
			}
			if n := depthwiseConvolutions(ref.LayerTimings()); n != c.blocks {
				t.Errorf("OpenCV mode: %d depthwise Convolution layers, want %d", n, c.blocks)
			}
			if n := layerTypes(ref.LayerTimings())[DepthwiseOp]; n != 0 {
				t.Errorf("OpenCV mode: %d TTMDepthwise layers", n)
			}
		})
	}
}

func layerTypes(ts []LayerTiming) map[string]int {
	m := map[string]int{}
	for _, l := range ts {
		m[l.Type]++
	}
	return m
}

// depthwiseConvolutions counts OpenCV Convolution layers named after a
// generated graph's depthwise convolutions.
func depthwiseConvolutions(ts []LayerTiming) int {
	n := 0
	for _, l := range ts {
		if l.Type == "Convolution" && strings.Contains(l.Name, "/depthwise") {
			n++
		}
	}
	return n
}

// TestDepthwiseSwishRange puts extreme values through the fused swish of
// each kernel: a 1x1 depthwise convolution with weight 1 and bias 0 is the
// identity, so the output is swish of the input, compared with float64 to
// 2e-6 relative. Below x = -87 swish is under 1e-35 in magnitude, and the
// kernels may return 0 (exp(-x) is clamped to 2.4e38, whose reciprocal is
// denormal): 1e-30 absolute.
func TestDepthwiseSwishRange(t *testing.T) {
	vals := []float32{-1000, -100, -88.5, -87, -30, -10, -1, -1e-3, -1e-30, 0, 1e-30, 1e-3, 0.5, 1, 3, 10, 30, 87, 88.5, 100, 1000, 3e38, -3e38}
	c := dwCase{n: 1, c: 1, h: 1, w: len(vals), kh: 1, kw: 1, sh: 1, sw: 1, swish: true}
	forEachISA(t, func(isa kernelISA) {
		got, _, _ := runCV(t, c.graphOf([]float32{1}, nil), PrepareOptions{SwishOp: "TTMSwish", DepthwiseOp: DepthwiseOp}, []int{1, 1, 1, len(vals)}, vals)
		for i, x := range vals {
			want := float64(x) / (1 + math.Exp(-float64(x)))
			if math.IsInf(math.Exp(-float64(x)), 1) {
				want = 0 // x / inf
			}
			if d := math.Abs(float64(got[i]) - want); d > 2e-6*math.Abs(want)+1e-30 {
				t.Errorf("%s: swish(%g) = %g, want %g", isa, x, got[i], want)
			}
		}
	})
}
