package ttm

import "github.com/ttmrobot/ttm/internal/nn"

// A summariser turns N tokens into K tokens: out (K, d) from in (N, d).
// N and K are fixed when it is built.
type summariser interface {
	summarise(out, in []float32)
}

var (
	_ summariser = (*tokenLearner)(nil)
	_ summariser = (*queryAttention)(nil)
	_ summariser = (*poolSummariser)(nil)
)

// tokenLearner is TokenLearner v1.1:
//
//	Vn = LayerNorm(V); L = Dense_1(gelu(Dense_0(Vn)))   (N, K)
//	A  = softmax of Lᵀ over the N rows                   (K, N)
//	Z  = A·V                                             (K, d), on the raw V
//
// Each phase is split across the nn worker team: rows of V for the first,
// rows of A for the other two.
type tokenLearner struct {
	p       *tokenLearnerParams
	n, k, d int
	eps     float32
	ln      []float32 // (N, d)
	hidden  []float32 // (N, hidden)
	logits  []float32 // (N, K)
	weights []float32 // (K, N)

	in, out []float32 // of the summarise call in progress

	logitsTask, weightsTask, outTask nn.Task
}

func newTokenLearner(p *tokenLearnerParams, n, k int, c Config) *tokenLearner {
	d := c.Dim
	t := &tokenLearner{
		p: p, n: n, k: k, d: d, eps: float32(c.LayerNormEps),
		ln: make([]float32, n*d), hidden: make([]float32, n*c.SummariserHidden),
		logits: make([]float32, n*k), weights: make([]float32, k*n),
	}
	t.logitsTask, t.weightsTask, t.outTask = tlLogits{t}, tlWeights{t}, tlOut{t}
	return t
}

// Grain sizes: below these, splitting a phase costs more than it saves.
const (
	rowGrain    = 16
	columnGrain = 4
)

func (t *tokenLearner) summarise(out, in []float32) {
	t.in, t.out = in, out
	nn.ParallelFor(t.n, rowGrain, t.logitsTask)
	nn.ParallelFor(t.k, columnGrain, t.weightsTask)
	nn.ParallelFor(t.k, columnGrain, t.outTask)
	t.in, t.out = nil, nil
}

type (
	tlLogits  struct{ *tokenLearner }
	tlWeights struct{ *tokenLearner }
	tlOut     struct{ *tokenLearner }
)

// Run computes the logits of input rows [lo, hi).
func (t tlLogits) Run(lo, hi int) {
	d, h, k, rows := t.d, t.p.mlp.d0.out, t.k, hi-lo
	ln, hidden, logits := t.ln[lo*d:hi*d], t.hidden[lo*h:hi*h], t.logits[lo*k:hi*k]
	t.p.ln.forward(ln, t.in[lo*d:hi*d], rows, d, t.eps)
	d0, d1 := &t.p.mlp.d0, &t.p.mlp.d1
	nn.Dense(hidden, ln, d0.kernel, d0.bias, rows, d, h)
	nn.GELUForward(hidden, hidden)
	nn.Dense(logits, hidden, d1.kernel, d1.bias, rows, h, k)
}

// Run fills rows [lo, hi) of A: column j of L, softmaxed over the N rows.
func (t tlWeights) Run(lo, hi int) {
	n, k := t.n, t.k
	for j := lo; j < hi; j++ {
		row := t.weights[j*n : j*n+n]
		for i := range row {
			row[i] = t.logits[i*k+j]
		}
	}
	nn.SoftmaxRowsForward(t.weights[lo*n:hi*n], hi-lo, n)
}

// Run computes output rows [lo, hi) = A[lo:hi]·V.
func (t tlOut) Run(lo, hi int) {
	n, d := t.n, t.d
	nn.Gemm(false, false, hi-lo, d, n, 1, t.weights[lo*n:], n, t.in, d, 0, t.out[lo*d:], d)
}

// queryAttention is the reference's TokenLearnerMHA: K learned query tokens
// cross-attend over the N input tokens (no LayerNorm, no residual).
type queryAttention struct {
	p             *queryAttentionParams
	n, k, d       int
	q, kv, att, o []float32
	packScratch   []float32
}

func newQueryAttention(p *queryAttentionParams, n, k int, c Config, pack []float32) *queryAttention {
	d := c.Dim
	return &queryAttention{
		p: p, n: n, k: k, d: d,
		q: make([]float32, k*d), kv: make([]float32, 2*n*d),
		att: make([]float32, p.attn.heads*k*n), o: make([]float32, k*d), packScratch: pack,
	}
}

func (s *queryAttention) summarise(out, in []float32) {
	s.p.attn.crossAttention(out, s.q, s.kv, s.att, s.o, s.p.tokens, in, s.k, s.n, s.d, s.packScratch)
}

// poolSummariser is the parameter-free summariser of the paper's Table 4,
// which the reference code does not include. We define it as adaptive
// average pooling over the token axis: output k is the mean of input rows
// [floor(k·N/K), ceil((k+1)·N/K)), the definition of PyTorch's
// adaptive_avg_pool1d. Groups are contiguous, so unlike TokenLearner it
// depends on row order: memory rows come first, then input, then output.
type poolSummariser struct {
	n, k, d int
}

func (s *poolSummariser) summarise(out, in []float32) {
	n, k, d := s.n, s.k, s.d
	for g := 0; g < k; g++ {
		start := g * n / k
		end := ((g+1)*n + k - 1) / k
		o := out[g*d : g*d+d]
		clear(o)
		for i := start; i < end; i++ {
			nn.Add(o, in[i*d:i*d+d])
		}
		inv := 1 / float32(end-start)
		for j := range o {
			o[j] *= inv
		}
	}
}

// addEraseWriter is the reference's TokenAddEraseWrite: it keeps M and edits
// it with Kw soft write heads selected from M itself, driven by O:
//
//	w = softmax over the m rows of MLP_0(LN_0(M))          (Kw, m)
//	e = MLP_2(MLP_1(LN_1(O)ᵀ)ᵀ)                            (Kw, d)
//	a = MLP_4(MLP_3(LN_2(O)ᵀ)ᵀ)                            (Kw, d)
//	M' = M ⊙ Π_k (1 - w[k,i] e[k,c]) + mean_k (1 - w[k,i] a[k,c])
//
// The add term is the reference code's, not NTM's Σ_k w·a, and e and a are
// not squashed by a sigmoid. The input tokens I take no part in the write.
type addEraseWriter struct {
	p                 *addEraseParams
	m, n, r, d, h, kw int
	eps               float32
	lnM, selHidden    []float32 // (m, d), (m, h)
	sel, w            []float32 // (m, Kw), (Kw, m)
	lnO, tokHidden    []float32 // (r, d), (h, d)
	mixed, chHidden   []float32 // (Kw, d), (Kw, h)
	erase, add        []float32 // (Kw, d)
	packScratch       []float32
}

func newAddEraseWriter(p *addEraseParams, c Config, pack []float32) *addEraseWriter {
	m, r, d, h, kw := c.MemorySize, c.ProcessSize, c.Dim, c.SummariserHidden, c.WriteHeads
	return &addEraseWriter{
		p: p, m: m, n: c.InputTokens, r: r, d: d, h: h, kw: kw, eps: float32(c.LayerNormEps),
		lnM: make([]float32, m*d), selHidden: make([]float32, m*h),
		sel: make([]float32, m*kw), w: make([]float32, kw*m),
		lnO: make([]float32, r*d), tokHidden: make([]float32, h*d),
		mixed: make([]float32, kw*d), chHidden: make([]float32, kw*h),
		erase: make([]float32, kw*d), add: make([]float32, kw*d), packScratch: pack,
	}
}

// headVectors computes (Kw, d) = MLP_ch(MLP_tok(LN(O)ᵀ)ᵀ) into dst.
func (a *addEraseWriter) headVectors(dst []float32, ln *layerNorm, tok, ch *mlpBlock, o []float32) {
	ln.forward(a.lnO, o, a.r, a.d, a.eps)
	tok.forwardTokens(a.mixed, a.tokHidden, a.lnO, a.d)
	ch.forward(dst, a.chHidden, a.mixed, a.kw, a.packScratch)
}

// write computes next (m, d) from the raw cat = [M ; I ; O].
func (a *addEraseWriter) write(next, cat []float32) {
	m, d, kw := a.m, a.d, a.kw
	mem := cat[:m*d]
	o := cat[(m+a.n)*d : (m+a.n+a.r)*d]
	a.p.ln[0].forward(a.lnM, mem, m, d, a.eps)
	a.p.mlp[0].forward(a.sel, a.selHidden, a.lnM, m, a.packScratch)
	nn.Transpose(a.w, a.sel, m, kw)
	nn.SoftmaxRowsForward(a.w, kw, m)
	a.headVectors(a.erase, &a.p.ln[1], &a.p.mlp[1], &a.p.mlp[2], o)
	a.headVectors(a.add, &a.p.ln[2], &a.p.mlp[3], &a.p.mlp[4], o)
	inv := 1 / float32(kw)
	for i := 0; i < m; i++ {
		src := mem[i*d : i*d+d]
		dst := next[i*d : i*d+d]
		copy(dst, src)
		for k := 0; k < kw; k++ {
			wk := a.w[k*m+i]
			e := a.erase[k*d : k*d+d]
			for c := range dst {
				dst[c] *= 1 - wk*e[c]
			}
		}
		for k := 0; k < kw; k++ {
			wk := a.w[k*m+i]
			ad := a.add[k*d : k*d+d]
			for c := range dst {
				dst[c] += (1 - wk*ad[c]) * inv
			}
		}
	}
}
