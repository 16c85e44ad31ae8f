package ttm

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// tinyConfig is small enough for finite differences over every tensor:
// d 12, m 5, n 3, r 3, 2 heads everywhere, 3 write heads. No width is a
// multiple of nn.PanelWidth, and the tests drop packed copies anyway, so the
// Machine's forward runs the plain kernels.
func tinyConfig(mode MemoryMode, unit ProcessingUnit, pos bool) Config {
	c := Config{
		MemorySize: 5, ProcessSize: 3, InputTokens: 3, Dim: 12, NumLayers: 2, NumHeads: 2, MLPDim: 10,
		SummariserHidden: 6, SummariserHeads: 2, MixerTokenDim: 5, WriteHeads: 3,
		MemoryMode: mode, ProcessingUnit: unit, UsePositionalEmbedding: pos,
	}
	return c.WithDefaults()
}

// gradFixture is a randomised tiny model with a Machine (for numeric
// gradients) and a Tape (for analytic ones) on it, and a gradient slice the
// Tape's parts are bound to.
type gradFixture struct {
	m     *Model
	mc    *Machine
	tape  *Tape
	grads []float32
	r     *rand.Rand
}

func newGradFixture(t *testing.T, c Config, steps int, seed uint64) *gradFixture {
	m := newTestModel(t, c, seed)
	f := &gradFixture{m: m, mc: NewMachine(m), tape: NewTape(m, steps), r: rand.New(rand.NewPCG(seed, 17))}
	m.ParamsChanged() // no packed copies: the Machine must see every perturbation of Params
	f.grads = make([]float32, m.NumParams())
	f.tape.gradTable.Bind(f.grads)
	return f
}

func TestTapeSummariserGradients(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   MemoryMode
		prefix string // parameters of the summariser; "" for none
		part   string // read, write or add-erase
	}{
		{"TL/read", TokenLearner, "TokenLearnerModuleV11_0/", "read"},
		{"TL/write", TokenLearner, "TokenLearnerModuleV11_1/", "write"},
		{"TL-MHA/read", QueryAttention, "TokenLearnerMHA_0/", "read"},
		{"TL-MHA/write", QueryAttention, "TokenLearnerMHA_1/", "write"},
		{"pool/read", Pool, "", "read"},
		{"pool/write", Pool, "", "write"},
		{"TL-AddErase/write", AddErase, "TokenAddEraseWrite_0/", "add-erase"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGradFixture(t, tinyConfig(tc.mode, MLP, false), 1, 11)
			c := f.m.Config
			m, n, r, d := c.MemorySize, c.InputTokens, c.ProcessSize, c.Dim
			rows, k := m+n, r
			if tc.part != "read" {
				rows, k = m+n+r, m
			}
			in := randFloats(f.r, rows*d, 1)
			out := make([]float32, k*d)
			g := randFloats(f.r, k*d, 1)
			dIn := make([]float32, rows*d)

			var forward func()
			switch tc.part {
			case "read":
				forward = func() { f.mc.read.summarise(out, in) }
				f.tape.read.forward(0, out, in)
				f.tape.read.backward(0, dIn, g, in)
			case "write":
				forward = func() { f.mc.write.summarise(out, in) }
				f.tape.write.forward(0, out, in)
				f.tape.write.backward(0, dIn, g, in)
			case "add-erase":
				forward = func() { f.mc.addErase.write(out, in) }
				f.tape.addErase.forward(0, out, in)
				f.tape.addErase.backward(0, dIn, g, in)
			}
			tapeOut := append([]float32(nil), out...)
			forward()
			if e := relErr(tapeOut, out); e > 1e-5 {
				t.Errorf("tape forward differs from the machine's by %.2e", e)
			}

			vars := []fdVar{{Name: "input", X: in, Grad: dIn}}
			if tc.prefix != "" {
				ps := paramVars(f.m, f.grads, tc.prefix)
				if len(ps) == 0 {
					t.Fatalf("no parameter named %s*", tc.prefix)
				}
				vars = append(vars, ps...)
			}
			requireFD(t, f.r, vars, 6, func() float64 { forward(); return dot(out, g) })
		})
	}
}

func TestTapeProcessorGradients(t *testing.T) {
	for _, unit := range []ProcessingUnit{Transformer, Mixer, MLP} {
		t.Run(string(unit), func(t *testing.T) {
			// Pool memory has no parameters: every tensor is the unit's.
			f := newGradFixture(t, tinyConfig(Pool, unit, false), 1, 12)
			c := f.m.Config
			r, d := c.ProcessSize, c.Dim
			in, out, g := randFloats(f.r, r*d, 1), make([]float32, r*d), randFloats(f.r, r*d, 1)
			dIn := make([]float32, r*d)
			f.tape.proc.forward(0, out, in)
			f.tape.proc.backward(0, dIn, g)
			tapeOut := append([]float32(nil), out...)
			forward := func() { f.mc.proc.process(out, in) }
			forward()
			if e := relErr(tapeOut, out); e > 1e-5 {
				t.Errorf("tape forward differs from the machine's by %.2e", e)
			}
			vars := append([]fdVar{{Name: "input", X: in, Grad: dIn}}, paramVars(f.m, f.grads, "")...)
			requireFD(t, f.r, vars, 4, func() float64 { forward(); return dot(out, g) })
		})
	}
}

// noEffect reports whether a parameter of c takes no part in the result
// of a step, so that its gradient must vanish:
//   - P_write in TL-AddErase mode, which the write never reads;
//   - biases added to every row that a softmax over the rows then sees:
//     TokenLearner's logits bias, the add/erase selection bias, and every
//     attention key bias (q·(k_j + b) = q·k_j + q·b, the same for all j);
//   - the mixer's token-mixing output bias, which shifts each token's
//     channels by one constant, and every reader of the residual stream is
//     a LayerNorm, which removes it.
//
// Apart from P_write, float32 rounding leaves such gradients tiny but not
// always zero.
func noEffect(c Config, name string) bool {
	switch {
	case c.MemoryMode == AddErase && name == "write_pos_embed/pos_embedding":
		return true
	case strings.HasSuffix(name, "/token_masking/Dense_1/bias"),
		name == "TokenAddEraseWrite_0/MlpBlock_0/Dense_1/bias",
		strings.HasSuffix(name, "/key/bias"),
		strings.HasPrefix(name, "MixerBlock_") && strings.HasSuffix(name, "/token_mixing/Dense_1/bias"):
		return true
	}
	return false
}

// checkEffects asserts that the gradients of the parameters that take no
// part in a step vanish (to rounding: below 1e-5 of the largest gradient)
// and that every other parameter tensor receives some gradient.
func checkEffects(t *testing.T, m *Model, grads []float32) {
	t.Helper()
	var top float64
	for _, g := range grads {
		top = math.Max(top, math.Abs(float64(g)))
	}
	for _, s := range m.Specs {
		var big float64
		for _, g := range grads[s.Offset : s.Offset+s.Size] {
			big = math.Max(big, math.Abs(float64(g)))
		}
		switch none := noEffect(m.Config, s.Name); {
		case none && big > 1e-5*top:
			t.Errorf("%s takes no part in the step but has gradients up to %.3g (largest of all %.3g)", s.Name, big, top)
		case !none && big == 0:
			t.Errorf("%s: gradient all zero", s.Name)
		}
	}
}

func TestTapeStepGradients(t *testing.T) {
	for _, mode := range []MemoryMode{TokenLearner, QueryAttention, AddErase, Pool} {
		for _, unit := range []ProcessingUnit{Transformer, Mixer, MLP} {
			for _, pos := range []bool{false, true} {
				c := tinyConfig(mode, unit, pos)
				name := string(mode) + "/" + string(unit)
				if pos {
					name += "/pos"
				}
				t.Run(name, func(t *testing.T) { checkStepGradients(t, c) })
			}
		}
	}
}

// checkStepGradients checks dL/dparams, dL/dI and dL/dM for one step with
// L = Σ O·gO + Σ M_next·gM.
func checkStepGradients(t *testing.T, c Config) {
	f := newGradFixture(t, c, 1, 13)
	c = f.m.Config
	m, n, r, d := c.MemorySize, c.InputTokens, c.ProcessSize, c.Dim
	mem0, input := randFloats(f.r, m*d, 1), randFloats(f.r, n*d, 1)
	gO, gM := randFloats(f.r, r*d, 1), randFloats(f.r, m*d, 1)

	mem := NewMemory(c)
	copy(mem.Tokens, mem0)
	out := make([]float32, r*d)
	f.tape.Forward(mem, input, out)
	dMem, dIn := append([]float32(nil), gM...), make([]float32, n*d)
	f.tape.Backward(gO, dMem, dIn, f.grads)
	if f.tape.Len() != 0 {
		t.Fatalf("Len %d after popping the only step", f.tape.Len())
	}

	checkEffects(t, f.m, f.grads)

	loss := func() float64 {
		mem.Reset()
		copy(mem.Tokens, mem0)
		f.mc.Step(mem, input, out)
		return dot(out, gO) + dot(mem.Tokens, gM)
	}
	vars := append([]fdVar{{Name: "input", X: input, Grad: dIn}, {Name: "memory", X: mem0, Grad: dMem}}, paramVars(f.m, f.grads, "")...)
	requireFD(t, f.r, vars, 3, loss)
}

func TestTapeBPTTWindow(t *testing.T) {
	noMem := tinyConfig(TokenLearner, Transformer, true)
	noMem.NoMemory = true
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"TL/transformer/pos", tinyConfig(TokenLearner, Transformer, true)},
		{"TL-MHA/mixer", tinyConfig(QueryAttention, Mixer, false)},
		{"TL-AddErase/mlp/pos", tinyConfig(AddErase, MLP, true)},
		{"pool/transformer", tinyConfig(Pool, Transformer, false)},
		{"TL/mlp/no-memory", noMem},
	} {
		t.Run(tc.name, func(t *testing.T) { checkWindowGradients(t, tc.cfg, 3) })
	}
}

// checkWindowGradients unrolls `steps` steps from a random memory with
// L = Σ_t O_t·g_t + M_T·gM and checks dL/dparams, dL/dI_t and dL/dM_0
// against finite differences of the whole window.
func checkWindowGradients(t *testing.T, c Config, steps int) {
	f := newGradFixture(t, c, steps, 14)
	c = f.m.Config
	m, n, r, d := c.MemorySize, c.InputTokens, c.ProcessSize, c.Dim
	mem0 := randFloats(f.r, m*d, 1)
	inputs := randFloats(f.r, steps*n*d, 1)
	gOut, gM := randFloats(f.r, steps*r*d, 1), randFloats(f.r, m*d, 1)

	mem := NewMemory(c)
	copy(mem.Tokens, mem0)
	outs := make([]float32, steps*r*d)
	for s := 0; s < steps; s++ {
		f.tape.Forward(mem, inputs[s*n*d:(s+1)*n*d], outs[s*r*d:(s+1)*r*d])
	}
	if f.tape.Len() != steps {
		t.Fatalf("Len %d after %d steps", f.tape.Len(), steps)
	}
	dMem, dInputs := append([]float32(nil), gM...), make([]float32, steps*n*d)
	for s := steps - 1; s >= 0; s-- {
		f.tape.Backward(gOut[s*r*d:(s+1)*r*d], dMem, dInputs[s*n*d:(s+1)*n*d], f.grads)
	}
	checkEffects(t, f.m, f.grads)
	if c.NoMemory {
		for i, v := range dMem {
			if v != 0 {
				t.Fatalf("no memory: dL/dM_0[%d] = %g, want 0", i, v)
			}
		}
	}

	loss := func() float64 {
		mem.Reset()
		copy(mem.Tokens, mem0)
		var l float64
		for s := 0; s < steps; s++ {
			out := outs[s*r*d : (s+1)*r*d]
			f.mc.Step(mem, inputs[s*n*d:(s+1)*n*d], out)
			l += dot(out, gOut[s*r*d:(s+1)*r*d])
		}
		return l + dot(mem.Tokens, gM)
	}
	vars := []fdVar{{Name: "initial memory", X: mem0, Grad: dMem}}
	for s := 0; s < steps; s++ {
		vars = append(vars, fdVar{Name: "input " + string(rune('0'+s)), X: inputs[s*n*d : (s+1)*n*d], Grad: dInputs[s*n*d : (s+1)*n*d]})
	}
	vars = append(vars, paramVars(f.m, f.grads, "")...)
	requireFD(t, f.r, vars, 3, loss)
}
