package seq

import (
	"fmt"
	"math"

	"github.com/ttmrobot/ttm/internal/layer"

	"github.com/ttmrobot/ttm/internal/nn"
)

// Causal is a causal Transformer over the whole episode with a key/value
// cache: exact attention over every input token seen since Reset, so the
// cost of a step grows with the episode.
//
//	x  = [I_t + P_in + E(t) ; Q]          (n + r, d); P_in learned per token
//	                                        position, E(t) the sinusoidal
//	                                        encoding of the step index t,
//	                                        Q r learned readout tokens
//	y  = Stack(x) with, in every layer, the keys and values of all earlier
//	     steps' input tokens in front (the cache); input rows see the cache
//	     and their step's n rows, readout rows see everything
//	O_t = y[n : n+r]
//	cache += the n input rows' keys and values, per layer
//
// Readout tokens are never cached: later steps see only input tokens.
// Positions are a learned embedding within the step plus a fixed
// sinusoidal one of the step index (a learned embedding over every
// position of an unbounded episode would not fit).
//
// The State is the cache: per layer, keys and values (capacity·n + r, d).
// It is allocated for MaxSteps steps and doubles its capacity (allocating,
// copying) when an episode runs longer; Runner.Step allocates nothing
// while an episode stays within the capacity.
type Causal struct {
	base
	p     causalParams
	freqs []float32 // (d/2): the sinusoid's angular frequencies
}

type causalParams struct {
	pos     []float32 // (1, n, d)
	readout []float32 // (1, r, d)
	enc     stackParams
}

func (p *causalParams) register(t *layer.Table, c Config) {
	t.Add(&p.pos, "causal_pos_embed/pos_embedding", layer.PosInit, 1, c.InputTokens, c.Dim)
	t.Add(&p.readout, "readout/tokens", layer.PosInit, 1, c.OutputTokens, c.Dim)
	p.enc.register(t, "Encoder_0", c)
}

// NewCausal allocates a causal Transformer for c with zero parameters.
func NewCausal(c Config) (*Causal, error) {
	c = c.WithDefaults()
	if err := c.ValidateFor("causal"); err != nil {
		return nil, err
	}
	m := &Causal{base: base{name: "causal", cfg: c}}
	m.p.register(&m.table, c)
	m.finish()
	// E(t)[2i] = sin(t ω_i), E(t)[2i+1] = cos(t ω_i), ω_i = 10000^(-2i/d).
	m.freqs = make([]float32, (c.Dim+1)/2)
	for i := range m.freqs {
		m.freqs[i] = float32(math.Pow(10000, -2*float64(i)/float64(c.Dim)))
	}
	return m, nil
}

func (m *Causal) rows() int { return m.cfg.InputTokens + m.cfg.OutputTokens }

// FLOPs grows with the step: the n + r rows attend over step·n cached keys
// plus their own.
func (m *Causal) FLOPs(step int) int64 {
	return stackFLOPs(m.cfg, m.rows(), step*m.cfg.InputTokens+m.rows())
}

// limits: input rows see their step's n rows, readout rows all n + r.
func (m *Causal) limits() []int {
	c := m.cfg
	lim := make([]int, m.rows())
	for i := range lim {
		lim[i] = c.InputTokens
		if i >= c.InputTokens {
			lim[i] = m.rows()
		}
	}
	return lim
}

// assemble writes x (n + r, d) for the step with index t.
func (m *Causal) assemble(x, input []float32, t int) {
	c := m.cfg
	n, d := c.InputTokens, c.Dim
	copy(x[:n*d], input)
	nn.Add(x[:n*d], m.p.pos)
	for i, w := range m.freqs {
		sin, cos := math.Sincos(float64(t) * float64(w))
		for row := 0; row < n; row++ {
			x[row*d+2*i] += float32(sin)
			if 2*i+1 < d {
				x[row*d+2*i+1] += float32(cos)
			}
		}
	}
	copy(x[n*d:], m.p.readout)
}

// kvState is a per-layer key/value cache: rows [0, steps·n) hold the
// input tokens of every step so far; r more rows of room hold a step's
// readout keys while it runs.
type kvState struct {
	k, v     [][]float32 // per layer (capacity·n + r, d)
	capacity int         // steps held without growing
	steps    int
	n, r, d  int
	shared   bool // layers share one buffer (CostTable's stand-in for states too big to hold)
}

func (m *Causal) NewState() State {
	c := m.cfg
	s := &kvState{n: c.InputTokens, r: c.OutputTokens, d: c.Dim, k: make([][]float32, c.Layers), v: make([][]float32, c.Layers)}
	s.reserve(c.MaxSteps)
	return s
}

// reserve makes room for `steps` steps, keeping the contents. A shared
// state (see CostTable) stays shared.
func (s *kvState) reserve(steps int) {
	if steps <= s.capacity && s.k[0] != nil {
		return
	}
	steps = max(steps, 2*s.capacity)
	rows := steps*s.n + s.r
	used := s.steps * s.n * s.d
	for l := range s.k {
		if s.shared && l > 0 {
			s.k[l], s.v[l] = s.k[0], s.v[0]
			continue
		}
		k, v := make([]float32, rows*s.d), make([]float32, rows*s.d)
		if s.k[l] != nil {
			copy(k, s.k[l][:used])
			copy(v, s.v[l][:used])
		}
		s.k[l], s.v[l] = k, v
	}
	s.capacity = steps
}

func (s *kvState) Reset() { s.steps = 0 }

func (s *kvState) Clone() State {
	c := &kvState{n: s.n, r: s.r, d: s.d, k: make([][]float32, len(s.k)), v: make([][]float32, len(s.v)), shared: s.shared}
	c.reserve(s.capacity)
	c.CopyFrom(s)
	return c
}

// CopyFrom restores s from a snapshot of the same model; it allocates only
// when the snapshot holds more steps than s has room for.
func (s *kvState) CopyFrom(o State) {
	src, ok := o.(*kvState)
	if !ok || src.n != s.n || src.r != s.r || src.d != s.d || len(src.k) != len(s.k) {
		panic(fmt.Sprintf("seq: causal state: restoring a %T of another shape", o))
	}
	s.reserve(src.steps)
	used := src.steps * s.n * s.d
	for l := range s.k {
		copy(s.k[l][:used], src.k[l][:used])
		copy(s.v[l][:used], src.v[l][:used])
	}
	s.steps = src.steps
}

// Hash digests the number of steps and every layer's cached keys and
// values.
func (s *kvState) Hash() uint64 {
	h := hashInt(hashSeed, s.steps)
	used := s.steps * s.n * s.d
	for l := range s.k {
		h = hashFloats(h, s.k[l][:used])
		h = hashFloats(h, s.v[l][:used])
	}
	return h
}

func (s *kvState) Steps() int { return s.steps }

func (s *kvState) values() [][]float32 {
	used := s.steps * s.n * s.d
	var out [][]float32
	for l := range s.k {
		out = append(out, s.k[l][:used], s.v[l][:used])
	}
	return out
}

func kvStateOf(s State, c Config) *kvState {
	ks, ok := s.(*kvState)
	if !ok || ks.n != c.InputTokens || ks.r != c.OutputTokens || ks.d != c.Dim || len(ks.k) != c.Layers {
		panic(fmt.Sprintf("seq: causal model given a %T state of another shape", s))
	}
	return ks
}

type causalRunner struct {
	m    *Causal
	st   *stack
	rec  stackRec
	lim  []int
	x, y []float32 // (n + r, d)
}

func (m *Causal) NewRunner() Runner {
	c, rows := m.cfg, m.rows()
	return &causalRunner{
		m: m, st: newStack(&m.p.enc, c, rows, false), rec: newStackRec(c, rows, c.MaxSteps*c.InputTokens+rows, false),
		lim: m.limits(), x: make([]float32, rows*c.Dim), y: make([]float32, rows*c.Dim),
	}
}

func (r *causalRunner) Step(s State, input, output []float32) {
	m, c := r.m, r.m.cfg
	checkStep("causal", c, input, output)
	ks := kvStateOf(s, c)
	m.prepack()
	ks.reserve(ks.steps + 1)
	m.assemble(r.x, input, ks.steps)
	r.st.forward(&r.rec, r.y, r.x, m.rows(), ks.k, ks.v, ks.steps*c.InputTokens, r.lim)
	copy(output, r.y[c.InputTokens*c.Dim:])
	ks.steps++
}

// causalTape keeps its own copy of the keys and values the window sees:
// the cache at the window's first step (constants: no gradient flows to
// earlier steps), then each recorded step's input rows (which do get the
// gradient of every later step in the window that attends to them).
type causalTape struct {
	m      *Causal
	g      causalParams
	gt     layer.Table
	st     *stack
	rec    []stackRec
	lim    []int
	len    int
	first  int         // the state's step count at the window's first step
	k, v   [][]float32 // per layer ((first + steps)·n + r, d)
	dk, dv [][]float32 // the same shape: dL/d(keys, values)
	fresh  bool        // a Forward ran since the last Backward: dk, dv need clearing
	x, y   []float32   // (n + r, d)
	dY, dX []float32   // (n + r, d)
}

func (m *Causal) NewTape(steps int) Tape {
	if steps <= 0 {
		panic(fmt.Sprintf("seq: causal NewTape: %d steps, want > 0", steps))
	}
	c, rows := m.cfg, m.rows()
	t := &causalTape{
		m: m, st: newStack(&m.p.enc, c, rows, true), rec: make([]stackRec, steps), lim: m.limits(),
		k: make([][]float32, c.Layers), v: make([][]float32, c.Layers),
		dk: make([][]float32, c.Layers), dv: make([][]float32, c.Layers),
		x: make([]float32, rows*c.Dim), y: make([]float32, rows*c.Dim),
		dY: make([]float32, rows*c.Dim), dX: make([]float32, rows*c.Dim),
	}
	for i := range t.rec {
		t.rec[i] = newStackRec(c, rows, rows, true)
	}
	t.g.register(&t.gt, c)
	return t
}

func (t *causalTape) Reset() { t.len = 0 }

func (t *causalTape) Forward(s State, input, output []float32) {
	m, c := t.m, t.m.cfg
	checkStep("causal", c, input, output)
	checkTapeRoom("causal", t.len, len(t.rec))
	ks := kvStateOf(s, c)
	n, d := c.InputTokens, c.Dim
	if t.len == 0 {
		// Copy the cache the window starts from.
		t.first = ks.steps
		rows := (ks.steps+len(t.rec))*n + c.OutputTokens
		used := ks.steps * n * d
		for l := range t.k {
			t.k[l], t.v[l] = grow(t.k[l], rows*d), grow(t.v[l], rows*d)
			t.dk[l], t.dv[l] = grow(t.dk[l], rows*d), grow(t.dv[l], rows*d)
			copy(t.k[l][:used], ks.k[l][:used])
			copy(t.v[l][:used], ks.v[l][:used])
		}
	} else if ks.steps != t.first+t.len {
		panic(fmt.Sprintf("seq: causal Tape.Forward: the state has taken %d steps, the tape expected %d: a tape's steps run on one state in order",
			ks.steps, t.first+t.len))
	}
	prefix := ks.steps * n
	rec := &t.rec[t.len]
	m.assemble(t.x, input, ks.steps)
	t.st.forward(rec, t.y, t.x, m.rows(), t.k, t.v, prefix, t.lim)
	copy(output, t.y[n*d:])
	// The state caches the input rows; the record keeps the readout rows,
	// which the next step's input rows overwrite in t.k and t.v.
	ks.reserve(ks.steps + 1)
	for l := range t.k {
		own := t.k[l][prefix*d : (prefix+n)*d]
		copy(ks.k[l][prefix*d:], own)
		copy(ks.v[l][prefix*d:], t.v[l][prefix*d:(prefix+n)*d])
		copy(rec.blocks[l].k, t.k[l][(prefix+n)*d:(prefix+m.rows())*d])
		copy(rec.blocks[l].v, t.v[l][(prefix+n)*d:(prefix+m.rows())*d])
	}
	ks.steps++
	t.fresh = true
	t.len++
}

func (t *causalTape) Backward(dOutput, dInput, grads []float32) {
	m, c := t.m, t.m.cfg
	checkBackward("causal", c, dOutput, dInput, grads, len(m.params), t.len)
	t.gt.Bind(grads)
	n, r, d := c.InputTokens, c.OutputTokens, c.Dim
	if t.fresh {
		for l := range t.dk {
			clear(t.dk[l])
			clear(t.dv[l])
		}
		t.fresh = false
	}
	s := t.len - 1
	rec := &t.rec[s]
	prefix := (t.first + s) * n
	for l := range t.k {
		// Put this step's readout keys back; drop what the popped later
		// steps left in their rows.
		copy(t.k[l][(prefix+n)*d:], rec.blocks[l].k[:r*d])
		copy(t.v[l][(prefix+n)*d:], rec.blocks[l].v[:r*d])
		clear(t.dk[l][(prefix+n)*d : (prefix+n+r)*d])
		clear(t.dv[l][(prefix+n)*d : (prefix+n+r)*d])
	}
	clear(t.dY)
	copy(t.dY[n*d:], dOutput)
	clear(t.dX)
	t.st.backward(rec, &t.g.enc, t.dX, t.dY, m.rows(), t.k, t.v, t.dk, t.dv, prefix)
	nn.Add(t.g.pos, t.dX[:n*d])
	nn.Add(t.g.readout, t.dX[n*d:])
	copy(dInput, t.dX[:n*d])
	t.len--
}
