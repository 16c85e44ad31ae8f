package ttm

import (
	"encoding/json"
	"fmt"
	"strings"
)

// MemoryMode selects how memory is read and written.
type MemoryMode string

const (
	// TokenLearner reads and writes with TokenLearner v1.1 (the default).
	TokenLearner MemoryMode = "TL"
	// QueryAttention reads and writes with learned queries cross-attending
	// over the tokens (the reference's TL-MHA).
	QueryAttention MemoryMode = "TL-MHA"
	// AddErase reads with TokenLearner and writes NTM-style, erasing and
	// adding to the existing memory rows.
	AddErase MemoryMode = "TL-AddErase"
	// Pool reads and writes with parameter-free average pooling over
	// contiguous groups of rows (the paper's Table 4 baseline; not in the
	// reference code, see PoolSummariser).
	Pool MemoryMode = "pool"
)

// ProcessingUnit selects the network that processes the r read tokens.
type ProcessingUnit string

const (
	Transformer ProcessingUnit = "transformer"
	Mixer       ProcessingUnit = "mixer"
	MLP         ProcessingUnit = "mlp"
)

// Config describes one TTM. Field names in JSON are the checkpoint's
// `ttm.config` metadata.
type Config struct {
	MemorySize             int            `json:"memory_size"`              // m
	ProcessSize            int            `json:"process_size"`             // r
	InputTokens            int            `json:"input_tokens"`             // n
	Dim                    int            `json:"dim"`                      // d
	NumLayers              int            `json:"num_layers"`               // processing unit depth
	NumHeads               int            `json:"num_heads"`                // transformer heads
	MLPDim                 int            `json:"mlp_dim"`                  // processing unit MLP width
	SummariserHidden       int            `json:"summariser_hidden"`        // TokenLearner bottleneck, 64
	MemoryMode             MemoryMode     `json:"memory_mode"`              // TL, TL-MHA, TL-AddErase, pool
	ProcessingUnit         ProcessingUnit `json:"processing_unit"`          // transformer, mixer, mlp
	UsePositionalEmbedding bool           `json:"use_positional_embedding"` // learned P_read, P_write
	LayerNormEps           float64        `json:"layernorm_eps"`            // 1e-6, Flax's default

	SummariserHeads int  `json:"summariser_heads"` // TL-MHA attention heads; default 8
	MixerTokenDim   int  `json:"mixer_token_dim"`  // mixer token-mixing width; default 128
	WriteHeads      int  `json:"write_heads"`      // TL-AddErase write heads; default 8
	NoMemory        bool `json:"no_memory"`        // ablation: memory zeroed before every step
}

// Presets are the configurations named on the command line.
var Presets = map[string]Config{
	// The paper's robot policy: m 96, r 16, n 48, d 512, 8 layers.
	"robot": {MemorySize: 96, ProcessSize: 16, InputTokens: 48, Dim: 512, NumLayers: 8, NumHeads: 8, MLPDim: 512},
	// The paper's Charades model (ViViT tokens, n 16).
	"charades": {MemorySize: 96, ProcessSize: 16, InputTokens: 16, Dim: 512, NumLayers: 4, NumHeads: 8, MLPDim: 512},
	// Small enough to train in CI and to test against the reference quickly.
	"small": {MemorySize: 16, ProcessSize: 8, InputTokens: 16, Dim: 64, NumLayers: 2, NumHeads: 4, MLPDim: 128, SummariserHidden: 32},
}

// Preset returns the named preset with defaults filled in.
func Preset(name string) (Config, error) {
	c, ok := Presets[name]
	if !ok {
		names := make([]string, 0, len(Presets))
		for n := range Presets {
			names = append(names, n)
		}
		return Config{}, fmt.Errorf("unknown preset %q (have %s)", name, strings.Join(names, ", "))
	}
	c = c.WithDefaults()
	return c, c.Validate()
}

// WithDefaults returns c with unset optional fields at their defaults.
func (c Config) WithDefaults() Config {
	if c.SummariserHidden == 0 {
		c.SummariserHidden = 64
	}
	if c.MemoryMode == "" {
		c.MemoryMode = TokenLearner
	}
	if c.ProcessingUnit == "" {
		c.ProcessingUnit = Transformer
	}
	if c.LayerNormEps == 0 {
		c.LayerNormEps = 1e-6
	}
	if c.SummariserHeads == 0 {
		c.SummariserHeads = 8
	}
	if c.MixerTokenDim == 0 {
		c.MixerTokenDim = 128
	}
	if c.WriteHeads == 0 {
		c.WriteHeads = 8
	}
	return c
}

// Validate reports the first field that makes c unusable.
func (c Config) Validate() error {
	positive := []struct {
		name string
		v    int
	}{
		{"memory_size", c.MemorySize}, {"process_size", c.ProcessSize}, {"input_tokens", c.InputTokens},
		{"dim", c.Dim}, {"num_layers", c.NumLayers}, {"mlp_dim", c.MLPDim},
		{"summariser_hidden", c.SummariserHidden},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return fmt.Errorf("ttm config: %s is %d, want > 0", p.name, p.v)
		}
	}
	switch c.MemoryMode {
	case TokenLearner, AddErase, Pool:
	case QueryAttention:
		if c.SummariserHeads <= 0 || c.Dim%c.SummariserHeads != 0 {
			return fmt.Errorf("ttm config: summariser_heads %d does not divide dim %d", c.SummariserHeads, c.Dim)
		}
	default:
		return fmt.Errorf("ttm config: memory_mode %q unknown (want TL, TL-MHA, TL-AddErase or pool)", c.MemoryMode)
	}
	if c.MemoryMode == AddErase && c.WriteHeads <= 0 {
		return fmt.Errorf("ttm config: write_heads is %d, want > 0", c.WriteHeads)
	}
	switch c.ProcessingUnit {
	case Transformer:
		if c.NumHeads <= 0 || c.Dim%c.NumHeads != 0 {
			return fmt.Errorf("ttm config: num_heads %d does not divide dim %d", c.NumHeads, c.Dim)
		}
	case Mixer:
		if c.MixerTokenDim <= 0 {
			return fmt.Errorf("ttm config: mixer_token_dim is %d, want > 0", c.MixerTokenDim)
		}
	case MLP:
	default:
		return fmt.Errorf("ttm config: processing_unit %q unknown (want transformer, mixer or mlp)", c.ProcessingUnit)
	}
	if c.LayerNormEps <= 0 {
		return fmt.Errorf("ttm config: layernorm_eps is %g, want > 0", c.LayerNormEps)
	}
	return nil
}

// ParseConfig decodes a JSON configuration, fills defaults and validates it.
// Unknown fields are an error, so a misspelt field is not silently ignored.
func ParseConfig(b []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("ttm config: %w", err)
	}
	c = c.WithDefaults()
	return c, c.Validate()
}

// JSON encodes c as it is stored in a checkpoint.
func (c Config) JSON() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // a struct of plain fields always encodes
	}
	return string(b)
}
