package seq

import (
	"fmt"

	"github.com/ttmrobot/ttm/internal/nn"
)

// Parameter groups, named and laid out as Flax's modules are (kernels
// input-major, (in, out)), and the records their forward passes keep for
// the backward pass. Records double as the Runners' scratch space: a
// Runner keeps one record and overwrites it every step, a Tape keeps one
// per step, so both run the same forward code.

type layerNorm struct {
	scale, bias []float32 // (d)
}

func (ln *layerNorm) register(t *paramTable, path string, d int) {
	t.add(&ln.scale, path+"/scale", ones, d)
	t.add(&ln.bias, path+"/bias", zeros, d)
}

type dense struct {
	kernel []float32 // (in, out)
	bias   []float32 // (out)
	in     int
	out    int

	packed *nn.Packed // kernel laid out for nn.MatMulPacked; nil until base.prepack
}

func (l *dense) register(t *paramTable, path string, in, out int) {
	l.in, l.out = in, out
	t.add(&l.kernel, path+"/kernel", xavier(in, out), in, out)
	t.add(&l.bias, path+"/bias", zeros, out)
	t.denses = append(t.denses, l)
}

// forward computes out (rows, out) = in (rows, in)·kernel + bias. Given
// pack scratch (nn.PackScratchSize(in) floats; Runners pass it, Tapes pass
// nil) and a packed kernel, products of up to nn.MaxPackedRows rows take
// nn.MatMulPacked, which streams the weights once instead of letting
// OpenBLAS copy them on every call.
func (l *dense) forward(out, in []float32, rows int, pack []float32) {
	if pack != nil && l.packed != nil && rows <= nn.MaxPackedRows {
		nn.SetRows(out, l.bias, rows, l.out)
		nn.MatMulPacked(out, in, l.packed, rows, pack)
		return
	}
	nn.Dense(out, in, l.kernel, l.bias, rows, l.in, l.out)
}

// backward accumulates dIn (may be nil) and the gradients into g.
func (l *dense) backward(g *dense, dIn, dOut, in []float32, rows int) {
	nn.DenseBackward(dIn, g.kernel, g.bias, dOut, in, l.kernel, rows, l.in, l.out)
}

// mlpBlock is scenic's MlpBlock: Dense_0 -> gelu -> Dense_1.
type mlpBlock struct {
	d0, d1 dense
}

func (b *mlpBlock) register(t *paramTable, path string, in, hidden, out int) {
	b.d0.register(t, path+"/Dense_0", in, hidden)
	b.d1.register(t, path+"/Dense_1", hidden, out)
}

// attention is Flax's MultiHeadDotProductAttention: query, key and value
// kernels (d, H, dh), out kernel (H, dh, d); stored row-major, (d, H, dh) is
// the (d, d) matrix whose columns are grouped by head.
type attention struct {
	query, key, value, out dense
	heads                  int
}

func (a *attention) register(t *paramTable, path string, d, heads int) {
	a.heads = heads
	dh := d / heads
	for _, p := range []struct {
		l    *dense
		name string
	}{{&a.query, "query"}, {&a.key, "key"}, {&a.value, "value"}} {
		p.l.in, p.l.out = d, d
		t.add(&p.l.kernel, path+"/"+p.name+"/kernel", xavier(d, d), d, heads, dh)
		t.add(&p.l.bias, path+"/"+p.name+"/bias", zeros, heads, dh)
	}
	a.out.in, a.out.out = d, d
	t.add(&a.out.kernel, path+"/out/kernel", xavier(d, d), heads, dh, d)
	t.add(&a.out.bias, path+"/out/bias", zeros, d)
	t.denses = append(t.denses, &a.query, &a.key, &a.value, &a.out)
}

// lnRec keeps one LayerNorm's input, output and statistics.
type lnRec struct {
	in, out    []float32 // (rows, d)
	mean, rstd []float32 // (rows)
}

func newLNRec(rows, d int) lnRec {
	return lnRec{in: make([]float32, rows*d), out: make([]float32, rows*d), mean: make([]float32, rows), rstd: make([]float32, rows)}
}

// forward normalises the first rows of x into rc.out, keeping a copy of x.
func (rc *lnRec) forward(ln *layerNorm, x []float32, rows, d int, eps float32) {
	copy(rc.in[:rows*d], x[:rows*d])
	nn.LayerNormForward(rc.out, rc.mean, rc.rstd, rc.in[:rows*d], ln.scale, ln.bias, rows, d, eps)
}

// backward accumulates dL/dx into dIn given dOut = dL/d(rc.out).
func (rc *lnRec) backward(ln, g *layerNorm, dIn, dOut []float32, rows, d int) {
	nn.LayerNormBackward(dIn, g.scale, g.bias, dOut, rc.in, ln.scale, rc.mean, rc.rstd, rows, d)
}

// mlpRec keeps an mlpBlock's hidden layer before and after gelu.
type mlpRec struct {
	pre, hid []float32 // (rows, hidden)
}

func newMLPRec(rows, hidden int) mlpRec {
	return mlpRec{pre: make([]float32, rows*hidden), hid: make([]float32, rows*hidden)}
}

// forward computes out (rows, d1.out) = Dense_1(gelu(Dense_0(in))); pack
// as for dense.forward.
func (rc *mlpRec) forward(b *mlpBlock, out, in []float32, rows int, pack []float32) {
	h := b.d0.out
	b.d0.forward(rc.pre, in, rows, pack)
	nn.GELUForward(rc.hid[:rows*h], rc.pre[:rows*h])
	b.d1.forward(out, rc.hid, rows, pack)
}

// backward accumulates dL/d(in) into dIn and the block's gradients into
// g. dHid and dPre (rows, hidden) are scratch.
func (rc *mlpRec) backward(b, g *mlpBlock, dIn, dOut, in, dHid, dPre []float32, rows int) {
	h := b.d0.out
	clear(dHid[:rows*h])
	b.d1.backward(&g.d1, dHid, dOut, rc.hid, rows)
	clear(dPre[:rows*h])
	nn.GELUBackward(dPre[:rows*h], dHid[:rows*h], rc.pre[:rows*h], rc.hid[:rows*h])
	b.d0.backward(&g.d0, dIn, dPre, in, rows)
}

// grow returns s with room for n floats, reallocating (and dropping the
// contents) when it has less.
func grow(s []float32, n int) []float32 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]float32, n, max(n, 2*cap(s)))
}

// growKeep is grow keeping the contents.
func growKeep(s []float32, n int) []float32 {
	if cap(s) >= n {
		return s[:n]
	}
	out := make([]float32, n, max(n, 2*cap(s)))
	copy(out, s)
	return out
}

func checkSizes(who string, got []int, want []int, names []string) {
	for i := range got {
		if got[i] != want[i] {
			panic(fmt.Sprintf("seq: %s: %s has %d floats, want %d", who, names[i], got[i], want[i]))
		}
	}
}
