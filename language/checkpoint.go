package language

import (
	"bytes"
	"fmt"

	"github.com/ttmrobot/ttm/internal/layer"
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
	layer.AddTensors(f, prefix, m.Specs, m.Params)
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
	set := safetensors.Set{
		What: "language checkpoint", Owns: safetensors.HasPrefix(prefix),
		Needs:   "the configuration and vocabulary need",
		Tensors: layer.Wants(prefix, m.Specs, m.Params),
	}
	if err := f.Load(set); err != nil {
		return nil, err
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
	return safetensors.LoadFile(path, "language model", func(f *safetensors.File) (*Model, error) { return FromFile(f, Prefix) })
}
