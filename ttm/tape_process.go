package ttm

import "github.com/ttmrobot/ttm/internal/nn"

// Recording forward and backward passes of the processing units.
// r = tokens, d = channels, f = MLP width, H = heads, t = mixer token width.

// A tapeProcessor is a processor that keeps, for each step s of a Tape, what
// its backward pass needs. backward accumulates dL/d(in) into dIn given
// dOut = dL/d(out), and its parameter gradients into the gradient views it
// was built with; dOut is not modified.
type tapeProcessor interface {
	forward(s int, out, in []float32)    // out, in (r, d)
	backward(s int, dIn, dOut []float32) // dIn, dOut (r, d)
}

var (
	_ tapeProcessor = (*transformerTape)(nil)
	_ tapeProcessor = (*mixerTape)(nil)
	_ tapeProcessor = (*mlpTape)(nil)
)

// lnRec keeps one LayerNorm's input and statistics (and its output, which
// the next product needs).
type lnRec struct {
	in, out    []float32 // (rows, d)
	mean, rstd []float32 // (rows)
}

func newLNRec(rows, d int) lnRec {
	return lnRec{in: make([]float32, rows*d), out: make([]float32, rows*d), mean: make([]float32, rows), rstd: make([]float32, rows)}
}

// forward normalises x into rc.out, keeping a copy of x.
func (rc *lnRec) forward(ln *layerNorm, x []float32, rows, d int, eps float32) {
	copy(rc.in, x)
	nn.LayerNormForward(rc.out, rc.mean, rc.rstd, rc.in, ln.scale, ln.bias, rows, d, eps)
}

// backward accumulates dL/dx into dIn given dOut = dL/d(rc.out).
func (rc *lnRec) backward(dIn, dOut []float32, ln, g *layerNorm, rows, d int) {
	nn.LayerNormBackward(dIn, g.scale, g.bias, dOut, rc.in, ln.scale, rc.mean, rc.rstd, rows, d)
}

// mlpRec keeps an mlpBlock's hidden layer before and after gelu.
type mlpRec struct {
	pre, hid []float32 // (rows, hidden)
}

func newMLPRec(rows, hidden int) mlpRec {
	return mlpRec{pre: make([]float32, rows*hidden), hid: make([]float32, rows*hidden)}
}

// mlpScratch is the backward scratch of an mlpBlock.
type mlpScratch struct {
	dHid, dPre []float32 // (rows, hidden)
}

func newMLPScratch(rows, hidden int) mlpScratch {
	return mlpScratch{dHid: make([]float32, rows*hidden), dPre: make([]float32, rows*hidden)}
}

// forward computes out (rows, d1.out) = Dense_1(gelu(Dense_0(in))) with the
// unpacked kernels.
func (rc *mlpRec) forward(b *mlpBlock, out, in []float32, rows int) {
	nn.Dense(rc.pre, in, b.d0.kernel, b.d0.bias, rows, b.d0.in, b.d0.out)
	nn.GELUForward(rc.hid, rc.pre)
	nn.Dense(out, rc.hid, b.d1.kernel, b.d1.bias, rows, b.d1.in, b.d1.out)
}

// backward accumulates dL/d(in) into dIn and the block's gradients into g.
func (rc *mlpRec) backward(sc *mlpScratch, dIn, dOut, in []float32, b, g *mlpBlock, rows int) {
	clear(sc.dHid)
	nn.DenseBackward(sc.dHid, g.d1.kernel, g.d1.bias, dOut, rc.hid, b.d1.kernel, rows, b.d1.in, b.d1.out)
	clear(sc.dPre)
	nn.GELUBackward(sc.dPre, sc.dHid, rc.pre, rc.hid)
	nn.DenseBackward(dIn, g.d0.kernel, g.d0.bias, sc.dPre, in, b.d0.kernel, rows, b.d0.in, b.d0.out)
}

// transformerTape is transformerUnit on one goroutine.
type transformerTape struct {
	p, g  *params
	r, d  int
	heads int
	eps   float32
	rec   []transformerRec

	x, z       []float32 // (r, d): residual stream, branch output
	dx, dY, dO []float32 // (r, d)
	dQ, dK, dV []float32 // (r, d)
	dAtt       []float32 // (H, r, r)
	mlp        mlpScratch
}

type transformerRec struct {
	blocks []encoderRec
	final  lnRec
}

type encoderRec struct {
	ln0     lnRec     // on the stream entering the block
	q, k, v []float32 // (r, d)
	att     []float32 // (H, r, r)
	o       []float32 // (r, d): attention output before Wo
	ln1     lnRec     // on the stream after the attention residual
	mlp     mlpRec    // (r, f)
}

func newTransformerTape(p, g *params, c Config, steps int) *transformerTape {
	r, d, f, heads := c.ProcessSize, c.Dim, c.MLPDim, c.NumHeads
	t := &transformerTape{
		p: p, g: g, r: r, d: d, heads: heads, eps: float32(c.LayerNormEps), rec: make([]transformerRec, steps),
		x: make([]float32, r*d), z: make([]float32, r*d),
		dx: make([]float32, r*d), dY: make([]float32, r*d), dO: make([]float32, r*d),
		dQ: make([]float32, r*d), dK: make([]float32, r*d), dV: make([]float32, r*d),
		dAtt: make([]float32, heads*r*r), mlp: newMLPScratch(r, f),
	}
	for i := range t.rec {
		rc := &t.rec[i]
		rc.blocks = make([]encoderRec, len(p.enc))
		for l := range rc.blocks {
			rc.blocks[l] = encoderRec{
				ln0: newLNRec(r, d), ln1: newLNRec(r, d), mlp: newMLPRec(r, f),
				q: make([]float32, r*d), k: make([]float32, r*d), v: make([]float32, r*d),
				att: make([]float32, heads*r*r), o: make([]float32, r*d),
			}
		}
		rc.final = newLNRec(r, d)
	}
	return t
}

func (t *transformerTape) forward(s int, out, in []float32) {
	rc, r, d := &t.rec[s], t.r, t.d
	copy(t.x, in[:r*d])
	nn.Add(t.x, t.p.encPos)
	for l := range t.p.enc {
		b, br := &t.p.enc[l], &rc.blocks[l]
		br.ln0.forward(&b.ln0, t.x, r, d, t.eps)
		y := br.ln0.out
		nn.Dense(br.q, y, b.attn.query.kernel, b.attn.query.bias, r, d, d)
		nn.Dense(br.k, y, b.attn.key.kernel, b.attn.key.bias, r, d, d)
		nn.Dense(br.v, y, b.attn.value.kernel, b.attn.value.bias, r, d, d)
		nn.AttentionForward(br.o, br.att, br.q, br.k, br.v, r, r, d, t.heads, d, d)
		nn.Dense(t.z, br.o, b.attn.out.kernel, b.attn.out.bias, r, d, d)
		nn.Add(t.x, t.z)
		br.ln1.forward(&b.ln1, t.x, r, d, t.eps)
		br.mlp.forward(&b.mlp, t.z, br.ln1.out, r)
		nn.Add(t.x, t.z)
	}
	rc.final.forward(&t.p.encNorm, t.x, r, d, t.eps)
	copy(out, rc.final.out)
}

func (t *transformerTape) backward(s int, dIn, dOut []float32) {
	rc, r, d := &t.rec[s], t.r, t.d
	dx := t.dx
	clear(dx)
	rc.final.backward(dx, dOut, &t.p.encNorm, &t.g.encNorm, r, d)
	for l := len(t.p.enc) - 1; l >= 0; l-- {
		b, gb, br := &t.p.enc[l], &t.g.enc[l], &rc.blocks[l]
		// x += MLP(LN_1(x)): dx flows on and through the branch.
		clear(t.dY)
		br.mlp.backward(&t.mlp, t.dY, dx, br.ln1.out, &b.mlp, &gb.mlp, r)
		br.ln1.backward(dx, t.dY, &b.ln1, &gb.ln1, r, d)
		// x += MHA(LN_0(x)).
		a, ga := &b.attn, &gb.attn
		clear(t.dO)
		nn.DenseBackward(t.dO, ga.out.kernel, ga.out.bias, dx, br.o, a.out.kernel, r, d, d)
		clear(t.dQ)
		clear(t.dK)
		clear(t.dV)
		nn.AttentionBackward(t.dQ, t.dK, t.dV, t.dAtt, t.dO, br.att, br.q, br.k, br.v, r, r, d, t.heads, d, d)
		clear(t.dY)
		y := br.ln0.out
		nn.DenseBackward(t.dY, ga.query.kernel, ga.query.bias, t.dQ, y, a.query.kernel, r, d, d)
		nn.DenseBackward(t.dY, ga.key.kernel, ga.key.bias, t.dK, y, a.key.kernel, r, d, d)
		nn.DenseBackward(t.dY, ga.value.kernel, ga.value.bias, t.dV, y, a.value.kernel, r, d, d)
		br.ln0.backward(dx, t.dY, &b.ln0, &gb.ln0, r, d)
	}
	nn.Add(t.g.encPos, dx)
	nn.Add(dIn, dx)
}

// mixerTape is mixerUnit on one goroutine.
type mixerTape struct {
	p, g   *params
	r, d   int
	tokDim int
	eps    float32
	rec    []mixerRec

	x, z    []float32 // (r, d)
	dx, dY  []float32 // (r, d)
	dTokHid []float32 // (t, d)
	dTokPre []float32 // (t, d)
	mlp     mlpScratch
}

type mixerRec struct {
	blocks []mixerBlockRec
	final  lnRec
}

type mixerBlockRec struct {
	ln0            lnRec
	tokPre, tokHid []float32 // (t, d): token mixing hidden layer, along the token axis
	ln1            lnRec
	mlp            mlpRec // (r, f)
}

func newMixerTape(p, g *params, c Config, steps int) *mixerTape {
	r, d, f, td := c.ProcessSize, c.Dim, c.MLPDim, c.MixerTokenDim
	t := &mixerTape{
		p: p, g: g, r: r, d: d, tokDim: td, eps: float32(c.LayerNormEps), rec: make([]mixerRec, steps),
		x: make([]float32, r*d), z: make([]float32, r*d), dx: make([]float32, r*d), dY: make([]float32, r*d),
		dTokHid: make([]float32, td*d), dTokPre: make([]float32, td*d), mlp: newMLPScratch(r, f),
	}
	for i := range t.rec {
		rc := &t.rec[i]
		rc.blocks = make([]mixerBlockRec, len(p.mix))
		for l := range rc.blocks {
			rc.blocks[l] = mixerBlockRec{
				ln0: newLNRec(r, d), ln1: newLNRec(r, d), mlp: newMLPRec(r, f),
				tokPre: make([]float32, td*d), tokHid: make([]float32, td*d),
			}
		}
		rc.final = newLNRec(r, d)
	}
	return t
}

func (t *mixerTape) forward(s int, out, in []float32) {
	rc, r, d, td := &t.rec[s], t.r, t.d, t.tokDim
	copy(t.x, in[:r*d])
	for l := range t.p.mix {
		b, br := &t.p.mix[l], &rc.blocks[l]
		br.ln0.forward(&b.ln0, t.x, r, d, t.eps)
		nn.DenseTokens(br.tokPre, br.ln0.out, b.token.d0.kernel, b.token.d0.bias, r, d, td)
		nn.GELUForward(br.tokHid, br.tokPre)
		nn.DenseTokens(t.z, br.tokHid, b.token.d1.kernel, b.token.d1.bias, td, d, r)
		nn.Add(t.x, t.z)
		br.ln1.forward(&b.ln1, t.x, r, d, t.eps)
		br.mlp.forward(&b.channel, t.z, br.ln1.out, r)
		nn.Add(t.x, t.z)
	}
	rc.final.forward(&t.p.mixNorm, t.x, r, d, t.eps)
	copy(out, rc.final.out)
}

func (t *mixerTape) backward(s int, dIn, dOut []float32) {
	rc, r, d, td := &t.rec[s], t.r, t.d, t.tokDim
	dx := t.dx
	clear(dx)
	rc.final.backward(dx, dOut, &t.p.mixNorm, &t.g.mixNorm, r, d)
	for l := len(t.p.mix) - 1; l >= 0; l-- {
		b, gb, br := &t.p.mix[l], &t.g.mix[l], &rc.blocks[l]
		// x += ChannelMLP(LN_1(x)).
		clear(t.dY)
		br.mlp.backward(&t.mlp, t.dY, dx, br.ln1.out, &b.channel, &gb.channel, r)
		br.ln1.backward(dx, t.dY, &b.ln1, &gb.ln1, r, d)
		// x += TokenMLP(LN_0(x)ᵀ)ᵀ.
		clear(t.dTokHid)
		nn.DenseTokensBackward(t.dTokHid, gb.token.d1.kernel, gb.token.d1.bias, dx, br.tokHid, b.token.d1.kernel, td, d, r)
		clear(t.dTokPre)
		nn.GELUBackward(t.dTokPre, t.dTokHid, br.tokPre, br.tokHid)
		clear(t.dY)
		nn.DenseTokensBackward(t.dY, gb.token.d0.kernel, gb.token.d0.bias, t.dTokPre, br.ln0.out, b.token.d0.kernel, r, d, td)
		br.ln0.backward(dx, t.dY, &b.ln0, &gb.ln0, r, d)
	}
	nn.Add(dIn, dx)
}

// mlpTape is mlpUnit on one goroutine: x = MLP(LN(x)) per layer, no
// residual, then a final LayerNorm.
type mlpTape struct {
	p, g *params
	r, d int
	eps  float32
	rec  []mlpUnitRec

	x      []float32 // (r, d)
	dx, dY []float32 // (r, d)
	mlp    mlpScratch
}

type mlpUnitRec struct {
	lns  []lnRec  // one per layer, then the final one
	mlps []mlpRec // one per layer
}

func newMLPTape(p, g *params, c Config, steps int) *mlpTape {
	r, d, f := c.ProcessSize, c.Dim, c.MLPDim
	t := &mlpTape{
		p: p, g: g, r: r, d: d, eps: float32(c.LayerNormEps), rec: make([]mlpUnitRec, steps),
		x: make([]float32, r*d), dx: make([]float32, r*d), dY: make([]float32, r*d), mlp: newMLPScratch(r, f),
	}
	for i := range t.rec {
		rc := &t.rec[i]
		rc.lns = make([]lnRec, len(p.mlpNorms))
		for l := range rc.lns {
			rc.lns[l] = newLNRec(r, d)
		}
		rc.mlps = make([]mlpRec, len(p.mlpBlocks))
		for l := range rc.mlps {
			rc.mlps[l] = newMLPRec(r, f)
		}
	}
	return t
}

func (t *mlpTape) forward(s int, out, in []float32) {
	rc, r, d := &t.rec[s], t.r, t.d
	copy(t.x, in[:r*d])
	for l := range t.p.mlpBlocks {
		rc.lns[l].forward(&t.p.mlpNorms[l], t.x, r, d, t.eps)
		rc.mlps[l].forward(&t.p.mlpBlocks[l], t.x, rc.lns[l].out, r)
	}
	last := len(t.p.mlpBlocks)
	rc.lns[last].forward(&t.p.mlpNorms[last], t.x, r, d, t.eps)
	copy(out, rc.lns[last].out)
}

func (t *mlpTape) backward(s int, dIn, dOut []float32) {
	rc, r, d := &t.rec[s], t.r, t.d
	last := len(t.p.mlpBlocks)
	clear(t.dx)
	rc.lns[last].backward(t.dx, dOut, &t.p.mlpNorms[last], &t.g.mlpNorms[last], r, d)
	for l := last - 1; l >= 0; l-- {
		clear(t.dY)
		rc.mlps[l].backward(&t.mlp, t.dY, t.dx, rc.lns[l].out, &t.p.mlpBlocks[l], &t.g.mlpBlocks[l], r)
		clear(t.dx) // no residual: the layer's input reaches the output only through the block
		rc.lns[l].backward(t.dx, t.dY, &t.p.mlpNorms[l], &t.g.mlpNorms[l], r, d)
	}
	nn.Add(dIn, t.dx)
}
