package seq

import (
	"fmt"
	"math"

	"github.com/ttmrobot/ttm/internal/layer"

	"github.com/ttmrobot/ttm/internal/nn"
)

// LSTM is an LSTM over pooled step tokens. Letters: k = LSTMHidden.
//
//	p   = mean of the n input tokens           (d)
//	x   = LN_0(p)                              (d)
//	z   = x·W_x + b_x + h·W_h + b_h            (4k): gates i, f, g, o in that order
//	c'  = σ(z_f) ⊙ c + σ(z_i) ⊙ tanh(z_g)
//	h'  = σ(z_o) ⊙ tanh(c')                    (k)
//	O_t = LN_1(h'·W_out + b_out)               (r, d): projected, one LayerNorm per token
//
// The state (h, c) starts at zero; the forget gate's input bias starts at
// 1. The two biases are PyTorch's b_ih and b_hh. The cost of a step does
// not depend on how many came before.
type LSTM struct {
	base
	p lstmParams
}

type lstmParams struct {
	inLN  layer.LayerNorm
	x     layer.Dense // d -> 4k: W_x, b_x
	h     layer.Dense // k -> 4k: W_h, b_h
	out   layer.Dense // k -> r·d
	outLN layer.LayerNorm
}

func (p *lstmParams) register(t *layer.Table, c Config) {
	d, k := c.Dim, c.LSTMHidden
	p.inLN.Register(t, "lstm/LayerNorm_0", d)
	p.x.Register(t, "lstm/cell/input", d, 4*k, layer.Zeros)
	p.h.Register(t, "lstm/cell/hidden", k, 4*k, layer.Zeros)
	p.out.Register(t, "lstm/out", k, c.OutputTokens*d, layer.Zeros)
	p.outLN.Register(t, "lstm/LayerNorm_1", d)
}

// NewLSTM allocates an LSTM for c with zero parameters.
func NewLSTM(c Config) (*LSTM, error) {
	c = c.WithDefaults()
	if err := c.ValidateFor("lstm"); err != nil {
		return nil, err
	}
	m := &LSTM{base: base{name: "lstm", cfg: c}}
	m.p.register(&m.table, c)
	m.finish()
	return m, nil
}

// Init initialises as base.Init does, then sets the forget gate's bias to 1
// (Jozefowicz et al. 2015), so that the cell starts out remembering.
func (m *LSTM) Init(seed uint64) {
	m.base.Init(seed)
	k := m.cfg.LSTMHidden
	for i := k; i < 2*k; i++ {
		m.p.x.Bias[i] = 1
	}
}

// FLOPs is the same at every step: the gates and the output projection.
func (m *LSTM) FLOPs(step int) int64 {
	c := m.cfg
	d, k, rd := int64(c.Dim), int64(c.LSTMHidden), int64(c.OutputTokens*c.Dim)
	return 2 * (d*4*k + k*4*k + k*rd)
}

// lstmState is the cell's (h, c).
type lstmState struct {
	hc    []float32 // (2k): h then c
	steps int
}

func (m *LSTM) NewState() State { return &lstmState{hc: make([]float32, 2*m.cfg.LSTMHidden)} }

func (s *lstmState) Reset() {
	clear(s.hc)
	s.steps = 0
}

func (s *lstmState) Clone() State {
	return &lstmState{hc: append([]float32(nil), s.hc...), steps: s.steps}
}

func (s *lstmState) CopyFrom(o State) {
	src, ok := o.(*lstmState)
	if !ok || len(src.hc) != len(s.hc) {
		panic(fmt.Sprintf("seq: lstm state: restoring a %T of another shape", o))
	}
	copy(s.hc, src.hc)
	s.steps = src.steps
}

func (s *lstmState) Hash() uint64 { return hashFloats(hashSeed, s.hc) }
func (s *lstmState) Steps() int   { return s.steps }

func (s *lstmState) values() [][]float32 { return [][]float32{s.hc} }

func lstmStateOf(s State, k int) *lstmState {
	ls, ok := s.(*lstmState)
	if !ok || len(ls.hc) != 2*k {
		panic(fmt.Sprintf("seq: lstm model given a %T state of another shape", s))
	}
	return ls
}

// lstmRec is one step's activations.
type lstmRec struct {
	pool  []float32          // (d): mean input token
	ln    layer.LayerNormRec // (1, d)
	hPrev []float32          // (k)
	cPrev []float32          // (k)
	gates []float32          // (4k): σ(z_i), σ(z_f), tanh(z_g), σ(z_o)
	tanhC []float32          // (k): tanh(c')
	h     []float32          // (k): h'
	proj  []float32          // (r·d): before LN_1
	outLN layer.LayerNormRec // (r, d)
	cNext []float32          // (k)
	pre   []float32          // (4k): pre-activations
	preH  []float32          // (4k): the hidden product's part
}

func newLSTMRec(c Config) lstmRec {
	d, k := c.Dim, c.LSTMHidden
	return lstmRec{
		pool: make([]float32, d), ln: layer.NewLayerNormRec(1, d),
		hPrev: make([]float32, k), cPrev: make([]float32, k), gates: make([]float32, 4*k),
		tanhC: make([]float32, k), h: make([]float32, k), proj: make([]float32, c.OutputTokens*d),
		outLN: layer.NewLayerNormRec(c.OutputTokens, d), cNext: make([]float32, k), pre: make([]float32, 4*k), preH: make([]float32, 4*k),
	}
}

func sigmoid(x float32) float32 { return 1 / (1 + nn.Exp32(-x)) }

func tanh32(x float32) float32 { return float32(math.Tanh(float64(x))) }

// step runs one step from s into rc, writes the output and updates s;
// pack as for dense.forward.
func (m *LSTM) step(rc *lstmRec, s *lstmState, input, output, pack []float32) {
	c := m.cfg
	n, d, k, eps := c.InputTokens, c.Dim, c.LSTMHidden, float32(c.LayerNormEps)
	clear(rc.pool)
	for i := 0; i < n; i++ {
		nn.Add(rc.pool, input[i*d:(i+1)*d])
	}
	inv := 1 / float32(n)
	for j := range rc.pool {
		rc.pool[j] *= inv
	}
	rc.ln.Forward(&m.p.inLN, rc.pool, 1, d, eps)
	copy(rc.hPrev, s.hc[:k])
	copy(rc.cPrev, s.hc[k:])
	z := rc.pre
	m.p.x.Forward(z, rc.ln.Out, 1, pack)
	m.p.h.Forward(rc.preH, rc.hPrev, 1, pack)
	nn.Add(z, rc.preH)
	g := rc.gates
	for j := 0; j < k; j++ {
		ig, fg, gg, og := sigmoid(z[j]), sigmoid(z[k+j]), tanh32(z[2*k+j]), sigmoid(z[3*k+j])
		g[j], g[k+j], g[2*k+j], g[3*k+j] = ig, fg, gg, og
		cn := fg*rc.cPrev[j] + ig*gg
		rc.cNext[j] = cn
		rc.tanhC[j] = tanh32(cn)
		rc.h[j] = og * rc.tanhC[j]
	}
	m.p.out.Forward(rc.proj, rc.h, 1, pack)
	rc.outLN.Forward(&m.p.outLN, rc.proj, c.OutputTokens, d, eps)
	copy(output, rc.outLN.Out)
	copy(s.hc[:k], rc.h)
	copy(s.hc[k:], rc.cNext)
	s.steps++
}

type lstmRunner struct {
	m    *LSTM
	rc   lstmRec
	pack []float32 // packed-product scratch
}

func (m *LSTM) NewRunner() Runner {
	c := m.cfg
	return &lstmRunner{m: m, rc: newLSTMRec(c), pack: make([]float32, nn.PackScratchSize(max(c.Dim, c.LSTMHidden)))}
}

func (r *lstmRunner) Step(s State, input, output []float32) {
	checkStep("lstm", r.m.cfg, input, output)
	ls := lstmStateOf(s, r.m.cfg.LSTMHidden)
	r.m.prepack()
	r.m.step(&r.rc, ls, input, output, r.pack)
}

type lstmTape struct {
	m      *LSTM
	g      lstmParams
	gt     layer.Table
	rec    []lstmRec
	len    int
	dh, dc []float32 // (k): dL/d(h, c after the step being popped)
	dProj  []float32 // (r·d)
	dz     []float32 // (4k)
	dLN    []float32 // (d)
	dPool  []float32 // (d)
}

func (m *LSTM) NewTape(steps int) Tape {
	if steps <= 0 {
		panic(fmt.Sprintf("seq: lstm NewTape: %d steps, want > 0", steps))
	}
	c := m.cfg
	d, k := c.Dim, c.LSTMHidden
	t := &lstmTape{
		m: m, rec: make([]lstmRec, steps),
		dh: make([]float32, k), dc: make([]float32, k), dProj: make([]float32, c.OutputTokens*d),
		dz: make([]float32, 4*k), dLN: make([]float32, d), dPool: make([]float32, d),
	}
	for i := range t.rec {
		t.rec[i] = newLSTMRec(c)
	}
	t.g.register(&t.gt, c)
	return t
}

func (t *lstmTape) Reset() { t.len = 0 }

func (t *lstmTape) Forward(s State, input, output []float32) {
	c := t.m.cfg
	checkStep("lstm", c, input, output)
	checkTapeRoom("lstm", t.len, len(t.rec))
	t.m.step(&t.rec[t.len], lstmStateOf(s, c.LSTMHidden), input, output, nil)
	clear(t.dh) // the newest step's state feeds nothing recorded
	clear(t.dc)
	t.len++
}

func (t *lstmTape) Backward(dOutput, dInput, grads []float32) {
	m, c := t.m, t.m.cfg
	checkBackward("lstm", c, dOutput, dInput, grads, len(m.params), t.len)
	t.gt.Bind(grads)
	n, d, k := c.InputTokens, c.Dim, c.LSTMHidden
	rc, p, g := &t.rec[t.len-1], &m.p, &t.g
	// O = LN_1(h'·W_out + b_out); h' also feeds the next step (t.dh).
	clear(t.dProj)
	rc.outLN.Backward(&p.outLN, &g.outLN, t.dProj, dOutput, c.OutputTokens, d)
	p.out.Backward(&g.out, t.dh, t.dProj, rc.h, 1)
	// h' = o ⊙ tanh(c'); c' = f ⊙ c + i ⊙ g; c' also feeds the next step.
	gt := rc.gates
	for j := 0; j < k; j++ {
		ig, fg, gg, og, tc := gt[j], gt[k+j], gt[2*k+j], gt[3*k+j], rc.tanhC[j]
		dh := t.dh[j]
		dcn := t.dc[j] + dh*og*(1-tc*tc)
		t.dz[j] = dcn * gg * ig * (1 - ig)
		t.dz[k+j] = dcn * rc.cPrev[j] * fg * (1 - fg)
		t.dz[2*k+j] = dcn * ig * (1 - gg*gg)
		t.dz[3*k+j] = dh * tc * og * (1 - og)
		t.dc[j] = dcn * fg // to the step before
	}
	// z = x·W_x + b_x + h·W_h + b_h.
	clear(t.dLN)
	p.x.Backward(&g.x, t.dLN, t.dz, rc.ln.Out, 1)
	clear(t.dh)
	p.h.Backward(&g.h, t.dh, t.dz, rc.hPrev, 1) // to the step before
	// x = LN_0(mean of the input tokens).
	clear(t.dPool)
	rc.ln.Backward(&p.inLN, &g.inLN, t.dPool, t.dLN, 1, d)
	inv := 1 / float32(n)
	for i := 0; i < n; i++ {
		row := dInput[i*d : (i+1)*d]
		for j, v := range t.dPool {
			row[j] = v * inv
		}
	}
	t.len--
}
