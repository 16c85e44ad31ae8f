package main

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/ttmrobot/ttm/internal/safetensors"
	"github.com/ttmrobot/ttm/ttm"
)

func init() {
	register(command{name: "trace", summary: "run TTM steps over recorded inputs and write outputs and memories", run: runTrace})
}

func runTrace(env *environment, args []string) error {
	fs := newFlags(env, "trace", "--weights W.safetensors --inputs IN.safetensors --out OUT.safetensors")
	weights := fs.String("weights", "", "TTM checkpoint `file`")
	inputs := fs.String("inputs", "", "`file` holding inputs [T, n, d] and optionally memory [m, d]")
	out := fs.String("out", "", "output `file`: outputs [T, r, d], memories [T, m, d], memory [m, d]")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"weights", *weights}, {"inputs", *inputs}, {"out", *out}} {
		if err := requireFlag(f.name, f.v); err != nil {
			return err
		}
	}
	if err := makeOutDir(filepath.Dir(*out)); err != nil {
		return err
	}
	m, err := ttm.Load(*weights)
	if err != nil {
		return err
	}
	c := m.Config
	in, err := safetensors.ReadFile(*inputs)
	if err != nil {
		return err
	}
	x, steps, err := tensorOfShape(in, "inputs", -1, c.InputTokens, c.Dim)
	if err != nil {
		return fmt.Errorf("%s: %w", *inputs, err)
	}
	var start []float32
	if _, ok := in.Tensors["memory"]; ok {
		if start, _, err = tensorOfShape(in, "memory", c.MemorySize, c.Dim); err != nil {
			return fmt.Errorf("%s: %w", *inputs, err)
		}
	}
	outputs, memories, err := ttm.Trace(ttm.NewMachine(m), x, start)
	if err != nil {
		return err
	}
	f := safetensors.New()
	f.Metadata[ttm.ConfigKey] = c.JSON()
	f.Tensors["outputs"] = safetensors.FromFloat32(outputs, steps, c.ProcessSize, c.Dim)
	f.Tensors["memories"] = safetensors.FromFloat32(memories, steps, c.MemorySize, c.Dim)
	last := make([]float32, c.MemorySize*c.Dim)
	if steps > 0 {
		copy(last, memories[(steps-1)*c.MemorySize*c.Dim:])
	} else if start != nil {
		copy(last, start)
	}
	f.Tensors["memory"] = safetensors.FromFloat32(last, c.MemorySize, c.Dim)
	if err := safetensors.WriteFile(*out, f); err != nil {
		return err
	}
	env.log.Info("traced", "steps", steps, "out", *out, "final_memory_hash", fmt.Sprintf("%016x", ttm.HashFloats(last)))
	return nil
}

// tensorOfShape decodes the F32 tensor name and checks its shape; a -1 in
// shape accepts any size there, which is returned as lead.
func tensorOfShape(f *safetensors.File, name string, shape ...int) (data []float32, lead int, err error) {
	t, ok := f.Tensors[name]
	if !ok {
		return nil, 0, fmt.Errorf("no tensor %q", name)
	}
	ok = len(t.Shape) == len(shape)
	for i := 0; ok && i < len(shape); i++ {
		ok = shape[i] == -1 || shape[i] == t.Shape[i]
	}
	if !ok {
		want := slices.Clone(shape)
		return nil, 0, fmt.Errorf("tensor %q has shape %v, want %v (-1: any)", name, t.Shape, want)
	}
	data, err = t.Floats()
	if err != nil {
		return nil, 0, fmt.Errorf("tensor %q: %w", name, err)
	}
	if len(t.Shape) > 0 {
		lead = t.Shape[0]
	}
	return data, lead, nil
}
