package ttm

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

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
	for _, s := range m.Specs {
		f.Tensors[prefix+s.Name] = safetensors.FromFloat32(m.Params[s.Offset:s.Offset+s.Size], s.Shape...)
	}
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
	var problems []string
	known := make(map[string]bool, len(m.Specs))
	for _, s := range m.Specs {
		name := prefix + s.Name
		known[name] = true
		t, ok := f.Tensors[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("missing tensor %s (F32 %v)", name, s.Shape))
			continue
		}
		if !slices.Equal(t.Shape, s.Shape) {
			problems = append(problems, fmt.Sprintf("tensor %s has shape %v, the configuration needs %v", name, t.Shape, s.Shape))
			continue
		}
		dst := m.Params[s.Offset : s.Offset+s.Size]
		if err := t.Float32(dst); err != nil {
			problems = append(problems, fmt.Sprintf("tensor %s: %v", name, err))
			continue
		}
		if i := firstNonFinite(dst); i >= 0 {
			problems = append(problems, fmt.Sprintf("tensor %s holds %v at element %d", name, dst[i], i))
		}
	}
	var extra []string
	for name := range f.Tensors {
		if strings.HasPrefix(name, prefix) && !known[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		problems = append(problems, fmt.Sprintf("unexpected tensor %s: not part of a %s/%s TTM with %d layers (positional embeddings %v)",
			name, c.MemoryMode, c.ProcessingUnit, c.NumLayers, c.UsePositionalEmbedding))
	}
	if len(problems) > 0 {
		more := ""
		if len(problems) > maxReportedProblems {
			more = fmt.Sprintf("\n... and %d more", len(problems)-maxReportedProblems)
			problems = problems[:maxReportedProblems]
		}
		return nil, errors.New("checkpoint does not match its configuration:\n  " + strings.Join(problems, "\n  ") + more)
	}
	return m, nil
}

// Load reads a checkpoint file holding a TTM under Prefix.
func Load(path string) (*Model, error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load ttm weights: %w", err)
	}
	m, err := FromFile(f, Prefix)
	if err != nil {
		return nil, fmt.Errorf("load ttm weights %s: %w", path, err)
	}
	return m, nil
}

func firstNonFinite(x []float32) int {
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return i
		}
	}
	return -1
}
