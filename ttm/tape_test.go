package ttm

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ttmrobot/ttm/internal/nn"
)

func TestTapeForwardMatchesMachine(t *testing.T) {
	// testConfig has d = 32, so the Machine takes its packed, fused and
	// parallel paths where it can; the Tape never does.
	configs := allConfigs()
	configs["small"], _ = Preset("small")
	noMem := testConfig(AddErase, Mixer, true)
	noMem.NoMemory = true
	configs["TL-AddErase/mixer/pos/no-memory"] = noMem
	const steps = 4
	for _, par := range []int{1, 2} {
		nn.SetParallelism(par)
		for name, c := range configs {
			m := newTestModel(t, c, 21)
			c = m.Config
			r := rand.New(rand.NewPCG(21, 22))
			mc, tape := NewMachine(m), NewTape(m, steps)
			memA, memB := NewMemory(c), NewMemory(c)
			start := randFloats(r, c.MemorySize*c.Dim, 1)
			copy(memA.Tokens, start)
			copy(memB.Tokens, start)
			outA, outB := make([]float32, c.ProcessSize*c.Dim), make([]float32, c.ProcessSize*c.Dim)
			for s := 0; s < steps; s++ {
				in := randFloats(r, c.InputTokens*c.Dim, 1)
				mc.Step(memA, in, outA)
				tape.Forward(memB, in, outB)
				if e := relErr(outB, outA); e > 1e-5 {
					t.Errorf("parallelism %d, %s, step %d: output differs from Machine.Step by %.2e", par, name, s, e)
				}
				if e := relErr(memB.Tokens, memA.Tokens); e > 1e-5 {
					t.Errorf("parallelism %d, %s, step %d: memory differs from Machine.Step by %.2e", par, name, s, e)
				}
			}
			if memB.Steps != steps || tape.Len() != steps {
				t.Errorf("%s: memory counts %d steps, tape %d; want %d", name, memB.Steps, tape.Len(), steps)
			}
		}
	}
	nn.SetParallelism(1)

	// The robot preset (d = 512): every product of the Machine is packed.
	c, _ := Preset("robot")
	m := newTestModel(t, c, 21)
	r := rand.New(rand.NewPCG(21, 23))
	mc, tape := NewMachine(m), NewTape(m, 2)
	memA, memB := NewMemory(c), NewMemory(c)
	outA, outB := make([]float32, c.ProcessSize*c.Dim), make([]float32, c.ProcessSize*c.Dim)
	for s := 0; s < 2; s++ {
		in := randFloats(r, c.InputTokens*c.Dim, 1)
		mc.Step(memA, in, outA)
		tape.Forward(memB, in, outB)
		if e := max(relErr(outB, outA), relErr(memB.Tokens, memA.Tokens)); e > 1e-5 {
			t.Errorf("robot, step %d: output or memory differs from Machine.Step by %.2e", s, e)
		}
	}
}

func TestTapeNoMemory(t *testing.T) {
	for _, c := range []Config{testConfig(TokenLearner, Transformer, true), testConfig(AddErase, MLP, false)} {
		c.NoMemory = true
		m := newTestModel(t, c, 23)
		c = m.Config
		r := rand.New(rand.NewPCG(23, 24))
		mc, tape := NewMachine(m), NewTape(m, 2)
		if !mc.NoMemory || !tape.NoMemory {
			t.Fatal("NoMemory does not start as Config.NoMemory")
		}
		memA, memB := NewMemory(c), NewMemory(c)
		outA, outB := make([]float32, c.ProcessSize*c.Dim), make([]float32, c.ProcessSize*c.Dim)
		for s := 0; s < 2; s++ {
			junk := randFloats(r, c.MemorySize*c.Dim, 3) // must be ignored
			copy(memA.Tokens, junk)
			copy(memB.Tokens, junk)
			in := randFloats(r, c.InputTokens*c.Dim, 1)
			mc.Step(memA, in, outA)
			tape.Forward(memB, in, outB)
			if e := relErr(outB, outA); e > 1e-5 {
				t.Errorf("%s step %d: output differs from the Machine's with NoMemory by %.2e", c.MemoryMode, s, e)
			}
			if e := relErr(memB.Tokens, memA.Tokens); e > 1e-5 {
				t.Errorf("%s step %d: memory differs from the Machine's with NoMemory by %.2e", c.MemoryMode, s, e)
			}
		}
		grads := make([]float32, m.NumParams())
		dMem, dIn := randFloats(r, c.MemorySize*c.Dim, 1), make([]float32, c.InputTokens*c.Dim)
		for tape.Len() > 0 {
			tape.Backward(randFloats(r, c.ProcessSize*c.Dim, 1), dMem, dIn, grads)
			for i, v := range dMem {
				if v != 0 {
					t.Fatalf("%s: dL/d(memory before) [%d] = %g, want 0 with NoMemory", c.MemoryMode, i, v)
				}
			}
			if slices.Equal(dIn, make([]float32, len(dIn))) {
				t.Errorf("%s: dL/dI all zero", c.MemoryMode)
			}
		}
	}
}

func TestTapeNoMemoryIsRecordedPerStep(t *testing.T) {
	// A step recorded with memory keeps passing gradient to the memory
	// before it even if NoMemory is switched on before Backward.
	c := testConfig(TokenLearner, MLP, false)
	m := newTestModel(t, c, 25)
	r := rand.New(rand.NewPCG(25, 26))
	tape := NewTape(m, 1)
	mem := NewMemory(c)
	copy(mem.Tokens, randFloats(r, len(mem.Tokens), 1))
	tape.Forward(mem, randFloats(r, c.InputTokens*c.Dim, 1), make([]float32, c.ProcessSize*c.Dim))
	tape.NoMemory = true
	dMem := randFloats(r, len(mem.Tokens), 1)
	tape.Backward(randFloats(r, c.ProcessSize*c.Dim, 1), dMem, make([]float32, c.InputTokens*c.Dim), make([]float32, m.NumParams()))
	if slices.Equal(dMem, make([]float32, len(dMem))) {
		t.Error("dL/dM is zero for a step that ran with memory")
	}
}

// tapeWindow runs a window of forward steps and the backward passes over
// them on its own tape and returns the parameter gradients and dL/dM_0.
func tapeWindow(tape *Tape, c Config, start, inputs, gOut, gMem []float32) (grads, dMem []float32) {
	m, n, r, d := c.MemorySize, c.InputTokens, c.ProcessSize, c.Dim
	steps := len(inputs) / (n * d)
	mem := NewMemory(c)
	copy(mem.Tokens, start)
	out := make([]float32, r*d)
	tape.Reset()
	for s := 0; s < steps; s++ {
		tape.Forward(mem, inputs[s*n*d:(s+1)*n*d], out)
	}
	grads = make([]float32, tape.model.NumParams())
	dMem = append(make([]float32, 0, m*d), gMem...)
	dIn := make([]float32, n*d)
	for s := steps - 1; s >= 0; s-- {
		tape.Backward(gOut[s*r*d:(s+1)*r*d], dMem, dIn, grads)
	}
	return grads, dMem
}

func TestTapesRunConcurrently(t *testing.T) {
	// Data-parallel training: tapes on one model in separate goroutines
	// must give what each gives alone (go test -race checks the sharing).
	c := testConfig(QueryAttention, Transformer, true)
	m := newTestModel(t, c, 27)
	c = m.Config
	const workers, steps = 3, 3
	type job struct{ start, inputs, gOut, gMem, grads, dMem []float32 }
	jobs := make([]job, workers)
	r := rand.New(rand.NewPCG(27, 28))
	for i := range jobs {
		j := &jobs[i]
		j.start, j.inputs = randFloats(r, c.MemorySize*c.Dim, 1), randFloats(r, steps*c.InputTokens*c.Dim, 1)
		j.gOut, j.gMem = randFloats(r, steps*c.ProcessSize*c.Dim, 1), randFloats(r, c.MemorySize*c.Dim, 1)
		j.grads, j.dMem = tapeWindow(NewTape(m, steps), c, j.start, j.inputs, j.gOut, j.gMem)
	}
	var wg sync.WaitGroup
	results := make([][2][]float32, workers)
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := &jobs[i]
			tape := NewTape(m, steps)
			for rep := 0; rep < 3; rep++ {
				g, d := tapeWindow(tape, c, j.start, j.inputs, j.gOut, j.gMem)
				results[i] = [2][]float32{g, d}
			}
		}()
	}
	wg.Wait()
	for i, j := range jobs {
		if e := relErr(results[i][0], j.grads); e > 1e-6 {
			t.Errorf("worker %d: parameter gradients differ from a lone run by %.2e", i, e)
		}
		if e := relErr(results[i][1], j.dMem); e > 1e-6 {
			t.Errorf("worker %d: dL/dM_0 differs from a lone run by %.2e", i, e)
		}
	}
}

func TestTapeAccumulatesGradients(t *testing.T) {
	// Backward adds to grads: two windows into one slice give the sum of
	// the two windows' gradients.
	c := testConfig(TokenLearner, Mixer, false)
	m := newTestModel(t, c, 29)
	c = m.Config
	r := rand.New(rand.NewPCG(29, 30))
	tape := NewTape(m, 2)
	start := randFloats(r, c.MemorySize*c.Dim, 1)
	in1, in2 := randFloats(r, 2*c.InputTokens*c.Dim, 1), randFloats(r, 2*c.InputTokens*c.Dim, 1)
	gOut, gMem := randFloats(r, 2*c.ProcessSize*c.Dim, 1), randFloats(r, c.MemorySize*c.Dim, 1)
	g1, _ := tapeWindow(tape, c, start, in1, gOut, gMem)
	g2, _ := tapeWindow(tape, c, start, in2, gOut, gMem)

	sum := make([]float32, m.NumParams())
	for _, in := range [][]float32{in1, in2} {
		mem := NewMemory(c)
		copy(mem.Tokens, start)
		tape.Reset()
		out := make([]float32, c.ProcessSize*c.Dim)
		for s := 0; s < 2; s++ {
			tape.Forward(mem, in[s*c.InputTokens*c.Dim:(s+1)*c.InputTokens*c.Dim], out)
		}
		dMem, dIn := slices.Clone(gMem), make([]float32, c.InputTokens*c.Dim)
		for s := 1; s >= 0; s-- {
			tape.Backward(gOut[s*c.ProcessSize*c.Dim:(s+1)*c.ProcessSize*c.Dim], dMem, dIn, sum)
		}
	}
	want := slices.Clone(g1)
	nn.Add(want, g2)
	if e := relErr(sum, want); e > 1e-6 {
		t.Errorf("accumulated gradients differ from the sum by %.2e", e)
	}
}

func TestTapeBackwardDoesNotModifyDOutput(t *testing.T) {
	c := testConfig(AddErase, Transformer, true)
	m := newTestModel(t, c, 31)
	c = m.Config
	r := rand.New(rand.NewPCG(31, 32))
	tape := NewTape(m, 1)
	tape.Forward(NewMemory(c), randFloats(r, c.InputTokens*c.Dim, 1), make([]float32, c.ProcessSize*c.Dim))
	dOut := randFloats(r, c.ProcessSize*c.Dim, 1)
	keep := slices.Clone(dOut)
	tape.Backward(dOut, randFloats(r, c.MemorySize*c.Dim, 1), make([]float32, c.InputTokens*c.Dim), make([]float32, m.NumParams()))
	if !slices.Equal(dOut, keep) {
		t.Error("Backward changed dOutput")
	}
}

func TestTapeStepsAllocateNothing(t *testing.T) {
	for name, c := range allConfigs() {
		m := newTestModel(t, c, 33)
		c = m.Config
		r := rand.New(rand.NewPCG(33, 34))
		tape := NewTape(m, 2)
		mem := NewMemory(c)
		in, out := randFloats(r, c.InputTokens*c.Dim, 1), make([]float32, c.ProcessSize*c.Dim)
		dOut, dMem, dIn := randFloats(r, c.ProcessSize*c.Dim, 1), make([]float32, c.MemorySize*c.Dim), make([]float32, c.InputTokens*c.Dim)
		grads := make([]float32, m.NumParams())
		allocs := testing.AllocsPerRun(5, func() {
			tape.Reset()
			tape.Forward(mem, in, out)
			tape.Forward(mem, in, out)
			clear(dMem)
			tape.Backward(dOut, dMem, dIn, grads)
			tape.Backward(dOut, dMem, dIn, grads)
		})
		if allocs != 0 {
			t.Errorf("%s: two steps forward and back allocate %.1f times", name, allocs)
		}
	}
}

func TestTapeMisuse(t *testing.T) {
	c := testConfig(Pool, MLP, false)
	m := newTestModel(t, c, 35)
	c = m.Config
	mem := NewMemory(c)
	in, out := make([]float32, c.InputTokens*c.Dim), make([]float32, c.ProcessSize*c.Dim)
	dMem, dIn, grads := make([]float32, c.MemorySize*c.Dim), make([]float32, c.InputTokens*c.Dim), make([]float32, m.NumParams())
	for _, tc := range []struct {
		name string
		run  func(*Tape)
		want string
	}{
		{"past capacity", func(tp *Tape) { tp.Forward(mem, in, out); tp.Forward(mem, in, out) }, "holds 1 steps and is full"},
		{"empty", func(tp *Tape) { tp.Backward(out, dMem, dIn, grads) }, "no recorded step"},
		{"popped twice", func(tp *Tape) {
			tp.Forward(mem, in, out)
			tp.Backward(out, dMem, dIn, grads)
			tp.Backward(out, dMem, dIn, grads)
		}, "no recorded step"},
		{"input size", func(tp *Tape) { tp.Forward(mem, in[1:], out) }, "Tape.Forward: memory"},
		{"grads size", func(tp *Tape) { tp.Forward(mem, in, out); tp.Backward(out, dMem, dIn, grads[1:]) }, "Tape.Backward: dOutput"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, "ttm: Tape") || !strings.Contains(msg, tc.want) {
					t.Errorf("panic %q, want one containing %q", msg, tc.want)
				}
			}()
			tc.run(NewTape(m, 1))
		})
	}
	tape := NewTape(m, 1)
	tape.Forward(mem, in, out)
	tape.Reset()
	if tape.Len() != 0 {
		t.Errorf("Len %d after Reset", tape.Len())
	}
	tape.Forward(mem, in, out) // Reset made room again
}

func TestParamsChangedRepacks(t *testing.T) {
	// d = 32: the Machine packs its weights. After an update and
	// ParamsChanged, a new Machine must see the new weights (the Tape reads
	// Params directly and is the reference).
	c := testConfig(TokenLearner, Transformer, false)
	m := newTestModel(t, c, 37)
	c = m.Config
	r := rand.New(rand.NewPCG(37, 38))
	in := randFloats(r, c.InputTokens*c.Dim, 1)
	run := func(step func(*Memory, []float32, []float32)) []float32 {
		out := make([]float32, c.ProcessSize*c.Dim)
		step(NewMemory(c), in, out)
		return out
	}
	NewMachine(m) // packs
	for i := range m.Params {
		m.Params[i] *= 1.1
	}
	m.ParamsChanged()
	want := run(NewTape(m, 1).Forward)
	if e := relErr(run(NewMachine(m).Step), want); e > 1e-5 {
		t.Errorf("after ParamsChanged the Machine differs from the new weights by %.2e", e)
	}
}
