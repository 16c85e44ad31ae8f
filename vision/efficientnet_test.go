package vision

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/ttmrobot/ttm/internal/onnx"
)

// Generated networks are shared by the tests of one run: B3 takes seconds.
var (
	genMu    sync.Mutex
	genCache = map[EfficientNetConfig]*generated{}
)

type generated struct {
	net  *EfficientNet
	onnx []byte // the encoded model
	sha  string
}

// generate returns a network for cfg, generating it on first use.
func generate(t testing.TB, cfg EfficientNetConfig) *generated {
	t.Helper()
	genMu.Lock()
	defer genMu.Unlock()
	if g := genCache[cfg]; g != nil {
		return g
	}
	net, err := GenerateEfficientNet(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, sha, err := net.ONNX()
	if err != nil {
		t.Fatal(err)
	}
	g := &generated{net: net, onnx: b, sha: sha}
	genCache[cfg] = g
	return g
}

// write puts the model in a file in the test's temporary directory.
func (g *generated) write(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "backbone.onnx")
	if err := os.WriteFile(path, g.onnx, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRoundFilters(t *testing.T) {
	// Channel counts of the published B2 (width 1.1) and B3 (width 1.2):
	// stem, the seven stages, head.
	base := []int{32, 16, 24, 40, 80, 112, 192, 320, 1280}
	cases := []struct {
		width float64
		want  []int
	}{
		{1.0, []int{32, 16, 24, 40, 80, 112, 192, 320, 1280}},
		{1.1, []int{32, 16, 24, 48, 88, 120, 208, 352, 1408}},
		{1.2, []int{40, 24, 32, 48, 96, 136, 232, 384, 1536}},
	}
	for _, c := range cases {
		got := make([]int, len(base))
		for i, b := range base {
			got[i] = roundFilters(b, c.width)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("width %.1f: %v, want %v", c.width, got, c.want)
		}
	}
}

func TestArchitecture(t *testing.T) {
	cases := []struct {
		variant      string
		padding      Padding
		blocks, head int
		fh           int
		repeats      []int
	}{
		{"b0", PaddingKeras, 16, 1280, 7, []int{1, 2, 2, 3, 3, 4, 1}},
		{"b0", PaddingSame, 16, 1280, 7, []int{1, 2, 2, 3, 3, 4, 1}},
		{"b1", PaddingSame, 23, 1280, 8, []int{2, 3, 3, 4, 4, 5, 2}},
		{"b2", PaddingSame, 23, 1408, 9, []int{2, 3, 3, 4, 4, 5, 2}},
		{"b3", PaddingKeras, 26, 1536, 9, []int{2, 3, 3, 5, 5, 6, 2}},
		{"b3", PaddingSame, 26, 1536, 10, []int{2, 3, 3, 5, 5, 6, 2}},
	}
	for _, c := range cases {
		v, err := LookupEfficientNet(c.variant)
		if err != nil {
			t.Fatal(err)
		}
		s, err := newEfficientNetSpec(v, c.padding, v.Resolution, v.Resolution)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.blocks) != c.blocks || s.head != c.head || s.fh != c.fh || s.fw != c.fh {
			t.Errorf("%s %v: %d blocks, head %d, map %dx%d; want %d, %d, %dx%d", c.variant, c.padding,
				len(s.blocks), s.head, s.fh, s.fw, c.blocks, c.head, c.fh, c.fh)
		}
		for i, st := range efficientNetStages {
			if got := roundRepeats(st.repeats, v.Depth); got != c.repeats[i] {
				t.Errorf("%s stage %d: %d repeats, want %d", c.variant, i, got, c.repeats[i])
			}
		}
		for i, b := range s.blocks {
			wantSkip := b.stride == 1 && b.in == b.out
			if b.skip != wantSkip || b.squeezed != max(1, b.in/4) || (i > 0 && b.in != s.blocks[i-1].out) {
				t.Errorf("%s block %d: %+v", c.variant, i, b)
			}
		}
	}
}

// TestPadding checks both paddings against hand-worked sizes.
func TestPadding(t *testing.T) {
	cases := []struct {
		p                 Padding
		n, k, s           int
		before, after, on int
	}{
		{PaddingKeras, 300, 3, 2, 0, 1, 150},
		{PaddingKeras, 75, 5, 2, 1, 2, 37}, // (75+3-5)/2+1
		{PaddingKeras, 18, 5, 2, 1, 2, 9},
		{PaddingSame, 75, 5, 2, 2, 2, 38}, // ceil(75/2)
		{PaddingSame, 300, 3, 2, 0, 1, 150},
		{PaddingSame, 19, 5, 2, 2, 2, 10},
		{PaddingSame, 20, 5, 1, 2, 2, 20},
		{PaddingKeras, 20, 3, 1, 1, 1, 20},
	}
	for _, c := range cases {
		b, a := c.p.pads(c.n, c.k, c.s)
		on := (c.n+b+a-c.k)/c.s + 1
		if b != c.before || a != c.after || on != c.on {
			t.Errorf("%v n=%d k=%d s=%d: pads (%d, %d) -> %d, want (%d, %d) -> %d", c.p, c.n, c.k, c.s, b, a, on, c.before, c.after, c.on)
		}
	}
	for _, s := range []string{"keras", "same"} {
		if p, err := ParsePadding(s); err != nil || p.String() != s {
			t.Errorf("ParsePadding(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := ParsePadding("valid"); err == nil {
		t.Error("ParsePadding(valid) did not fail")
	}
}

// TestParamCounts checks the published parameter counts (torchvision and
// keras.applications report the same trainable counts) and that the ONNX
// file holds exactly the folded count.
func TestParamCounts(t *testing.T) {
	published := map[string][2]int{ // without, with the ImageNet classifier
		"b0": {4007548, 5288548},
		"b1": {6513184, 7794184},
		"b2": {7700994, 9109994},
		"b3": {10696232, 12233232},
	}
	for _, name := range []string{"b0", "b1", "b2", "b3"} {
		v, _ := LookupEfficientNet(name)
		s, _ := newEfficientNetSpec(v, PaddingKeras, v.Resolution, v.Resolution)
		want := published[name]
		if got := s.params(false); got != want[0] {
			t.Errorf("%s without classifier: %d parameters, want %d", name, got, want[0])
		}
		if got := s.params(true); got != want[1] {
			t.Errorf("%s with classifier: %d parameters, want %d", name, got, want[1])
		}
		t.Logf("%s: %d parameters with the classifier, %d without; %d with batch norms folded", name, s.params(true), s.params(false), s.params(false)-s.bnChannels())
	}
	g := generate(t, EfficientNetConfig{Variant: "b0", Seed: 1})
	// Count the ONNX file's weights independently of the generator.
	m, err := onnx.Parse(g.onnx)
	if err != nil {
		t.Fatal(err)
	}
	onnxParams := 0
	for _, tn := range m.Graph.Initializers {
		if tn.DataType != onnx.Float {
			continue
		}
		n, _ := tn.NumElements()
		onnxParams += int(n)
	}
	if want := 3986540; onnxParams != want || g.net.Params() != want {
		t.Errorf("B0 ONNX file has %d parameters (generator says %d), want %d = 4007548 - 21008 batch-norm channels",
			onnxParams, g.net.Params(), want)
	}
}

func TestGenerateDeterministic(t *testing.T) {
	cfg := EfficientNetConfig{Variant: "b0", Height: 64, Width: 64, Seed: 7, CalibrationImages: 2}
	sums := map[string]bool{}
	for i, seed := range []uint64{7, 7, 8} {
		cfg.Seed = seed
		g, err := GenerateEfficientNet(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, sum, err := g.ONNX()
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 && !sums[sum] {
			t.Error("the same seed gave a different file")
		}
		sums[sum] = true
	}
	if len(sums) != 2 {
		t.Error("a different seed gave the same file")
	}
}

func TestGenerateRejects(t *testing.T) {
	for _, cfg := range []EfficientNetConfig{
		{Variant: "b7"},
		{Variant: "b0", Padding: 9},
		{Variant: "b0", Height: 8, Width: 8},
		{Variant: "b0", FiLMDim: -1},
		{Variant: "b0", CalibrationImages: 1},
		{Variant: "b0", FiLMInitStd: -1},
	} {
		if _, err := GenerateEfficientNet(cfg); err == nil {
			t.Errorf("GenerateEfficientNet(%+v) did not fail", cfg)
		}
	}
}

// naiveConv is a direct convolution, the oracle for convLayer.forward:
// out (N, Cout, OH, OW).
func naiveConv(c *convLayer, in []float32, n, h, w int) []float32 {
	oh, ow := c.outSize(h, w)
	cig := c.cin / c.groups
	cog := c.cout / c.groups
	out := make([]float32, n*c.cout*oh*ow)
	for b := 0; b < n; b++ {
		for o := 0; o < c.cout; o++ {
			g := o / cog
			for y := 0; y < oh; y++ {
				for x := 0; x < ow; x++ {
					s := float64(c.b[o])
					for ci := 0; ci < cig; ci++ {
						for ky := 0; ky < c.k; ky++ {
							for kx := 0; kx < c.k; kx++ {
								iy, ix := y*c.stride+ky-c.pads[0], x*c.stride+kx-c.pads[1]
								if iy < 0 || iy >= h || ix < 0 || ix >= w {
									continue
								}
								s += float64(c.w[((o*cig+ci)*c.k+ky)*c.k+kx]) * float64(in[((b*c.cin+g*cig+ci)*h+iy)*w+ix])
							}
						}
					}
					out[((b*c.cout+o)*oh+y)*ow+x] = float32(s)
				}
			}
		}
	}
	return out
}

func randSlice32(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// TestConvMatchesNaive covers each path of convLayer.forward: depthwise,
// 1x1, a batch of vectors, and im2col, with odd sizes, strides and
// asymmetric padding.
func TestConvMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name                     string
		cin, cout, k, s, g, h, w int
		pads                     [4]int
	}{
		{"depthwise 3x3/2 keras", 5, 5, 3, 2, 5, 9, 8, [4]int{0, 0, 1, 1}},
		{"depthwise 5x5/2 same", 4, 4, 5, 2, 4, 7, 10, [4]int{2, 1, 2, 2}},
		{"depthwise 5x5/1", 3, 3, 5, 1, 3, 6, 5, [4]int{2, 2, 2, 2}},
		{"pointwise", 6, 4, 1, 1, 1, 5, 3, [4]int{}},
		{"vectors", 6, 4, 1, 1, 1, 1, 1, [4]int{}},
		{"stem 3x3/2", 3, 8, 3, 2, 1, 11, 10, [4]int{0, 0, 1, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := 2
			l := convLayer{cin: c.cin, cout: c.cout, k: c.k, stride: c.s, groups: c.g, pads: c.pads,
				w: randSlice32(r, c.cout*c.cin/c.g*c.k*c.k), b: randSlice32(r, c.cout)}
			in := randSlice32(r, n*c.cin*c.h*c.w)
			want := naiveConv(&l, in, n, c.h, c.w)
			got := make([]float32, len(want))
			l.forward(got, in, n, c.h, c.w)
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*(1+math.Abs(float64(want[i]))) {
					t.Fatalf("element %d: %g, want %g", i, got[i], want[i])
				}
			}
		})
	}
}

// TestCalibrationNormalises checks the folded batch norm: after
// calibration each channel of the output has mean 0 and the target
// variance on the calibration batch, and the weights reproduce it.
func TestCalibrationNormalises(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, norm := range []normKind{normChannel, normLayer} {
		l := convLayer{cin: 3, cout: 4, k: 3, stride: 1, groups: 1, pads: [4]int{1, 1, 1, 1}, norm: norm, gain: 0.5,
			w: randSlice32(r, 4*3*9), b: make([]float32, 4)}
		n, h, w := 3, 6, 5
		in := randSlice32(r, n*3*h*w)
		for i := range in {
			in[i] = 2*in[i] + 3 // a mean and a scale for the norm to remove
		}
		out, _, _ := l.apply(in, n, h, w, true)
		again := make([]float32, len(out))
		l.forward(again, in, n, h, w) // the calibrated weights, no recalibration
		for i := range out {
			if math.Abs(float64(out[i]-again[i])) > 1e-4 {
				t.Fatalf("norm %d: calibrated weights give %g, calibration output %g", norm, again[i], out[i])
			}
		}
		var all []float64
		for o := 0; o < 4; o++ {
			var s, ss float64
			cnt := 0
			for b := 0; b < n; b++ {
				for _, v := range out[(b*4+o)*h*w : (b*4+o+1)*h*w] {
					s += float64(v)
					ss += float64(v) * float64(v)
					cnt++
					all = append(all, float64(v))
				}
			}
			m, sd := s/float64(cnt), math.Sqrt(ss/float64(cnt)-(s/float64(cnt))*(s/float64(cnt)))
			if norm == normChannel && (math.Abs(m) > 1e-4 || math.Abs(sd-0.5) > 1e-2) {
				t.Errorf("channel %d: mean %g, std %g; want 0, 0.5", o, m, sd)
			}
		}
		if norm == normLayer {
			var s, ss float64
			for _, v := range all {
				s += v
				ss += v * v
			}
			m := s / float64(len(all))
			if sd := math.Sqrt(ss/float64(len(all)) - m*m); math.Abs(sd-0.5) > 1e-2 {
				t.Errorf("layer std %g, want 0.5", sd)
			}
		}
	}
}
