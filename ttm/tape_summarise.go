package ttm

import (
	"github.com/ttmrobot/ttm/internal/layer"
	"github.com/ttmrobot/ttm/internal/nn"
)

// Recording forward and backward passes of the summarisers and of the
// add/erase write. N = input rows, K = output rows, h = hidden width.

// A tapeSummariser is a summariser that keeps, for each step s of a Tape,
// what its backward pass needs. backward accumulates dL/d(in) into dIn
// given dOut = dL/d(out) and the step's input in again; it accumulates its
// parameter gradients into the gradient views it was built with.
type tapeSummariser interface {
	forward(s int, out, in []float32)        // out (K, d), in (N, d)
	backward(s int, dIn, dOut, in []float32) // dIn (N, d), dOut (K, d)
}

var (
	_ tapeSummariser = (*tlTape)(nil)
	_ tapeSummariser = (*queryAttentionTape)(nil)
	_ tapeSummariser = (*poolTape)(nil)
)

// tlTape is TokenLearner v1.1 on one goroutine (layer.TokenLearnerForward).
type tlTape struct {
	p, g *layer.TokenLearner // weights, gradients
	eps  float32
	rec  []*layer.TokenLearnerRec
	sc   *layer.TokenLearnerScratch
}

func newTLTape(p, g *layer.TokenLearner, n, k int, c Config, steps int) *tlTape {
	d, h := c.Dim, c.SummariserHidden
	t := &tlTape{p: p, g: g, eps: float32(c.LayerNormEps), rec: make([]*layer.TokenLearnerRec, steps), sc: layer.NewTokenLearnerScratch(n, d, h, k)}
	for i := range t.rec {
		t.rec[i] = layer.NewTokenLearnerRec(n, d, h, k)
	}
	return t
}

func (t *tlTape) forward(s int, out, in []float32) {
	layer.TokenLearnerForward(out, t.rec[s], in, t.p, t.eps)
}

func (t *tlTape) backward(s int, dIn, dOut, in []float32) {
	layer.TokenLearnerBackward(dIn, t.g, dOut, t.rec[s], t.sc, in, t.p)
}

// queryAttentionTape is TokenLearnerMHA (see queryAttention) with separate,
// unpacked query, key and value products.
type queryAttentionTape struct {
	p, g    *queryAttentionParams
	n, k, d int
	rec     []layer.AttentionRec
	sc      layer.AttentionScratch
}

func newQueryAttentionTape(p, g *queryAttentionParams, n, k int, c Config, steps int) *queryAttentionTape {
	d, heads := c.Dim, p.attn.Heads
	t := &queryAttentionTape{p: p, g: g, n: n, k: k, d: d, rec: make([]layer.AttentionRec, steps), sc: layer.NewAttentionScratch(k, n, d, heads)}
	for i := range t.rec {
		t.rec[i] = layer.NewAttentionRec(k, n, d, heads)
	}
	return t
}

func (t *queryAttentionTape) forward(s int, out, in []float32) {
	t.rec[s].Forward(&t.p.attn, out, t.p.tokens, in, t.k, t.n, t.d)
}

func (t *queryAttentionTape) backward(s int, dIn, dOut, in []float32) {
	t.rec[s].Backward(&t.p.attn, &t.g.attn, &t.sc, t.g.tokens, dIn, dOut, t.p.tokens, in, t.k, t.n, t.d)
}

// poolTape is the parameter-free poolSummariser; it keeps nothing.
type poolTape struct {
	poolSummariser
}

func (t *poolTape) forward(_ int, out, in []float32) { t.summarise(out, in) }

// backward spreads each output row's gradient evenly over the rows of its
// group (groups may overlap, so contributions add).
func (t *poolTape) backward(_ int, dIn, dOut, _ []float32) {
	n, k, d := t.n, t.k, t.d
	for g := 0; g < k; g++ {
		start := g * n / k
		end := ((g+1)*n + k - 1) / k
		inv := 1 / float32(end-start)
		src := dOut[g*d : g*d+d]
		for i := start; i < end; i++ {
			dst := dIn[i*d : i*d+d]
			for j, v := range src {
				dst[j] += v * inv
			}
		}
	}
}

// addEraseTape is the TL-AddErase write (see addEraseWriter) on one
// goroutine. Kw = write heads.
type addEraseTape struct {
	p, g              *addEraseParams
	m, n, r, d, h, kw int
	eps               float32
	rec               []aeRec

	sel     []float32 // (m, Kw): select logits
	dW      []float32 // (Kw, m)
	dSel    []float32 // (m, Kw)
	dSelHid []float32 // (m, h)
	dSelPre []float32 // (m, h)
	dLnM    []float32 // (m, d)
	dErase  []float32 // (Kw, d)
	dAdd    []float32 // (Kw, d)
	dChHid  []float32 // (Kw, h)
	dChPre  []float32 // (Kw, h)
	dMixed  []float32 // (Kw, d)
	dTokHid []float32 // (h, d)
	dTokPre []float32 // (h, d)
	dLnO    []float32 // (r, d)
	prefix  []float32 // (Kw+1): running products of the erase factors
}

type aeRec struct {
	lnM        layer.LayerNormRec // (m, d): LN_0(M)
	sel        layer.MLPRec       // (m, h)
	w          []float32          // (Kw, m): write weights
	erase, add aeHeadRec
}

// aeHeadRec keeps one of the head-vector paths, (Kw, d) = MLP_ch(MLP_tok(LN(O)ᵀ)ᵀ).
type aeHeadRec struct {
	ln    layer.LayerNormRec // (r, d)
	tok   layer.MLPRec       // (h, d), along the token axis
	mixed []float32          // (Kw, d)
	ch    layer.MLPRec       // (Kw, h)
	vec   []float32          // (Kw, d): e or a
}

func newAddEraseTape(p, g *addEraseParams, c Config, steps int) *addEraseTape {
	m, r, d, h, kw := c.MemorySize, c.ProcessSize, c.Dim, c.SummariserHidden, c.WriteHeads
	t := &addEraseTape{
		p: p, g: g, m: m, n: c.InputTokens, r: r, d: d, h: h, kw: kw, eps: float32(c.LayerNormEps),
		rec: make([]aeRec, steps),
		sel: make([]float32, m*kw), dW: make([]float32, kw*m), dSel: make([]float32, m*kw),
		dSelHid: make([]float32, m*h), dSelPre: make([]float32, m*h), dLnM: make([]float32, m*d),
		dErase: make([]float32, kw*d), dAdd: make([]float32, kw*d),
		dChHid: make([]float32, kw*h), dChPre: make([]float32, kw*h), dMixed: make([]float32, kw*d),
		dTokHid: make([]float32, h*d), dTokPre: make([]float32, h*d), dLnO: make([]float32, r*d),
		prefix: make([]float32, kw+1),
	}
	head := func() aeHeadRec {
		return aeHeadRec{
			ln: layer.NewLayerNormRec(r, d), tok: layer.NewMLPRec(h, d), mixed: make([]float32, kw*d),
			ch: layer.NewMLPRec(kw, h), vec: make([]float32, kw*d),
		}
	}
	for i := range t.rec {
		t.rec[i] = aeRec{
			lnM: layer.NewLayerNormRec(m, d), sel: layer.NewMLPRec(m, h), w: make([]float32, kw*m),
			erase: head(), add: head(),
		}
	}
	return t
}

// headForward fills hr from the output tokens o (r, d).
func (t *addEraseTape) headForward(hr *aeHeadRec, ln *layer.LayerNorm, tok, ch *layer.MLP, o []float32) {
	hr.ln.Forward(ln, o, t.r, t.d, t.eps)
	hr.tok.ForwardTokens(tok, hr.mixed, hr.ln.Out, t.d)
	hr.ch.Forward(ch, hr.vec, hr.mixed, t.kw, nil)
}

// headBackward accumulates dL/dO into dO given dVec = dL/d(head vectors).
func (t *addEraseTape) headBackward(dO, dVec []float32, hr *aeHeadRec, ln, gln *layer.LayerNorm, tok, gtok, ch, gch *layer.MLP) {
	clear(t.dMixed)
	hr.ch.Backward(ch, gch, t.dMixed, dVec, hr.mixed, t.dChHid, t.dChPre, t.kw)
	clear(t.dLnO)
	hr.tok.BackwardTokens(tok, gtok, t.dLnO, t.dMixed, hr.ln.Out, t.dTokHid, t.dTokPre, t.d)
	hr.ln.Backward(ln, gln, dO, t.dLnO, t.r, t.d)
}

// forward computes next (m, d) from the raw cat = [M ; I ; O], in the same
// order of operations as addEraseWriter.write.
func (t *addEraseTape) forward(s int, next, cat []float32) {
	rc, p := &t.rec[s], t.p
	m, d, kw := t.m, t.d, t.kw
	mem := cat[:m*d]
	o := cat[(m+t.n)*d : (m+t.n+t.r)*d]
	rc.lnM.Forward(&p.ln[0], mem, m, d, t.eps)
	rc.sel.Forward(&p.mlp[0], t.sel, rc.lnM.Out, m, nil)
	nn.Transpose(rc.w, t.sel, m, kw)
	nn.SoftmaxRowsForward(rc.w, kw, m)
	t.headForward(&rc.erase, &p.ln[1], &p.mlp[1], &p.mlp[2], o)
	t.headForward(&rc.add, &p.ln[2], &p.mlp[3], &p.mlp[4], o)
	addEraseCombine(next, mem, rc.w, rc.erase.vec, rc.add.vec, m, d, kw)
}

// backward accumulates into dCat (m+n+r, d) the gradient of the write with
// respect to its input [M ; I ; O] (the I rows take no part) given
// dNext = dL/dM' (m, d). With f_k = 1 - w[k,i] e[k,c] and
// M'[i,c] = M[i,c] Π_k f_k + mean_k (1 - w[k,i] a[k,c]):
//
//	dM[i,c]  += dM'·Π_k f_k
//	de[k,c]  -= dM'·M·Π_{j≠k} f_j · w[k,i]      (summed over i)
//	da[k,c]  -= dM'·w[k,i] / Kw                  (summed over i)
//	dw[k,i]  -= Σ_c dM'·(M·Π_{j≠k} f_j · e[k,c] + a[k,c] / Kw)
//
// Π_{j≠k} is taken from prefix and suffix products, without division.
func (t *addEraseTape) backward(s int, dCat, dNext, cat []float32) {
	rc, p, g := &t.rec[s], t.p, t.g
	m, d, kw := t.m, t.d, t.kw
	mem := cat[:m*d]
	dMem := dCat[:m*d]
	oOff := (m + t.n) * d
	dO := dCat[oOff : oOff+t.r*d]
	w, e, a := rc.w, rc.erase.vec, rc.add.vec
	clear(t.dW)
	clear(t.dErase)
	clear(t.dAdd)
	inv := 1 / float32(kw)
	pre := t.prefix
	for i := 0; i < m; i++ {
		gRow, mRow, dmRow := dNext[i*d:i*d+d], mem[i*d:i*d+d], dMem[i*d:i*d+d]
		for c, gv := range gRow {
			mv := mRow[c]
			pre[0] = 1
			for k := 0; k < kw; k++ {
				pre[k+1] = pre[k] * (1 - w[k*m+i]*e[k*d+c])
			}
			dmRow[c] += gv * pre[kw]
			suf := float32(1)
			for k := kw - 1; k >= 0; k-- {
				wk, ek := w[k*m+i], e[k*d+c]
				gm := gv * mv * pre[k] * suf
				t.dErase[k*d+c] -= gm * wk
				t.dAdd[k*d+c] -= gv * wk * inv
				t.dW[k*m+i] -= gm*ek + gv*a[k*d+c]*inv
				suf *= 1 - wk*ek
			}
		}
	}
	// w = softmax over m of MLP_0(LN_0(M))ᵀ.
	nn.SoftmaxRowsBackward(t.dW, w, kw, m)
	nn.Transpose(t.dSel, t.dW, kw, m)
	clear(t.dLnM)
	rc.sel.Backward(&p.mlp[0], &g.mlp[0], t.dLnM, t.dSel, rc.lnM.Out, t.dSelHid, t.dSelPre, m)
	rc.lnM.Backward(&p.ln[0], &g.ln[0], dMem, t.dLnM, m, d)

	t.headBackward(dO, t.dErase, &rc.erase, &p.ln[1], &g.ln[1], &p.mlp[1], &g.mlp[1], &p.mlp[2], &g.mlp[2])
	t.headBackward(dO, t.dAdd, &rc.add, &p.ln[2], &g.ln[2], &p.mlp[3], &g.mlp[3], &p.mlp[4], &g.mlp[4])
}
