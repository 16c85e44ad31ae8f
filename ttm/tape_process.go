package ttm

import (
	"github.com/ttmrobot/ttm/internal/layer"
	"github.com/ttmrobot/ttm/internal/nn"
)

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

// mlpScratch is the backward scratch of an MLP block.
type mlpScratch struct {
	dHid, dPre []float32 // (rows, hidden)
}

func newMLPScratch(rows, hidden int) mlpScratch {
	return mlpScratch{dHid: make([]float32, rows*hidden), dPre: make([]float32, rows*hidden)}
}

// transformerTape is transformerUnit on one goroutine.
type transformerTape struct {
	p, g  *params
	r, d  int
	heads int
	eps   float32
	rec   []transformerRec

	x, z   []float32 // (r, d): residual stream, branch output
	dx, dY []float32 // (r, d)
	attn   layer.AttentionScratch
	mlp    mlpScratch
}

type transformerRec struct {
	blocks []encoderRec
	final  layer.LayerNormRec
}

type encoderRec struct {
	ln0  layer.LayerNormRec // on the stream entering the block
	attn layer.AttentionRec // (r, d), (H, r, r)
	ln1  layer.LayerNormRec // on the stream after the attention residual
	mlp  layer.MLPRec       // (r, f)
}

func newTransformerTape(p, g *params, c Config, steps int) *transformerTape {
	r, d, f, heads := c.ProcessSize, c.Dim, c.MLPDim, c.NumHeads
	t := &transformerTape{
		p: p, g: g, r: r, d: d, heads: heads, eps: float32(c.LayerNormEps), rec: make([]transformerRec, steps),
		x: make([]float32, r*d), z: make([]float32, r*d),
		dx: make([]float32, r*d), dY: make([]float32, r*d),
		attn: layer.NewAttentionScratch(r, r, d, heads), mlp: newMLPScratch(r, f),
	}
	for i := range t.rec {
		rc := &t.rec[i]
		rc.blocks = make([]encoderRec, len(p.enc))
		for l := range rc.blocks {
			rc.blocks[l] = encoderRec{
				ln0: layer.NewLayerNormRec(r, d), ln1: layer.NewLayerNormRec(r, d), mlp: layer.NewMLPRec(r, f),
				attn: layer.NewAttentionRec(r, r, d, heads),
			}
		}
		rc.final = layer.NewLayerNormRec(r, d)
	}
	return t
}

func (t *transformerTape) forward(s int, out, in []float32) {
	rc, r, d := &t.rec[s], t.r, t.d
	copy(t.x, in[:r*d])
	nn.Add(t.x, t.p.encPos)
	for l := range t.p.enc {
		b, br := &t.p.enc[l], &rc.blocks[l]
		br.ln0.Forward(&b.ln0, t.x, r, d, t.eps)
		br.attn.Forward(&b.attn, t.z, br.ln0.Out, br.ln0.Out, r, r, d)
		nn.Add(t.x, t.z)
		br.ln1.Forward(&b.ln1, t.x, r, d, t.eps)
		br.mlp.Forward(&b.mlp, t.z, br.ln1.Out, r, nil)
		nn.Add(t.x, t.z)
	}
	rc.final.Forward(&t.p.encNorm, t.x, r, d, t.eps)
	copy(out, rc.final.Out)
}

func (t *transformerTape) backward(s int, dIn, dOut []float32) {
	rc, r, d := &t.rec[s], t.r, t.d
	dx := t.dx
	clear(dx)
	rc.final.Backward(&t.p.encNorm, &t.g.encNorm, dx, dOut, r, d)
	for l := len(t.p.enc) - 1; l >= 0; l-- {
		b, gb, br := &t.p.enc[l], &t.g.enc[l], &rc.blocks[l]
		// x += MLP(LN_1(x)): dx flows on and through the branch.
		clear(t.dY)
		br.mlp.Backward(&b.mlp, &gb.mlp, t.dY, dx, br.ln1.Out, t.mlp.dHid, t.mlp.dPre, r)
		br.ln1.Backward(&b.ln1, &gb.ln1, dx, t.dY, r, d)
		// x += MHA(LN_0(x)).
		clear(t.dY)
		y := br.ln0.Out
		br.attn.Backward(&b.attn, &gb.attn, &t.attn, t.dY, t.dY, dx, y, y, r, r, d)
		br.ln0.Backward(&b.ln0, &gb.ln0, dx, t.dY, r, d)
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
	final  layer.LayerNormRec
}

type mixerBlockRec struct {
	ln0 layer.LayerNormRec
	tok layer.MLPRec // (t, d): token mixing hidden layer, along the token axis
	ln1 layer.LayerNormRec
	mlp layer.MLPRec // (r, f)
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
				ln0: layer.NewLayerNormRec(r, d), ln1: layer.NewLayerNormRec(r, d), mlp: layer.NewMLPRec(r, f),
				tok: layer.NewMLPRec(td, d),
			}
		}
		rc.final = layer.NewLayerNormRec(r, d)
	}
	return t
}

func (t *mixerTape) forward(s int, out, in []float32) {
	rc, r, d := &t.rec[s], t.r, t.d
	copy(t.x, in[:r*d])
	for l := range t.p.mix {
		b, br := &t.p.mix[l], &rc.blocks[l]
		br.ln0.Forward(&b.ln0, t.x, r, d, t.eps)
		br.tok.ForwardTokens(&b.token, t.z, br.ln0.Out, d)
		nn.Add(t.x, t.z)
		br.ln1.Forward(&b.ln1, t.x, r, d, t.eps)
		br.mlp.Forward(&b.channel, t.z, br.ln1.Out, r, nil)
		nn.Add(t.x, t.z)
	}
	rc.final.Forward(&t.p.mixNorm, t.x, r, d, t.eps)
	copy(out, rc.final.Out)
}

func (t *mixerTape) backward(s int, dIn, dOut []float32) {
	rc, r, d := &t.rec[s], t.r, t.d
	dx := t.dx
	clear(dx)
	rc.final.Backward(&t.p.mixNorm, &t.g.mixNorm, dx, dOut, r, d)
	for l := len(t.p.mix) - 1; l >= 0; l-- {
		b, gb, br := &t.p.mix[l], &t.g.mix[l], &rc.blocks[l]
		// x += ChannelMLP(LN_1(x)).
		clear(t.dY)
		br.mlp.Backward(&b.channel, &gb.channel, t.dY, dx, br.ln1.Out, t.mlp.dHid, t.mlp.dPre, r)
		br.ln1.Backward(&b.ln1, &gb.ln1, dx, t.dY, r, d)
		// x += TokenMLP(LN_0(x)ᵀ)ᵀ.
		clear(t.dY)
		br.tok.BackwardTokens(&b.token, &gb.token, t.dY, dx, br.ln0.Out, t.dTokHid, t.dTokPre, d)
		br.ln0.Backward(&b.ln0, &gb.ln0, dx, t.dY, r, d)
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
	lns  []layer.LayerNormRec // one per layer, then the final one
	mlps []layer.MLPRec       // one per layer
}

func newMLPTape(p, g *params, c Config, steps int) *mlpTape {
	r, d, f := c.ProcessSize, c.Dim, c.MLPDim
	t := &mlpTape{
		p: p, g: g, r: r, d: d, eps: float32(c.LayerNormEps), rec: make([]mlpUnitRec, steps),
		x: make([]float32, r*d), dx: make([]float32, r*d), dY: make([]float32, r*d), mlp: newMLPScratch(r, f),
	}
	for i := range t.rec {
		rc := &t.rec[i]
		rc.lns = make([]layer.LayerNormRec, len(p.mlpNorms))
		for l := range rc.lns {
			rc.lns[l] = layer.NewLayerNormRec(r, d)
		}
		rc.mlps = make([]layer.MLPRec, len(p.mlpBlocks))
		for l := range rc.mlps {
			rc.mlps[l] = layer.NewMLPRec(r, f)
		}
	}
	return t
}

func (t *mlpTape) forward(s int, out, in []float32) {
	rc, r, d := &t.rec[s], t.r, t.d
	copy(t.x, in[:r*d])
	for l := range t.p.mlpBlocks {
		rc.lns[l].Forward(&t.p.mlpNorms[l], t.x, r, d, t.eps)
		rc.mlps[l].Forward(&t.p.mlpBlocks[l], t.x, rc.lns[l].Out, r, nil)
	}
	last := len(t.p.mlpBlocks)
	rc.lns[last].Forward(&t.p.mlpNorms[last], t.x, r, d, t.eps)
	copy(out, rc.lns[last].Out)
}

func (t *mlpTape) backward(s int, dIn, dOut []float32) {
	rc, r, d := &t.rec[s], t.r, t.d
	last := len(t.p.mlpBlocks)
	clear(t.dx)
	rc.lns[last].Backward(&t.p.mlpNorms[last], &t.g.mlpNorms[last], t.dx, dOut, r, d)
	for l := last - 1; l >= 0; l-- {
		clear(t.dY)
		rc.mlps[l].Backward(&t.p.mlpBlocks[l], &t.g.mlpBlocks[l], t.dY, t.dx, rc.lns[l].Out, t.mlp.dHid, t.mlp.dPre, r)
		clear(t.dx) // no residual: the layer's input reaches the output only through the block
		rc.lns[l].Backward(&t.p.mlpNorms[l], &t.g.mlpNorms[l], t.dx, t.dY, r, d)
	}
	nn.Add(dIn, t.dx)
}
