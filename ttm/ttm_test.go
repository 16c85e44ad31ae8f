package ttm

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/layer"
	"github.com/ttmrobot/ttm/internal/nn"
	"github.com/ttmrobot/ttm/internal/safetensors"
)

func testConfig(mode MemoryMode, unit ProcessingUnit, pos bool) Config {
	c := Config{MemorySize: 10, ProcessSize: 4, InputTokens: 6, Dim: 32, NumLayers: 2, NumHeads: 4, MLPDim: 48,
		SummariserHidden: 16, MemoryMode: mode, ProcessingUnit: unit, UsePositionalEmbedding: pos}
	return c.WithDefaults()
}

// allConfigs covers every memory mode with every processing unit.
func allConfigs() map[string]Config {
	out := map[string]Config{}
	for _, mode := range []MemoryMode{TokenLearner, QueryAttention, AddErase, Pool} {
		for _, unit := range []ProcessingUnit{Transformer, Mixer, MLP} {
			for _, pos := range []bool{false, true} {
				name := string(mode) + "/" + string(unit)
				if pos {
					name += "/pos"
				}
				out[name] = testConfig(mode, unit, pos)
			}
		}
	}
	return out
}

func newTestModel(t testing.TB, c Config, seed uint64) *Model {
	t.Helper()
	m, err := NewModel(c)
	if err != nil {
		t.Fatal(err)
	}
	randomise(m, seed)
	return m
}

func TestConfigValidate(t *testing.T) {
	good := testConfig(TokenLearner, Transformer, false)
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"memory_size", func(c *Config) { c.MemorySize = 0 }, "memory_size is 0"},
		{"dim", func(c *Config) { c.Dim = -1 }, "dim is -1"},
		{"heads", func(c *Config) { c.NumHeads = 5 }, "num_heads 5 does not divide dim 32"},
		{"mode", func(c *Config) { c.MemoryMode = "LSTM" }, `memory_mode "LSTM" unknown`},
		{"unit", func(c *Config) { c.ProcessingUnit = "rnn" }, `processing_unit "rnn" unknown`},
		{"summariser heads", func(c *Config) { c.MemoryMode = QueryAttention; c.SummariserHeads = 3 }, "summariser_heads 3"},
		{"eps", func(c *Config) { c.LayerNormEps = -1 }, "layernorm_eps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if err := good.Validate(); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
	for name := range Presets {
		if _, err := Preset(name); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"memory_size":96,"process_size":16,"input_tokens":48,"dim":512,"num_layers":8,"num_heads":8,"mlp_dim":512}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.SummariserHidden != 64 || c.MemoryMode != TokenLearner || c.ProcessingUnit != Transformer || c.LayerNormEps != 1e-6 {
		t.Errorf("defaults not applied: %+v", c)
	}
	if _, err := ParseConfig([]byte(`{"memory_sise":96}`)); err == nil || !strings.Contains(err.Error(), "memory_sise") {
		t.Errorf("misspelt field: error %v", err)
	}
	back, err := ParseConfig([]byte(c.JSON()))
	if err != nil || back != c {
		t.Errorf("JSON round trip: %+v, %v", back, err)
	}
}

func TestRobotPresetSize(t *testing.T) {
	c, _ := Preset("robot")
	m, err := NewModel(c)
	if err != nil {
		t.Fatal(err)
	}
	// 8 blocks of 4 d² attention + 2 d·mlp MLP weights dominate: about 12.7 M
	// parameters, 51 MB of float32 (the paper's configuration).
	if mb := float64(4*m.NumParams()) / 1e6; mb < 50 || mb > 52 {
		t.Errorf("robot preset holds %.1f MB of weights, want about 51", mb)
	}
}

func TestInit(t *testing.T) {
	c := testConfig(QueryAttention, Transformer, true)
	a, _ := NewModel(c)
	b, _ := NewModel(c)
	a.Init(5)
	b.Init(5)
	if !slices.Equal(a.Params, b.Params) {
		t.Error("same seed, different weights")
	}
	b.Init(6)
	if slices.Equal(a.Params, b.Params) {
		t.Error("different seeds, same weights")
	}
	for _, s := range a.Specs {
		v := a.Params[s.Offset : s.Offset+s.Size]
		switch {
		case strings.HasSuffix(s.Name, "/scale"):
			for _, x := range v {
				if x != 1 {
					t.Fatalf("%s: LayerNorm scale %g, want 1", s.Name, x)
				}
			}
		case strings.HasSuffix(s.Name, "/kernel"):
			limit := math.Sqrt(6 / float64(s.Init.FanIn+s.Init.FanOut))
			for _, x := range v {
				if math.Abs(float64(x)) > limit {
					t.Fatalf("%s: %g outside the xavier bound %g", s.Name, x, limit)
				}
			}
		case strings.HasSuffix(s.Name, "pos_embedding"), strings.HasSuffix(s.Name, "/tokens"):
			var sq float64
			for _, x := range v {
				sq += float64(x) * float64(x)
			}
			if std := math.Sqrt(sq / float64(len(v))); std < 0.015 || std > 0.025 {
				t.Errorf("%s: standard deviation %g, want about 0.02", s.Name, std)
			}
		}
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	for name, c := range allConfigs() {
		m := newTestModel(t, c, 3)
		path := filepath.Join(t.TempDir(), "w.safetensors")
		if err := m.Save(path); err != nil {
			t.Fatal(err)
		}
		back, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if back.Config != m.Config || !slices.Equal(back.Params, m.Params) {
			t.Errorf("%s: checkpoint round trip changed the model", name)
		}
	}
}

func TestLoadReportsEveryProblem(t *testing.T) {
	c := testConfig(TokenLearner, Transformer, false)
	m := newTestModel(t, c, 1)
	build := func(edit func(f *safetensors.File)) *safetensors.File {
		f := safetensors.New()
		m.AddTo(f, Prefix)
		edit(f)
		return f
	}
	for _, tc := range []struct {
		name  string
		edit  func(f *safetensors.File)
		wants []string
	}{
		{"no config", func(f *safetensors.File) { delete(f.Metadata, ConfigKey) }, []string{`no "ttm.config"`}},
		{"bad config", func(f *safetensors.File) { f.Metadata[ConfigKey] = `{"dim":0}` }, []string{"memory_size is 0"}},
		{"missing", func(f *safetensors.File) { delete(f.Tensors, "ttm/Encoder_0/encoder_norm/bias") },
			[]string{"missing tensor ttm/Encoder_0/encoder_norm/bias (F32 [32])"}},
		{"shape", func(f *safetensors.File) {
			f.Tensors["ttm/TokenLearnerModuleV11_0/token_masking/Dense_1/kernel"] = safetensors.FromFloat32(make([]float32, 16*5), 16, 5)
		}, []string{"tensor ttm/TokenLearnerModuleV11_0/token_masking/Dense_1/kernel has shape [16 5], the configuration needs [16 4]"}},
		{"extra layer", func(f *safetensors.File) {
			f.Tensors["ttm/Encoder_0/encoderblock_2/LayerNorm_0/scale"] = safetensors.FromFloat32(make([]float32, 32), 32)
		}, []string{"unexpected tensor ttm/Encoder_0/encoderblock_2/LayerNorm_0/scale", "with 2 layers"}},
		{"nan", func(f *safetensors.File) {
			v := make([]float32, 32)
			v[7] = float32(math.NaN())
			f.Tensors["ttm/Encoder_0/encoder_norm/scale"] = safetensors.FromFloat32(v, 32)
		}, []string{"tensor ttm/Encoder_0/encoder_norm/scale holds NaN at element 7"}},
		{"dtype", func(f *safetensors.File) {
			tt := f.Tensors["ttm/Encoder_0/encoder_norm/scale"]
			tt.DType = safetensors.I32
			f.Tensors["ttm/Encoder_0/encoder_norm/scale"] = tt
		}, []string{"dtype I32, want F32"}},
		{"two problems", func(f *safetensors.File) {
			delete(f.Tensors, "ttm/Encoder_0/encoder_norm/bias")
			delete(f.Tensors, "ttm/Encoder_0/encoder_norm/scale")
		}, []string{"encoder_norm/bias", "encoder_norm/scale"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromFile(build(tc.edit), Prefix)
			if err == nil {
				t.Fatal("loaded without error")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// Tensors outside the prefix belong to other parts of a policy checkpoint.
	f := build(func(f *safetensors.File) { f.Tensors["vision/x"] = safetensors.FromFloat32([]float32{1}, 1) })
	if _, err := FromFile(f, Prefix); err != nil {
		t.Errorf("a tensor outside the prefix was rejected: %v", err)
	}
}

// summariserWeights runs the read summariser once and returns its (K, N)
// weights, for the summarisers that have them.
func TestTokenLearnerWeightsAreDistributions(t *testing.T) {
	c := testConfig(TokenLearner, Transformer, false)
	m := newTestModel(t, c, 2)
	mc := NewMachine(m)
	r := rand.New(rand.NewPCG(1, 1))
	in := randFloats(r, (c.MemorySize+c.InputTokens)*c.Dim, 2)
	tl := mc.read.(*tokenLearner)
	tl.summarise(mc.z, in)
	n := c.MemorySize + c.InputTokens
	for k := 0; k < c.ProcessSize; k++ {
		var sum float64
		for _, w := range tl.Weights()[k*n : (k+1)*n] {
			if w < 0 {
				t.Fatalf("negative weight %g", w)
			}
			sum += float64(w)
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Errorf("token %d: weights sum to %g", k, sum)
		}
	}
}

// permuteRows returns x (rows, d) with its rows in the order perm.
func permuteRows(x []float32, perm []int, d int) []float32 {
	out := make([]float32, len(x))
	for i, p := range perm {
		copy(out[i*d:(i+1)*d], x[p*d:(p+1)*d])
	}
	return out
}

func TestStepIgnoresRowOrderWithoutPositionalEmbeddings(t *testing.T) {
	// TokenLearner and query attention are sums over rows weighted by
	// functions of each row, so without positional embeddings a step must
	// not depend on the order of the memory rows or of the input rows.
	for _, mode := range []MemoryMode{TokenLearner, QueryAttention} {
		c := testConfig(mode, Transformer, false)
		m := newTestModel(t, c, 4)
		r := rand.New(rand.NewPCG(2, 2))
		mem, input := randFloats(r, c.MemorySize*c.Dim, 1), randFloats(r, c.InputTokens*c.Dim, 1)
		run := func(mem, input []float32) (out, next []float32) {
			s := NewMemory(c)
			copy(s.Tokens, mem)
			out = make([]float32, c.ProcessSize*c.Dim)
			NewMachine(m).Step(s, input, out)
			return out, s.Tokens
		}
		out1, next1 := run(mem, input)
		out2, next2 := run(permuteRows(mem, r.Perm(c.MemorySize), c.Dim), permuteRows(input, r.Perm(c.InputTokens), c.Dim))
		if e := relErr(out2, out1); e > 1e-5 {
			t.Errorf("%s: output changed by %.2e under row permutation", mode, e)
		}
		if e := relErr(next2, next1); e > 1e-5 {
			t.Errorf("%s: memory changed by %.2e under row permutation", mode, e)
		}
	}
}

func TestHandComputedCases(t *testing.T) {
	const d = 4
	rows := []float32{
		1, 2, 3, 4,
		5, 6, 7, 8,
		-1, 0, 1, 2,
		0, 0, 0, 8,
		2, 2, 2, 2,
	}
	t.Run("pool", func(t *testing.T) {
		// 5 rows into 2: groups [0, 3) and [2, 5), as adaptive average pooling.
		out := make([]float32, 2*d)
		(&poolSummariser{n: 5, k: 2, d: d}).summarise(out, rows)
		want := []float32{5.0 / 3, 8.0 / 3, 11.0 / 3, 14.0 / 3, 1.0 / 3, 2.0 / 3, 1, 4}
		if e := relErr(out, want); e > 3e-7 {
			t.Errorf("got %v, want %v", out, want)
		}
	})
	t.Run("token learner with constant logits averages the raw rows", func(t *testing.T) {
		c := Config{Dim: d, SummariserHidden: 3, LayerNormEps: 1e-6}
		var p layer.TokenLearner
		var tab layer.Table
		p.Register(&tab, "tl", d, 3, 2, layer.MLPBias)
		tab.Allocate()
		for i := range p.LN.Scale {
			p.LN.Scale[i] = 1
		}
		p.MLP.D1.Bias[0], p.MLP.D1.Bias[1] = 3, -7 // kernels zero: every row gets the same logit
		tl := newTokenLearner(&p, 5, 2, c)
		out := make([]float32, 2*d)
		tl.summarise(out, rows)
		mean := []float32{7.0 / 5, 10.0 / 5, 13.0 / 5, 24.0 / 5}
		if e := relErr(out, append(slices.Clone(mean), mean...)); e > 1e-6 {
			t.Errorf("got %v, want the row mean %v twice", out, mean)
		}
	})
	t.Run("add-erase with zero weights adds one", func(t *testing.T) {
		// e = a = 0, so M' = M·Π(1 - 0) + mean(1 - 0) = M + 1.
		c := testConfig(AddErase, MLP, false)
		m, _ := NewModel(c)
		mc := NewMachine(m)
		r := rand.New(rand.NewPCG(8, 8))
		mem := NewMemory(c)
		copy(mem.Tokens, randFloats(r, len(mem.Tokens), 1))
		before := slices.Clone(mem.Tokens)
		mc.Step(mem, randFloats(r, c.InputTokens*c.Dim, 1), make([]float32, c.ProcessSize*c.Dim))
		for i := range before {
			// The mean adds 1/Kw Kw times: allow float32 rounding.
			if math.Abs(float64(mem.Tokens[i]-(before[i]+1))) > 1e-6 {
				t.Fatalf("element %d: %g, want %g", i, mem.Tokens[i], before[i]+1)
			}
		}
	})
	t.Run("mlp unit with zero blocks outputs the final bias", func(t *testing.T) {
		// Each block maps everything to zero (no residual), and LayerNorm of a
		// zero row is its bias.
		c := testConfig(Pool, MLP, false)
		m, _ := NewModel(c)
		final := m.p.mlpNorms[c.NumLayers]
		for i := range final.Bias {
			final.Bias[i] = float32(i) - 3
		}
		out := make([]float32, c.ProcessSize*c.Dim)
		r := rand.New(rand.NewPCG(9, 9))
		NewMachine(m).Step(NewMemory(c), randFloats(r, c.InputTokens*c.Dim, 1), out)
		for i, v := range out {
			if want := float32(i%c.Dim) - 3; v != want {
				t.Fatalf("output %d = %g, want %g", i, v, want)
			}
		}
	})
}

func TestMemoryState(t *testing.T) {
	c := testConfig(TokenLearner, Transformer, false)
	m := newTestModel(t, c, 5)
	mc := NewMachine(m)
	r := rand.New(rand.NewPCG(4, 4))
	inputs := randFloats(r, 30*c.InputTokens*c.Dim, 1)
	step := func(mem *Memory, i int) []float32 {
		out := make([]float32, c.ProcessSize*c.Dim)
		mc.Step(mem, inputs[i*c.InputTokens*c.Dim:(i+1)*c.InputTokens*c.Dim], out)
		return out
	}
	mem := NewMemory(c)
	if mem.Hash() != HashFloats(make([]float32, c.MemorySize*c.Dim)) {
		t.Error("new memory is not zero")
	}
	for i := 0; i < 10; i++ {
		step(mem, i)
	}
	snap := mem.Clone()
	var later [][]float32
	for i := 10; i < 20; i++ {
		later = append(later, step(mem, i))
	}
	after := mem.Hash()
	if mem.Steps != 20 {
		t.Errorf("Steps = %d, want 20", mem.Steps)
	}
	mem.CopyFrom(snap)
	if mem.Steps != 10 || mem.Hash() != snap.Hash() {
		t.Fatal("restore did not bring the snapshot back")
	}
	for i := 10; i < 20; i++ {
		if out := step(mem, i); !slices.Equal(out, later[i-10]) {
			t.Fatalf("step %d after restore differs", i)
		}
	}
	if mem.Hash() != after {
		t.Error("replay from a snapshot ended in a different memory")
	}
	mem.Reset()
	if mem.Steps != 0 || mem.Hash() != HashFloats(make([]float32, len(mem.Tokens))) {
		t.Error("Reset did not zero the memory")
	}
}

func TestHashIsFNV1aOfLittleEndianBytes(t *testing.T) {
	x := []float32{0, 1, -2.5, float32(math.Inf(1)), float32(math.Copysign(0, -1))}
	h := fnv.New64a()
	for _, v := range x {
		h.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)))
	}
	if got, want := HashFloats(x), h.Sum64(); got != want {
		t.Errorf("HashFloats = %x, hash/fnv gives %x", got, want)
	}
	if HashFloats([]float32{0}) == HashFloats([]float32{float32(math.Copysign(0, -1))}) {
		t.Error("0 and -0 hash alike")
	}
}

func TestNoMemoryIgnoresPastSteps(t *testing.T) {
	c := testConfig(TokenLearner, Transformer, false)
	c.NoMemory = true
	m := newTestModel(t, c, 6)
	mc := NewMachine(m)
	r := rand.New(rand.NewPCG(6, 6))
	input := randFloats(r, c.InputTokens*c.Dim, 1)
	fresh, used := NewMemory(c), NewMemory(c)
	copy(used.Tokens, randFloats(r, len(used.Tokens), 3))
	a, b := make([]float32, c.ProcessSize*c.Dim), make([]float32, c.ProcessSize*c.Dim)
	mc.Step(fresh, input, a)
	mc.Step(used, input, b)
	if !slices.Equal(a, b) || fresh.Hash() != used.Hash() {
		t.Error("with no memory, the step depends on the memory it was given")
	}
	// The same model with memory does depend on it.
	mc.NoMemory = false
	copy(used.Tokens, randFloats(r, len(used.Tokens), 3))
	fresh.Reset()
	mc.Step(fresh, input, a)
	mc.Step(used, input, b)
	if slices.Equal(a, b) {
		t.Error("with memory, the step ignores the memory")
	}
}

func TestStepIsDeterministicAndAllocationFree(t *testing.T) {
	for _, par := range []int{1, 2} {
		nn.SetParallelism(par)
		for name, c := range allConfigs() {
			m := newTestModel(t, c, 7)
			r := rand.New(rand.NewPCG(7, 7))
			input := randFloats(r, c.InputTokens*c.Dim, 1)
			run := func() (uint64, []float32) {
				mc, mem := NewMachine(m), NewMemory(c)
				out := make([]float32, c.ProcessSize*c.Dim)
				for i := 0; i < 5; i++ {
					mc.Step(mem, input, out)
				}
				return mem.Hash(), out
			}
			h1, o1 := run()
			h2, o2 := run()
			if h1 != h2 || !slices.Equal(o1, o2) {
				t.Errorf("parallelism %d, %s: two runs differ", par, name)
			}
			mc, mem := NewMachine(m), NewMemory(c)
			out := make([]float32, c.ProcessSize*c.Dim)
			if a := testing.AllocsPerRun(10, func() { mc.Step(mem, input, out) }); a != 0 {
				t.Errorf("parallelism %d, %s: Step allocates %.1f times", par, name, a)
			}
		}
	}
	nn.SetParallelism(1)
}

// TestParallelismDoesNotChangeResults: a team of two gives the bits of one
// goroutine where the BLAS computes a product's rows the same in parts
// (nn.RowSplitExact); elsewhere the same values to rounding.
func TestParallelismDoesNotChangeResults(t *testing.T) {
	c, _ := Preset("robot")
	m := newTestModel(t, c, 8)
	r := rand.New(rand.NewPCG(8, 8))
	input := randFloats(r, c.InputTokens*c.Dim, 1)
	var results [][]float32 // memory then output, per parallelism
	for _, par := range []int{1, 2} {
		nn.SetParallelism(par)
		mc, mem := NewMachine(m), NewMemory(c)
		out := make([]float32, c.ProcessSize*c.Dim)
		for i := 0; i < 3; i++ {
			mc.Step(mem, input, out)
		}
		results = append(results, append(slices.Clone(mem.Tokens), out...))
	}
	nn.SetParallelism(1)
	one, two := results[0], results[1]
	if nn.RowSplitExact() {
		if !slices.Equal(one, two) {
			t.Error("one and two goroutines give different bits")
		}
		return
	}
	t.Log("this BLAS computes a product's rows differently in parts: comparing to rounding")
	worst := 0.0
	for i := range one {
		worst = max(worst, math.Abs(float64(one[i]-two[i]))/max(1, math.Abs(float64(one[i]))))
	}
	if worst > 1e-4 {
		t.Errorf("one and two goroutines differ by %g (relative)", worst)
	}
}

func TestStepPanicsOnWrongSizes(t *testing.T) {
	c := testConfig(TokenLearner, MLP, false)
	mc := NewMachine(newTestModel(t, c, 1))
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "ttm: Step") {
			t.Errorf("recovered %v", r)
		}
	}()
	mc.Step(NewMemory(c), make([]float32, 3), make([]float32, c.ProcessSize*c.Dim))
}
