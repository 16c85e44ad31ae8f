package ttm

import (
	"fmt"

	"github.com/ttmrobot/ttm/internal/layer"
	"github.com/ttmrobot/ttm/internal/nn"
)

// Backpropagation through time. Letters as in Machine: m memory tokens,
// n input tokens, r read/output tokens, d channels.

// Tape records the activations of up to `steps` consecutive TTM steps of one
// model, so that backpropagation through time can run over them: Forward
// steps onwards, Backward pops the steps again in reverse order.
//
// A Tape is single-threaded: it uses the plain nn kernels on the model's
// unpacked weights and neither nn.ParallelFor nor the packed copies, so
// several Tapes on one *Model may run in separate goroutines at the same time
// (data-parallel training) while the Model's Params stay read-only. After an
// optimizer changes Params, call Model.ParamsChanged before the Machines on
// that model step again.
type Tape struct {
	// NoMemory runs the paper's ablation: the memory is zeroed before every
	// step and no gradient flows to the memory of earlier steps. It starts
	// as Config.NoMemory and is recorded with each step.
	NoMemory bool

	model *Model
	cfg   Config
	steps int // capacity
	len   int // steps recorded and not yet popped

	rec []tapeStep

	read     tapeSummariser
	write    tapeSummariser // nil for TL-AddErase
	addErase *addEraseTape  // only for TL-AddErase
	proc     tapeProcessor

	// grad has the layout of Model.p as views into the grads slice given
	// to Backward; gradTable rebinds it.
	grad      params
	gradTable layer.Table

	z    []float32 // (r, d): read tokens of the step in progress
	next []float32 // (m, d): the memory being written

	dCat  []float32 // (m+n+r, d): dL/d[M ; I ; O]
	dRead []float32 // (m+n, d): dL/d(read input)
	dO    []float32 // (r, d): dL/dO, from the output and the write
	dZ    []float32 // (r, d): dL/dZ
}

// tapeStep is what one step keeps besides the activations its parts keep.
type tapeStep struct {
	cat     []float32 // (m+n+r, d): [M ; I ; O], raw
	readIn  []float32 // (m+n, d): [M ; I] + P_read; only with positional embeddings
	writeIn []float32 // (m+n+r, d): [M ; I ; O] + P_write; only with positional embeddings
	noMem   bool      // memory was zeroed before the step
}

// NewTape allocates room for `steps` steps of m. Forward and Backward
// allocate nothing afterwards.
func NewTape(m *Model, steps int) *Tape {
	if steps <= 0 {
		panic(fmt.Sprintf("ttm: NewTape: %d steps, want > 0", steps))
	}
	c := m.Config
	mm, n, r, d := c.MemorySize, c.InputTokens, c.ProcessSize, c.Dim
	t := &Tape{
		NoMemory: c.NoMemory, model: m, cfg: c, steps: steps,
		rec: make([]tapeStep, steps),
		z:   make([]float32, r*d), next: make([]float32, mm*d),
		dCat: make([]float32, (mm+n+r)*d), dRead: make([]float32, (mm+n)*d),
		dO: make([]float32, r*d), dZ: make([]float32, r*d),
	}
	for i := range t.rec {
		s := &t.rec[i]
		s.cat = make([]float32, (mm+n+r)*d)
		if c.UsePositionalEmbedding {
			s.readIn = make([]float32, (mm+n)*d)
			s.writeIn = make([]float32, (mm+n+r)*d)
		}
	}
	t.grad.register(&t.gradTable, c)

	p, g := &m.p, &t.grad
	switch c.MemoryMode {
	case TokenLearner:
		t.read = newTLTape(&p.readTL, &g.readTL, mm+n, r, c, steps)
		t.write = newTLTape(&p.writeTL, &g.writeTL, mm+n+r, mm, c, steps)
	case AddErase:
		t.read = newTLTape(&p.readTL, &g.readTL, mm+n, r, c, steps)
		t.addErase = newAddEraseTape(&p.addErase, &g.addErase, c, steps)
	case QueryAttention:
		t.read = newQueryAttentionTape(&p.readMHA, &g.readMHA, mm+n, r, c, steps)
		t.write = newQueryAttentionTape(&p.writeMHA, &g.writeMHA, mm+n+r, mm, c, steps)
	case Pool:
		t.read = &poolTape{poolSummariser{n: mm + n, k: r, d: d}}
		t.write = &poolTape{poolSummariser{n: mm + n + r, k: mm, d: d}}
	default:
		panic(fmt.Sprintf("ttm: memory mode %q", c.MemoryMode)) // Validate rejects it
	}
	switch c.ProcessingUnit {
	case Transformer:
		t.proc = newTransformerTape(p, g, c, steps)
	case Mixer:
		t.proc = newMixerTape(p, g, c, steps)
	case MLP:
		t.proc = newMLPTape(p, g, c, steps)
	default:
		panic(fmt.Sprintf("ttm: processing unit %q", c.ProcessingUnit))
	}
	return t
}

// Reset starts a new window: the next Forward records step 0.
func (t *Tape) Reset() { t.len = 0 }

// Len is the number of steps recorded since Reset and not yet popped by
// Backward.
func (t *Tape) Len() int { return t.len }

// Forward runs one step exactly like Machine.Step (same maths; NoMemory
// zeroes the memory before the step), updating mem in place and writing the
// output (r, d), and records what Backward needs. input is (n, d).
// It panics past the Tape's capacity and on wrong sizes.
func (t *Tape) Forward(mem *Memory, input, output []float32) {
	c := t.cfg
	m, n, r, d := c.MemorySize, c.InputTokens, c.ProcessSize, c.Dim
	if len(mem.Tokens) != m*d || len(input) != n*d || len(output) != r*d {
		panic(fmt.Sprintf("ttm: Tape.Forward: memory %d, input %d, output %d floats; want %d, %d, %d",
			len(mem.Tokens), len(input), len(output), m*d, n*d, r*d))
	}
	if t.len == t.steps {
		panic(fmt.Sprintf("ttm: Tape.Forward: the tape holds %d steps and is full; Reset or Backward first", t.steps))
	}
	s := t.len
	st := &t.rec[s]
	st.noMem = t.NoMemory
	if t.NoMemory {
		clear(mem.Tokens)
	}
	copy(st.cat[:m*d], mem.Tokens)
	copy(st.cat[m*d:(m+n)*d], input)
	outRows := st.cat[(m+n)*d:]

	readIn := t.readInput(st)
	if c.UsePositionalEmbedding {
		copy(readIn, st.cat[:(m+n)*d])
		nn.Add(readIn, t.model.p.readPos)
	}
	t.read.forward(s, t.z, readIn)

	t.proc.forward(s, outRows, t.z)

	if t.addErase != nil {
		t.addErase.forward(s, t.next, st.cat)
	} else {
		writeIn := t.writeInput(st)
		if c.UsePositionalEmbedding {
			copy(writeIn, st.cat)
			nn.Add(writeIn, t.model.p.writePos)
		}
		t.write.forward(s, t.next, writeIn)
	}
	copy(mem.Tokens, t.next)
	copy(output, outRows)
	mem.Steps++
	t.len++
}

// readInput is the read summariser's input of a recorded step.
func (t *Tape) readInput(st *tapeStep) []float32 {
	if st.readIn != nil {
		return st.readIn
	}
	return st.cat[:(t.cfg.MemorySize+t.cfg.InputTokens)*t.cfg.Dim]
}

// writeInput is the write summariser's input of a recorded step.
func (t *Tape) writeInput(st *tapeStep) []float32 {
	if st.writeIn != nil {
		return st.writeIn
	}
	return st.cat
}

// Backward pops the most recently recorded step. Given dOutput = dL/dO
// (r, d) of that step and dMem = dL/d(memory after the step) (m, d), which
// may be all zeros, it accumulates the parameter gradients into grads
// (Model.NumParams() floats, the layout of Model.Params), overwrites dInput
// with dL/dI (n, d) and overwrites dMem in place with dL/d(memory before the
// step), zero when the step ran with NoMemory. dOutput is not modified.
// It panics on an empty tape and on wrong sizes.
func (t *Tape) Backward(dOutput, dMem, dInput, grads []float32) {
	c := t.cfg
	m, n, r, d := c.MemorySize, c.InputTokens, c.ProcessSize, c.Dim
	if len(dOutput) != r*d || len(dMem) != m*d || len(dInput) != n*d || len(grads) != len(t.model.Params) {
		panic(fmt.Sprintf("ttm: Tape.Backward: dOutput %d, dMem %d, dInput %d, grads %d floats; want %d, %d, %d, %d",
			len(dOutput), len(dMem), len(dInput), len(grads), r*d, m*d, n*d, len(t.model.Params)))
	}
	if t.len == 0 {
		panic("ttm: Tape.Backward: no recorded step left")
	}
	t.gradTable.Bind(grads)
	s := t.len - 1
	st := &t.rec[s]
	g := &t.grad

	// Write: dL/d[M ; I ; O] from dL/dM_next.
	clear(t.dCat)
	if t.addErase != nil {
		t.addErase.backward(s, t.dCat, dMem, st.cat)
	} else {
		t.write.backward(s, t.dCat, dMem, t.writeInput(st))
		if c.UsePositionalEmbedding {
			nn.Add(g.writePos, t.dCat) // dCat holds only the write's part so far
		}
	}

	// Process: O feeds the output and the write.
	copy(t.dO, dOutput)
	nn.Add(t.dO, t.dCat[(m+n)*d:])
	clear(t.dZ)
	t.proc.backward(s, t.dZ, t.dO)

	// Read.
	clear(t.dRead)
	t.read.backward(s, t.dRead, t.dZ, t.readInput(st))
	if c.UsePositionalEmbedding {
		nn.Add(g.readPos, t.dRead)
	}
	nn.Add(t.dCat[:(m+n)*d], t.dRead)

	copy(dInput, t.dCat[m*d:(m+n)*d])
	if st.noMem {
		clear(dMem)
	} else {
		copy(dMem, t.dCat[:m*d])
	}
	t.len--
}

// ParamsChanged must be called after the caller changes Model.Params (an
// optimizer step): it drops the packed copies of the weights that Machines
// use. Machines already built on m fall back to the unpacked kernels until
// the next NewMachine packs the new weights again. It must not run while a
// Machine on m is stepping (Tapes do not read the packed copies).
func (m *Model) ParamsChanged() { m.invalidatePacked() }
