package vision

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"gocv.io/x/gocv"

	"github.com/ttmrobot/ttm/internal/onnx"
)

// BackboneSpec describes a backbone ONNX file and how to run it.
type BackboneSpec struct {
	Path          string // ONNX file
	SHA256        string // expected hex digest; "" skips the check (and logs a warning)
	Height, Width int    // network input size
	Layer         string // output to read (a value name in the graph); "" = the graph's output
	FiLMInput     string // name of the FiLM input, "" if the graph has none
	FiLMDim       int    // length of the FiLM embedding
	Threads       int    // OpenCV threads (process-wide, cv::setNumThreads); 0 = OpenCV's default

	// Backend and Target select OpenCV's computation backend and device;
	// the zero values are OpenCV's defaults (its own backend, on the CPU).
	Backend gocv.NetBackendType
	Target  gocv.NetTargetType
	// Swish says how swish, x·sigmoid(x) (Sigmoid then Mul in the file),
	// runs. The default, SwishFast, is fastest.
	Swish SwishMode
	// Depthwise says how depthwise convolutions (Conv with one filter per
	// channel) run. The default, DepthwiseFast, is fastest.
	Depthwise DepthwiseMode
	// Pointwise says how 1x1 convolutions run. The default, PointwiseFast,
	// is fastest.
	Pointwise PointwiseMode
	// NoLayerFusion turns off OpenCV's layer fusion (Net::enableFusion).
	NoLayerFusion bool
}

// SwishMode says how the backbone runs swish.
type SwishMode int

const (
	// SwishFast fuses each Sigmoid+Mul pair into one layer of this
	// package's TTMSwish type (registered with OpenCV by the shim), one
	// pass over the activations with the exponentials computed by OpenCV's
	// vectorised cv::hal::exp32f.
	SwishFast SwishMode = iota
	// SwishOpenCV fuses the pairs into OpenCV 4.6's own Swish layer, which
	// OpenCV then fuses into the preceding convolution; it computes a
	// scalar expf per element, and the fused convolutions are slower than
	// a convolution plus SwishFast's separate pass.
	SwishOpenCV
	// SwishUnfused runs the graph's Sigmoid and Mul as they are.
	SwishUnfused
)

func (m SwishMode) op() string {
	switch m {
	case SwishFast:
		return "TTMSwish"
	case SwishOpenCV:
		return "Swish"
	}
	return ""
}

// Backbone runs a CNN backbone through OpenCV's DNN module. Open it with
// OpenBackbone; Run is safe for one goroutine at a time (calls are
// serialised) and allocates nothing.
type Backbone struct {
	spec     BackboneSpec
	log      hclog.Logger
	sha      string
	output   string
	rewrites []Rewrite

	mu      sync.Mutex // guards net and the OpenCV state behind it
	net     *cvNet
	c, h, w int
	inLen   int
}

// OpenBackbone validates the ONNX file (existence, size, SHA-256, that it
// parses, that OpenCV 4.6 supports every node), rewrites the graph into a
// form OpenCV accepts (logging each rewrite), loads it into OpenCV, and runs
// it once on a zero input to learn the output shape. Nothing it is given
// can make OpenCV abort the process: files are checked in Go first, and any
// OpenCV error that still occurs comes back as an error.
func OpenBackbone(spec BackboneSpec, log hclog.Logger) (*Backbone, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if err := spec.check(); err != nil {
		return nil, err
	}
	m, sha, err := ReadONNXFile(spec.Path, spec.SHA256, log)
	if err != nil {
		return nil, fmt.Errorf("load backbone %s: %w", spec.Path, err)
	}
	b, err := openModel(spec, m, log)
	if err != nil {
		return nil, fmt.Errorf("load backbone %s: %w", spec.Path, err)
	}
	b.sha = sha
	log.Info("backbone loaded", "path", spec.Path, "sha256", sha, "input", fmt.Sprintf("1x3x%dx%d", spec.Height, spec.Width),
		"output", b.output, "shape", fmt.Sprintf("%dx%dx%d", b.c, b.h, b.w), "film", spec.FiLMInput, "opencv_threads", OpenCVThreads(),
		"depthwise", spec.Depthwise, "pointwise", spec.Pointwise, "layer_kernel", LayerKernel())
	return b, nil
}

func (s *BackboneSpec) check() error {
	switch {
	case s.Path == "":
		return errors.New("backbone: no ONNX file given")
	case s.Height < 1 || s.Width < 1 || s.Height > MaxBackboneSide || s.Width > MaxBackboneSide:
		return fmt.Errorf("backbone: input size %dx%d outside 1..%d", s.Height, s.Width, MaxBackboneSide)
	case s.FiLMDim < 0 || s.FiLMDim > 1<<16:
		return fmt.Errorf("backbone: FiLM dimension %d outside 0..65536", s.FiLMDim)
	case (s.FiLMInput == "") != (s.FiLMDim == 0):
		return fmt.Errorf("backbone: FiLM input %q with dimension %d: give both or neither", s.FiLMInput, s.FiLMDim)
	case s.Swish < SwishFast || s.Swish > SwishUnfused:
		return fmt.Errorf("backbone: unknown swish mode %d", s.Swish)
	case s.Threads < 0 || s.Threads > 256:
		return fmt.Errorf("backbone: %d threads", s.Threads)
	}
	if err := s.Pointwise.check(); err != nil {
		return err
	}
	return s.Depthwise.check()
}

// MaxBackboneSide bounds the backbone input's height and width.
const MaxBackboneSide = 4096

// openModel prepares, checks and loads a parsed model.
func openModel(spec BackboneSpec, m *onnx.Model, log hclog.Logger) (*Backbone, error) {
	if m.Graph == nil {
		return nil, errors.New("onnx: model has no graph")
	}
	image, err := imageInput(m.Graph, spec)
	if err != nil {
		return nil, err
	}
	output := spec.Layer
	if output == "" {
		if len(m.Graph.Outputs) != 1 {
			names := make([]string, len(m.Graph.Outputs))
			for i, v := range m.Graph.Outputs {
				names[i] = v.Name
			}
			return nil, fmt.Errorf("graph has %d outputs (%s); name the one to read in Layer", len(names), strings.Join(names, ", "))
		}
		output = m.Graph.Outputs[0].Name
	}
	pins := map[string][]int64{image: {1, 3, int64(spec.Height), int64(spec.Width)}}
	if spec.FiLMInput != "" {
		pins[spec.FiLMInput] = []int64{1, int64(spec.FiLMDim)}
	}
	// The value read becomes a graph output first, so that no rewrite
	// removes it.
	if err := exposeOutput(m.Graph, output); err != nil {
		return nil, err
	}
	opts := PrepareOptions{Inputs: pins, ImageInput: image, Output: output, SwishOp: spec.Swish.op()}
	spec.Depthwise.prepare(&opts)
	spec.Pointwise.prepare(&opts)
	rewrites, err := PrepareONNX(m, opts)
	if err != nil {
		return nil, err
	}
	logRewrites(log, rewrites)
	if err := CheckONNX(m); err != nil {
		return nil, err
	}
	if n := len(m.Graph.Inputs); n != len(pins) {
		return nil, fmt.Errorf("graph has %d inputs, the backbone feeds %d (image %q, FiLM %q)", n, len(pins), image, spec.FiLMInput)
	}
	buf, err := onnx.Marshal(m)
	if err != nil {
		return nil, err
	}
	net, err := readONNX(buf)
	if err != nil {
		return nil, err
	}
	if spec.Threads > 0 {
		SetOpenCVThreads(spec.Threads)
	}
	cfg := netConfig{
		backend: spec.Backend, target: spec.Target, noFusion: spec.NoLayerFusion,
		inName: image, inShape: []int{1, 3, spec.Height, spec.Width},
		filmName: spec.FiLMInput, filmLen: spec.FiLMDim, outName: output,
	}
	if err := net.configure(cfg); err != nil {
		net.close()
		return nil, err
	}
	b := &Backbone{spec: spec, log: log, output: output, rewrites: rewrites, net: net, inLen: 3 * spec.Height * spec.Width}
	// One run on zeros learns the output shape and lets OpenCV allocate.
	in := make([]float32, b.inLen)
	var film []float32
	if spec.FiLMDim > 0 {
		film = make([]float32, spec.FiLMDim)
	}
	if err := net.forward(in, film, nil); err != nil {
		net.close()
		return nil, err
	}
	shape := net.lastShape()
	switch {
	case len(shape) == 4 && shape[0] == 1:
		b.c, b.h, b.w = shape[1], shape[2], shape[3]
	case len(shape) == 2 && shape[0] == 1:
		b.c, b.h, b.w = shape[1], 1, 1
	default:
		net.close()
		return nil, fmt.Errorf("output %q has shape %v; the backbone reads [1 C H W] or [1 C]", output, shape)
	}
	if b.c <= 0 || b.h <= 0 || b.w <= 0 {
		net.close()
		return nil, fmt.Errorf("output %q has an empty shape %v", output, shape)
	}
	return b, nil
}

// imageInput finds the graph input the image goes to: the one input that
// is neither an initializer nor the FiLM input.
func imageInput(g *onnx.Graph, spec BackboneSpec) (string, error) {
	inits := map[string]bool{}
	for _, t := range g.Initializers {
		inits[t.Name] = true
	}
	var names []string
	film := false
	for _, v := range g.Inputs {
		switch {
		case inits[v.Name]:
		case v.Name == spec.FiLMInput:
			film = true
		default:
			names = append(names, v.Name)
		}
	}
	if spec.FiLMInput != "" && !film {
		return "", fmt.Errorf("graph has no FiLM input %q (inputs: %s)", spec.FiLMInput, strings.Join(names, ", "))
	}
	if len(names) != 1 {
		return "", fmt.Errorf("graph has %d image inputs (%s) besides FiLM input %q; want exactly one", len(names), strings.Join(names, ", "), spec.FiLMInput)
	}
	return names[0], nil
}

// exposeOutput makes the value to read a graph output: OpenCV's importer
// gives each graph output a layer of that name, which Net::forward can ask
// for.
func exposeOutput(g *onnx.Graph, name string) error {
	for _, v := range g.Outputs {
		if v.Name == name {
			return nil
		}
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o == name {
				g.Outputs = append(g.Outputs, &onnx.ValueInfo{Name: name}) // PrepareONNX gives it a shape
				return nil
			}
		}
	}
	return fmt.Errorf("graph has no value %q to read", name)
}

// logRewrites logs one line per kind of rewrite.
func logRewrites(log hclog.Logger, rs []Rewrite) {
	kinds := map[string][]Rewrite{}
	for _, r := range rs {
		kinds[r.Kind] = append(kinds[r.Kind], r)
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		r := kinds[k]
		log.Info("rewrote backbone graph for OpenCV", "rewrite", k, "count", len(r), "first", r[0].Node, "detail", r[0].Detail)
	}
}

// OutputShape is the feature map's channels, height and width.
func (b *Backbone) OutputShape() (c, h, w int) { return b.c, b.h, b.w }

// InputShape is the input's height and width (3 channels, NCHW).
func (b *Backbone) InputShape() (h, w int) { return b.spec.Height, b.spec.Width }

// SHA256 is the ONNX file's digest.
func (b *Backbone) SHA256() string { return b.sha }

// Rewrites lists what OpenBackbone changed in the graph before OpenCV saw it.
func (b *Backbone) Rewrites() []Rewrite { return append([]Rewrite(nil), b.rewrites...) }

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("backbone: closed")

// Run takes a preprocessed input in NCHW float32, 1x3xHxW, and the FiLM
// embedding (FiLMDim values; nil if the graph has no FiLM input), and
// writes the feature map (C, H, W) into out. Every size is checked in Go
// before OpenCV is called; it allocates nothing.
func (b *Backbone) Run(input []float32, film []float32, out []float32) error {
	if len(input) != b.inLen {
		return fmt.Errorf("backbone: input has %d values, want 3x%dx%d = %d", len(input), b.spec.Height, b.spec.Width, b.inLen)
	}
	if len(film) != b.spec.FiLMDim {
		if b.spec.FiLMDim == 0 {
			return fmt.Errorf("backbone: %d FiLM values given, the backbone has no FiLM input", len(film))
		}
		return fmt.Errorf("backbone: FiLM embedding has %d values, want %d", len(film), b.spec.FiLMDim)
	}
	if n := b.c * b.h * b.w; len(out) != n {
		return fmt.Errorf("backbone: output buffer has %d values, want %dx%dx%d = %d", len(out), b.c, b.h, b.w, n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.net == nil {
		return ErrClosed
	}
	return b.net.forward(input, film, out)
}

// Close releases the OpenCV network. It is safe to call twice.
func (b *Backbone) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.net != nil {
		b.net.close()
		b.net = nil
	}
	return nil
}

// LayerTimings returns the time OpenCV spent in each layer during the last
// Run, from cv::dnn::Net::getPerfProfile (gocv v0.31's GetPerfProfile
// returns only the total, so the shim reads the per-layer vector). Layers
// OpenCV fused into their predecessor (a Swish or ReLU after a convolution,
// say) report zero. Layer names are OpenCV's: "onnx_node!" followed by the
// ONNX node's name, or the node's output name.
func (b *Backbone) LayerTimings() []LayerTiming {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.net == nil {
		return nil
	}
	t, _, err := b.net.profile()
	if err != nil {
		b.log.Warn("backbone layer timings unavailable", "error", err)
		return nil
	}
	return t
}

// TotalTime sums layer timings.
func TotalTime(ts []LayerTiming) time.Duration {
	var d time.Duration
	for _, t := range ts {
		d += t.Time
	}
	return d
}
