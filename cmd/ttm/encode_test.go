package main

import (
	"bytes"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/safetensors"
	"github.com/ttmrobot/ttm/language"
	"github.com/ttmrobot/ttm/vision"
)

// encodeFixture writes a seeded EfficientNet-B0 (64x64 input) and a 64x64
// PNG into dir; it returns their paths, the generator (whose pure-Go
// forward pass is an independent reference for OpenCV's), and the PNG's
// RGB pixels.
func encodeFixture(t *testing.T, dir string) (onnxPath, pngPath string, g *vision.EfficientNet, rgb []byte) {
	t.Helper()
	g, err := vision.GenerateEfficientNet(vision.EfficientNetConfig{Variant: "b0", Height: 64, Width: 64, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	onnxPath = filepath.Join(dir, "b0.onnx")
	if _, err := g.WriteONNX(onnxPath); err != nil {
		t.Fatal(err)
	}
	m := image.NewRGBA(image.Rect(0, 0, 64, 64))
	rgb = make([]byte, 64*64*3)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 64 * 64 {
		x, y := i%64, i/64
		c := [3]byte{byte(4 * x), byte(4 * y), byte(r.IntN(256))}
		copy(rgb[3*i:], c[:])
		m.Pix[4*i], m.Pix[4*i+1], m.Pix[4*i+2], m.Pix[4*i+3] = c[0], c[1], c[2], 255
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	pngPath = filepath.Join(dir, "frame.png")
	if err := os.WriteFile(pngPath, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return onnxPath, pngPath, g, rgb
}

func readTensor(t *testing.T, f *safetensors.File, name string, shape ...int) []float32 {
	t.Helper()
	tensor, ok := f.Tensors[name]
	if !ok {
		t.Fatalf("no tensor %q in the output (have %v)", name, f.Names())
	}
	if !slices.Equal(tensor.Shape, shape) {
		t.Fatalf("%s has shape %v, want %v", name, tensor.Shape, shape)
	}
	v, err := tensor.Floats()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestEncodeCommand(t *testing.T) {
	dir := t.TempDir()
	onnxPath, pngPath, g, rgb := encodeFixture(t, dir)
	c, h, w := g.FeatureShape()
	out := filepath.Join(dir, "out.safetensors")
	// No --size: the 64x64 the ONNX file declares.
	code, stdout, stderr := runCmd(t, "encode", "--backbone", onnxPath, "--image", pngPath, "--threads", "1", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "features") {
		t.Errorf("stdout does not describe the features: %q", stdout)
	}
	res, err := safetensors.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The input, computed here from the PNG's pixels (no resize at 64x64).
	input := readTensor(t, res, "input", 1, 3, 64, 64)
	mean, std := []float64{0.485, 0.456, 0.406}, []float64{0.229, 0.224, 0.225}
	for ch := range 3 {
		for i := range 64 * 64 {
			want := (float64(rgb[3*i+ch])/255 - mean[ch]) / std[ch]
			if d := math.Abs(float64(input[ch*64*64+i]) - want); d > 1e-5 {
				t.Fatalf("input[%d, %d] = %v, want %v", ch, i, input[ch*64*64+i], want)
			}
		}
	}
	// The features against the generator's pure-Go forward pass.
	features := readTensor(t, res, "features", c, h, w)
	ref, err := g.Forward(input, nil)
	if err != nil {
		t.Fatal(err)
	}
	var num, den float64
	for i := range ref {
		num = math.Max(num, math.Abs(float64(features[i]-ref[i])))
		den = math.Max(den, math.Abs(float64(ref[i])))
	}
	if num > 1e-3*den {
		t.Errorf("OpenCV features differ from the Go reference by %g (max |ref| %g)", num, den)
	}
	if _, ok := res.Tensors["tokens"]; ok {
		t.Error("tokens written without a policy")
	}
	if res.Metadata["encode.image"] != "frame.png" || len(res.Metadata["encode.backbone_sha256"]) != 64 {
		t.Errorf("metadata %v", res.Metadata)
	}

	// --layer reads an intermediate value: a residual sum in the middle of
	// the network, with fewer channels and a larger map than the output.
	outL := filepath.Join(dir, "layer.safetensors")
	if code, _, stderr := runCmd(t, "encode", "--backbone", onnxPath, "--image", pngPath, "--layer", "blocks.6/add", "--out", outL); code != 0 {
		t.Fatalf("--layer: exit %d: %s", code, stderr)
	}
	resL, err := safetensors.ReadFile(outL)
	if err != nil {
		t.Fatal(err)
	}
	if s := resL.Tensors["features"].Shape; len(s) != 3 || s[0] >= c || s[1] <= h || s[2] <= w {
		t.Errorf("--layer blocks.6/add: features of shape %v, the output is [%d %d %d]", s, c, h, w)
	}
	if code, _, stderr := runCmd(t, "encode", "--backbone", onnxPath, "--image", pngPath, "--layer", "no/such/layer", "--out", outL); code != 1 || !strings.Contains(stderr, "no/such/layer") {
		t.Errorf("unknown layer: exit %d, %s", code, stderr)
	}

	// --input-tensor feeds the same input straight to the backbone.
	out2 := filepath.Join(dir, "out2.safetensors")
	if code, _, stderr := runCmd(t, "encode", "--backbone", onnxPath, "--input-tensor", out, "--size", "64x64", "--out", out2); code != 0 {
		t.Fatalf("--input-tensor: exit %d: %s", code, stderr)
	}
	res2, err := safetensors.ReadFile(out2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(readTensor(t, res2, "features", c, h, w), features) {
		t.Error("--input-tensor gives other features than --image with the same input")
	}
}

func TestEncodeWithPolicy(t *testing.T) {
	dir := t.TempDir()
	onnxPath, pngPath, g, _ := encodeFixture(t, dir)
	c, h, w := g.FeatureShape()
	cfg := vision.DefaultConfig(c)
	cfg.Preprocess.Height, cfg.Preprocess.Width = 64, 64
	cfg.Head.Dim, cfg.Head.EmbeddingDim, cfg.Head.Tokens = 32, 24, 4
	head, err := vision.NewHead(cfg.Head)
	if err != nil {
		t.Fatal(err)
	}
	head.Init(9)
	r := rand.New(rand.NewPCG(7, 8))
	for i := range head.P.FiLM.MultKernel { // a trained-looking FiLM, so the instruction matters
		head.P.FiLM.MultKernel[i] = float32(r.NormFloat64() * 0.1)
		head.P.FiLM.AddKernel[i] = float32(r.NormFloat64() * 0.1)
	}
	vocab, err := language.NewVocab([]string{"pick", "up", "the", "apple"})
	if err != nil {
		t.Fatal(err)
	}
	lcfg := language.DefaultConfig()
	lcfg.Width, lcfg.TokenDim, lcfg.HashBuckets = 24, 8, 32
	lm, err := language.NewModel(lcfg, vocab)
	if err != nil {
		t.Fatal(err)
	}
	lm.Init(4)
	f := safetensors.New()
	if err := vision.AddFrontEnd(f, cfg, head, vision.Prefix); err != nil {
		t.Fatal(err)
	}
	lm.AddTo(f, language.Prefix)
	policy := filepath.Join(dir, "policy.safetensors")
	if err := safetensors.WriteFile(policy, f); err != nil {
		t.Fatal(err)
	}

	tokensFor := func(args ...string) ([]float32, []float32) {
		t.Helper()
		out := filepath.Join(dir, "tok.safetensors")
		args = append([]string{"encode", "--backbone", onnxPath, "--image", pngPath, "--policy", policy, "--out", out}, args...)
		if code, _, stderr := runCmd(t, args...); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		res, err := safetensors.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return readTensor(t, res, "features", c, h, w), readTensor(t, res, "tokens", 4, 32)
	}
	features, plain := tokensFor()
	want := make([]float32, 4*32)
	head.Forward(want, head.NewActs(h*w), features, make([]float32, 24))
	if !slices.Equal(plain, want) {
		t.Error("tokens differ from the head applied to the written features")
	}
	_, instructed := tokensFor("--instruction", "Pick up the apple")
	e, err := lm.Embed("Pick up the apple")
	if err != nil {
		t.Fatal(err)
	}
	head.Forward(want, head.NewActs(h*w), features, e)
	if !slices.Equal(instructed, want) {
		t.Error("tokens with --instruction differ from the head with the language model's embedding")
	}
	if slices.Equal(instructed, plain) {
		t.Error("the instruction does not change the tokens")
	}
}

func TestEncodeRejects(t *testing.T) {
	dir := t.TempDir()
	onnxPath, pngPath, g, _ := encodeFixture(t, dir)
	c, _, _ := g.FeatureShape()
	cfg := vision.DefaultConfig(c)
	cfg.Preprocess.Height, cfg.Preprocess.Width = 64, 64
	head, _ := vision.NewHead(cfg.Head)
	policy := filepath.Join(dir, "policy.safetensors")
	if err := vision.SaveFrontEnd(policy, cfg, head); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.png")
	png, _ := os.ReadFile(pngPath)
	os.WriteFile(bad, png[:len(png)/2], 0o644)
	garbage := filepath.Join(dir, "garbage.onnx")
	os.WriteFile(garbage, []byte("not an onnx file at all"), 0o644)
	out := filepath.Join(dir, "out.safetensors")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no backbone", []string{"--image", pngPath, "--out", out}, 2, "--backbone is required"},
		{"no out", []string{"--backbone", onnxPath, "--image", pngPath}, 2, "--out is required"},
		{"no image", []string{"--backbone", onnxPath, "--out", out}, 2, "exactly one of --image and --input-tensor"},
		{"bad size", []string{"--backbone", onnxPath, "--image", pngPath, "--size", "64", "--out", out}, 2, "want HxW"},
		{"size against policy", []string{"--backbone", onnxPath, "--image", pngPath, "--policy", policy, "--size", "96x96", "--out", out}, 2, "differs from the policy's 64x64"},
		{"instruction without model", []string{"--backbone", onnxPath, "--image", pngPath, "--policy", policy, "--instruction", "go", "--out", out}, 2, "holds no language model"},
		{"instruction without policy", []string{"--backbone", onnxPath, "--image", pngPath, "--instruction", "go", "--out", out}, 2, "--instruction needs --policy"},
		{"truncated png", []string{"--backbone", onnxPath, "--image", bad, "--size", "64x64", "--out", out}, 1, "IEND"},
		{"missing image", []string{"--backbone", onnxPath, "--image", filepath.Join(dir, "nope.png"), "--out", out}, 1, "no such file"},
		{"garbage backbone", []string{"--backbone", garbage, "--image", pngPath, "--size", "64x64", "--out", out}, 1, "garbage.onnx"},
	} {
		code, _, stderr := runCmd(t, append([]string{"encode"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d saying %q", c.name, code, stderr, c.code, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed run wrote the output")
	}
}
