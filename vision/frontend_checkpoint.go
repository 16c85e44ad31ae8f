package vision

import (
	"fmt"

	"github.com/ttmrobot/ttm/internal/layer"
	"github.com/ttmrobot/ttm/internal/safetensors"
)

// AddFrontEnd stores cfg as JSON under ConfigKey and the head's tensors
// under prefix (normally Prefix). head must be built from cfg.Head.
func AddFrontEnd(f *safetensors.File, cfg Config, head *Head, prefix string) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if head.Config != cfg.Head {
		return fmt.Errorf("vision: head configuration %+v differs from the front end's %+v", head.Config, cfg.Head)
	}
	f.Metadata[ConfigKey] = cfg.JSON()
	layer.AddTensors(f, prefix, head.Specs, head.Params)
	return nil
}

// FrontEndFromFile reads the configuration under ConfigKey and the head's
// tensors under prefix, checking every tensor's presence, shape and values
// and reporting every problem it finds.
func FrontEndFromFile(f *safetensors.File, prefix string) (Config, *Head, error) {
	js, ok := f.Metadata[ConfigKey]
	if !ok {
		return Config{}, nil, fmt.Errorf("no %q entry in the checkpoint metadata", ConfigKey)
	}
	cfg, err := ParseConfig([]byte(js))
	if err != nil {
		return Config{}, nil, err
	}
	head, err := NewHead(cfg.Head)
	if err != nil {
		return Config{}, nil, err
	}
	set := safetensors.Set{
		What: "vision checkpoint", Owns: safetensors.HasPrefix(prefix),
		Explain: func(string) string { return fmt.Sprintf(" (film %q)", cfg.Head.FiLM) },
		Tensors: layer.Wants(prefix, head.Specs, head.Params),
	}
	if err := f.Load(set); err != nil {
		return Config{}, nil, err
	}
	return cfg, head, nil
}

// SaveFrontEnd writes cfg and head alone as a checkpoint file, in the
// layout policy checkpoints use for their front end.
func SaveFrontEnd(path string, cfg Config, head *Head) error {
	f := safetensors.New()
	if err := AddFrontEnd(f, cfg, head, Prefix); err != nil {
		return err
	}
	if err := safetensors.WriteFile(path, f); err != nil {
		return fmt.Errorf("save vision front end %s: %w", path, err)
	}
	return nil
}

// LoadFrontEnd reads a checkpoint holding a front end under Prefix and
// ConfigKey (a policy checkpoint, or one written by SaveFrontEnd).
func LoadFrontEnd(path string) (Config, *Head, error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return Config{}, nil, fmt.Errorf("load vision front end: %w", err)
	}
	cfg, head, err := FrontEndFromFile(f, Prefix)
	if err != nil {
		return Config{}, nil, fmt.Errorf("load vision front end %s: %w", path, err)
	}
	return cfg, head, nil
}
