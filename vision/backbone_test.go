package vision

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/onnx"
)

func openTest(t testing.TB, spec BackboneSpec) *Backbone {
	t.Helper()
	b, err := OpenBackbone(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func run(t testing.TB, b *Backbone, in, film []float32) []float32 {
	t.Helper()
	c, h, w := b.OutputShape()
	out := make([]float32, c*h*w)
	if err := b.Run(in, film, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHandComputedGraph runs the graph of handGraph in OpenCV and compares
// with the values worked out by hand there.
func TestHandComputedGraph(t *testing.T) {
	path := handGraph().file(t)
	z := []float64{-1, -1, -1, -1, 5, 7, 11, 13}
	swish := make([]float32, len(z))
	for i, v := range z {
		swish[i] = float32(v / (1 + math.Exp(-v)))
	}
	pool := []float32{(swish[0] + swish[1] + swish[2] + swish[3]) / 4, (swish[4] + swish[5] + swish[6] + swish[7]) / 4}
	cases := []struct {
		layer   string
		c, h, w int
		want    []float32
	}{
		{"", 2, 2, 2, swish},
		{"y", 2, 2, 2, []float32{-2, -2, -2, -2, 7, 9, 13, 15}},
		{"z", 2, 2, 2, []float32{-1, -1, -1, -1, 5, 7, 11, 13}},
		{"pool", 2, 1, 1, pool},
	}
	for _, c := range cases {
		t.Run("layer="+c.layer, func(t *testing.T) {
			b := openTest(t, BackboneSpec{Path: path, Height: 3, Width: 3, Layer: c.layer})
			if gc, gh, gw := b.OutputShape(); gc != c.c || gh != c.h || gw != c.w {
				t.Fatalf("shape %dx%dx%d, want %dx%dx%d", gc, gh, gw, c.c, c.h, c.w)
			}
			got := run(t, b, handInput, nil)
			for i := range c.want {
				if math.Abs(float64(got[i]-c.want[i])) > 1e-5*(1+math.Abs(float64(c.want[i]))) {
					t.Errorf("%s[%d] = %g, want %g", c.layer, i, got[i], c.want[i])
				}
			}
		})
	}
}

// TestGeneratedBackbones loads generated EfficientNets into OpenCV and
// checks the feature map's shape, that OpenCV computes what the Go
// reference computes, and that the features are of order one, finite,
// and differ between images.
func TestGeneratedBackbones(t *testing.T) {
	cases := []struct {
		cfg     EfficientNetConfig
		c, h, w int
	}{
		{EfficientNetConfig{Variant: "b0", Seed: 1}, 1280, 7, 7},
		{EfficientNetConfig{Variant: "b3", Seed: 1, Padding: PaddingKeras}, 1536, 9, 9},
		{EfficientNetConfig{Variant: "b3", Seed: 1, Padding: PaddingSame}, 1536, 10, 10},
	}
	for _, c := range cases {
		t.Run(c.cfg.Variant+"-"+c.cfg.Padding.String(), func(t *testing.T) {
			g := generate(t, c.cfg)
			h, w := g.net.InputSize()
			b := openTest(t, BackboneSpec{Path: g.write(t), SHA256: g.sha, Height: h, Width: w})
			if gc, gh, gw := b.OutputShape(); gc != c.c || gh != c.h || gw != c.w {
				t.Fatalf("output %dx%dx%d, want %dx%dx%d", gc, gh, gw, c.c, c.h, c.w)
			}
			r := rand.New(rand.NewPCG(11, 12)) // not the calibration images
			var feats [][]float32
			for i := 0; i < 2; i++ {
				img := syntheticImage(r, h, w)
				got := run(t, b, img, nil)
				want, err := g.net.Forward(img, nil)
				if err != nil {
					t.Fatal(err)
				}
				mean, std, maxAbs := moments(got)
				if d := maxDiff(got, want); d > 2e-4*(1+maxAbs) {
					t.Errorf("image %d: OpenCV and the Go reference differ by %g (features up to %g)", i, d, maxAbs)
				}
				if math.IsNaN(std) || math.IsInf(maxAbs, 0) {
					t.Fatalf("image %d: features not finite", i)
				}
				if std < 0.05 || std > 20 || math.Abs(mean) > 20 {
					t.Errorf("image %d: features mean %g, std %g: not of order one", i, mean, std)
				}
				t.Logf("image %d: features mean %.3f std %.3f max |x| %.2f", i, mean, std, maxAbs)
				feats = append(feats, got)
			}
			if rel := relDiff(feats[0], feats[1]); rel < 0.2 {
				t.Errorf("features of two different images differ by only %.3f (relative)", rel)
			} else {
				t.Logf("features of two images differ by %.2f (relative L2)", rel)
			}
		})
	}
}

func moments(x []float32) (mean, std, maxAbs float64) {
	var s, ss float64
	for _, v := range x {
		s += float64(v)
		ss += float64(v) * float64(v)
		maxAbs = math.Max(maxAbs, math.Abs(float64(v)))
	}
	mean = s / float64(len(x))
	return mean, math.Sqrt(math.Max(ss/float64(len(x))-mean*mean, 0)), maxAbs
}

func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

// relDiff is |a-b| / |a| in L2.
func relDiff(a, b []float32) float64 {
	var d, n float64
	for i := range a {
		d += float64(a[i]-b[i]) * float64(a[i]-b[i])
		n += float64(a[i]) * float64(a[i])
	}
	return math.Sqrt(d / n)
}

// TestFiLM checks the FiLM path through OpenCV: zero-initialised FiLM is
// the identity whatever the embedding, and non-zero FiLM computes what
// the Go reference computes, x * (1 + W_m e + b_m) + (W_a e + b_a) after
// each block.
func TestFiLM(t *testing.T) {
	base := EfficientNetConfig{Variant: "b0", Height: 96, Width: 96, Seed: 3}
	plain := generate(t, base)
	withFiLM := base
	withFiLM.FiLMDim = 16
	zero := generate(t, withFiLM)
	withFiLM.FiLMInitStd = 0.05
	active := generate(t, withFiLM)

	r := rand.New(rand.NewPCG(5, 6))
	img := syntheticImage(r, 96, 96)
	e := randSlice32(r, 16)

	bPlain := openTest(t, BackboneSpec{Path: plain.write(t), Height: 96, Width: 96})
	bZero := openTest(t, BackboneSpec{Path: zero.write(t), Height: 96, Width: 96, FiLMInput: EfficientNetFiLMInput, FiLMDim: 16})
	bActive := openTest(t, BackboneSpec{Path: active.write(t), Height: 96, Width: 96, FiLMInput: EfficientNetFiLMInput, FiLMDim: 16})

	want := run(t, bPlain, img, nil)
	if d := maxDiff(run(t, bZero, img, e), want); d > 1e-4 {
		t.Errorf("zero-initialised FiLM changed the features by %g", d)
	}
	got := run(t, bActive, img, e)
	ref, err := active.net.Forward(img, e)
	if err != nil {
		t.Fatal(err)
	}
	_, _, maxAbs := moments(ref)
	if d := maxDiff(got, ref); d > 1e-3*(1+maxAbs) {
		t.Errorf("FiLM: OpenCV and the Go reference differ by %g", d)
	}
	if rel := relDiff(got, run(t, bActive, img, make([]float32, 16))); rel < 0.01 {
		t.Errorf("the embedding changed the features by only %g", rel)
	}
	if zero.net.FiLMParams() != 2*(16+1)*(16+24*2+40*2+80*3+112*3+192*4+320) {
		t.Errorf("FiLM parameters %d", zero.net.FiLMParams())
	}
}

// TestOpenBackboneRejects feeds bad files and specs; each must give an
// error naming the problem, and none may take the process down (OpenCV
// aborts on malformed models, so this test reaching its end is part of
// the check).
func TestOpenBackboneRejects(t *testing.T) {
	dir := t.TempDir()
	hand := handGraph()
	good := hand.bytes(t)
	goodPath := writeFile(t, good)
	garbage := make([]byte, 200)
	for i := range garbage {
		garbage[i] = byte(i*7 + 3)
	}
	unsupported := handGraph()
	unsupported.m.Graph.Nodes[2] = &onnx.Node{Name: "nms", OpType: "NonMaxSuppression", Inputs: []string{"z"}, Outputs: []string{"s"}}
	shortTensor := handGraph()
	shortTensor.m.Graph.Initializers[0] = &onnx.Tensor{Name: "W", DataType: onnx.Float, Dims: []int64{2, 3, 2, 2}, RawData: make([]byte, 4*23)}
	unordered := handGraph()
	unordered.m.Graph.Nodes[0], unordered.m.Graph.Nodes[1] = unordered.m.Graph.Nodes[1], unordered.m.Graph.Nodes[0]
	loop := handGraph()
	loop.m.Graph.Nodes[0].Attributes = append(loop.m.Graph.Nodes[0].Attributes, &onnx.Attribute{Name: "body", Type: onnx.AttrGraph, G: &onnx.Graph{}})
	// Passes every check in Go but is wrong: 5 input channels of weights
	// for a 1-channel input. OpenCV throws; the shim turns it into an error.
	badWeights := handGraph()
	badWeights.m.Graph.Initializers[0] = onnx.FloatTensor("W", make([]float32, 40), 2, 5, 2, 2)
	foreign := handGraph()
	foreign.m.Graph.Nodes[2] = &onnx.Node{Name: "custom", OpType: "Frobnicate", Domain: "com.example", Inputs: []string{"z"}, Outputs: []string{"s"}}
	dynamic := handGraph()
	dynamic.m.Graph.Inputs[0].Type.Tensor.Shape.Dims[2] = onnx.Dimension{Param: "height"}

	spec := func(path string) BackboneSpec { return BackboneSpec{Path: path, Height: 3, Width: 3} }
	cases := []struct {
		name string
		spec BackboneSpec
		want []string
	}{
		{"missing file", spec(filepath.Join(dir, "nope.onnx")), []string{"no such file"}},
		{"directory", spec(dir), []string{"not a regular file"}},
		{"empty file", spec(writeFile(t, nil)), []string{"0 bytes, outside"}},
		{"truncated file", spec(writeFile(t, good[:len(good)-20])), []string{"onnx", "truncated"}},
		{"garbage", spec(writeFile(t, garbage)), []string{"onnx"}},
		{"wrong sha256", BackboneSpec{Path: goodPath, Height: 3, Width: 3, SHA256: strings.Repeat("ab", 32)}, []string{"SHA-256 is", "expected abab"}},
		{"malformed sha256", BackboneSpec{Path: goodPath, Height: 3, Width: 3, SHA256: "abc"}, []string{"not 64 hex digits"}},
		{"unsupported op", spec(unsupported.file(t)), []string{`node "nms"`, `op "NonMaxSuppression"`, "not supported by OpenCV 4.6"}},
		{"foreign domain", spec(foreign.file(t)), []string{`node "custom"`, `op "Frobnicate" (domain com.example)`}},
		{"short tensor", spec(shortTensor.file(t)), []string{`tensor "W"`, "need 24 elements, raw_data has 23"}},
		{"unordered nodes", spec(unordered.file(t)), []string{`node "z"`, "topological"}},
		{"subgraph attribute", spec(loop.file(t)), []string{`node "y"`, "subgraph"}},
		{"weights OpenCV rejects", spec(badWeights.file(t)), []string{"opencv"}},
		{"size mismatch", BackboneSpec{Path: goodPath, Height: 4, Width: 4}, []string{`graph input "x" has shape [1 3 3 3], the backbone feeds [1 3 4 4]`}},
		{"no size", BackboneSpec{Path: goodPath}, []string{"input size 0x0"}},
		{"no path", BackboneSpec{Height: 3, Width: 3}, []string{"no ONNX file"}},
		{"film without dim", BackboneSpec{Path: goodPath, Height: 3, Width: 3, FiLMInput: "film"}, []string{"give both or neither"}},
		{"film input missing", BackboneSpec{Path: goodPath, Height: 3, Width: 3, FiLMInput: "film", FiLMDim: 4}, []string{`no FiLM input "film"`}},
		{"unknown layer", BackboneSpec{Path: goodPath, Height: 3, Width: 3, Layer: "nothing"}, []string{`no value "nothing"`}},
		{"two outputs", spec(func() string { g := handGraph(); g.output("pool", 1, 2, 1, 1); return g.file(t) }()), []string{"2 outputs"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := OpenBackbone(c.spec, nil)
			if err == nil {
				b.Close()
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// A symbolic input dimension is pinned to the spec's size, not an error.
	b := openTest(t, spec(dynamic.file(t)))
	if got := run(t, b, handInput, nil); len(got) != 8 {
		t.Errorf("dynamic input: %d outputs", len(got))
	}
}

func TestRunRejectsBadSizes(t *testing.T) {
	b, err := OpenBackbone(BackboneSpec{Path: handGraph().file(t), Height: 3, Width: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, 8)
	cases := []struct {
		name          string
		in, film, out []float32
		want          string
	}{
		{"short input", make([]float32, 26), nil, out, "input has 26 values"},
		{"film to a graph without", make([]float32, 27), make([]float32, 3), out, "no FiLM input"},
		{"short output", make([]float32, 27), nil, make([]float32, 7), "output buffer has 7 values"},
	}
	for _, c := range cases {
		if err := b.Run(c.in, c.film, c.out); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if err := b.Run(make([]float32, 27), nil, out); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := b.Run(make([]float32, 27), nil, out); err != ErrClosed {
		t.Errorf("Run after Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestRunDoesNotAllocate(t *testing.T) {
	g := generate(t, EfficientNetConfig{Variant: "b0", Height: 96, Width: 96, Seed: 3, FiLMDim: 16})
	b := openTest(t, BackboneSpec{Path: g.write(t), Height: 96, Width: 96, FiLMInput: EfficientNetFiLMInput, FiLMDim: 16})
	in := make([]float32, 3*96*96)
	film := make([]float32, 16)
	c, h, w := b.OutputShape()
	out := make([]float32, c*h*w)
	if n := testing.AllocsPerRun(5, func() {
		if err := b.Run(in, film, out); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Run allocates %v times per call", n)
	}
}

// TestSwishModes runs B0 with each way of computing swish: the numbers must
// agree with the Go reference, and OpenCV's profile shows the layers each
// mode creates (OpenCV's Swish layers fused into the convolutions, taking
// no time of their own). The depthwise convolutions stay OpenCV's here
// (a TTMDepthwise layer takes in the TTMSwish after it, and cannot take
// in OpenCV's Swish); depthwise_backbone_test.go counts the layers with
// TTMDepthwise.
func TestSwishModes(t *testing.T) {
	g := generate(t, EfficientNetConfig{Variant: "b0", Height: 96, Width: 96, Seed: 3})
	path := g.write(t)
	img := syntheticImage(rand.New(rand.NewPCG(1, 1)), 96, 96)
	want, err := g.net.Forward(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		mode   SwishMode
		counts map[string]int // layers of these types in OpenCV's net
		fused  string         // a type whose layers must all report zero time
	}{
		{SwishFast, map[string]int{"TTMSwish": 49, "Sigmoid": 16}, ""},
		{SwishOpenCV, map[string]int{"Swish": 49, "Sigmoid": 16}, "Swish"},
		{SwishUnfused, map[string]int{"Sigmoid": 49 + 16, "TTMSwish": 0, "Swish": 0}, ""},
	}
	for _, c := range cases {
		b := openTest(t, BackboneSpec{Path: path, Height: 96, Width: 96, Swish: c.mode, Depthwise: DepthwiseOpenCV, Pointwise: PointwiseOpenCV})
		got := run(t, b, img, nil)
		if d := maxDiff(got, want); d > 1e-4 {
			t.Errorf("swish mode %d: differs from the Go reference by %g", c.mode, d)
		}
		ts := b.LayerTimings()
		count := map[string]int{}
		var fusedTime float64
		for _, l := range ts {
			count[l.Type]++
			if l.Type == c.fused {
				fusedTime += l.Time.Seconds()
			}
		}
		for typ, n := range c.counts {
			if count[typ] != n {
				t.Errorf("swish mode %d: %d %s layers, want %d (all: %v)", c.mode, count[typ], typ, n, count)
			}
		}
		if count["Convolution"] == 0 || TotalTime(ts) <= 0 {
			t.Errorf("swish mode %d: no convolution time in the profile: %v", c.mode, count)
		}
		if c.fused != "" && fusedTime != 0 {
			t.Errorf("swish mode %d: %s layers took %gs; fused into the convolutions they take none", c.mode, c.fused, fusedTime)
		}
	}
	b, err := OpenBackbone(BackboneSpec{Path: path, Height: 96, Width: 96}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if b.LayerTimings() != nil {
		t.Error("LayerTimings after Close")
	}
	if _, err := OpenBackbone(BackboneSpec{Path: path, Height: 96, Width: 96, Swish: 7}, nil); err == nil {
		t.Error("unknown swish mode accepted")
	}
}

func TestSHAAndRewritesReported(t *testing.T) {
	g := generate(t, EfficientNetConfig{Variant: "b0", Height: 96, Width: 96, Seed: 3})
	b := openTest(t, BackboneSpec{Path: g.write(t), SHA256: strings.ToUpper(g.sha), Height: 96, Width: 96})
	if b.SHA256() != g.sha {
		t.Errorf("SHA256() = %s, want %s", b.SHA256(), g.sha)
	}
	want := []string{RewriteSwish, RewriteDepthwise}
	if kernelAVX512.supported() {
		want = []string{RewriteSwish, RewriteExcitation, RewriteConv, RewritePointwise, RewriteDepthwise}
	}
	var kinds []string
	for _, r := range b.Rewrites() {
		kinds = append(kinds, r.Kind)
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("rewrites of a generated graph: %v, want %v", b.Rewrites(), want)
	}
	if h, w := b.InputShape(); h != 96 || w != 96 {
		t.Errorf("InputShape %dx%d", h, w)
	}
}

func osMkdirTemp() (string, error) { return os.MkdirTemp("", "ttm-vision-") }

// TestTruncatedBackbone: a graph cut after 7 blocks gives, at its output,
// the features the full graph has at that block, and is a smaller file.
func TestTruncatedBackbone(t *testing.T) {
	cfg := EfficientNetConfig{Variant: "b0", Seed: 3, Height: 64, Width: 80}
	full := generate(t, cfg)
	cfg.Blocks = 7
	cut := generate(t, cfg)
	if c, h, w := cut.net.FeatureShape(); c != 80 || h != 4 || w != 5 {
		t.Errorf("truncated FeatureShape %dx%dx%d, want 80x4x5", c, h, w)
	}
	layer := cut.net.BlockOutput(6)
	if layer != "blocks.6/add" {
		t.Errorf("block 7's output is %q, want blocks.6/add", layer)
	}
	fullB := openTest(t, BackboneSpec{Path: full.write(t), Height: 64, Width: 80, Layer: layer})
	cutB := openTest(t, BackboneSpec{Path: cut.write(t), Height: 64, Width: 80})
	if c, h, w := cutB.OutputShape(); c != 80 || h != 4 || w != 5 {
		t.Fatalf("truncated output %dx%dx%d, want 80x4x5", c, h, w)
	}
	img := syntheticImage(rand.New(rand.NewPCG(4, 4)), 64, 80)
	a, b := run(t, fullB, img, nil), run(t, cutB, img, nil)
	_, _, maxAbs := moments(a)
	if d := maxDiff(a, b); d > 1e-5*(1+maxAbs) {
		t.Errorf("truncated and full graphs differ by %g at %s", d, layer)
	}
	fb, _, _ := full.net.ONNX()
	cb, _, _ := cut.net.ONNX()
	if len(cb)*4 > len(fb) {
		t.Errorf("truncated file %d bytes, full %d: expected far smaller", len(cb), len(fb))
	}
}
