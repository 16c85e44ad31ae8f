package seq

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Config is one configuration shared by every sequence model: the shared
// fields fix the token budget, width and depth (the paper compares its
// models at equal width, depth and token budget), and each model reads the
// model-specific fields it needs and ignores the others.
//
// Letters used throughout the package: n input tokens per step, r output
// tokens per step, d channels, L layers, H heads, f MLP width, m TTM
// memory tokens, h window steps, s recurrent state tokens.
type Config struct {
	InputTokens  int     `json:"input_tokens"`  // n
	OutputTokens int     `json:"output_tokens"` // r: the TTM's r, so one action head serves every model
	Dim          int     `json:"dim"`           // d
	Layers       int     `json:"layers"`        // L: Transformer blocks
	Heads        int     `json:"heads"`         // H: attention heads
	MLPDim       int     `json:"mlp_dim"`       // f: Transformer MLP width
	LayerNormEps float64 `json:"layernorm_eps"` // defaults to 1e-6 (Flax)

	// TTM variants (ttm, ttm-nomem, erase-add) and concat.
	MemoryTokens     int `json:"memory_tokens"`     // m; defaults to 96
	SummariserHidden int `json:"summariser_hidden"` // TokenLearner bottleneck; defaults to 64

	// window: steps in the window; defaults to 6 (RT-1).
	Window int `json:"window"`
	// recurrent: state tokens carried from step to step; defaults to 16.
	StateTokens int `json:"state_tokens"`
	// causal and concat: the steps a State holds without growing; defaults
	// to 128 (the simulator's longest task is 100 steps). Beyond it a State
	// doubles its capacity, allocating.
	MaxSteps int `json:"max_steps"`
	// lstm: the cell's width; defaults to Dim.
	LSTMHidden int `json:"lstm_hidden"`
}

// Sizes are the shared fields of the two sizes every model comes in, equal
// to the TTM presets of the same name (ttm.Presets): "small" for tests and
// CI training, "robot" for the paper's robot policy.
var Sizes = map[string]Config{
	"small": {InputTokens: 16, OutputTokens: 8, Dim: 64, Layers: 2, Heads: 4, MLPDim: 128, MemoryTokens: 16, SummariserHidden: 32},
	"robot": {InputTokens: 48, OutputTokens: 16, Dim: 512, Layers: 8, Heads: 8, MLPDim: 512, MemoryTokens: 96, SummariserHidden: 64},
}

// Preset returns the configuration of model `name` at `size` ("small" or
// "robot"), defaults filled in and validated for that model.
func Preset(name, size string) (Config, error) {
	c, ok := Sizes[size]
	if !ok {
		return Config{}, fmt.Errorf("seq: unknown size %q (have %s)", size, strings.Join(sortedKeys(Sizes), ", "))
	}
	c = c.WithDefaults()
	if err := c.ValidateFor(name); err != nil {
		return Config{}, err
	}
	return c, nil
}

// WithDefaults returns c with unset optional fields at their defaults.
func (c Config) WithDefaults() Config {
	if c.LayerNormEps == 0 {
		c.LayerNormEps = 1e-6
	}
	if c.MemoryTokens == 0 {
		c.MemoryTokens = 96
	}
	if c.SummariserHidden == 0 {
		c.SummariserHidden = 64
	}
	if c.Window == 0 {
		c.Window = 6
	}
	if c.StateTokens == 0 {
		c.StateTokens = 16
	}
	if c.MaxSteps == 0 {
		c.MaxSteps = 128
	}
	if c.LSTMHidden == 0 {
		c.LSTMHidden = c.Dim
	}
	return c
}

// ValidateFor reports the first field that makes c unusable for the model
// called name (an unknown name is an error too).
func (c Config) ValidateFor(name string) error {
	if !slices.Contains(modelNames, name) {
		return fmt.Errorf("seq: unknown model %q (have %s)", name, strings.Join(Names(), ", "))
	}
	fields := []struct {
		name string
		v    int
	}{
		{"input_tokens", c.InputTokens}, {"output_tokens", c.OutputTokens}, {"dim", c.Dim},
		{"layers", c.Layers}, {"heads", c.Heads}, {"mlp_dim", c.MLPDim},
		{"memory_tokens", c.MemoryTokens}, {"summariser_hidden", c.SummariserHidden},
		{"window", c.Window}, {"state_tokens", c.StateTokens}, {"max_steps", c.MaxSteps},
		{"lstm_hidden", c.LSTMHidden},
	}
	for _, f := range fields {
		if f.v <= 0 {
			return fmt.Errorf("seq %s config: %s is %d, want > 0", name, f.name, f.v)
		}
	}
	if c.Dim%c.Heads != 0 {
		return fmt.Errorf("seq %s config: heads %d does not divide dim %d", name, c.Heads, c.Dim)
	}
	if !(c.LayerNormEps > 0) {
		return fmt.Errorf("seq %s config: layernorm_eps is %g, want > 0", name, c.LayerNormEps)
	}
	// Sizes past these are typos, and their products would overflow an int
	// on the way to an allocation.
	const most = 1 << 16
	for _, f := range fields {
		if f.v > most {
			return fmt.Errorf("seq %s config: %s is %d, want at most %d", name, f.name, f.v, most)
		}
	}
	// Refuse sizes that would not fit in memory before anything allocates
	// them (each field is below 2^16, so these products fit in an int64).
	n, r, d, f, k := int64(c.InputTokens), int64(c.OutputTokens), int64(c.Dim), int64(c.MLPDim), int64(c.LSTMHidden)
	params := int64(c.Layers)*(4*d*d+2*d*f) + int64(c.Window)*n*d + int64(c.StateTokens+c.InputTokens)*d +
		int64(c.MemoryTokens)*d + 4*k*(d+k) + k*r*d
	const mostParams, mostState = 1 << 28, 1 << 30
	if params > mostParams {
		return fmt.Errorf("seq %s config: about %d parameters, want at most %d", name, params, int64(mostParams))
	}
	if name == "causal" || name == "concat" {
		state := 2 * int64(c.MaxSteps) * n * d * int64(c.Layers)
		if state > mostState {
			return fmt.Errorf("seq %s config: a State of max_steps %d would hold %d floats, want at most %d", name, c.MaxSteps, state, int64(mostState))
		}
	}
	return nil
}

// ParseConfig decodes a configuration stored by ConfigJSON for the model
// called name, fills defaults and validates it. Unknown fields are an
// error, so a misspelt field is not silently ignored.
func ParseConfig(name string, b []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("seq %s config: %w", name, err)
	}
	if dec.More() {
		return Config{}, fmt.Errorf("seq %s config: trailing data after the JSON object", name)
	}
	c = c.WithDefaults()
	return c, c.ValidateFor(name)
}

// JSON encodes c as stored in a checkpoint.
func (c Config) JSON() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // a struct of plain fields always encodes
	}
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
