package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/ttm"
)

func init() {
	register(command{name: "init", summary: "write fresh weights: a TTM, or with --policy a whole policy", run: runInit})
}

func runInit(env *environment, args []string) error {
	fs := newFlags(env, "init", "(--config CONFIG.json | --preset robot|charades|small) --out W.safetensors [--seed N]\n       ttm init --policy --preset small|robot|robot-b3 [--backbone FILE.onnx] --out CKPT.safetensors [--seed N]")
	configPath := fs.String("config", "", "TTM configuration `JSON` file (field names as in the checkpoint's ttm.config)")
	preset := fs.String("preset", "", "named configuration: robot, charades or small")
	out := fs.String("out", "", "output checkpoint `file` (.safetensors)")
	seed := fs.Uint64("seed", 0, "random seed; the same seed always gives the same weights")
	whole := fs.Bool("policy", false, "write a complete policy checkpoint (front end, TTM, action head)")
	backbone := fs.String("backbone", "", "with --policy: the backbone ONNX `file`; default: a seeded EfficientNet written beside --out")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	if err := requireFlag("out", *out); err != nil {
		return err
	}
	if err := makeOutDir(filepath.Dir(*out)); err != nil {
		return err
	}
	if *whole {
		if *configPath != "" {
			return fmt.Errorf("%w: --policy takes --preset, not --config", errUsage)
		}
		if err := requireFlag("preset", *preset); err != nil {
			return err
		}
		spec, err := policy.Preset(*preset)
		if err != nil {
			return err
		}
		if err := policy.Create(spec, *seed, *backbone, *out, env.log); err != nil {
			return err
		}
		env.log.Info("wrote policy", "file", *out, "preset", *preset, "seed", *seed)
		return nil
	}
	if *backbone != "" {
		return fmt.Errorf("%w: --backbone needs --policy", errUsage)
	}
	c, err := loadConfig(*configPath, *preset)
	if err != nil {
		return err
	}
	m, err := ttm.NewModel(c)
	if err != nil {
		return err
	}
	m.Init(*seed)
	if err := m.Save(*out); err != nil {
		return err
	}
	env.log.Info("wrote weights", "file", *out, "parameters", m.NumParams(),
		"megabytes", fmt.Sprintf("%.1f", float64(4*m.NumParams())/1e6),
		"memory_mode", c.MemoryMode, "processing_unit", c.ProcessingUnit, "seed", *seed)
	return nil
}

// loadConfig reads exactly one of a configuration file and a preset name.
func loadConfig(path, preset string) (ttm.Config, error) {
	switch {
	case path != "" && preset != "":
		return ttm.Config{}, fmt.Errorf("%w: give --config or --preset, not both", errUsage)
	case preset != "":
		return ttm.Preset(preset)
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return ttm.Config{}, err
		}
		c, err := ttm.ParseConfig(b)
		if err != nil {
			return ttm.Config{}, fmt.Errorf("%s: %w", path, err)
		}
		return c, nil
	}
	return ttm.Config{}, fmt.Errorf("%w: --config or --preset is required", errUsage)
}
