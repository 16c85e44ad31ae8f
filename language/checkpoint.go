package language

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/ttmrobot/ttm/internal/safetensors"
)

// Checkpoint layout: the configuration (JSON) and the vocabulary file in
// the metadata, the tensors under Prefix.
const (
	ConfigKey = "language.config"
	VocabKey  = "language.vocab"
	Prefix    = "language/"
)

// AddTo stores the model's configuration, vocabulary and parameters in f,
// tensors under prefix.
func (m *Model) AddTo(f *safetensors.File, prefix string) {
	f.Metadata[ConfigKey] = m.Config.JSON()
	f.Metadata[VocabKey] = string(m.Vocab.MarshalText())
	for _, s := range m.Specs {
		f.Tensors[prefix+s.Name] = safetensors.FromFloat32(m.Params[s.Offset:s.Offset+s.Size], s.Shape...)
	}
}

// FromFile builds a model from the configuration, vocabulary and tensors
// stored in f under prefix, checking every tensor's presence, shape and
// values, and reporting every problem it finds.
func FromFile(f *safetensors.File, prefix string) (*Model, error) {
	js, ok := f.Metadata[ConfigKey]
	if !ok {
		return nil, fmt.Errorf("no %q entry in the checkpoint metadata", ConfigKey)
	}
	c, err := ParseConfig([]byte(js))
	if err != nil {
		return nil, err
	}
	vt, ok := f.Metadata[VocabKey]
	if !ok {
		return nil, fmt.Errorf("no %q entry in the checkpoint metadata", VocabKey)
	}
	v, err := ParseVocab(bytes.NewReader([]byte(vt)))
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", VocabKey, err)
	}
	m, err := NewModel(c, v)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, s := range m.Specs {
		name := prefix + s.Name
		t, ok := f.Tensors[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("missing tensor %s (F32 %v)", name, s.Shape))
			continue
		case !slices.Equal(t.Shape, s.Shape):
			problems = append(problems, fmt.Sprintf("tensor %s has shape %v, the configuration and vocabulary need %v", name, t.Shape, s.Shape))
			continue
		}
		dst := m.Params[s.Offset : s.Offset+s.Size]
		if err := t.Float32(dst); err != nil {
			problems = append(problems, fmt.Sprintf("tensor %s: %v", name, err))
			continue
		}
		for i, x := range dst {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				problems = append(problems, fmt.Sprintf("tensor %s holds %v at element %d", name, x, i))
				break
			}
		}
	}
	var extra []string
	for name := range f.Tensors {
		if strings.HasPrefix(name, prefix) && !slices.ContainsFunc(m.Specs, func(s ParamSpec) bool { return prefix+s.Name == name }) {
			extra = append(extra, "unexpected tensor "+name)
		}
	}
	sort.Strings(extra)
	problems = append(problems, extra...)
	if len(problems) > 0 {
		return nil, errors.New("language checkpoint does not match its configuration:\n  " + strings.Join(problems, "\n  "))
	}
	return m, nil
}

// Save writes the model alone as a checkpoint file.
func (m *Model) Save(path string) error {
	f := safetensors.New()
	m.AddTo(f, Prefix)
	if err := safetensors.WriteFile(path, f); err != nil {
		return fmt.Errorf("save language model %s: %w", path, err)
	}
	return nil
}

// Load reads a checkpoint file holding a language model under Prefix.
func Load(path string) (*Model, error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load language model: %w", err)
	}
	m, err := FromFile(f, Prefix)
	if err != nil {
		return nil, fmt.Errorf("load language model %s: %w", path, err)
	}
	return m, nil
}
