package ttm

import (
	"github.com/ttmrobot/ttm/internal/layer"
	"github.com/ttmrobot/ttm/internal/nn"
)

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

// tokenLearner is TokenLearner v1.1 (layer.TokenLearner), each phase
// split across the nn worker team.
type tokenLearner struct {
	*layer.TokenLearnerRunner
}

func newTokenLearner(p *layer.TokenLearner, n, k int, c Config) *tokenLearner {
	return &tokenLearner{layer.NewTokenLearnerRunner(p, n, k, c.Dim, float32(c.LayerNormEps))}
}

func (t *tokenLearner) summarise(out, in []float32) { t.Forward(out, in) }

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
		att: make([]float32, p.attn.Heads*k*n), o: make([]float32, k*d), packScratch: pack,
	}
}

func (s *queryAttention) summarise(out, in []float32) {
	s.p.attn.CrossAttention(out, s.q, s.kv, s.att, s.o, s.p.tokens, in, s.k, s.n, s.d, s.packScratch)
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
func (a *addEraseWriter) headVectors(dst []float32, ln *layer.LayerNorm, tok, ch *layer.MLP, o []float32) {
	ln.Forward(a.lnO, o, a.r, a.d, a.eps)
	tok.ForwardTokens(a.mixed, a.tokHidden, a.lnO, a.d)
	ch.Forward(dst, a.chHidden, a.mixed, a.kw, a.packScratch)
}

// write computes next (m, d) from the raw cat = [M ; I ; O].
func (a *addEraseWriter) write(next, cat []float32) {
	m, d, kw := a.m, a.d, a.kw
	mem := cat[:m*d]
	o := cat[(m+a.n)*d : (m+a.n+a.r)*d]
	a.p.ln[0].Forward(a.lnM, mem, m, d, a.eps)
	a.p.mlp[0].Forward(a.sel, a.selHidden, a.lnM, m, a.packScratch)
	nn.Transpose(a.w, a.sel, m, kw)
	nn.SoftmaxRowsForward(a.w, kw, m)
	a.headVectors(a.erase, &a.p.ln[1], &a.p.mlp[1], &a.p.mlp[2], o)
	a.headVectors(a.add, &a.p.ln[2], &a.p.mlp[3], &a.p.mlp[4], o)
	addEraseCombine(next, mem, a.w, a.erase, a.add, m, d, kw)
}

// addEraseCombine writes next (m, d) from the memory mem (m, d), the write
// weights w (Kw, m) and the erase and add vectors e, a (Kw, d):
//
//	M'[i,c] = M[i,c] Π_k (1 - w[k,i] e[k,c]) + mean_k (1 - w[k,i] a[k,c])
func addEraseCombine(next, mem, w, e, a []float32, m, d, kw int) {
	inv := 1 / float32(kw)
	for i := 0; i < m; i++ {
		dst := next[i*d : i*d+d]
		copy(dst, mem[i*d:i*d+d])
		for k := 0; k < kw; k++ {
			wk := w[k*m+i]
			ek := e[k*d : k*d+d]
			for c := range dst {
				dst[c] *= 1 - wk*ek[c]
			}
		}
		for k := 0; k < kw; k++ {
			wk := w[k*m+i]
			ak := a[k*d : k*d+d]
			for c := range dst {
				dst[c] += (1 - wk*ak[c]) * inv
			}
		}
	}
}
