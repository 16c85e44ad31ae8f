package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/ttmrobot/ttm/internal/onnx"
	"github.com/ttmrobot/ttm/internal/safetensors"
	"github.com/ttmrobot/ttm/language"
	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/vision"
)

func init() {
	register(command{name: "encode", summary: "run one image through preprocessing and a backbone (and a front end); write the tensors", run: runEncode})
}

// maxImageFile bounds the image file read by encode.
const maxImageFile = 64 << 20

// runEncode is how a user checks an exported backbone: the same image
// through this program's preprocessing and OpenCV, the tensors written out
// to compare with the training framework's.
//
// Output (safetensors, F32):
//
//	input     [1, 3, H, W]  the preprocessed backbone input
//	features  [C, h, w]     the backbone's feature map
//	tokens    [K, d]        the front end's tokens, with --policy
//
// and metadata encode.image, encode.backbone_sha256, encode.preprocess
// (JSON), encode.film ("none", "head" or "backbone").
//
// --policy takes any safetensors file with a front end under vision/ and
// its configuration (vision.Config JSON) in the metadata key
// vision.config, as policy checkpoints store it and vision.SaveFrontEnd
// writes it. If the file also holds a language model (language/ tensors,
// language.config and language.vocab metadata), --instruction is encoded
// with it; otherwise the embedding is zeros.
func runEncode(env *environment, args []string) error {
	fs := newFlags(env, "encode", "--backbone FILE.onnx (--image FILE.png|jpg | --input-tensor FILE.safetensors) [--size HxW] [--layer NAME] [--policy CKPT.safetensors [--instruction TEXT]] --out OUT.safetensors")
	backbonePath := fs.String("backbone", "", "backbone ONNX `file`")
	imagePath := fs.String("image", "", "PNG or JPEG image `file` (any size: it is resized as the preprocessing says)")
	inputPath := fs.String("input-tensor", "", "safetensors `file` with a preprocessed \"input\" [1, 3, H, W] F32 tensor, used instead of --image (to test the backbone alone)")
	size := fs.String("size", "", "backbone input size `HxW`; default: the policy's, else the size the ONNX file declares, else 300x300 (RT-1, EfficientNet-B3)")
	layer := fs.String("layer", "", "backbone output layer `name`; default: the policy's, else the graph's output")
	policyPath := fs.String("policy", "", "checkpoint `file` with a vision front end (vision/ tensors, vision.config metadata): also write the tokens")
	instruction := fs.String("instruction", "", "instruction `text` for FiLM; needs a language model in the --policy file")
	threads := fs.Int("threads", 0, "OpenCV threads (0: OpenCV's default)")
	out := fs.String("out", "", "output safetensors `file`")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"backbone", *backbonePath}, {"out", *out}} {
		if err := requireFlag(f.name, f.v); err != nil {
			return err
		}
	}
	if err := makeOutDir(filepath.Dir(*out)); err != nil {
		return err
	}
	if (*imagePath == "") == (*inputPath == "") {
		return fmt.Errorf("%w: give exactly one of --image and --input-tensor", errUsage)
	}
	if *instruction != "" && *policyPath == "" {
		return fmt.Errorf("%w: --instruction needs --policy (the language model and FiLM live there)", errUsage)
	}

	// The configuration: the policy's, or defaults with a head-less front end.
	cfg, head, embedding, err := encodeConfig(*policyPath, *instruction)
	if err != nil {
		return err
	}
	switch {
	case *size != "":
		h, w, err := sim.ParseSize(*size)
		if err != nil {
			return fmt.Errorf("%w: --size: %v", errUsage, err)
		}
		if head != nil && (h != cfg.Preprocess.Height || w != cfg.Preprocess.Width) {
			return fmt.Errorf("%w: --size %dx%d differs from the policy's %dx%d", errUsage, h, w, cfg.Preprocess.Height, cfg.Preprocess.Width)
		}
		cfg.Preprocess.Height, cfg.Preprocess.Width = h, w
	case head == nil:
		if h, w := encodeGraphSize(*backbonePath); h > 0 {
			cfg.Preprocess.Height, cfg.Preprocess.Width = h, w
		}
	}
	if *layer != "" {
		if head != nil && cfg.Backbone.Layer != "" && cfg.Backbone.Layer != *layer {
			return fmt.Errorf("%w: --layer %q differs from the policy's %q", errUsage, *layer, cfg.Backbone.Layer)
		}
		cfg.Backbone.Layer = *layer
	}

	pre, err := vision.NewPreprocessor(cfg.Preprocess)
	if err != nil {
		return err
	}
	input := make([]float32, pre.InputLen())
	source := ""
	if *imagePath != "" {
		if err := encodeImage(pre, input, *imagePath); err != nil {
			return err
		}
		source = filepath.Base(*imagePath)
	} else {
		if err := encodeReadInput(input, *inputPath, cfg.Preprocess); err != nil {
			return err
		}
		source = filepath.Base(*inputPath) + ":input"
	}

	spec := vision.BackboneSpec{
		Path: *backbonePath, SHA256: cfg.Backbone.SHA256,
		Height: cfg.Preprocess.Height, Width: cfg.Preprocess.Width,
		Layer: cfg.Backbone.Layer, Threads: *threads,
	}
	var film []float32
	if head != nil && cfg.Head.FiLM == vision.FiLMBackbone {
		spec.FiLMInput, spec.FiLMDim = cfg.Backbone.FiLMInput, cfg.Head.EmbeddingDim
		film = embedding
	}
	bb, err := vision.OpenBackbone(spec, env.log)
	if err != nil {
		return err
	}
	defer bb.Close()
	c, h, w := bb.OutputShape()
	features := make([]float32, c*h*w)
	if err := bb.Run(input, film, features); err != nil {
		return fmt.Errorf("run backbone %s: %w", *backbonePath, err)
	}

	res := safetensors.New()
	res.Tensors["input"] = safetensors.FromFloat32(input, 1, 3, cfg.Preprocess.Height, cfg.Preprocess.Width)
	res.Tensors["features"] = safetensors.FromFloat32(features, c, h, w)
	res.Metadata["encode.image"] = source
	res.Metadata["encode.preprocess"] = cfg.Preprocess.JSON()
	res.Metadata["encode.film"] = "none"
	if sum, err := vision.FileSHA256(*backbonePath); err == nil {
		res.Metadata["encode.backbone_sha256"] = sum
	}
	fmt.Fprintf(env.stdout, "input     [1 3 %d %d]  %s\n", cfg.Preprocess.Height, cfg.Preprocess.Width, encodeSummary(input))
	fmt.Fprintf(env.stdout, "features  [%d %d %d]  %s\n", c, h, w, encodeSummary(features))
	if head != nil {
		if c != cfg.Head.FeatureChannels {
			return fmt.Errorf("backbone %s gives %d channels, the policy's head takes %d", *backbonePath, c, cfg.Head.FeatureChannels)
		}
		tokens := make([]float32, cfg.Head.Tokens*cfg.Head.Dim)
		head.Forward(tokens, head.NewActs(h*w), features, embedding)
		res.Tensors["tokens"] = safetensors.FromFloat32(tokens, cfg.Head.Tokens, cfg.Head.Dim)
		res.Metadata["encode.film"] = string(cfg.Head.FiLM)
		fmt.Fprintf(env.stdout, "tokens    [%d %d]  %s\n", cfg.Head.Tokens, cfg.Head.Dim, encodeSummary(tokens))
	}
	if err := safetensors.WriteFile(*out, res); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	env.log.Info("wrote tensors", "file", *out, "image", source, "features", fmt.Sprintf("%dx%dx%d", c, h, w))
	return nil
}

// encodeConfig returns the front end configuration, head and embedding of
// a --policy file, or defaults (no head, no embedding) without one.
func encodeConfig(policyPath, instruction string) (vision.Config, *vision.Head, []float32, error) {
	if policyPath == "" {
		return vision.Config{Preprocess: vision.DefaultPreprocess()}, nil, nil, nil
	}
	f, err := safetensors.ReadFile(policyPath)
	if err != nil {
		return vision.Config{}, nil, nil, fmt.Errorf("read policy: %w", err)
	}
	cfg, head, err := vision.FrontEndFromFile(f, vision.Prefix)
	if err != nil {
		return vision.Config{}, nil, nil, fmt.Errorf("policy %s: %w", policyPath, err)
	}
	embedding := make([]float32, cfg.Head.EmbeddingDim)
	if instruction != "" {
		if _, ok := f.Metadata[language.ConfigKey]; !ok {
			return vision.Config{}, nil, nil, fmt.Errorf("%w: --instruction: policy %s holds no language model (%s)", errUsage, policyPath, language.ConfigKey)
		}
		lm, err := language.FromFile(f, language.Prefix)
		if err != nil {
			return vision.Config{}, nil, nil, fmt.Errorf("policy %s: %w", policyPath, err)
		}
		if lm.Config.Width != cfg.Head.EmbeddingDim {
			return vision.Config{}, nil, nil, fmt.Errorf("policy %s: language width %d, the vision head takes %d", policyPath, lm.Config.Width, cfg.Head.EmbeddingDim)
		}
		if embedding, err = lm.Embed(instruction); err != nil {
			return vision.Config{}, nil, nil, err
		}
	}
	return cfg, head, embedding, nil
}

// encodeImage decodes a PNG or JPEG file and preprocesses it into input.
func encodeImage(pre *vision.Preprocessor, input []float32, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("read image: %w", err)
	}
	if st.Size() > maxImageFile {
		return fmt.Errorf("image %s: %d bytes, more than the %d this command reads", path, st.Size(), maxImageFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read image: %w", err)
	}
	var dec vision.Decoder
	frame, err := dec.DecodeCompressed(&vision.CompressedImage{Data: data})
	if err != nil {
		return fmt.Errorf("image %s: %w", path, err)
	}
	if err := pre.Run(input, frame); err != nil {
		return fmt.Errorf("image %s: %w", path, err)
	}
	return nil
}

// encodeReadInput reads a preprocessed input [1, 3, H, W] (or [3, H, W]).
func encodeReadInput(dst []float32, path string, p vision.PreprocessConfig) error {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read input tensor: %w", err)
	}
	t, ok := f.Tensors["input"]
	if !ok {
		return fmt.Errorf("%s: no tensor named \"input\"", path)
	}
	want := []int{1, 3, p.Height, p.Width}
	if !(len(t.Shape) == 4 && slices.Equal(t.Shape, want)) && !(len(t.Shape) == 3 && slices.Equal(t.Shape, want[1:])) {
		return fmt.Errorf("%s: input has shape %v, want %v (set --size to the tensor's size)", path, t.Shape, want)
	}
	if err := t.Float32(dst); err != nil {
		return fmt.Errorf("%s: input: %w", path, err)
	}
	for i, v := range dst {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("%s: input holds %v at element %d", path, v, i)
		}
	}
	return nil
}

// encodeGraphSize returns the size an ONNX file declares for its image
// input, [N, 3, H, W] with fixed H and W, or 0, 0 when it declares none
// (or the file does not parse: OpenBackbone reports that properly).
func encodeGraphSize(path string) (h, w int) {
	m, err := onnx.ReadFile(path, 0)
	if err != nil || m.Graph == nil {
		return 0, 0
	}
	inits := map[string]bool{}
	for _, t := range m.Graph.Initializers {
		inits[t.Name] = true
	}
	for _, v := range m.Graph.Inputs {
		if inits[v.Name] || v.Type == nil || v.Type.Tensor == nil || v.Type.Tensor.Shape == nil {
			continue
		}
		d := v.Type.Tensor.Shape.Dims
		fixed := func(i int) bool { return d[i].Param == "" && d[i].Value > 0 && d[i].Value <= vision.MaxInputSide }
		if len(d) == 4 && fixed(1) && d[1].Value == 3 && fixed(2) && fixed(3) {
			return int(d[2].Value), int(d[3].Value)
		}
	}
	return 0, 0
}

// encodeSummary describes a tensor's values in one line.
func encodeSummary(x []float32) string {
	if len(x) == 0 {
		return "empty"
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	var s, sq float64
	for _, v := range x {
		f := float64(v)
		lo, hi = math.Min(lo, f), math.Max(hi, f)
		s += f
		sq += f * f
	}
	mean := s / float64(len(x))
	std := math.Sqrt(math.Max(0, sq/float64(len(x))-mean*mean))
	return fmt.Sprintf("mean %.4g std %.4g min %.4g max %.4g", mean, std, lo, hi)
}
