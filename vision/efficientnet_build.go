package vision

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Names of the generated graph's inputs and output.
const (
	EfficientNetImageInput = "image"    // [1, 3, H, W], ImageNet-normalised RGB
	EfficientNetFiLMInput  = "film"     // [1, D], the instruction embedding
	EfficientNetOutput     = "features" // [1, C, h, w]
)

// EfficientNetConfig configures GenerateEfficientNet.
type EfficientNetConfig struct {
	// Variant is "b0", "b1", "b2" or "b3".
	Variant string
	// Padding of the stride-2 convolutions. It defaults to PaddingKeras.
	Padding Padding
	// Height and Width of the input. They default to the variant's
	// published resolution (224, 240, 260, 300).
	Height, Width int
	// FiLMDim, if positive, adds a second input "film" of shape [1, FiLMDim]
	// and a FiLM layer after every MBConv block (RT-1):
	// x * (1 + W_m e + b_m) + (W_a e + b_a).
	FiLMDim int
	// FiLMInitStd is the standard deviation of the FiLM weights and biases.
	// Zero, the default, initialises FiLM to the identity (RT-1's choice);
	// tests set it to exercise the FiLM path.
	FiLMInitStd float32
	// Seed makes the weights: the same seed gives the same file.
	Seed uint64
	// Blocks, if positive, ends the graph after the first Blocks MBConv
	// blocks (no head convolution): a truncated feature extractor whose
	// weights are those of the full network's first blocks, and whose output
	// keeps the full graph's value name (BlockOutput), so a front end reading
	// that layer gets the same features from either file.
	Blocks int
	// CalibrationImages is the number of synthetic images whose statistics
	// set the folded batch norms. It defaults to 4.
	CalibrationImages int
}

// Calibration targets that keep a deep random EfficientNet stable. A
// squeeze-excitation gate multiplies a block's activations by a function of
// their own mean, a positive feedback: an image whose activations are a
// little larger than the calibration batch's opens the gates wider, and the
// difference compounds block after block (measured: feature scales from 0.3
// to 300 across synthetic images in B3 with unit-variance gate inputs).
// Starting the gates near their neutral point (pre-activation standard
// deviation 0.1, so gates of 0.5 +- 0.05) and the residual branches at half
// gain (the practice of initialising a residual branch's last norm small,
// as in Goyal et al. 2017's zero-gamma) keeps the features of order one for
// every test image (standard deviations 0.2 to 3 in B0-B3).
const (
	seGateGain   = 0.1
	residualGain = 0.5
)

// effFiLM holds one FiLM layer: wm, wa (D, C); bm holds 1 + b_m, ba (C).
type effFiLM struct {
	wm, bm, wa, ba []float32
}

// mbconv is one MBConv block with its weights.
type mbconv struct {
	spec               mbconvSpec
	expand             *convLayer // nil when the expansion ratio is 1
	dw                 convLayer
	seReduce, seExpand convLayer
	project            convLayer
	film               *effFiLM // nil without FiLM
}

// efficientNet is a whole network with its weights.
type efficientNet struct {
	spec    *efficientNetSpec
	filmDim int
	stem    convLayer
	blocks  []mbconv
	head    convLayer
}

// EfficientNet is a generated EfficientNet backbone: genuine architecture,
// seeded weights, batch norms calibrated on synthetic images and folded
// into the convolutions.
type EfficientNet struct {
	cfg EfficientNetConfig
	net *efficientNet
}

// GenerateEfficientNet builds a seeded EfficientNet. Weights are drawn from
// a normal distribution, then each convolution's folded batch norm is set
// from the statistics of its output on a small batch of synthetic,
// image-like inputs, layer by layer (see convLayer.calibrate), so that the
// features are of order one and depend on the image. Without this the
// activations of a randomly initialised EfficientNet shrink to about 1e-19
// by the last block.
func GenerateEfficientNet(cfg EfficientNetConfig) (*EfficientNet, error) {
	v, err := LookupEfficientNet(cfg.Variant)
	if err != nil {
		return nil, err
	}
	if cfg.Padding != PaddingKeras && cfg.Padding != PaddingSame {
		return nil, fmt.Errorf("efficientnet: unknown padding %v", cfg.Padding)
	}
	if cfg.Height == 0 && cfg.Width == 0 {
		cfg.Height, cfg.Width = v.Resolution, v.Resolution
	}
	if cfg.FiLMDim < 0 || cfg.FiLMDim > 1<<16 {
		return nil, fmt.Errorf("efficientnet: FiLM dimension %d outside 0..65536", cfg.FiLMDim)
	}
	if cfg.FiLMInitStd < 0 || math.IsNaN(float64(cfg.FiLMInitStd)) {
		return nil, errors.New("efficientnet: FiLMInitStd must be >= 0")
	}
	if cfg.CalibrationImages == 0 {
		cfg.CalibrationImages = 4
	}
	if cfg.Blocks < 0 {
		return nil, fmt.Errorf("efficientnet: %d blocks, want 0 (all) or more", cfg.Blocks)
	}
	if cfg.CalibrationImages < 2 || cfg.CalibrationImages > 64 {
		return nil, fmt.Errorf("efficientnet: %d calibration images, want 2..64", cfg.CalibrationImages)
	}
	spec, err := newEfficientNetSpec(v, cfg.Padding, cfg.Height, cfg.Width)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed_ef1c_1e47_0001))
	e := newEfficientNet(spec, cfg.FiLMDim, cfg.FiLMInitStd, rng)

	imgRng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed_1a6e_0000_0002))
	n := cfg.CalibrationImages
	images := make([]float32, 0, n*3*cfg.Height*cfg.Width)
	for i := 0; i < n; i++ {
		images = append(images, syntheticImage(imgRng, cfg.Height, cfg.Width)...)
	}
	var film []float32
	if cfg.FiLMDim > 0 {
		film = make([]float32, n*cfg.FiLMDim) // the zero embedding
	}
	e.forward(images, n, film, true)
	return &EfficientNet{cfg: cfg, net: e}, nil
}

// newEfficientNet allocates the network and draws its weights.
func newEfficientNet(spec *efficientNetSpec, filmDim int, filmStd float32, rng *rand.Rand) *efficientNet {
	mk := func(name string, cout, cin, k, stride, groups int, pads [4]int, act convAct, norm normKind) convLayer {
		c := convLayer{name: name, cout: cout, cin: cin, k: k, stride: stride, groups: groups, pads: pads, act: act, norm: norm,
			w: make([]float32, cout*cin/groups*k*k), b: make([]float32, cout)}
		std := 1 / math.Sqrt(float64(cin/groups*k*k)) // fan-in scaling; calibration rescales
		for i := range c.w {
			c.w[i] = float32(rng.NormFloat64() * std)
		}
		return c
	}
	e := &efficientNet{spec: spec, filmDim: filmDim}
	e.stem = mk("stem", spec.stem, 3, 3, 2, 1, spec.stemPads, actSwish, normChannel)
	in := spec.stem
	for i, bs := range spec.blocks {
		p := fmt.Sprintf("blocks.%d", i)
		b := mbconv{spec: bs}
		if bs.expanded != bs.in {
			c := mk(p+"/expand", bs.expanded, in, 1, 1, 1, [4]int{}, actSwish, normChannel)
			b.expand = &c
		}
		b.dw = mk(p+"/depthwise", bs.expanded, bs.expanded, bs.kernel, bs.stride, bs.expanded, bs.pads, actSwish, normChannel)
		b.seReduce = mk(p+"/se/reduce", bs.squeezed, bs.expanded, 1, 1, 1, [4]int{}, actSwish, normLayer)
		b.seExpand = mk(p+"/se/expand", bs.expanded, bs.squeezed, 1, 1, 1, [4]int{}, actSigmoid, normLayer)
		b.project = mk(p+"/project", bs.out, bs.expanded, 1, 1, 1, [4]int{}, actNone, normChannel)
		b.seExpand.gain = seGateGain
		if bs.skip {
			b.project.gain = residualGain
		}
		if filmDim > 0 {
			b.film = newFiLM(filmDim, bs.out, filmStd, rng)
		}
		e.blocks = append(e.blocks, b)
		in = bs.out
	}
	e.head = mk("head", spec.head, in, 1, 1, 1, [4]int{}, actSwish, normChannel)
	return e
}

func newFiLM(d, c int, std float32, rng *rand.Rand) *effFiLM {
	f := &effFiLM{wm: make([]float32, d*c), bm: make([]float32, c), wa: make([]float32, d*c), ba: make([]float32, c)}
	for _, s := range [][]float32{f.wm, f.bm, f.wa, f.ba} {
		for i := range s {
			if std > 0 {
				s[i] = std * float32(rng.NormFloat64())
			}
		}
	}
	for i := range f.bm {
		f.bm[i]++ // bm holds 1 + b_m
	}
	return f
}

// convs lists every convolution in graph order.
func (e *efficientNet) convs() []*convLayer {
	out := []*convLayer{&e.stem}
	for i := range e.blocks {
		b := &e.blocks[i]
		if b.expand != nil {
			out = append(out, b.expand)
		}
		out = append(out, &b.dw, &b.seReduce, &b.seExpand, &b.project)
	}
	return append(out, &e.head)
}

// Params is the number of parameters in the backbone's convolutions, batch
// norms folded (one bias per channel), FiLM excluded.
func (g *EfficientNet) Params() int {
	n := 0
	for _, c := range g.net.convs() {
		n += len(c.w) + len(c.b)
	}
	return n
}

// FiLMParams is the number of FiLM parameters (0 without FiLM).
func (g *EfficientNet) FiLMParams() int {
	n := 0
	for _, b := range g.net.blocks {
		if b.film != nil {
			n += 2 * (len(b.film.wm) + len(b.film.bm))
		}
	}
	return n
}

// PublishedParams is the parameter count of the same architecture as
// published (batch norms unfolded, two parameters per channel), with or
// without the 1000-way ImageNet classifier.
func (g *EfficientNet) PublishedParams(classifier bool) int { return g.net.spec.params(classifier) }

// InputSize is the network's input height and width.
func (g *EfficientNet) InputSize() (h, w int) { return g.cfg.Height, g.cfg.Width }

// FeatureShape is the output feature map's channels, height and width.
func (g *EfficientNet) FeatureShape() (c, h, w int) {
	s := g.net.spec
	if n := g.cfg.Blocks; n > 0 && n < len(s.blocks) {
		b := s.blocks[n-1]
		return b.out, b.oh, b.ow
	}
	return s.head, s.fh, s.fw
}

// Blocks is the number of MBConv blocks (the number of FiLM layers).
func (g *EfficientNet) Blocks() int { return len(g.net.blocks) }

// Config is the configuration the network was generated with, defaults
// filled in.
func (g *EfficientNet) Config() EfficientNetConfig { return g.cfg }

// Forward runs the network in Go (the reference the OpenCV path is tested
// against): image (3, H, W) ImageNet-normalised, film (FiLMDim) or nil
// without FiLM; it returns the features (C, h, w). It is slow and
// allocates; it is not for the control loop.
func (g *EfficientNet) Forward(image, film []float32) ([]float32, error) {
	if len(image) != 3*g.cfg.Height*g.cfg.Width {
		return nil, fmt.Errorf("efficientnet: image has %d values, want 3x%dx%d", len(image), g.cfg.Height, g.cfg.Width)
	}
	if len(film) != g.cfg.FiLMDim {
		return nil, fmt.Errorf("efficientnet: FiLM embedding has %d values, want %d", len(film), g.cfg.FiLMDim)
	}
	if g.cfg.FiLMDim == 0 {
		film = nil
	}
	return g.net.forward(image, 1, film, false), nil
}
