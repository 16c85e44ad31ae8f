package ttm

import (
	"fmt"

	"github.com/ttmrobot/ttm/internal/layer"
	"github.com/ttmrobot/ttm/internal/safetensors"
)

// Checkpoint layout: the configuration is JSON in the safetensors metadata
// under ConfigKey, and each parameter is an F32 tensor named Prefix plus its
// Flax path (for example "ttm/Encoder_0/encoder_norm/scale"), so weights
// exported from the reference with flatten_dict(params, sep='/') load as is.
const (
	ConfigKey = "ttm.config"
	Prefix    = "ttm/"
)

// maxReportedProblems bounds how many problems one load error lists.
const maxReportedProblems = 12

// AddTo stores the model's configuration and parameters in f under prefix.
func (m *Model) AddTo(f *safetensors.File, prefix string) {
	f.Metadata[ConfigKey] = m.Config.JSON()
	layer.AddTensors(f, prefix, m.Specs, m.Params)
}

// Save writes the model alone as a checkpoint file.
func (m *Model) Save(path string) error {
	f := safetensors.New()
	m.AddTo(f, Prefix)
	return safetensors.WriteFile(path, f)
}

// FromFile builds a model from the configuration and tensors stored in f
// under prefix. It checks every tensor's presence, dtype, shape and values
// against the configuration, and reports every problem it finds (up to a
// dozen), each naming the tensor.
func FromFile(f *safetensors.File, prefix string) (*Model, error) {
	js, ok := f.Metadata[ConfigKey]
	if !ok {
		return nil, fmt.Errorf("no %q entry in the checkpoint metadata", ConfigKey)
	}
	c, err := ParseConfig([]byte(js))
	if err != nil {
		return nil, err
	}
	m, err := NewModel(c)
	if err != nil {
		return nil, err
	}
	set := safetensors.Set{
		What: "checkpoint", Owns: safetensors.HasPrefix(prefix), Limit: maxReportedProblems,
		Explain: func(string) string {
			return fmt.Sprintf(": not part of a %s/%s TTM with %d layers (positional embeddings %v)",
				c.MemoryMode, c.ProcessingUnit, c.NumLayers, c.UsePositionalEmbedding)
		},
	}
	set.Tensors = layer.Wants(prefix, m.Specs, m.Params)
	if err := f.Load(set); err != nil {
		return nil, err
	}
	return m, nil
}

// Load reads a checkpoint file holding a TTM under Prefix.
func Load(path string) (*Model, error) {
	return safetensors.LoadFile(path, "ttm weights", func(f *safetensors.File) (*Model, error) { return FromFile(f, Prefix) })
}
