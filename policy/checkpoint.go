package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/internal/layer"
	"github.com/ttmrobot/ttm/internal/nn"
	"github.com/ttmrobot/ttm/internal/safetensors"
	"github.com/ttmrobot/ttm/language"
	"github.com/ttmrobot/ttm/policy/seq"
	"github.com/ttmrobot/ttm/ttm"
	"github.com/ttmrobot/ttm/vision"
)

// A policy checkpoint is one safetensors file holding every part:
//
//	metadata  policy.config, ttm.config, vision.config, language.config, language.vocab
//	tensors   policy/...  (action embeddings, head)
//	          ttm/...     (Flax names, see package ttm)
//	          seq/<name>/... (instead of ttm/... for another sequence model
//	                      than the TTM: policy.config's "model"; its
//	                      configuration in the metadata under seq.config,
//	                      ttm.config still giving the width and tokens)
//	          vision/...  (1x1 projection, FiLM, TokenLearner)
//	          language/... (instruction embedding)
//
// vision.config names the backbone ONNX file (relative to the checkpoint's
// directory unless absolute) and its SHA-256, so a checkpoint never runs on
// a backbone it was not made with.

// Expect is what the node is configured for; Load fails closed when the
// checkpoint disagrees. Zero fields are not checked.
type Expect struct {
	// ActionSpace is the layout the node publishes: the checkpoint's must
	// match it in names, bounds, categories and stop modes
	// (action.Space.CompareLayout), whatever head decodes it (bins or a
	// regression).
	ActionSpace    *action.Space
	ImageHeight    int    // network input size after preprocessing
	ImageWidth     int    //
	BackboneSHA256 string // hex digest of the backbone file
	// TensorsSHA256 is the hex digest of the checkpoint's tensors
	// (safetensors.DigestKey), pinning one exact set of weights.
	TensorsSHA256 string
	Mean, Std     []float32 // per channel, as in the preprocessing
}

// Options control Load.
type Options struct {
	// Backbone overrides the backbone file the checkpoint names. Its SHA-256
	// is still checked against the checkpoint's.
	Backbone string
	// NoBackbone loads the policy without opening a backbone: only
	// StepTokens works (training on cached features, tests).
	NoBackbone bool
	// Threads is the number of OpenCV threads (0: OpenCV's default).
	Threads int
	Expect  Expect
	// Log defaults to a logger that discards everything.
	Log hclog.Logger
}

// DefaultVocabulary is the word list of fresh checkpoints: the words of
// kitchen manipulation instructions. Other words are still told apart by
// the language model's hashed character n-grams.
var DefaultVocabulary = strings.Fields(`a an the to of on in into at from near next by up down over back
	pick lift grab take knock push topple place put set stand move bring open close shut pull
	upright left right top bottom middle first second drawer counter table
	can coke pepsi sprite bottle water apple orange sponge chip bag bowl cup rag brush
	red green blue yellow white black purple it that this where was pointed shown`)

// Create writes a complete policy checkpoint with fresh weights to out:
// the TTM, the vision head, the language model and the action head, all
// seeded. When backbone is empty it first writes a seeded EfficientNet as
// spec.Backbone describes next to out (<out without extension>.backbone.onnx).
func Create(spec Spec, seed uint64, backbone, out string, log hclog.Logger) error {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if err := spec.Validate(); err != nil {
		return err
	}
	if spec.Policy.Model == "ttm" {
		spec.Policy.Model = "" // the default: the checkpoint is today's TTM checkpoint, bit for bit
	}
	dir := filepath.Dir(out)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if backbone == "" {
		gen := spec.Backbone
		gen.Seed = seed
		net, err := vision.GenerateEfficientNet(gen)
		if err != nil {
			return fmt.Errorf("generate backbone: %w", err)
		}
		backbone = strings.TrimSuffix(out, filepath.Ext(out)) + ".backbone.onnx"
		if _, err := net.WriteONNX(backbone); err != nil {
			return fmt.Errorf("write backbone: %w", err)
		}
		log.Info("wrote a seeded backbone", "file", backbone, "variant", gen.Variant, "height", gen.Height, "width", gen.Width)
	}
	sum, err := vision.FileSHA256(backbone)
	if err != nil {
		return fmt.Errorf("backbone %s: %w", backbone, err)
	}
	rel, err := filepath.Rel(dir, backbone)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel, _ = filepath.Abs(backbone)
	}
	spec.Vision.Backbone.File, spec.Vision.Backbone.SHA256 = rel, sum

	vhead, err := vision.NewHead(spec.Vision.Head)
	if err != nil {
		return err
	}
	vhead.Init(seed)
	vocab, err := language.NewVocab(DefaultVocabulary)
	if err != nil {
		return err
	}
	lang, err := language.NewModel(spec.Language, vocab)
	if err != nil {
		return err
	}
	lang.Init(seed)
	var m seq.Model
	if spec.Policy.usesSeq() {
		m, err = seq.New(spec.Policy.Model, SeqConfig(spec.TTM))
	} else {
		var model *ttm.Model
		model, err = ttm.NewModel(spec.TTM)
		m = seq.TTMOf(model)
	}
	if err != nil {
		return err
	}
	m.Init(seed)
	p := assemble(spec, m, vhead, lang, nil)
	p.initOwn(seed)
	return p.Save(out)
}

// SeqConfigKey is the metadata key of a non-TTM sequence model's
// configuration (seq.Model.ConfigJSON), and SeqPrefix the prefix of its
// tensors, followed by the model's name and "/".
const (
	SeqConfigKey = "seq.config"
	SeqPrefix    = "seq/"
)

// seqTensorPrefix is the prefix of the tensors of the sequence model name.
func seqTensorPrefix(name string) string { return SeqPrefix + name + "/" }

// Save writes the policy's checkpoint (without the backbone file, which it
// names).
func (p *Policy) Save(path string) error {
	f := safetensors.New()
	f.Metadata[ConfigKey] = p.spec.Policy.JSON()
	prefix := ttm.Prefix
	// ttm.config keeps the width and token budget the policy is built on;
	// for the TTM it is the TTM's own configuration.
	f.Metadata[ttm.ConfigKey] = p.seq.ConfigJSON()
	if p.spec.Policy.usesSeq() {
		f.Metadata[ttm.ConfigKey] = p.spec.TTM.JSON()
		f.Metadata[SeqConfigKey] = p.seq.ConfigJSON()
		prefix = seqTensorPrefix(p.seq.Name())
	}
	layer.AddTensors(f, prefix, p.seq.Specs(), p.seq.Params())
	if err := vision.AddFrontEnd(f, p.spec.Vision, p.visionHd, vision.Prefix); err != nil {
		return err
	}
	p.lang.AddTo(f, language.Prefix)
	for _, s := range p.specs {
		f.Tensors[s.name] = safetensors.FromFloat32(*s.dst, s.shape...)
	}
	return safetensors.WriteFile(path, f)
}

// SaveAs writes the checkpoint to path naming backbone as its backbone
// file: relative to path's folder when it lies inside it, else absolute.
// Training uses it to write a checkpoint away from the one it started from.
func (p *Policy) SaveAs(path, backbone string) error {
	rel, err := filepath.Rel(filepath.Dir(path), backbone)
	if err != nil || strings.HasPrefix(rel, "..") {
		if rel, err = filepath.Abs(backbone); err != nil {
			return err
		}
	}
	saved := p.spec.Vision.Backbone.File
	p.spec.Vision.Backbone.File = rel
	defer func() { p.spec.Vision.Backbone.File = saved }()
	return p.Save(path)
}

// BackbonePath is the backbone file the policy was opened with.
func (p *Policy) BackbonePath() string { return p.backbonePath }

// Load reads a policy checkpoint, checks it against opts.Expect and opens
// its backbone. Every mismatch is an error: the node refuses to start
// rather than act on a policy made for another robot or camera.
func Load(path string, opts Options) (*Policy, error) {
	if opts.Log == nil {
		opts.Log = hclog.NewNullLogger()
	}
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load policy: %w", err)
	}
	// ReadFile checked the tensors against the digest; a checkpoint must
	// carry one, so that no bit of a weight changes unnoticed.
	digest := f.Metadata[safetensors.DigestKey]
	if digest == "" {
		return nil, fmt.Errorf("load policy %s: no %s in its metadata: the file was not written by ttm train or ttm init (or was edited)", path, safetensors.DigestKey)
	}
	p, err := fromFile(f)
	if err != nil {
		return nil, fmt.Errorf("load policy %s: %w", path, err)
	}
	p.digest = digest
	if err := p.Check(opts.Expect); err != nil {
		return nil, fmt.Errorf("load policy %s: %w", path, err)
	}
	if opts.NoBackbone {
		return p, nil
	}
	// OpenBLAS worker threads keep spinning after a product and would take
	// cores from OpenCV's; the TTM's large products use nn's own workers.
	nn.SetThreads(1)
	backbone := opts.Backbone
	if backbone == "" {
		backbone = p.spec.Vision.Backbone.File
		if !filepath.IsAbs(backbone) {
			backbone = filepath.Join(filepath.Dir(path), backbone)
		}
	}
	if _, err := os.Stat(backbone); err != nil {
		return nil, fmt.Errorf("load policy %s: backbone: %w", path, err)
	}
	front, err := vision.OpenFrontEnd(p.spec.Vision, p.visionHd, backbone, opts.Threads, opts.Log)
	if err != nil {
		return nil, fmt.Errorf("load policy %s: %w", path, err)
	}
	p.front, p.backbonePath = front, backbone
	return p, nil
}

func fromFile(f *safetensors.File) (*Policy, error) {
	js, ok := f.Metadata[ConfigKey]
	if !ok {
		return nil, fmt.Errorf("no %q entry in the checkpoint metadata (a TTM-only checkpoint?)", ConfigKey)
	}
	pc, err := ParseConfig([]byte(js))
	if err != nil {
		return nil, err
	}
	var sm seq.Model
	var tc ttm.Config
	if pc.usesSeq() {
		if sm, tc, err = seqFromFile(f, pc.Model); err != nil {
			return nil, err
		}
	} else {
		model, err := ttm.FromFile(f, ttm.Prefix)
		if err != nil {
			return nil, err
		}
		sm, tc = seq.TTMOf(model), model.Config
	}
	vcfg, vhead, err := vision.FrontEndFromFile(f, vision.Prefix)
	if err != nil {
		return nil, err
	}
	lang, err := language.FromFile(f, language.Prefix)
	if err != nil {
		return nil, err
	}
	spec := Spec{Policy: pc, TTM: tc, Vision: vcfg, Language: lang.Config}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	p := assemble(spec, sm, vhead, lang, nil)
	set := safetensors.Set{What: "checkpoint", Owns: safetensors.HasPrefix(Prefix)}
	for _, s := range p.specs {
		set.Tensors = append(set.Tensors, safetensors.Want{Name: s.name, Shape: s.shape, Dst: *s.dst})
	}
	if err := f.Load(set); err != nil {
		return nil, err
	}
	return p, nil
}

// seqFromFile reads the sequence model name of a checkpoint: its
// configuration (seq.config), the TTM configuration that fixes the
// policy's width and tokens (ttm.config), and its tensors (seq/<name>/...),
// each checked.
func seqFromFile(f *safetensors.File, name string) (seq.Model, ttm.Config, error) {
	js, ok := f.Metadata[ttm.ConfigKey]
	if !ok {
		return nil, ttm.Config{}, fmt.Errorf("no %q entry in the checkpoint metadata", ttm.ConfigKey)
	}
	tc, err := ttm.ParseConfig([]byte(js))
	if err != nil {
		return nil, ttm.Config{}, err
	}
	sjs, ok := f.Metadata[SeqConfigKey]
	if !ok {
		return nil, ttm.Config{}, fmt.Errorf("no %q entry in the checkpoint metadata (the policy names the sequence model %q)", SeqConfigKey, name)
	}
	// Build the model empty to learn its tensors, then load them.
	empty, err := seq.FromConfigJSON(name, sjs)
	if err != nil {
		return nil, ttm.Config{}, err
	}
	if sh := empty.Shape(); sh.InputTokens != tc.InputTokens || sh.OutputTokens != tc.ProcessSize || sh.Dim != tc.Dim {
		return nil, ttm.Config{}, fmt.Errorf("seq %s: %d input tokens, %d output tokens of width %d; ttm.config has %d, %d and %d",
			name, sh.InputTokens, sh.OutputTokens, sh.Dim, tc.InputTokens, tc.ProcessSize, tc.Dim)
	}
	owns := safetensors.HasPrefix(SeqPrefix, ttm.Prefix)
	if err := seq.Load(empty, f, seqTensorPrefix(name), owns); err != nil {
		return nil, ttm.Config{}, err
	}
	return empty, tc, nil
}

// Check compares the loaded policy with what e expects, as Load does with
// Options.Expect: the node loads its files before it can read what its
// parameters expect from the master.
func (p *Policy) Check(e Expect) error {
	if want := strings.ToLower(strings.TrimSpace(e.TensorsSHA256)); want != "" && want != p.digest {
		return fmt.Errorf("policy mismatch: its tensors' SHA-256 is %s, the node is configured for %s", p.digest, want)
	}
	return p.spec.check(e)
}

// Digest is the SHA-256 (hex) of the tensors of the checkpoint p was loaded
// from ("" for a policy built in memory).
func (p *Policy) Digest() string { return p.digest }

// check compares the checkpoint with what the node expects.
func (s Spec) check(e Expect) error {
	if e.ActionSpace != nil {
		if err := e.ActionSpace.CompareLayout(s.Policy.ActionSpace); err != nil {
			return fmt.Errorf("action space mismatch: %w", err)
		}
	}
	pre := s.Vision.Preprocess
	if e.ImageHeight != 0 && e.ImageHeight != pre.Height || e.ImageWidth != 0 && e.ImageWidth != pre.Width {
		return fmt.Errorf("image size mismatch: the checkpoint takes %dx%d, the node is configured for %dx%d",
			pre.Height, pre.Width, e.ImageHeight, e.ImageWidth)
	}
	if e.BackboneSHA256 != "" && !strings.EqualFold(e.BackboneSHA256, s.Vision.Backbone.SHA256) {
		return fmt.Errorf("backbone mismatch: the checkpoint was made with SHA-256 %s, the node is configured for %s",
			s.Vision.Backbone.SHA256, e.BackboneSHA256)
	}
	for i, m := range e.Mean {
		if i >= len(pre.Mean) || pre.Mean[i] != m {
			return fmt.Errorf("normalisation mismatch: the checkpoint's mean is %v, the node is configured for %v", pre.Mean, e.Mean)
		}
	}
	for i, sd := range e.Std {
		if i >= len(pre.Std) || pre.Std[i] != sd {
			return fmt.Errorf("normalisation mismatch: the checkpoint's std is %v, the node is configured for %v", pre.Std, e.Std)
		}
	}
	return nil
}
