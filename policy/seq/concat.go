package seq

import (
	"fmt"

	"github.com/ttmrobot/ttm/internal/layer"

	"github.com/ttmrobot/ttm/internal/nn"
)

// Concat is the TTM with its write replaced by concatenation (the paper's
// Memorizing-Transformer-style alternative): every step's n input tokens
// are appended to the memory, which grows by n tokens per step, and the
// read summarises the whole memory and the input.
//
//	V   = [M ; I_t]                       (N, d), N = (t+1)·n: every input so far
//	Z   = TokenLearner_r(V)               read, as the TTM's (v1.1, on the raw V)
//	O_t = Process(Z)                      the TTM's Transformer processing unit
//	M  := [M ; I_t]                       the write
//
// The read's logits depend on each row alone (LayerNorm, then an MLP), so
// the State keeps each memory row's logits next to the row, as a causal
// Transformer keeps keys and values: a step computes the logits of its own
// n rows and then one softmax and one weighted sum over all N. A Tape
// treats the State at the window's first step (rows and logits) as
// constant, like the causal model's cache. Tensor names are the TTM's, so
// the read and the processing unit line up with a TTM checkpoint.
//
// The State allocates room for MaxSteps steps and doubles it (allocating)
// past that; Runner.Step allocates nothing within the capacity.
type Concat struct {
	base
	p concatParams
}

type concatParams struct {
	read   layer.TokenLearner // d -> hidden -> r
	encPos []float32          // (1, r, d)
	enc    stackParams
}

func (p *concatParams) register(t *layer.Table, c Config) {
	p.read.Register(t, "TokenLearnerModuleV11_0", c.Dim, c.SummariserHidden, c.OutputTokens, layer.Zeros)
	t.Add(&p.encPos, "Encoder_0/posembed_input/pos_embedding", layer.PosInit, 1, c.OutputTokens, c.Dim)
	p.enc.register(t, "Encoder_0", c)
}

// NewConcat allocates a concatenating TTM for c with zero parameters.
func NewConcat(c Config) (*Concat, error) {
	c = c.WithDefaults()
	if err := c.ValidateFor("concat"); err != nil {
		return nil, err
	}
	m := &Concat{base: base{name: "concat", cfg: c}}
	m.p.register(&m.table, c)
	m.finish()
	return m, nil
}

// FLOPs grows with the step: the read's logits of the n new rows, the
// weighted sum over all (step+1)·n rows, and the processing unit.
func (m *Concat) FLOPs(step int) int64 {
	c := m.cfg
	n, r, d, h := int64(c.InputTokens), int64(c.OutputTokens), int64(c.Dim), int64(c.SummariserHidden)
	rows := (int64(step) + 1) * n
	return 2*n*(d*h+h*r) + 2*r*rows*d + stackFLOPs(c, c.OutputTokens, c.OutputTokens)
}

// memState is the concatenated memory: rows and their read logits.
type memState struct {
	mem      []float32 // (capacity·n, d): every input row so far
	logT     []float32 // (r, capacity·n): the read's logits, transposed
	capacity int
	steps    int
	n, r, d  int
}

func (m *Concat) NewState() State {
	c := m.cfg
	s := &memState{n: c.InputTokens, r: c.OutputTokens, d: c.Dim}
	s.reserve(c.MaxSteps)
	return s
}

// rows is how many memory rows the state holds room for.
func (s *memState) rows() int { return s.capacity * s.n }

// reserve makes room for `steps` steps, keeping the contents.
func (s *memState) reserve(steps int) {
	if steps <= s.capacity && s.mem != nil {
		return
	}
	steps = max(steps, 2*s.capacity)
	rows, used := steps*s.n, s.steps*s.n
	mem := make([]float32, rows*s.d)
	copy(mem, s.mem[:used*s.d])
	logT := make([]float32, s.r*rows)
	for j := 0; j < s.r && s.logT != nil; j++ {
		copy(logT[j*rows:j*rows+used], s.logT[j*s.rows():])
	}
	s.mem, s.logT, s.capacity = mem, logT, steps
}

func (s *memState) Reset() { s.steps = 0 }

func (s *memState) Clone() State {
	c := &memState{n: s.n, r: s.r, d: s.d}
	c.reserve(s.capacity)
	c.CopyFrom(s)
	return c
}

// CopyFrom restores s from a snapshot of the same model; it allocates only
// when the snapshot holds more steps than s has room for.
func (s *memState) CopyFrom(o State) {
	src, ok := o.(*memState)
	if !ok || src.n != s.n || src.r != s.r || src.d != s.d {
		panic(fmt.Sprintf("seq: concat state: restoring a %T of another shape", o))
	}
	s.reserve(src.steps)
	used := src.steps * s.n
	copy(s.mem[:used*s.d], src.mem)
	for j := 0; j < s.r; j++ {
		copy(s.logT[j*s.rows():j*s.rows()+used], src.logT[j*src.rows():])
	}
	s.steps = src.steps
}

// Hash digests the number of steps, the memory rows and their logits.
func (s *memState) Hash() uint64 {
	used := s.steps * s.n
	h := hashFloats(hashInt(hashSeed, s.steps), s.mem[:used*s.d])
	for j := 0; j < s.r; j++ {
		h = hashFloats(h, s.logT[j*s.rows():j*s.rows()+used])
	}
	return h
}

func (s *memState) Steps() int { return s.steps }

func (s *memState) values() [][]float32 {
	used := s.steps * s.n
	out := [][]float32{s.mem[:used*s.d]}
	for j := 0; j < s.r; j++ {
		out = append(out, s.logT[j*s.rows():j*s.rows()+used])
	}
	return out
}

func memStateOf(s State, c Config) *memState {
	ms, ok := s.(*memState)
	if !ok || ms.n != c.InputTokens || ms.r != c.OutputTokens || ms.d != c.Dim {
		panic(fmt.Sprintf("seq: concat model given a %T state of another shape", s))
	}
	return ms
}

// readRec is what the read keeps for the n new rows.
type readRec struct {
	ln     layer.LayerNormRec // (n, d)
	mlp    layer.MLPRec       // (n, hidden)
	logits []float32          // (n, r)
}

func newReadRec(c Config) readRec {
	return readRec{ln: layer.NewLayerNormRec(c.InputTokens, c.Dim), mlp: layer.NewMLPRec(c.InputTokens, c.SummariserHidden), logits: make([]float32, c.InputTokens*c.OutputTokens)}
}

// logits computes the read logits (n, r) of the input rows; pack as for
// dense.forward.
func (m *Concat) logits(rc *readRec, input, pack []float32) {
	c := m.cfg
	rc.ln.Forward(&m.p.read.LN, input, c.InputTokens, c.Dim, float32(c.LayerNormEps))
	rc.mlp.Forward(&m.p.read.MLP, rc.logits, rc.ln.Out, c.InputTokens, pack)
}

// read appends input and its logits (as columns) to mem and logT, whose
// rows hold `used` rows and have room for `stride`, fills the weights a
// (r, used+n) and writes Z (r, d) = a·mem.
func (m *Concat) read(z, a, mem, logT []float32, used, stride int, input []float32, rc *readRec) {
	c := m.cfg
	n, r, d := c.InputTokens, c.OutputTokens, c.Dim
	copy(mem[used*d:(used+n)*d], input)
	for i := 0; i < n; i++ {
		for j := 0; j < r; j++ {
			logT[j*stride+used+i] = rc.logits[i*r+j]
		}
	}
	rows := used + n
	for j := 0; j < r; j++ {
		copy(a[j*rows:(j+1)*rows], logT[j*stride:j*stride+rows])
	}
	nn.SoftmaxRowsForward(a[:r*rows], r, rows)
	// Z (r, d) = A (r, N) · V (N, d)
	nn.Gemm(false, false, r, d, rows, 1, a, rows, mem, d, 0, z, d)
}

type concatRunner struct {
	m    *Concat
	st   *stack
	rc   readRec
	rec  stackRec
	a    []float32 // (r, N)
	z, y []float32 // (r, d)
	pack []float32 // packed-product scratch
}

func (m *Concat) NewRunner() Runner {
	c := m.cfg
	return &concatRunner{
		m: m, st: newStack(&m.p.enc, c, c.OutputTokens, false), rc: newReadRec(c),
		rec: newStackRec(c, c.OutputTokens, c.OutputTokens, false),
		a:   make([]float32, c.OutputTokens*c.MaxSteps*c.InputTokens),
		z:   make([]float32, c.OutputTokens*c.Dim), y: make([]float32, c.OutputTokens*c.Dim),
		pack: make([]float32, nn.PackScratchSize(max(c.Dim, c.SummariserHidden))),
	}
}

func (r *concatRunner) Step(s State, input, output []float32) {
	m, c := r.m, r.m.cfg
	checkStep("concat", c, input, output)
	ms := memStateOf(s, c)
	m.prepack()
	ms.reserve(ms.steps + 1)
	used := ms.steps * c.InputTokens
	r.a = grow(r.a, c.OutputTokens*(used+c.InputTokens))
	m.logits(&r.rc, input, r.pack)
	m.read(r.z, r.a, ms.mem, ms.logT, used, ms.rows(), input, &r.rc)
	nn.Add(r.z, m.p.encPos)
	r.st.forward(&r.rec, output, r.z, c.OutputTokens, nil, nil, 0, nil)
	ms.steps++
}

// concatTape keeps its own copy of the memory the window reads: the
// State's rows and logits at the window's first step (constants), then the
// rows each recorded step appends (which get the gradient of every later
// step's read).
type concatTape struct {
	m      *Concat
	g      concatParams
	gt     layer.Table
	st     *stack
	rec    []concatRec
	len    int
	first  int       // memory rows at the window's first step
	stride int       // rows of room in mem and logT
	mem    []float32 // (stride, d)
	logT   []float32 // (r, stride)
	dMem   []float32 // (steps·n, d): dL/d(rows appended in the window)
	dLogT  []float32 // (r, steps·n): dL/d(their logits)
	fresh  bool      // a Forward ran since the last Backward: dMem, dLogT need clearing
	z, y   []float32 // (r, d)
	dA     []float32 // (r, N)
	dX     []float32 // (r, d)
	dLog   []float32 // (n, r)
	dLN    []float32 // (n, d)
	dHid   []float32 // (n, hidden)
	dPre   []float32 // (n, hidden)
}

type concatRec struct {
	read readRec
	a    []float32 // (r, N): the read's weights
	enc  stackRec
}

func (m *Concat) NewTape(steps int) Tape {
	if steps <= 0 {
		panic(fmt.Sprintf("seq: concat NewTape: %d steps, want > 0", steps))
	}
	c := m.cfg
	n, r, d, h := c.InputTokens, c.OutputTokens, c.Dim, c.SummariserHidden
	t := &concatTape{
		m: m, st: newStack(&m.p.enc, c, r, true), rec: make([]concatRec, steps),
		dMem: make([]float32, steps*n*d), dLogT: make([]float32, r*steps*n),
		z: make([]float32, r*d), y: make([]float32, r*d), dX: make([]float32, r*d),
		dLog: make([]float32, n*r), dLN: make([]float32, n*d), dHid: make([]float32, n*h), dPre: make([]float32, n*h),
	}
	for i := range t.rec {
		t.rec[i] = concatRec{read: newReadRec(c), enc: newStackRec(c, r, r, true)}
	}
	t.g.register(&t.gt, c)
	return t
}

func (t *concatTape) Reset() { t.len = 0 }

func (t *concatTape) Forward(s State, input, output []float32) {
	m, c := t.m, t.m.cfg
	checkStep("concat", c, input, output)
	checkTapeRoom("concat", t.len, len(t.rec))
	ms := memStateOf(s, c)
	n, r, d := c.InputTokens, c.OutputTokens, c.Dim
	if t.len == 0 {
		t.first = ms.steps * n
		t.stride = t.first + len(t.rec)*n
		t.mem = grow(t.mem, t.stride*d)
		t.logT = grow(t.logT, r*t.stride)
		copy(t.mem, ms.mem[:t.first*d])
		for j := 0; j < r; j++ {
			copy(t.logT[j*t.stride:j*t.stride+t.first], ms.logT[j*ms.rows():])
		}
	} else if ms.steps*n != t.first+t.len*n {
		panic(fmt.Sprintf("seq: concat Tape.Forward: the state has taken %d steps, the tape expected %d: a tape's steps run on one state in order",
			ms.steps, t.first/n+t.len))
	}
	used := t.first + t.len*n
	rec := &t.rec[t.len]
	rec.a = grow(rec.a, r*(used+n))
	m.logits(&rec.read, input, nil)
	m.read(t.z, rec.a, t.mem, t.logT, used, t.stride, input, &rec.read)
	nn.Add(t.z, m.p.encPos)
	t.st.forward(&rec.enc, output, t.z, r, nil, nil, 0, nil)
	// The state appends the same row and logits.
	ms.reserve(ms.steps + 1)
	copy(ms.mem[used*d:], input)
	for j := 0; j < r; j++ {
		copy(ms.logT[j*ms.rows()+used:j*ms.rows()+used+n], t.logT[j*t.stride+used:])
	}
	ms.steps++
	t.fresh = true
	t.len++
}

func (t *concatTape) Backward(dOutput, dInput, grads []float32) {
	m, c := t.m, t.m.cfg
	checkBackward("concat", c, dOutput, dInput, grads, len(m.params), t.len)
	t.gt.Bind(grads)
	n, r, d := c.InputTokens, c.OutputTokens, c.Dim
	wn := len(t.rec) * n // window rows dMem and dLogT have room for
	if t.fresh {
		clear(t.dMem)
		clear(t.dLogT)
		t.fresh = false
	}
	s := t.len - 1
	rec := &t.rec[s]
	rows := t.first + (s+1)*n // N: what this step's read saw
	own := s * n              // this step's rows, counted from the window's first
	// Process: Z + P_proc -> O.
	clear(t.dX)
	t.st.backward(&rec.enc, &t.g.enc, t.dX, dOutput, r, nil, nil, nil, nil, 0)
	nn.Add(t.g.encPos, t.dX)
	// Z = A·V: dA (r, N) = dZ·Vᵀ; dV += Aᵀ·dZ for the window's rows.
	t.dA = grow(t.dA, r*rows)
	nn.Gemm(false, true, r, rows, d, 1, t.dX, d, t.mem, d, 0, t.dA, rows)
	if w := rows - t.first; w > 0 {
		nn.Gemm(true, false, w, d, r, 1, rec.a[t.first:], rows, t.dX, d, 1, t.dMem, d)
	}
	nn.SoftmaxRowsBackward(t.dA, rec.a, r, rows)
	for j := 0; j < r; j++ {
		nn.Add(t.dLogT[j*wn:j*wn+rows-t.first], t.dA[j*rows+t.first:(j+1)*rows])
	}
	// This step's rows are complete: later steps have been popped.
	for i := 0; i < n; i++ {
		for j := 0; j < r; j++ {
			t.dLog[i*r+j] = t.dLogT[j*wn+own+i]
		}
	}
	clear(t.dLN)
	rec.read.mlp.Backward(&m.p.read.MLP, &t.g.read.MLP, t.dLN, t.dLog, rec.read.ln.Out, t.dHid, t.dPre, n)
	copy(dInput, t.dMem[own*d:(own+n)*d])
	rec.read.ln.Backward(&m.p.read.LN, &t.g.read.LN, dInput, t.dLN, n, d)
	t.len--
}
