package seq

import (
	"fmt"

	"github.com/ttmrobot/ttm/internal/layer"

	"github.com/ttmrobot/ttm/internal/nn"
)

// Window is RT-1's sequence model: a Transformer over the input tokens of
// the last h steps, recomputed from scratch every step.
//
//	x = [I_{t-h+1} ; ... ; I_t] + P      (h·n, d), oldest step first; P learned
//	x = [x ; Q]                          (h·n + r, d); Q: r learned readout tokens
//	y = Stack(x), block-causal: a step's tokens see their own step and
//	    older ones; the readout tokens see everything (and each other)
//	O = the last r rows of y             (r, d)
//
// The output is read by learned readout tokens rather than cut from the
// newest step's tokens, so that any r works with any n and the output
// means the same thing as the TTM's (r tokens summarising the history).
// Before h steps have been taken the missing steps are zero tokens (plus
// their positional embedding): the computation has one shape from the
// first step on, as the TTM's zero memory does. The State is the ring of
// the last h inputs.
type Window struct {
	base
	p windowParams
}

type windowParams struct {
	pos     []float32 // (1, h·n, d)
	readout []float32 // (1, r, d)
	enc     stackParams
}

func (p *windowParams) register(t *layer.Table, c Config) {
	t.Add(&p.pos, "window_pos_embed/pos_embedding", layer.PosInit, 1, c.Window*c.InputTokens, c.Dim)
	t.Add(&p.readout, "readout/tokens", layer.PosInit, 1, c.OutputTokens, c.Dim)
	p.enc.register(t, "Encoder_0", c)
}

// NewWindow allocates a window Transformer for c with zero parameters.
func NewWindow(c Config) (*Window, error) {
	c = c.WithDefaults()
	if err := c.ValidateFor("window"); err != nil {
		return nil, err
	}
	m := &Window{base: base{name: "window", cfg: c}}
	m.p.register(&m.table, c)
	m.finish()
	return m, nil
}

// rows is the number of rows the Transformer runs over: h·n + r.
func (m *Window) rows() int {
	c := m.cfg
	return c.Window*c.InputTokens + c.OutputTokens
}

// limits is the block-causal mask: how many rows each row sees.
func (m *Window) limits() []int {
	c := m.cfg
	lim := make([]int, m.rows())
	for i := range lim {
		if i < c.Window*c.InputTokens {
			lim[i] = (i/c.InputTokens + 1) * c.InputTokens
		} else {
			lim[i] = m.rows()
		}
	}
	return lim
}

// FLOPs is the same at every step: one pass over h·n + r rows.
func (m *Window) FLOPs(step int) int64 {
	return stackFLOPs(m.cfg, m.rows(), m.rows())
}

// windowState is the ring of the last h inputs.
type windowState struct {
	buf   []float32 // (h, n, d): slot i holds one step's input
	head  int       // the slot of the oldest step, the next to be replaced
	steps int
	h, nd int // slots, floats per slot
}

func (m *Window) NewState() State {
	c := m.cfg
	return &windowState{buf: make([]float32, c.Window*c.InputTokens*c.Dim), h: c.Window, nd: c.InputTokens * c.Dim}
}

func (s *windowState) Reset() {
	clear(s.buf)
	s.head, s.steps = 0, 0
}

func (s *windowState) Clone() State {
	c := *s
	c.buf = append([]float32(nil), s.buf...)
	return &c
}

func (s *windowState) CopyFrom(o State) {
	src, ok := o.(*windowState)
	if !ok || src.h != s.h || src.nd != s.nd {
		panic(fmt.Sprintf("seq: window state: restoring a %T of another shape", o))
	}
	copy(s.buf, src.buf)
	s.head, s.steps = src.head, src.steps
}

// Hash digests the window's steps oldest first, so that two states that
// will compute the same outputs hash equal whatever their ring position.
func (s *windowState) Hash() uint64 {
	h := hashSeed
	for j := 0; j < s.h; j++ {
		slot := (s.head + j) % s.h
		h = hashFloats(h, s.buf[slot*s.nd:(slot+1)*s.nd])
	}
	return h
}

func (s *windowState) Steps() int { return s.steps }

func (s *windowState) values() [][]float32 { return [][]float32{s.buf} }

// push replaces the oldest step with input.
func (s *windowState) push(input []float32) {
	copy(s.buf[s.head*s.nd:(s.head+1)*s.nd], input)
	s.head = (s.head + 1) % s.h
	s.steps++
}

// assemble writes the Transformer's input x (h·n + r, d): the window
// oldest first plus positional embeddings, then the readout tokens.
func (m *Window) assemble(x []float32, s *windowState) {
	nd := s.nd
	for j := 0; j < s.h; j++ {
		slot := (s.head + j) % s.h
		copy(x[j*nd:(j+1)*nd], s.buf[slot*nd:(slot+1)*nd])
	}
	nn.Add(x[:s.h*nd], m.p.pos)
	copy(x[s.h*nd:], m.p.readout)
}

func windowStateOf(s State) *windowState {
	ws, ok := s.(*windowState)
	if !ok {
		panic(fmt.Sprintf("seq: window model given a %T state", s))
	}
	return ws
}

type windowRunner struct {
	m    *Window
	st   *stack
	rec  stackRec
	lim  []int
	x, y []float32 // (h·n + r, d)
}

func (m *Window) NewRunner() Runner {
	rows := m.rows()
	return &windowRunner{
		m: m, st: newStack(&m.p.enc, m.cfg, rows, false), rec: newStackRec(m.cfg, rows, rows, false),
		lim: m.limits(), x: make([]float32, rows*m.cfg.Dim), y: make([]float32, rows*m.cfg.Dim),
	}
}

func (r *windowRunner) Step(s State, input, output []float32) {
	m, c := r.m, r.m.cfg
	checkStep("window", c, input, output)
	ws := windowStateOf(s)
	m.prepack()
	ws.push(input)
	m.assemble(r.x, ws)
	rows := m.rows()
	r.st.forward(&r.rec, r.y, r.x, rows, nil, nil, 0, r.lim)
	copy(output, r.y[(rows-c.OutputTokens)*c.Dim:])
}

// windowTape records steps for backpropagation through time. The inputs
// of the steps recorded since Reset carry gradient; the ones the State
// held before (older steps) are constants.
type windowTape struct {
	m     *Window
	g     windowParams
	gt    layer.Table
	st    *stack
	rec   []stackRec
	lim   []int
	len   int
	x, y  []float32 // (h·n + r, d)
	dY    []float32 // (h·n + r, d): dL/d(stack output)
	dX    []float32 // (h·n + r, d): dL/d(stack input)
	dAcc  []float32 // (steps, n, d): dL/d(input) of each recorded step, accumulating
	steps int
}

func (m *Window) NewTape(steps int) Tape {
	if steps <= 0 {
		panic(fmt.Sprintf("seq: window NewTape: %d steps, want > 0", steps))
	}
	c, rows := m.cfg, m.rows()
	t := &windowTape{
		m: m, st: newStack(&m.p.enc, c, rows, true), rec: make([]stackRec, steps), lim: m.limits(), steps: steps,
		x: make([]float32, rows*c.Dim), y: make([]float32, rows*c.Dim),
		dY: make([]float32, rows*c.Dim), dX: make([]float32, rows*c.Dim),
		dAcc: make([]float32, steps*c.InputTokens*c.Dim),
	}
	for i := range t.rec {
		t.rec[i] = newStackRec(c, rows, rows, true)
	}
	t.g.register(&t.gt, c)
	return t
}

func (t *windowTape) Reset() { t.len = 0 }

func (t *windowTape) Forward(s State, input, output []float32) {
	m, c := t.m, t.m.cfg
	checkStep("window", c, input, output)
	checkTapeRoom("window", t.len, t.steps)
	ws := windowStateOf(s)
	ws.push(input)
	m.assemble(t.x, ws)
	rows := m.rows()
	t.st.forward(&t.rec[t.len], t.y, t.x, rows, nil, nil, 0, t.lim)
	copy(output, t.y[(rows-c.OutputTokens)*c.Dim:])
	nd := c.InputTokens * c.Dim
	clear(t.dAcc[t.len*nd : (t.len+1)*nd])
	t.len++
}

func (t *windowTape) Backward(dOutput, dInput, grads []float32) {
	m, c := t.m, t.m.cfg
	checkBackward("window", c, dOutput, dInput, grads, len(m.params), t.len)
	t.gt.Bind(grads)
	rows, d, nd, h := m.rows(), c.Dim, c.InputTokens*c.Dim, c.Window
	s := t.len - 1
	clear(t.dY)
	copy(t.dY[(rows-c.OutputTokens)*d:], dOutput)
	clear(t.dX)
	t.st.backward(&t.rec[s], &t.g.enc, t.dX, t.dY, rows, nil, nil, nil, nil, 0)
	nn.Add(t.g.pos, t.dX[:h*nd])
	nn.Add(t.g.readout, t.dX[h*nd:])
	// Window slot j holds the input of step s-h+1+j.
	for j := 0; j < h; j++ {
		if i := s - h + 1 + j; i >= 0 {
			nn.Add(t.dAcc[i*nd:(i+1)*nd], t.dX[j*nd:(j+1)*nd])
		}
	}
	copy(dInput, t.dAcc[s*nd:(s+1)*nd])
	t.len--
}
