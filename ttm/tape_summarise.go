package ttm

import "github.com/ttmrobot/ttm/internal/nn"

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

// tlTape is TokenLearner v1.1 (see tokenLearner) on one goroutine.
type tlTape struct {
	p, g       *tokenLearnerParams // weights, gradients
	n, k, d, h int
	eps        float32
	rec        []tlRec

	logits []float32 // (N, K)
	dA     []float32 // (K, N)
	dL     []float32 // (N, K)
	dHid   []float32 // (N, h)
	dPre   []float32 // (N, h)
	dLN    []float32 // (N, d)
}

type tlRec struct {
	ln         []float32 // (N, d): LayerNorm(V)
	mean, rstd []float32 // (N)
	pre, hid   []float32 // (N, h): Dense_0 output, its gelu
	a          []float32 // (K, N): softmax weights
}

func newTLTape(p, g *tokenLearnerParams, n, k int, c Config, steps int) *tlTape {
	d, h := c.Dim, c.SummariserHidden
	t := &tlTape{
		p: p, g: g, n: n, k: k, d: d, h: h, eps: float32(c.LayerNormEps), rec: make([]tlRec, steps),
		logits: make([]float32, n*k), dA: make([]float32, k*n), dL: make([]float32, n*k),
		dHid: make([]float32, n*h), dPre: make([]float32, n*h), dLN: make([]float32, n*d),
	}
	for i := range t.rec {
		t.rec[i] = tlRec{
			ln: make([]float32, n*d), mean: make([]float32, n), rstd: make([]float32, n),
			pre: make([]float32, n*h), hid: make([]float32, n*h), a: make([]float32, k*n),
		}
	}
	return t
}

func (t *tlTape) forward(s int, out, in []float32) {
	r, p := &t.rec[s], t.p
	n, k, d, h := t.n, t.k, t.d, t.h
	nn.LayerNormForward(r.ln, r.mean, r.rstd, in, p.ln.scale, p.ln.bias, n, d, t.eps)
	nn.Dense(r.pre, r.ln, p.mlp.d0.kernel, p.mlp.d0.bias, n, d, h)
	nn.GELUForward(r.hid, r.pre)
	nn.Dense(t.logits, r.hid, p.mlp.d1.kernel, p.mlp.d1.bias, n, h, k)
	nn.Transpose(r.a, t.logits, n, k)
	nn.SoftmaxRowsForward(r.a, k, n)
	// out (K, d) = A (K, N) · V (N, d)
	nn.Gemm(false, false, k, d, n, 1, r.a, n, in, d, 0, out, d)
}

func (t *tlTape) backward(s int, dIn, dOut, in []float32) {
	r, p, g := &t.rec[s], t.p, t.g
	n, k, d, h := t.n, t.k, t.d, t.h
	// Z = A·V: dA (K, N) = dZ·Vᵀ, dV += Aᵀ·dZ.
	nn.Gemm(false, true, k, n, d, 1, dOut, d, in, d, 0, t.dA, n)
	nn.Gemm(true, false, n, d, k, 1, r.a, n, dOut, d, 1, dIn, d)
	nn.SoftmaxRowsBackward(t.dA, r.a, k, n)
	nn.Transpose(t.dL, t.dA, k, n)
	clear(t.dHid)
	nn.DenseBackward(t.dHid, g.mlp.d1.kernel, g.mlp.d1.bias, t.dL, r.hid, p.mlp.d1.kernel, n, h, k)
	clear(t.dPre)
	nn.GELUBackward(t.dPre, t.dHid, r.pre, r.hid)
	clear(t.dLN)
	nn.DenseBackward(t.dLN, g.mlp.d0.kernel, g.mlp.d0.bias, t.dPre, r.ln, p.mlp.d0.kernel, n, d, h)
	nn.LayerNormBackward(dIn, g.ln.scale, g.ln.bias, t.dLN, in, p.ln.scale, r.mean, r.rstd, n, d)
}

// queryAttentionTape is TokenLearnerMHA (see queryAttention) with separate,
// unpacked query, key and value products.
type queryAttentionTape struct {
	p, g    *queryAttentionParams
	n, k, d int
	heads   int
	rec     []qaRec

	dO, dQ []float32 // (K, d)
	dK, dV []float32 // (N, d)
	dAtt   []float32 // (H, K, N)
}

type qaRec struct {
	q, o []float32 // (K, d): projected queries, attention output before Wo
	k, v []float32 // (N, d)
	att  []float32 // (H, K, N)
}

func newQueryAttentionTape(p, g *queryAttentionParams, n, k int, c Config, steps int) *queryAttentionTape {
	d, heads := c.Dim, p.attn.heads
	t := &queryAttentionTape{
		p: p, g: g, n: n, k: k, d: d, heads: heads, rec: make([]qaRec, steps),
		dO: make([]float32, k*d), dQ: make([]float32, k*d),
		dK: make([]float32, n*d), dV: make([]float32, n*d), dAtt: make([]float32, heads*k*n),
	}
	for i := range t.rec {
		t.rec[i] = qaRec{
			q: make([]float32, k*d), o: make([]float32, k*d),
			k: make([]float32, n*d), v: make([]float32, n*d), att: make([]float32, heads*k*n),
		}
	}
	return t
}

func (t *queryAttentionTape) forward(s int, out, in []float32) {
	r, a := &t.rec[s], &t.p.attn
	n, k, d := t.n, t.k, t.d
	nn.Dense(r.q, t.p.tokens, a.query.kernel, a.query.bias, k, d, d)
	nn.Dense(r.k, in, a.key.kernel, a.key.bias, n, d, d)
	nn.Dense(r.v, in, a.value.kernel, a.value.bias, n, d, d)
	nn.AttentionForward(r.o, r.att, r.q, r.k, r.v, k, n, d, t.heads, d, d)
	nn.Dense(out, r.o, a.out.kernel, a.out.bias, k, d, d)
}

func (t *queryAttentionTape) backward(s int, dIn, dOut, in []float32) {
	r, a, ga := &t.rec[s], &t.p.attn, &t.g.attn
	n, k, d := t.n, t.k, t.d
	clear(t.dO)
	nn.DenseBackward(t.dO, ga.out.kernel, ga.out.bias, dOut, r.o, a.out.kernel, k, d, d)
	clear(t.dQ)
	clear(t.dK)
	clear(t.dV)
	nn.AttentionBackward(t.dQ, t.dK, t.dV, t.dAtt, t.dO, r.att, r.q, r.k, r.v, k, n, d, t.heads, d, d)
	nn.DenseBackward(t.g.tokens, ga.query.kernel, ga.query.bias, t.dQ, t.p.tokens, a.query.kernel, k, d, d)
	nn.DenseBackward(dIn, ga.key.kernel, ga.key.bias, t.dK, in, a.key.kernel, n, d, d)
	nn.DenseBackward(dIn, ga.value.kernel, ga.value.bias, t.dV, in, a.value.kernel, n, d, d)
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
	lnM            []float32 // (m, d): LN_0(M)
	meanM, rstdM   []float32 // (m)
	selPre, selHid []float32 // (m, h)
	w              []float32 // (Kw, m): write weights
	erase, add     aeHeadRec
}

// aeHeadRec keeps one of the head-vector paths, (Kw, d) = MLP_ch(MLP_tok(LN(O)ᵀ)ᵀ).
type aeHeadRec struct {
	ln             []float32 // (r, d)
	mean, rstd     []float32 // (r)
	tokPre, tokHid []float32 // (h, d)
	mixed          []float32 // (Kw, d)
	chPre, chHid   []float32 // (Kw, h)
	vec            []float32 // (Kw, d): e or a
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
			ln: make([]float32, r*d), mean: make([]float32, r), rstd: make([]float32, r),
			tokPre: make([]float32, h*d), tokHid: make([]float32, h*d), mixed: make([]float32, kw*d),
			chPre: make([]float32, kw*h), chHid: make([]float32, kw*h), vec: make([]float32, kw*d),
		}
	}
	for i := range t.rec {
		t.rec[i] = aeRec{
			lnM: make([]float32, m*d), meanM: make([]float32, m), rstdM: make([]float32, m),
			selPre: make([]float32, m*h), selHid: make([]float32, m*h), w: make([]float32, kw*m),
			erase: head(), add: head(),
		}
	}
	return t
}

// headForward fills hr from the output tokens o (r, d).
func (t *addEraseTape) headForward(hr *aeHeadRec, ln *layerNorm, tok, ch *mlpBlock, o []float32) {
	r, d, h, kw := t.r, t.d, t.h, t.kw
	nn.LayerNormForward(hr.ln, hr.mean, hr.rstd, o, ln.scale, ln.bias, r, d, t.eps)
	nn.DenseTokens(hr.tokPre, hr.ln, tok.d0.kernel, tok.d0.bias, r, d, h)
	nn.GELUForward(hr.tokHid, hr.tokPre)
	nn.DenseTokens(hr.mixed, hr.tokHid, tok.d1.kernel, tok.d1.bias, h, d, kw)
	nn.Dense(hr.chPre, hr.mixed, ch.d0.kernel, ch.d0.bias, kw, d, h)
	nn.GELUForward(hr.chHid, hr.chPre)
	nn.Dense(hr.vec, hr.chHid, ch.d1.kernel, ch.d1.bias, kw, h, d)
}

// headBackward accumulates dL/dO into dO given dVec = dL/d(head vectors).
func (t *addEraseTape) headBackward(dO, dVec []float32, hr *aeHeadRec, ln, gln *layerNorm, tok, gtok, ch, gch *mlpBlock, o []float32) {
	r, d, h, kw := t.r, t.d, t.h, t.kw
	clear(t.dChHid)
	nn.DenseBackward(t.dChHid, gch.d1.kernel, gch.d1.bias, dVec, hr.chHid, ch.d1.kernel, kw, h, d)
	clear(t.dChPre)
	nn.GELUBackward(t.dChPre, t.dChHid, hr.chPre, hr.chHid)
	clear(t.dMixed)
	nn.DenseBackward(t.dMixed, gch.d0.kernel, gch.d0.bias, t.dChPre, hr.mixed, ch.d0.kernel, kw, d, h)
	clear(t.dTokHid)
	nn.DenseTokensBackward(t.dTokHid, gtok.d1.kernel, gtok.d1.bias, t.dMixed, hr.tokHid, tok.d1.kernel, h, d, kw)
	clear(t.dTokPre)
	nn.GELUBackward(t.dTokPre, t.dTokHid, hr.tokPre, hr.tokHid)
	clear(t.dLnO)
	nn.DenseTokensBackward(t.dLnO, gtok.d0.kernel, gtok.d0.bias, t.dTokPre, hr.ln, tok.d0.kernel, r, d, h)
	nn.LayerNormBackward(dO, gln.scale, gln.bias, t.dLnO, o, ln.scale, hr.mean, hr.rstd, r, d)
}

// forward computes next (m, d) from the raw cat = [M ; I ; O], in the same
// order of operations as addEraseWriter.write.
func (t *addEraseTape) forward(s int, next, cat []float32) {
	rc, p := &t.rec[s], t.p
	m, d, h, kw := t.m, t.d, t.h, t.kw
	mem := cat[:m*d]
	o := cat[(m+t.n)*d : (m+t.n+t.r)*d]
	nn.LayerNormForward(rc.lnM, rc.meanM, rc.rstdM, mem, p.ln[0].scale, p.ln[0].bias, m, d, t.eps)
	nn.Dense(rc.selPre, rc.lnM, p.mlp[0].d0.kernel, p.mlp[0].d0.bias, m, d, h)
	nn.GELUForward(rc.selHid, rc.selPre)
	nn.Dense(t.sel, rc.selHid, p.mlp[0].d1.kernel, p.mlp[0].d1.bias, m, h, kw)
	nn.Transpose(rc.w, t.sel, m, kw)
	nn.SoftmaxRowsForward(rc.w, kw, m)
	t.headForward(&rc.erase, &p.ln[1], &p.mlp[1], &p.mlp[2], o)
	t.headForward(&rc.add, &p.ln[2], &p.mlp[3], &p.mlp[4], o)
	w, e, a := rc.w, rc.erase.vec, rc.add.vec
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
	m, d, h, kw := t.m, t.d, t.h, t.kw
	mem := cat[:m*d]
	dMem := dCat[:m*d]
	oOff := (m + t.n) * d
	o, dO := cat[oOff:oOff+t.r*d], dCat[oOff:oOff+t.r*d]
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
	clear(t.dSelHid)
	nn.DenseBackward(t.dSelHid, g.mlp[0].d1.kernel, g.mlp[0].d1.bias, t.dSel, rc.selHid, p.mlp[0].d1.kernel, m, h, kw)
	clear(t.dSelPre)
	nn.GELUBackward(t.dSelPre, t.dSelHid, rc.selPre, rc.selHid)
	clear(t.dLnM)
	nn.DenseBackward(t.dLnM, g.mlp[0].d0.kernel, g.mlp[0].d0.bias, t.dSelPre, rc.lnM, p.mlp[0].d0.kernel, m, d, h)
	nn.LayerNormBackward(dMem, g.ln[0].scale, g.ln[0].bias, t.dLnM, mem, p.ln[0].scale, rc.meanM, rc.rstdM, m, d)

	t.headBackward(dO, t.dErase, &rc.erase, &p.ln[1], &g.ln[1], &p.mlp[1], &g.mlp[1], &p.mlp[2], &g.mlp[2], o)
	t.headBackward(dO, t.dAdd, &rc.add, &p.ln[2], &g.ln[2], &p.mlp[3], &g.mlp[3], &p.mlp[4], &g.mlp[4], o)
}
