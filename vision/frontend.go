package vision

import (
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"
)

// FrontEnd is the whole image path of one camera: decode, preprocess,
// backbone, head, window. Every frame source — robot, simulator, replay —
// goes through Encode, so they all produce tokens the same way. After the
// first frame of a given size Encode allocates nothing in Go. A FrontEnd
// is not safe for concurrent use.
type FrontEnd struct {
	cfg      Config
	pre      *Preprocessor
	backbone *Backbone
	head     *Head
	acts     *HeadActs
	window   *Window
	dec      Decoder

	c, h, w  int
	input    []float32 // (3, H, W) backbone input
	features []float32 // (C, h, w) backbone output
	noFiLM   []float32 // (E) zeros, the backbone's FiLM input when no embedding is given
}

// OpenFrontEnd opens the backbone at backbonePath as cfg describes it
// (input size from cfg.Preprocess, layer, FiLM input, SHA-256 when set)
// with threads OpenCV threads (0: OpenCV's default), and composes the
// front end around it and head, whose configuration must be cfg.Head.
// The backbone's feature map must have cfg.Head.FeatureChannels channels.
// Close releases the backbone.
func OpenFrontEnd(cfg Config, head *Head, backbonePath string, threads int, log hclog.Logger) (*FrontEnd, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if head.Config != cfg.Head {
		return nil, fmt.Errorf("vision: head configuration %+v differs from the front end's %+v", head.Config, cfg.Head)
	}
	pre, err := NewPreprocessor(cfg.Preprocess)
	if err != nil {
		return nil, err
	}
	spec := BackboneSpec{
		Path: backbonePath, SHA256: cfg.Backbone.SHA256,
		Height: cfg.Preprocess.Height, Width: cfg.Preprocess.Width,
		Layer: cfg.Backbone.Layer, Threads: threads,
	}
	if cfg.Head.FiLM == FiLMBackbone {
		spec.FiLMInput, spec.FiLMDim = cfg.Backbone.FiLMInput, cfg.Head.EmbeddingDim
	}
	b, err := OpenBackbone(spec, log)
	if err != nil {
		return nil, err
	}
	c, h, w := b.OutputShape()
	if p := cfg.Patches; p > 0 {
		if err := CheckPatches(cfg.Preprocess.Height, cfg.Preprocess.Width, h, w, p); err != nil {
			_ = b.Close()
			return nil, err
		}
		c += PatchChannels(p)
	}
	if c != cfg.Head.FeatureChannels {
		_ = b.Close()
		return nil, fmt.Errorf("vision: backbone %s gives %d feature channels (%dx%d map; with %d colour-patch channels), the head takes %d",
			backbonePath, c, h, w, PatchChannels(cfg.Patches), cfg.Head.FeatureChannels)
	}
	if p := cfg.Head.Positions; p > 0 && p != h*w {
		_ = b.Close()
		return nil, fmt.Errorf("vision: backbone %s gives a %dx%d map (%d positions), the head's positional embedding has %d",
			backbonePath, h, w, h*w, p)
	}
	d, k := cfg.Head.Dim, cfg.Head.Tokens
	return &FrontEnd{
		cfg: cfg, pre: pre, backbone: b, head: head, acts: head.NewActs(h * w),
		window: NewWindow(cfg.History, k, d),
		c:      c, h: h, w: w,
		input: make([]float32, pre.InputLen()), features: make([]float32, c*h*w),
		noFiLM: make([]float32, cfg.Head.EmbeddingDim),
	}, nil
}

// Close releases the backbone.
func (f *FrontEnd) Close() error { return f.backbone.Close() }

// Config returns the front end's configuration.
func (f *FrontEnd) Config() Config { return f.cfg }

// FeatureShape is the backbone's feature map shape (C, h, w); h·w
// positions become tokens.
func (f *FrontEnd) FeatureShape() (c, h, w int) { return f.c, f.h, f.w }

// Encode runs one frame through preprocessing, the backbone and the head,
// and commits its K tokens to the window as the newest frame. embedding
// (E) is the instruction's; nil means no instruction (zeros). An error
// (a bad frame, an OpenCV failure) leaves the window unchanged.
func (f *FrontEnd) Encode(frame Frame, embedding []float32) error {
	if err := f.EncodeInto(f.window.Next(), frame, embedding); err != nil {
		return err
	}
	f.window.Commit()
	return nil
}

// EncodeInto is Encode without the window: the frame's tokens go to out
// (K, d).
func (f *FrontEnd) EncodeInto(out []float32, frame Frame, embedding []float32) error {
	if embedding == nil {
		embedding = f.noFiLM
	}
	if len(embedding) != f.cfg.Head.EmbeddingDim {
		return fmt.Errorf("vision: instruction embedding of %d values, the front end takes %d", len(embedding), f.cfg.Head.EmbeddingDim)
	}
	if err := f.pre.Run(f.input, frame); err != nil {
		return err
	}
	var film []float32
	if f.cfg.Head.FiLM == FiLMBackbone {
		film = embedding
	}
	if err := f.runBackbone(film); err != nil {
		return err
	}
	f.head.Forward(out, f.acts, f.features, embedding)
	return nil
}

// EncodeFromFeatures is EncodeInto from a feature map (C, h, w) the
// backbone made earlier (a training cache): only the head runs.
func (f *FrontEnd) EncodeFromFeatures(out, features, embedding []float32) error {
	if f.cfg.Head.FiLM == FiLMBackbone {
		return errors.New("vision: features of a backbone with a FiLM input depend on the instruction; cannot encode them alone")
	}
	if embedding == nil {
		embedding = f.noFiLM
	}
	if len(embedding) != f.cfg.Head.EmbeddingDim {
		return fmt.Errorf("vision: instruction embedding of %d values, the front end takes %d", len(embedding), f.cfg.Head.EmbeddingDim)
	}
	if len(features) != len(f.features) {
		return fmt.Errorf("vision: feature map of %d values, the backbone makes %d", len(features), len(f.features))
	}
	f.head.Forward(out, f.acts, features, embedding)
	return nil
}

// EncodeFeatures runs one frame through preprocessing and the backbone
// only, and copies the feature map (C, h, w) into dst: what training
// caches, since the backbone is frozen. The front end's FiLM must be in
// the head (a backbone that takes the instruction makes features that
// depend on it).
func (f *FrontEnd) EncodeFeatures(dst []float32, frame Frame) error {
	if f.cfg.Head.FiLM == FiLMBackbone {
		return errors.New("vision: features of a backbone with a FiLM input depend on the instruction; cannot encode them alone")
	}
	if len(dst) != len(f.features) {
		return fmt.Errorf("vision: feature buffer of %d values, the map has %d", len(dst), len(f.features))
	}
	if err := f.pre.Run(f.input, frame); err != nil {
		return err
	}
	if err := f.runBackbone(nil); err != nil {
		return err
	}
	copy(dst, f.features)
	return nil
}

// EncodeImage decodes a raw image message and encodes it (see Encode).
func (f *FrontEnd) EncodeImage(msg *Image, embedding []float32) error {
	frame, err := f.dec.DecodeImage(msg)
	if err != nil {
		return err
	}
	return f.Encode(frame, embedding)
}

// EncodeCompressed decodes a compressed image message and encodes it.
func (f *FrontEnd) EncodeCompressed(msg *CompressedImage, embedding []float32) error {
	frame, err := f.dec.DecodeCompressed(msg)
	if err != nil {
		return err
	}
	return f.Encode(frame, embedding)
}

// Window is the token window the front end fills.
func (f *FrontEnd) Window() *Window { return f.window }

// Tokens writes the window, (H·K, d), oldest frame first.
func (f *FrontEnd) Tokens(dst []float32) { f.window.Tokens(dst) }

// Input is the last frame's backbone input (3, H, W), a view valid until
// the next Encode.
func (f *FrontEnd) Input() []float32 { return f.input }

// Keypoints is the last frame's keypoint activations (see
// KeypointActs.Point), nil without a keypoint token; a view valid until the
// next Encode.
func (f *FrontEnd) Keypoints() *KeypointActs { return f.acts.KP }

// Features is the last frame's feature map (C, h, w), a view valid until
// the next Encode.
func (f *FrontEnd) Features() []float32 { return f.features }

// Reset empties the window (start of an episode, new instruction).
func (f *FrontEnd) Reset() { f.window.Reset() }

// runBackbone fills f.features from f.input: the backbone's map, then
// the colour patches (Config.Patches).
func (f *FrontEnd) runBackbone(film []float32) error {
	p := f.cfg.Patches
	n := f.h * f.w
	bc := f.c - PatchChannels(p)
	if err := f.backbone.Run(f.input, film, f.features[:bc*n]); err != nil {
		return fmt.Errorf("vision: backbone: %w", err)
	}
	if p > 0 {
		PatchesForward(f.features[bc*n:], f.input, f.cfg.Preprocess.Height, f.cfg.Preprocess.Width, f.h, f.w, p)
	}
	return nil
}
