package vision

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ConfigKey is the checkpoint metadata key holding Config as JSON, and
// Prefix the prefix of the head's tensor names.
const (
	ConfigKey = "vision.config"
	Prefix    = "vision/"
)

// FiLMPlacement says where the instruction conditions the image features.
type FiLMPlacement string

const (
	// FiLMHead applies FiLM in Go, after the 1x1 projection (the default).
	FiLMHead FiLMPlacement = "head"
	// FiLMBackbone leaves FiLM to the backbone graph, which takes the
	// embedding as a second input (RT-1 puts FiLM after every MBConv
	// block); the head then has no FiLM parameters.
	FiLMBackbone FiLMPlacement = "backbone"
)

// HeadConfig describes the Go-side layers after the backbone: the 1x1
// projection, FiLM and TokenLearner.
type HeadConfig struct {
	FeatureChannels    int           `json:"feature_channels"`    // C of the backbone's feature map, e.g. 1536 for B3
	Dim                int           `json:"dim"`                 // d, token width; default 512
	EmbeddingDim       int           `json:"embedding_dim"`       // E, instruction embedding width; default 512
	Tokens             int           `json:"tokens"`              // K tokens per frame; default 8
	TokenLearnerHidden int           `json:"tokenlearner_hidden"` // TokenLearner bottleneck; default 64
	FiLM               FiLMPlacement `json:"film"`                // head (default) or backbone
	LayerNormEps       float64       `json:"layernorm_eps"`       // default 1e-6 (Flax)
	// Positions, when positive, adds a learned positional embedding
	// (Positions, d) to the projected feature map (h·w = Positions must
	// hold): TokenLearner pools by content, so without it a token says what
	// it saw but hardly where, which a policy driving to an object needs.
	Positions int `json:"positions,omitempty"`
	// PositionGridWidth, when positive, starts the positional embedding as
	// a 2-D sine-cosine code of (row, column) on a grid this many positions
	// wide (ViT/MAE style) instead of small random values: nearby positions
	// start with similar codes, so a token's pooled code says where it
	// pooled from before any training.
	PositionGridWidth int `json:"position_grid_width,omitempty"`
	// Keypoints makes the last of the Tokens a keypoint token (spatial
	// soft-argmax of every channel, see KeypointsForward) instead of a
	// TokenLearner token. It needs PositionGridWidth (the grid) and at
	// least 2 Tokens.
	Keypoints bool `json:"keypoints,omitempty"`
	// KeypointWindow, when positive, reads each keypoint out of the cells
	// within this many cells of the channel's peak (a local soft-argmax,
	// see localWindow) instead of the whole map. Measured on the
	// simulator's frames, a window of 1 (3x3 cells) halves the error of
	// the detected points.
	KeypointWindow int `json:"keypoint_window,omitempty"`
	// LyingProbe adds a training-only probe to the keypoint token: a
	// logit of whether the object under keypoint channel 1 (the target)
	// lies on its side, read from the map pooled under that channel's
	// readout (SuperviseLying). Its loss teaches the map how the target
	// lies; nothing at inference reads it.
	LyingProbe bool `json:"lying_probe,omitempty"`
	// Hidden, when positive, puts a trainable per-position stage between
	// the backbone's map and the projection: a 1x1 convolution to Hidden
	// channels, FiLM from the instruction (with FiLM "head") and GELU. The
	// backbone is frozen; with seeded random weights (all that exists
	// offline) its channels locate small objects poorly, and a linear
	// projection cannot turn colours into an object detector, a small
	// per-position MLP can. The FiLM makes the detector instruction-aware
	// (which object to find), as RT-1's FiLM inside the backbone does.
	Hidden int `json:"hidden,omitempty"`
	// HiddenKernel is the hidden stage's kernel size: 1 (the default) or
	// 3, a 3x3 convolution over the map (zero padded, needs
	// PositionGridWidth). Measured on the simulator's frames, the hand's
	// position from the 3x3 neighbourhood of each cell is 4x more precise
	// than from the cell alone.
	HiddenKernel int `json:"hidden_kernel,omitempty"`
	// HiddenDepth, when 2, adds a second 3x3 stage of Hidden channels
	// (convolution, GELU, added to its input) after the first, so that a
	// cell sees 5x5 cells of the map.
	HiddenDepth int `json:"hidden_depth,omitempty"`
}

// WithDefaults returns c with unset fields at their defaults.
func (c HeadConfig) WithDefaults() HeadConfig {
	if c.Dim == 0 {
		c.Dim = 512
	}
	if c.EmbeddingDim == 0 {
		c.EmbeddingDim = 512
	}
	if c.Tokens == 0 {
		c.Tokens = 8
	}
	if c.TokenLearnerHidden == 0 {
		c.TokenLearnerHidden = 64
	}
	if c.FiLM == "" {
		c.FiLM = FiLMHead
	}
	if c.LayerNormEps == 0 {
		c.LayerNormEps = 1e-6
	}
	return c
}

// maxWidth bounds every width of the head, against absurd configurations.
const maxWidth = 1 << 16

// Validate reports the first field that makes c unusable.
func (c HeadConfig) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"feature_channels", c.FeatureChannels}, {"dim", c.Dim}, {"embedding_dim", c.EmbeddingDim},
		{"tokens", c.Tokens}, {"tokenlearner_hidden", c.TokenLearnerHidden},
	} {
		if f.v <= 0 || f.v > maxWidth {
			return fmt.Errorf("vision head: %s = %d must be within 1..%d", f.name, f.v, maxWidth)
		}
	}
	if c.Positions < 0 || c.Positions > maxWidth {
		return fmt.Errorf("vision head: positions = %d must be within 0..%d", c.Positions, maxWidth)
	}
	if c.Hidden < 0 || c.Hidden > maxWidth {
		return fmt.Errorf("vision head: hidden = %d must be within 0..%d", c.Hidden, maxWidth)
	}
	switch {
	case c.HiddenKernel != 0 && c.HiddenKernel != 1 && c.HiddenKernel != 3:
		return fmt.Errorf("vision head: hidden_kernel = %d (want 1 or 3)", c.HiddenKernel)
	case c.HiddenDepth != 0 && c.HiddenDepth != 1 && c.HiddenDepth != 2:
		return fmt.Errorf("vision head: hidden_depth = %d (want 1 or 2)", c.HiddenDepth)
	case c.HiddenDepth == 2 && c.HiddenKernel != 3:
		return fmt.Errorf("vision head: hidden_depth 2 needs hidden_kernel 3")
	case c.HiddenKernel == 3 && (c.Hidden == 0 || c.PositionGridWidth == 0):
		return fmt.Errorf("vision head: hidden_kernel 3 needs a hidden stage and position_grid_width (have %d and %d)", c.Hidden, c.PositionGridWidth)
	}
	if g := c.PositionGridWidth; g < 0 || g > 0 && (c.Positions == 0 || c.Positions%g != 0) {
		return fmt.Errorf("vision head: position_grid_width = %d must divide positions = %d", g, c.Positions)
	}
	if c.Keypoints && (c.PositionGridWidth == 0 || c.Tokens < 2) {
		return fmt.Errorf("vision head: keypoints need position_grid_width and at least 2 tokens (have %d and %d)", c.PositionGridWidth, c.Tokens)
	}
	if c.LyingProbe && (!c.Keypoints || c.Dim < 2) {
		return errors.New("vision head: lying_probe needs keypoints with at least 2 channels (it reads channel 1's)")
	}
	if w := c.KeypointWindow; w < 0 || w > maxWidth || w > 0 && !c.Keypoints {
		return fmt.Errorf("vision head: keypoint_window = %d must be within 0..%d, and positive only with keypoints", w, maxWidth)
	}
	switch c.FiLM {
	case FiLMHead, FiLMBackbone:
	default:
		return fmt.Errorf("vision head: film %q (want head or backbone)", c.FiLM)
	}
	if !(c.LayerNormEps > 0 && c.LayerNormEps < 1) {
		return fmt.Errorf("vision head: layernorm_eps %v must be in (0, 1)", c.LayerNormEps)
	}
	return nil
}

// BackboneRef names the backbone a configuration was trained with, so that
// a checkpoint can refuse to run on another one.
type BackboneRef struct {
	File      string `json:"file,omitempty"`       // ONNX file name, resolved by the caller
	SHA256    string `json:"sha256,omitempty"`     // hex SHA-256 of the file; empty: not checked
	Layer     string `json:"layer,omitempty"`      // output layer; empty: the graph's output
	FiLMInput string `json:"film_input,omitempty"` // the embedding input, when the head's FiLM is "backbone"
}

// Config is the whole front end's configuration, stored in a checkpoint
// under ConfigKey.
type Config struct {
	Preprocess PreprocessConfig `json:"preprocess"`
	Head       HeadConfig       `json:"head"`
	History    int              `json:"history"` // H frames in the token window; default 6 (RT-1)
	Backbone   BackboneRef      `json:"backbone"`
	// Patches, when positive, appends colour patches to the backbone's
	// map: the mean colour of each of Patches x Patches sub-blocks of every
	// cell (PatchesForward), 3·Patches² channels after the backbone's, so
	// Head.FeatureChannels counts both.
	Patches int `json:"patches,omitempty"`
}

// DefaultConfig is RT-1's front end for a backbone with the given number
// of output channels (1536 for EfficientNet-B3).
func DefaultConfig(featureChannels int) Config {
	return Config{
		Preprocess: DefaultPreprocess(),
		Head:       HeadConfig{FeatureChannels: featureChannels}.WithDefaults(),
		History:    6,
	}
}

// MaxHistory bounds the window.
const MaxHistory = 1024

// Validate reports the first problem of c.
func (c Config) Validate() error {
	if err := c.Preprocess.Validate(); err != nil {
		return err
	}
	if err := c.Head.Validate(); err != nil {
		return err
	}
	if c.Patches < 0 || c.Patches > 8 {
		return fmt.Errorf("vision: patches %d must be within 0..8", c.Patches)
	}
	if c.Patches > 0 && c.Head.FeatureChannels <= PatchChannels(c.Patches) {
		return fmt.Errorf("vision: head.feature_channels %d leaves none of the backbone's beside %d colour-patch channels", c.Head.FeatureChannels, PatchChannels(c.Patches))
	}
	if c.History <= 0 || c.History > MaxHistory {
		return fmt.Errorf("vision: history %d must be within 1..%d", c.History, MaxHistory)
	}
	switch {
	case c.Head.FiLM == FiLMBackbone && c.Backbone.FiLMInput == "":
		return fmt.Errorf("vision: head.film is %q but backbone.film_input names no input", FiLMBackbone)
	case c.Head.FiLM == FiLMHead && c.Backbone.FiLMInput != "":
		return fmt.Errorf("vision: backbone.film_input is %q but head.film is %q: FiLM would be applied twice", c.Backbone.FiLMInput, FiLMHead)
	}
	return nil
}

// JSON returns c as stored in a checkpoint.
func (c Config) JSON() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic("vision: " + err.Error())
	}
	return string(b)
}

// ParseConfig reads a Config from JSON. Omitted preprocessing fields keep
// DefaultPreprocess's values, omitted head fields their defaults, an
// omitted history 6; unknown fields are an error.
func ParseConfig(b []byte) (Config, error) {
	c := Config{Preprocess: DefaultPreprocess()}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("vision config: %w", err)
	}
	if dec.More() {
		return Config{}, fmt.Errorf("vision config: data after the JSON object")
	}
	c.Head = c.Head.WithDefaults()
	if c.History == 0 {
		c.History = 6
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}
