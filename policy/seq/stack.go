package seq

import (
	"fmt"
	"math"

	"github.com/ttmrobot/ttm/internal/layer"

	"github.com/ttmrobot/ttm/internal/nn"
)

// The Transformer every model here but the LSTM uses: the TTM's processing
// unit (pre-LayerNorm ViT encoder blocks, then a final LayerNorm), with two
// additions the sequence models need:
//
//   - a key/value prefix: each layer's attention may also see P rows of
//     keys and values computed earlier (a cache), before the R rows' own;
//   - a block-causal mask: own row i sees the first lim[i] own rows (and
//     the whole prefix).
//
// Letters: R rows in the pass, P prefix rows, Nk = P + R keys, d channels,
// H heads, f MLP width.

type stackParams struct {
	blocks []blockParams
	norm   layer.LayerNorm
}

type blockParams struct {
	ln0  layer.LayerNorm
	attn layer.Attention
	ln1  layer.LayerNorm
	mlp  layer.MLP
}

// register names the tensors as scenic's Encoder does, under path.
func (p *stackParams) register(t *layer.Table, path string, c Config) {
	p.blocks = make([]blockParams, c.Layers)
	for l := range p.blocks {
		b := &p.blocks[l]
		bp := fmt.Sprintf("%s/encoderblock_%d", path, l)
		b.ln0.Register(t, bp+"/LayerNorm_0", c.Dim)
		b.attn.Register(t, bp+"/MultiHeadDotProductAttention_0", c.Dim, c.Heads)
		b.ln1.Register(t, bp+"/LayerNorm_1", c.Dim)
		b.mlp.Register(t, bp+"/MlpBlock_0", c.Dim, c.MLPDim, c.Dim, layer.Zeros)
	}
	p.norm.Register(t, path+"/encoder_norm", c.Dim)
}

// stackRec is what one pass keeps for its backward pass.
type stackRec struct {
	blocks []blockRec
	final  layer.LayerNormRec
}

type blockRec struct {
	ln0  layer.LayerNormRec // on the stream entering the block
	q    []float32          // (R, d)
	k, v []float32          // (R, d): own keys and values, when the caller keeps none
	att  []float32          // (H, R, Nk) on a Tape; (R, Nk) in a Runner, reused by each head
	o    []float32          // (R, d): attention output before Wo
	ln1  layer.LayerNormRec // on the stream after the attention residual
	mlp  layer.MLPRec       // (R, f)
}

// newStackRec allocates a record for passes of R rows over up to nk keys;
// allHeads keeps every head's attention (for a backward pass).
func newStackRec(c Config, rows, nk int, allHeads bool) stackRec {
	d := c.Dim
	heads := 1
	if allHeads {
		heads = c.Heads
	}
	rec := stackRec{blocks: make([]blockRec, c.Layers), final: layer.NewLayerNormRec(rows, d)}
	for l := range rec.blocks {
		rec.blocks[l] = blockRec{
			ln0: layer.NewLayerNormRec(rows, d), ln1: layer.NewLayerNormRec(rows, d), mlp: layer.NewMLPRec(rows, c.MLPDim),
			q: make([]float32, rows*d), k: make([]float32, rows*d), v: make([]float32, rows*d),
			att: make([]float32, heads*rows*nk), o: make([]float32, rows*d),
		}
	}
	return rec
}

// stack runs passes of R rows; it owns the scratch space of one pass (one
// goroutine at a time). A Runner's stack (allHeads false) multiplies with
// packed weights where it can; a Tape's keeps every head's attention for
// the backward pass and reads the weights unpacked, so that Tapes on one
// Model can run in parallel.
type stack struct {
	p        *stackParams
	d, heads int
	f        int
	eps      float32
	allHeads bool // a Tape's: records keep every head's attention, weights stay unpacked

	x, z           []float32 // (R, d): residual stream, branch output
	dx, dY, dO, dQ []float32 // (R, d)
	dK, dV         []float32 // (R, d): own key/value gradients when the caller keeps none
	dAtt           []float32 // (H, R, Nk)
	dHid, dPre     []float32 // (R, f)
	pack           []float32 // packed-product scratch; nil on a Tape (unpacked weights)
}

func newStack(p *stackParams, c Config, rows int, allHeads bool) *stack {
	d := c.Dim
	s := &stack{
		p: p, d: d, heads: c.Heads, f: c.MLPDim, eps: float32(c.LayerNormEps), allHeads: allHeads,
		x: make([]float32, rows*d), z: make([]float32, rows*d),
	}
	if !allHeads {
		s.pack = make([]float32, nn.PackScratchSize(max(d, c.MLPDim)))
	} else {
		s.dx, s.dY, s.dO, s.dQ = make([]float32, rows*d), make([]float32, rows*d), make([]float32, rows*d), make([]float32, rows*d)
		s.dK, s.dV = make([]float32, rows*d), make([]float32, rows*d)
		s.dHid, s.dPre = make([]float32, rows*c.MLPDim), make([]float32, rows*c.MLPDim)
	}
	return s
}

// forward runs the blocks over in (R, d) and writes the final LayerNorm's
// output to out (R, d). ks[l], vs[l] hold layer l's keys and values, d
// wide: rows [0, prefix) are given, rows [prefix, prefix+R) receive the
// pass's own; with ks nil the record keeps the own rows and there is no
// prefix. lim[i] is how many own rows row i sees (nil: all of them).
func (s *stack) forward(rec *stackRec, out, in []float32, rows int, ks, vs [][]float32, prefix int, lim []int) {
	d := s.d
	nk := prefix + rows
	x := s.x[:rows*d]
	copy(x, in[:rows*d])
	for l := range s.p.blocks {
		b, br := &s.p.blocks[l], &rec.blocks[l]
		k, v := br.k, br.v
		if ks != nil {
			k, v = ks[l], vs[l]
		}
		br.ln0.Forward(&b.ln0, x, rows, d, s.eps)
		y := br.ln0.Out
		b.attn.Query.Forward(br.q, y, rows, s.pack)
		b.attn.Key.Forward(k[prefix*d:nk*d], y, rows, s.pack)
		b.attn.Value.Forward(v[prefix*d:nk*d], y, rows, s.pack)
		heads := 1
		if s.allHeads {
			heads = s.heads
		}
		br.att = grow(br.att, heads*rows*nk)
		attend(br.o, br.att, br.q, k, v, rows, nk, d, s.heads, prefix, lim, s.allHeads)
		b.attn.Out.Forward(s.z, br.o, rows, s.pack)
		nn.Add(x, s.z[:rows*d])
		br.ln1.Forward(&b.ln1, x, rows, d, s.eps)
		br.mlp.Forward(&b.mlp, s.z, br.ln1.Out, rows, s.pack)
		nn.Add(x, s.z[:rows*d])
	}
	rec.final.Forward(&s.p.norm, x, rows, d, s.eps)
	copy(out[:rows*d], rec.final.Out[:rows*d])
}

// backward pops a pass recorded with forward (with allHeads). Given dOut
// (R, d) it accumulates dL/d(in) into dIn (R, d) and the parameter
// gradients into g. With ks given, dks[l] and dvs[l] (rows [0, prefix+R))
// accumulate the gradients of all keys and values the pass saw; their own
// rows [prefix, prefix+R) must already hold what later passes contributed,
// and are propagated through this pass's key and value products. ks and
// vs must hold what they held during the forward pass.
func (s *stack) backward(rec *stackRec, g *stackParams, dIn, dOut []float32, rows int, ks, vs, dks, dvs [][]float32, prefix int) {
	d := s.d
	nk := prefix + rows
	dx := s.dx[:rows*d]
	clear(dx)
	rec.final.Backward(&s.p.norm, &g.norm, dx, dOut, rows, d)
	s.dAtt = grow(s.dAtt, s.heads*rows*nk)
	for l := len(s.p.blocks) - 1; l >= 0; l-- {
		b, gb, br := &s.p.blocks[l], &g.blocks[l], &rec.blocks[l]
		// x += MLP(LN_1(x)).
		dY := s.dY[:rows*d]
		clear(dY)
		br.mlp.Backward(&b.mlp, &gb.mlp, dY, dx, br.ln1.Out, s.dHid, s.dPre, rows)
		br.ln1.Backward(&b.ln1, &gb.ln1, dx, dY, rows, d)
		// x += MHA(LN_0(x)).
		a, ga := &b.attn, &gb.attn
		dO := s.dO[:rows*d]
		clear(dO)
		a.Out.Backward(&ga.Out, dO, dx, br.o, rows)
		k, v := br.k, br.v
		dk, dv := s.dK[:rows*d], s.dV[:rows*d]
		if ks != nil {
			k, v, dk, dv = ks[l], vs[l], dks[l], dvs[l]
		} else {
			clear(dk)
			clear(dv)
		}
		dQ := s.dQ[:rows*d]
		clear(dQ)
		nn.AttentionBackward(dQ, dk, dv, s.dAtt, dO, br.att, br.q, k, v, rows, nk, d, s.heads, d, d)
		clear(dY)
		y := br.ln0.Out
		a.Query.Backward(&ga.Query, dY, dQ, y, rows)
		a.Key.Backward(&ga.Key, dY, dk[prefix*d:nk*d], y, rows)
		a.Value.Backward(&ga.Value, dY, dv[prefix*d:nk*d], y, rows)
		br.ln0.Backward(&b.ln0, &gb.ln0, dx, dY, rows, d)
	}
	nn.Add(dIn[:rows*d], dx)
}

// attend is multi-head dot-product attention of nq query rows over nk keys
// with a block-causal mask: query row i sees keys [0, prefix+lim[i]) (all
// nk when lim is nil), softmax(q·kᵀ/sqrt(dh)) over those, and masked
// probabilities are exactly zero, so nn.AttentionBackward is its backward
// pass unchanged. With allHeads, att (H, nq, nk) keeps every head's
// probabilities; otherwise att (nq, nk) is reused by each head in turn.
// q, out (nq, d); k, v (nk, d).
func attend(out, att, q, k, v []float32, nq, nk, d, heads, prefix int, lim []int, allHeads bool) {
	dh := d / heads
	scale := float32(1 / math.Sqrt(float64(dh)))
	for h := 0; h < heads; h++ {
		a := att[:nq*nk]
		if allHeads {
			a = att[h*nq*nk : (h+1)*nq*nk]
		}
		// a (nq, nk) = scale · q_h (nq, dh) · k_hᵀ (dh, nk)
		nn.Gemm(false, true, nq, nk, dh, scale, q[h*dh:], d, k[h*dh:], d, 0, a, nk)
		for i := 0; i < nq; i++ {
			row := a[i*nk : (i+1)*nk]
			m := nk
			if lim != nil {
				m = prefix + lim[i]
			}
			nn.SoftmaxRowsForward(row[:m], 1, m)
			clear(row[m:])
		}
		// out_h (nq, dh) = a (nq, nk) · v_h (nk, dh)
		nn.Gemm(false, false, nq, dh, nk, 1, a, nk, v[h*dh:], d, 0, out[h*dh:], d)
	}
}

// stackFLOPs counts the products of one pass of R rows over nk keys: the
// q, k, v and out projections, the attention scores and weighted sums over
// all nk keys (masked scores are computed too), and the MLP; 2 per
// multiply-add.
func stackFLOPs(c Config, rows, nk int) int64 {
	r, n, d, f, L := int64(rows), int64(nk), int64(c.Dim), int64(c.MLPDim), int64(c.Layers)
	return L * 2 * (4*r*d*d + 2*r*n*d + 2*r*d*f)
}
