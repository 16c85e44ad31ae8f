package ttm

import "github.com/ttmrobot/ttm/internal/nn"

// Forward passes of the parameter groups. Each takes its scratch space from
// the caller; none allocates.

// forward computes out (rows, l.out) = in (rows, l.in)·kernel + bias.
// pack is scratch for nn.MatMulPacked (nn.PackScratchSize(l.in) floats).
func (l *dense) forward(out, in []float32, rows int, pack []float32) {
	if l.packed != nil && rows <= nn.MaxPackedRows {
		nn.SetRows(out, l.bias, rows, l.out)
		nn.MatMulPacked(out, in, l.packed, rows, pack)
		return
	}
	nn.Dense(out, in, l.kernel, l.bias, rows, l.in, l.out)
}

// forward computes out (rows, out) = Dense_1(gelu(Dense_0(in))).
// hidden (rows, d0.out) is scratch.
func (b *mlpBlock) forward(out, hidden, in []float32, rows int, pack []float32) {
	if l := &b.d0; l.packed != nil && rows <= nn.MaxPackedRows {
		nn.SetRows(hidden, l.bias, rows, l.out)
		nn.MatMulPackedGELU(hidden, in, l.packed, rows, pack)
	} else {
		l.forward(hidden, in, rows, pack)
		nn.GELUForward(hidden, hidden[:rows*l.out])
	}
	b.d1.forward(out, hidden, rows, pack)
}

// forwardTokens applies the block along the token axis:
// out (d1.out, c) = MLP(inᵀ)ᵀ for in (d0.in, c). hidden (d0.out, c) is scratch.
func (b *mlpBlock) forwardTokens(out, hidden, in []float32, c int) {
	nn.DenseTokens(hidden, in, b.d0.kernel, b.d0.bias, b.d0.in, c, b.d0.out)
	nn.GELUForward(hidden, hidden[:b.d0.out*c])
	nn.DenseTokens(out, hidden, b.d1.kernel, b.d1.bias, b.d1.in, c, b.d1.out)
}

func (ln *layerNorm) forward(out, in []float32, rows, d int, eps float32) {
	nn.LayerNormForward(out, nil, nil, in, ln.scale, ln.bias, rows, d, eps)
}

// selfAttention computes out (rows, d) = MHA(x, x). qkv (rows, 3d), att
// (H, rows, rows) and o (rows, d) are scratch.
func (a *attention) selfAttention(out, qkv, att, o, x []float32, rows, d int, pack []float32) {
	if a.qkv != nil {
		nn.SetRows(qkv, a.qkvBias, rows, 3*d)
		nn.MatMulPacked(qkv, x, a.qkv, rows, pack)
		nn.AttentionForward(o, att, qkv, qkv[d:], qkv[2*d:], rows, rows, d, a.heads, 3*d, 3*d)
	} else {
		q, k, v := qkv[:rows*d], qkv[rows*d:2*rows*d], qkv[2*rows*d:3*rows*d]
		a.query.forward(q, x, rows, pack)
		a.key.forward(k, x, rows, pack)
		a.value.forward(v, x, rows, pack)
		nn.AttentionForward(o, att, q, k, v, rows, rows, d, a.heads, d, d)
	}
	a.out.forward(out, o, rows, pack)
}

// crossAttention computes out (nq, d) = MHA(queries, x) for queries (nq, d)
// and x (nk, d). q (nq, d), kv (nk, 2d), att (H, nq, nk), o (nq, d) are scratch.
func (a *attention) crossAttention(out, q, kv, att, o, queries, x []float32, nq, nk, d int, pack []float32) {
	a.query.forward(q, queries, nq, pack)
	if a.kv != nil && nk <= nn.MaxPackedRows {
		nn.SetRows(kv, a.kvBias, nk, 2*d)
		nn.MatMulPacked(kv, x, a.kv, nk, pack)
		nn.AttentionForward(o, att, q, kv, kv[d:], nq, nk, d, a.heads, d, 2*d)
	} else {
		k, v := kv[:nk*d], kv[nk*d:2*nk*d]
		a.key.forward(k, x, nk, pack)
		a.value.forward(v, x, nk, pack)
		nn.AttentionForward(o, att, q, k, v, nq, nk, d, a.heads, d, d)
	}
	a.out.forward(out, o, nq, pack)
}
