package ttm

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/ttmrobot/ttm/internal/safetensors"
	"github.com/ttmrobot/ttm/ttm/reference"
)

// randomise perturbs every parameter so that biases, LayerNorm scales and
// positional embeddings all take part (fresh Flax weights have zero biases
// and unit scales, which would hide mistakes in their use).
func randomise(m *Model, seed uint64) {
	m.Init(seed)
	r := rand.New(rand.NewPCG(seed, 99))
	for i := range m.Params {
		m.Params[i] += float32(r.NormFloat64() * 0.05)
	}
	m.invalidatePacked()
}

func randFloats(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

// relErr is the normwise relative error max|got-want| / max|want|.
func relErr(got, want []float32) float64 {
	var diff, norm float64
	for i := range want {
		diff = math.Max(diff, math.Abs(float64(got[i])-float64(want[i])))
		norm = math.Max(norm, math.Abs(float64(want[i])))
	}
	return diff / norm
}

// runReference runs the PyTorch implementation (package reference) on a
// weights file and an inputs file and returns its outputs.
func runReference(t *testing.T, dir, weights, inputs string) *safetensors.File {
	t.Helper()
	out := filepath.Join(dir, "reference.safetensors")
	cmd, err := reference.Command(dir, "trace", "--weights", weights, "--inputs", inputs, "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("reference trace: %v\n%s", err, b)
	}
	f, err := safetensors.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestParityWithReference(t *testing.T) {
	if testing.Short() {
		t.Skip("runs PyTorch")
	}
	small := Config{MemorySize: 12, ProcessSize: 6, InputTokens: 10, Dim: 64, NumLayers: 2, NumHeads: 4, MLPDim: 96, SummariserHidden: 32}
	robot, _ := Preset("robot")
	with := func(c Config, mode MemoryMode, unit ProcessingUnit, pos bool) Config {
		c.MemoryMode, c.ProcessingUnit, c.UsePositionalEmbedding = mode, unit, pos
		return c
	}
	noMem := with(small, TokenLearner, Transformer, false)
	noMem.NoMemory = true
	for _, tc := range []struct {
		name        string
		cfg         Config
		startMemory bool
	}{
		{"a/TL+transformer", with(small, TokenLearner, Transformer, false), false},
		{"b/TL-MHA+mixer", with(small, QueryAttention, Mixer, false), false},
		{"c/TL-AddErase+mlp+pos", with(small, AddErase, MLP, true), true},
		{"TL+transformer+pos", with(small, TokenLearner, Transformer, true), true},
		{"pool+mixer", with(small, Pool, Mixer, false), false},
		{"TL-MHA+transformer+pos", with(small, QueryAttention, Transformer, true), false},
		{"no-memory", noMem, true},
		{"robot", robot, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m, err := NewModel(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			randomise(m, 7)
			weights := filepath.Join(dir, "w.safetensors")
			if err := m.Save(weights); err != nil {
				t.Fatal(err)
			}
			c := m.Config
			const steps = 20
			r := rand.New(rand.NewPCG(3, 5))
			in := safetensors.New()
			inputs := randFloats(r, steps*c.InputTokens*c.Dim, 1)
			in.Tensors["inputs"] = safetensors.FromFloat32(inputs, steps, c.InputTokens, c.Dim)
			var start []float32
			if tc.startMemory {
				start = randFloats(r, c.MemorySize*c.Dim, 1)
				in.Tensors["memory"] = safetensors.FromFloat32(start, c.MemorySize, c.Dim)
			}
			inPath := filepath.Join(dir, "in.safetensors")
			if err := safetensors.WriteFile(inPath, in); err != nil {
				t.Fatal(err)
			}

			outputs, memories, err := Trace(NewMachine(m), inputs, start)
			if err != nil {
				t.Fatal(err)
			}
			ref := runReference(t, dir, weights, inPath)
			wantOut, _ := ref.Tensors["outputs"].Floats()
			wantMem, _ := ref.Tensors["memories"].Floats()
			if len(wantOut) != len(outputs) || len(wantMem) != len(memories) {
				t.Fatalf("reference shapes differ: outputs %d vs %d, memories %d vs %d", len(wantOut), len(outputs), len(wantMem), len(memories))
			}
			r0, m0 := c.ProcessSize*c.Dim, c.MemorySize*c.Dim
			worstOut, worstMem := 0.0, 0.0
			for s := 0; s < steps; s++ {
				eo := relErr(outputs[s*r0:(s+1)*r0], wantOut[s*r0:(s+1)*r0])
				em := relErr(memories[s*m0:(s+1)*m0], wantMem[s*m0:(s+1)*m0])
				worstOut, worstMem = math.Max(worstOut, eo), math.Max(worstMem, em)
				if eo > 1e-4 || em > 1e-4 {
					t.Errorf("step %d: relative error %.2e in outputs, %.2e in memory (limit 1e-4)", s, eo, em)
				}
			}
			t.Logf("20 steps: worst relative error %.2e (outputs), %.2e (memory)", worstOut, worstMem)
		})
	}
}
