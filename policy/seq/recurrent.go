package seq

import (
	"fmt"

	"github.com/ttmrobot/ttm/internal/layer"

	"github.com/ttmrobot/ttm/internal/nn"
)

// Recurrent is a recurrent Transformer: s state tokens carried from step
// to step (the TTM paper's "Recurrent Transformer (tokens = 16 + 16)", and
// the memory tokens of the Memory Transformer line of work).
//
//	x  = [S_t ; I_t] + P ; x = [x ; Q]     (s + n + r, d); P learned, Q: r learned readout tokens
//	y  = Stack(x)                          no mask
//	S_{t+1} = y[0 : s]                     the state rows' outputs (after the final LayerNorm)
//	O_t     = y[s+n : s+n+r]               the readout rows' outputs
//
// The state starts at zero (as the TTM's memory does); its positional
// embedding tells the Transformer which rows are state. The cost of a step
// does not depend on how many steps came before.
type Recurrent struct {
	base
	p recurrentParams
}

type recurrentParams struct {
	pos     []float32 // (1, s+n, d)
	readout []float32 // (1, r, d)
	enc     stackParams
}

func (p *recurrentParams) register(t *layer.Table, c Config) {
	t.Add(&p.pos, "recurrent_pos_embed/pos_embedding", layer.PosInit, 1, c.StateTokens+c.InputTokens, c.Dim)
	t.Add(&p.readout, "readout/tokens", layer.PosInit, 1, c.OutputTokens, c.Dim)
	p.enc.register(t, "Encoder_0", c)
}

// NewRecurrent allocates a recurrent Transformer for c with zero parameters.
func NewRecurrent(c Config) (*Recurrent, error) {
	c = c.WithDefaults()
	if err := c.ValidateFor("recurrent"); err != nil {
		return nil, err
	}
	m := &Recurrent{base: base{name: "recurrent", cfg: c}}
	m.p.register(&m.table, c)
	m.finish()
	return m, nil
}

func (m *Recurrent) rows() int { return m.cfg.StateTokens + m.cfg.InputTokens + m.cfg.OutputTokens }

// FLOPs is the same at every step: one pass over s + n + r rows.
func (m *Recurrent) FLOPs(step int) int64 { return stackFLOPs(m.cfg, m.rows(), m.rows()) }

// tokenState is a fixed set of tokens carried between steps (the
// recurrent Transformer's state tokens).
type tokenState struct {
	tokens []float32 // (s, d)
	steps  int
}

func (m *Recurrent) NewState() State {
	return &tokenState{tokens: make([]float32, m.cfg.StateTokens*m.cfg.Dim)}
}

func (s *tokenState) Reset() {
	clear(s.tokens)
	s.steps = 0
}

func (s *tokenState) Clone() State {
	return &tokenState{tokens: append([]float32(nil), s.tokens...), steps: s.steps}
}

func (s *tokenState) CopyFrom(o State) {
	src, ok := o.(*tokenState)
	if !ok || len(src.tokens) != len(s.tokens) {
		panic(fmt.Sprintf("seq: recurrent state: restoring a %T of another shape", o))
	}
	copy(s.tokens, src.tokens)
	s.steps = src.steps
}

func (s *tokenState) Hash() uint64 { return hashFloats(hashSeed, s.tokens) }
func (s *tokenState) Steps() int   { return s.steps }

func (s *tokenState) values() [][]float32 { return [][]float32{s.tokens} }

func tokenStateOf(s State, want int) *tokenState {
	ts, ok := s.(*tokenState)
	if !ok || len(ts.tokens) != want {
		panic(fmt.Sprintf("seq: recurrent model given a %T state of another shape", s))
	}
	return ts
}

// assemble writes x (s+n+r, d) = [S ; I] + P, then the readout tokens.
func (m *Recurrent) assemble(x []float32, s *tokenState, input []float32) {
	c := m.cfg
	sd, nd := c.StateTokens*c.Dim, c.InputTokens*c.Dim
	copy(x[:sd], s.tokens)
	copy(x[sd:sd+nd], input)
	nn.Add(x[:sd+nd], m.p.pos)
	copy(x[sd+nd:], m.p.readout)
}

// emit copies the new state and the output out of y.
func (m *Recurrent) emit(s *tokenState, output, y []float32) {
	c := m.cfg
	sd, nd := c.StateTokens*c.Dim, c.InputTokens*c.Dim
	copy(s.tokens, y[:sd])
	copy(output, y[sd+nd:])
	s.steps++
}

type recurrentRunner struct {
	m    *Recurrent
	st   *stack
	rec  stackRec
	x, y []float32 // (s+n+r, d)
}

func (m *Recurrent) NewRunner() Runner {
	rows := m.rows()
	return &recurrentRunner{
		m: m, st: newStack(&m.p.enc, m.cfg, rows, false), rec: newStackRec(m.cfg, rows, rows, false),
		x: make([]float32, rows*m.cfg.Dim), y: make([]float32, rows*m.cfg.Dim),
	}
}

func (r *recurrentRunner) Step(s State, input, output []float32) {
	m := r.m
	checkStep("recurrent", m.cfg, input, output)
	ts := tokenStateOf(s, m.cfg.StateTokens*m.cfg.Dim)
	m.prepack()
	m.assemble(r.x, ts, input)
	r.st.forward(&r.rec, r.y, r.x, m.rows(), nil, nil, 0, nil)
	m.emit(ts, output, r.y)
}

type recurrentTape struct {
	m      *Recurrent
	g      recurrentParams
	gt     layer.Table
	st     *stack
	rec    []stackRec
	len    int
	x, y   []float32 // (s+n+r, d)
	dY, dX []float32 // (s+n+r, d)
	dState []float32 // (s, d): dL/d(state after the step being popped)
}

func (m *Recurrent) NewTape(steps int) Tape {
	if steps <= 0 {
		panic(fmt.Sprintf("seq: recurrent NewTape: %d steps, want > 0", steps))
	}
	c, rows := m.cfg, m.rows()
	t := &recurrentTape{
		m: m, st: newStack(&m.p.enc, c, rows, true), rec: make([]stackRec, steps),
		x: make([]float32, rows*c.Dim), y: make([]float32, rows*c.Dim),
		dY: make([]float32, rows*c.Dim), dX: make([]float32, rows*c.Dim),
		dState: make([]float32, c.StateTokens*c.Dim),
	}
	for i := range t.rec {
		t.rec[i] = newStackRec(c, rows, rows, true)
	}
	t.g.register(&t.gt, c)
	return t
}

func (t *recurrentTape) Reset() { t.len = 0 }

func (t *recurrentTape) Forward(s State, input, output []float32) {
	m := t.m
	checkStep("recurrent", m.cfg, input, output)
	checkTapeRoom("recurrent", t.len, len(t.rec))
	ts := tokenStateOf(s, m.cfg.StateTokens*m.cfg.Dim)
	m.assemble(t.x, ts, input)
	t.st.forward(&t.rec[t.len], t.y, t.x, m.rows(), nil, nil, 0, nil)
	m.emit(ts, output, t.y)
	clear(t.dState) // the newest step's state feeds nothing recorded
	t.len++
}

func (t *recurrentTape) Backward(dOutput, dInput, grads []float32) {
	m, c := t.m, t.m.cfg
	checkBackward("recurrent", c, dOutput, dInput, grads, len(m.params), t.len)
	t.gt.Bind(grads)
	sd, nd := c.StateTokens*c.Dim, c.InputTokens*c.Dim
	clear(t.dY)
	copy(t.dY[:sd], t.dState)
	copy(t.dY[sd+nd:], dOutput)
	clear(t.dX)
	t.st.backward(&t.rec[t.len-1], &t.g.enc, t.dX, t.dY, m.rows(), nil, nil, nil, nil, 0)
	nn.Add(t.g.pos, t.dX[:sd+nd])
	nn.Add(t.g.readout, t.dX[sd+nd:])
	copy(dInput, t.dX[sd:sd+nd])
	copy(t.dState, t.dX[:sd])
	t.len--
}
