package layer

import (
	"slices"

	"github.com/ttmrobot/ttm/internal/nn"
)

// Attention is Flax's MultiHeadDotProductAttention: query, key and value
// kernels (d, H, dh), out kernel (H, dh, d), dh = d/H. Stored row-major,
// (d, H, dh) is the (d, d) matrix whose columns are grouped by head, so
// each projection is a Dense.
type Attention struct {
	Query, Key, Value, Out Dense
	Heads                  int

	// Fused products built by PackFused: [query | key | value] for
	// self-attention, [key | value] for cross-attention, with their
	// biases; nil until packed.
	QKV, KV         *nn.Packed
	QKVBias, KVBias []float32
}

// Register names the four projections under path, as Flax does.
func (a *Attention) Register(t *Table, path string, d, heads int) {
	a.Heads = heads
	dh := d / heads
	for _, p := range []struct {
		l    *Dense
		name string
	}{{&a.Query, "query"}, {&a.Key, "key"}, {&a.Value, "value"}} {
		p.l.In, p.l.Out = d, d
		t.Add(&p.l.Kernel, path+"/"+p.name+"/kernel", Xavier(d, d), d, heads, dh)
		t.Add(&p.l.Bias, path+"/"+p.name+"/bias", Zeros, heads, dh)
	}
	a.Out.In, a.Out.Out = d, d
	t.Add(&a.Out.Kernel, path+"/out/kernel", Xavier(d, d), heads, dh, d)
	t.Add(&a.Out.Bias, path+"/out/bias", Zeros, d)
	t.Denses = append(t.Denses, &a.Query, &a.Key, &a.Value, &a.Out)
}

// PackFused builds the fused products (allocating): [query | key | value]
// with self, [key | value] without. d must be a multiple of nn.PanelWidth.
func (a *Attention) PackFused(d int, self bool) {
	if self {
		a.QKV = nn.PackColumns(d, [][]float32{a.Query.Kernel, a.Key.Kernel, a.Value.Kernel}, []int{d, d, d})
		a.QKVBias = slices.Concat(a.Query.Bias, a.Key.Bias, a.Value.Bias)
		return
	}
	a.KV = nn.PackColumns(d, [][]float32{a.Key.Kernel, a.Value.Kernel}, []int{d, d})
	a.KVBias = slices.Concat(a.Key.Bias, a.Value.Bias)
}

// Unpack drops every packed copy of the weights.
func (a *Attention) Unpack() {
	for _, l := range []*Dense{&a.Query, &a.Key, &a.Value, &a.Out} {
		l.Packed = nil
	}
	a.QKV, a.KV, a.QKVBias, a.KVBias = nil, nil, nil, nil
}

// SelfAttention computes out (N, d) = MHA(x, x), keeping nothing. qkv
// (N, 3d), att (H, N, N) and o (N, d) are scratch; pack as for
// Dense.Forward.
func (a *Attention) SelfAttention(out, qkv, att, o, x []float32, rows, d int, pack []float32) {
	if a.QKV != nil {
		nn.SetRows(qkv, a.QKVBias, rows, 3*d)
		nn.MatMulPacked(qkv, x, a.QKV, rows, pack)
		nn.AttentionForward(o, att, qkv, qkv[d:], qkv[2*d:], rows, rows, d, a.Heads, 3*d, 3*d)
	} else {
		q, k, v := qkv[:rows*d], qkv[rows*d:2*rows*d], qkv[2*rows*d:3*rows*d]
		a.Query.Forward(q, x, rows, pack)
		a.Key.Forward(k, x, rows, pack)
		a.Value.Forward(v, x, rows, pack)
		nn.AttentionForward(o, att, q, k, v, rows, rows, d, a.Heads, d, d)
	}
	a.Out.Forward(out, o, rows, pack)
}

// CrossAttention computes out (Nq, d) = MHA(queries, x) for queries
// (Nq, d) and x (Nk, d), keeping nothing. q (Nq, d), kv (Nk, 2d), att
// (H, Nq, Nk) and o (Nq, d) are scratch.
func (a *Attention) CrossAttention(out, q, kv, att, o, queries, x []float32, nq, nk, d int, pack []float32) {
	a.Query.Forward(q, queries, nq, pack)
	if a.KV != nil && nk <= nn.MaxPackedRows {
		nn.SetRows(kv, a.KVBias, nk, 2*d)
		nn.MatMulPacked(kv, x, a.KV, nk, pack)
		nn.AttentionForward(o, att, q, kv, kv[d:], nq, nk, d, a.Heads, d, 2*d)
	} else {
		k, v := kv[:nk*d], kv[nk*d:2*nk*d]
		a.Key.Forward(k, x, nk, pack)
		a.Value.Forward(v, x, nk, pack)
		nn.AttentionForward(o, att, q, k, v, nq, nk, d, a.Heads, d, d)
	}
	a.Out.Forward(out, o, nq, pack)
}

// AttentionRec keeps one attention pass for its backward pass: the
// projections, the probabilities, and the output before Wo.
type AttentionRec struct {
	Q, O []float32 // (Nq, d)
	K, V []float32 // (Nk, d)
	Att  []float32 // (H, Nq, Nk)
}

// NewAttentionRec allocates a record for Nq queries over Nk keys.
func NewAttentionRec(nq, nk, d, heads int) AttentionRec {
	return AttentionRec{
		Q: make([]float32, nq*d), O: make([]float32, nq*d),
		K: make([]float32, nk*d), V: make([]float32, nk*d), Att: make([]float32, heads*nq*nk),
	}
}

// AttentionScratch is the backward pass's scratch space.
type AttentionScratch struct {
	DO, DQ []float32 // (Nq, d)
	DK, DV []float32 // (Nk, d)
	DAtt   []float32 // (H, Nq, Nk)
}

// NewAttentionScratch allocates scratch for Nq queries over Nk keys.
func NewAttentionScratch(nq, nk, d, heads int) AttentionScratch {
	return AttentionScratch{
		DO: make([]float32, nq*d), DQ: make([]float32, nq*d),
		DK: make([]float32, nk*d), DV: make([]float32, nk*d), DAtt: make([]float32, heads*nq*nk),
	}
}

// Forward computes out (Nq, d) = MHA(queries, x) with unpacked weights,
// keeping what Backward needs; for self-attention queries and x are the
// same rows.
func (rc *AttentionRec) Forward(a *Attention, out, queries, x []float32, nq, nk, d int) {
	nn.Dense(rc.Q, queries, a.Query.Kernel, a.Query.Bias, nq, d, d)
	nn.Dense(rc.K, x, a.Key.Kernel, a.Key.Bias, nk, d, d)
	nn.Dense(rc.V, x, a.Value.Kernel, a.Value.Bias, nk, d, d)
	nn.AttentionForward(rc.O, rc.Att, rc.Q, rc.K, rc.V, nq, nk, d, a.Heads, d, d)
	nn.Dense(out, rc.O, a.Out.Kernel, a.Out.Bias, nq, d, d)
}

// Backward accumulates dL/d(queries) into dQueries, dL/dx into dX (the
// same slice for self-attention) and the gradients into g, given dOut
// (Nq, d) and the forward pass's queries and x.
func (rc *AttentionRec) Backward(a, g *Attention, sc *AttentionScratch, dQueries, dX, dOut, queries, x []float32, nq, nk, d int) {
	clear(sc.DO)
	a.Out.Backward(&g.Out, sc.DO, dOut, rc.O, nq)
	clear(sc.DQ)
	clear(sc.DK)
	clear(sc.DV)
	nn.AttentionBackward(sc.DQ, sc.DK, sc.DV, sc.DAtt, sc.DO, rc.Att, rc.Q, rc.K, rc.V, nq, nk, d, a.Heads, d, d)
	a.Query.Backward(&g.Query, dQueries, sc.DQ, queries, nq)
	a.Key.Backward(&g.Key, dX, sc.DK, x, nk)
	a.Value.Backward(&g.Value, dX, sc.DV, x, nk)
}
