package seq

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/layer"
)

// Independent float64 references of every model's step, written from the
// equations in the models' doc comments with plain loops (no nn kernels,
// no shared forward code), against which the Runners are compared. The
// TTM variants are the ttm package's, checked against the reference
// implementation there.

type mat [][]float64 // rows of d channels

func toMat(x []float32, rows, d int) mat {
	m := make(mat, rows)
	for i := range m {
		m[i] = make([]float64, d)
		for j := range m[i] {
			m[i][j] = float64(x[i*d+j])
		}
	}
	return m
}

func flat(m mat) []float32 {
	var out []float32
	for _, row := range m {
		for _, v := range row {
			out = append(out, float32(v))
		}
	}
	return out
}

func refLN(x mat, scale, bias []float32, eps float64) mat {
	out := make(mat, len(x))
	for i, row := range x {
		var s, sq float64
		for _, v := range row {
			s += v
			sq += v * v
		}
		mu := s / float64(len(row))
		variance := math.Max(0, sq/float64(len(row))-mu*mu)
		out[i] = make([]float64, len(row))
		for j, v := range row {
			out[i][j] = (v-mu)/math.Sqrt(variance+eps)*float64(scale[j]) + float64(bias[j])
		}
	}
	return out
}

func refDense(x mat, kernel, bias []float32, out int) mat {
	y := make(mat, len(x))
	for i, row := range x {
		y[i] = make([]float64, out)
		for o := 0; o < out; o++ {
			s := float64(bias[o])
			for j, v := range row {
				s += v * float64(kernel[j*out+o])
			}
			y[i][o] = s
		}
	}
	return y
}

func refGELU(x mat) mat {
	y := make(mat, len(x))
	for i, row := range x {
		y[i] = make([]float64, len(row))
		for j, v := range row {
			y[i][j] = 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
		}
	}
	return y
}

func refAdd(x, y mat) {
	for i := range x {
		for j := range x[i] {
			x[i][j] += y[i][j]
		}
	}
}

func refMLP(b *layer.MLP, x mat) mat {
	return refDense(refGELU(refDense(x, b.D0.Kernel, b.D0.Bias, b.D0.Out)), b.D1.Kernel, b.D1.Bias, b.D1.Out)
}

// refStack is the pre-LayerNorm Transformer with a mask: row i attends to
// row j when sees(i, j).
func refStack(p *stackParams, c Config, in mat, sees func(i, j int) bool) mat {
	d, heads := c.Dim, c.Heads
	dh := d / heads
	x := make(mat, len(in))
	for i := range in {
		x[i] = append([]float64(nil), in[i]...)
	}
	for l := range p.blocks {
		b := &p.blocks[l]
		y := refLN(x, b.ln0.Scale, b.ln0.Bias, c.LayerNormEps)
		q := refDense(y, b.attn.Query.Kernel, b.attn.Query.Bias, d)
		k := refDense(y, b.attn.Key.Kernel, b.attn.Key.Bias, d)
		v := refDense(y, b.attn.Value.Kernel, b.attn.Value.Bias, d)
		o := make(mat, len(x))
		for i := range x {
			o[i] = make([]float64, d)
			for h := 0; h < heads; h++ {
				var js []int
				var w []float64
				top := math.Inf(-1)
				for j := range x {
					if !sees(i, j) {
						continue
					}
					var s float64
					for e := h * dh; e < (h+1)*dh; e++ {
						s += q[i][e] * k[j][e]
					}
					s /= math.Sqrt(float64(dh))
					js, w = append(js, j), append(w, s)
					top = math.Max(top, s)
				}
				var sum float64
				for a := range w {
					w[a] = math.Exp(w[a] - top)
					sum += w[a]
				}
				for a, j := range js {
					for e := h * dh; e < (h+1)*dh; e++ {
						o[i][e] += w[a] / sum * v[j][e]
					}
				}
			}
		}
		refAdd(x, refDense(o, b.attn.Out.Kernel, b.attn.Out.Bias, d))
		refAdd(x, refMLP(&b.mlp, refLN(x, b.ln1.Scale, b.ln1.Bias, c.LayerNormEps)))
	}
	return refLN(x, p.norm.Scale, p.norm.Bias, c.LayerNormEps)
}

func all(i, j int) bool { return true }

// compareSteps runs the model's Runner over inputs from a new State and
// compares each output with want(step, inputs so far).
func compareSteps(t *testing.T, m Model, steps int, want func(t int, inputs [][]float32) []float32) {
	t.Helper()
	r := rand.New(rand.NewPCG(31, hashString(m.Name())))
	nd, rd := sizes(m)
	run, st := m.NewRunner(), m.NewState()
	var inputs [][]float32
	out := make([]float32, rd)
	for s := 0; s < steps; s++ {
		inputs = append(inputs, randFloats(r, nd, 1))
		run.Step(st, inputs[s], out)
		if e := relErr(out, want(s, inputs)); e > 2e-5 {
			t.Errorf("%s step %d: output differs from the float64 reference by %.2e", m.Name(), s, e)
		}
	}
}

func TestWindowMatchesReference(t *testing.T) {
	c := tinyConfig()
	c.Window = 3
	m := newModel(t, "window", c, 41).(*Window)
	n, r, d, h := c.InputTokens, c.OutputTokens, c.Dim, c.Window
	compareSteps(t, m, 6, func(step int, inputs [][]float32) []float32 {
		// Rows: slot j holds step step-h+1+j (zeros before the episode),
		// plus its positional embedding; then the readout tokens.
		var x mat
		for j := 0; j < h; j++ {
			in := make([]float32, n*d)
			if s := step - h + 1 + j; s >= 0 {
				copy(in, inputs[s])
			}
			x = append(x, toMat(in, n, d)...)
		}
		refAdd(x, toMat(m.p.pos, h*n, d))
		x = append(x, toMat(m.p.readout, r, d)...)
		sees := func(i, j int) bool { return i >= h*n || j/n <= i/n }
		y := refStack(&m.p.enc, c, x, sees)
		return flat(y[h*n:])
	})
}

// sinusoid is E(t), written out independently of Causal.assemble.
func sinusoid(t, d int) []float64 {
	e := make([]float64, d)
	for j := range e {
		w := math.Pow(10000, -float64(2*(j/2))/float64(d))
		if j%2 == 0 {
			e[j] = math.Sin(float64(t) * w)
		} else {
			e[j] = math.Cos(float64(t) * w)
		}
	}
	return e
}

func TestCausalMatchesFullRecomputation(t *testing.T) {
	// The cached step must equal a block-causal Transformer run from
	// scratch over every input token of the episode (and the readout
	// tokens last). MaxSteps 4 < 7 steps: the cache grows on the way.
	c := tinyConfig()
	m := newModel(t, "causal", c, 43).(*Causal)
	n, r, d := c.InputTokens, c.OutputTokens, c.Dim
	compareSteps(t, m, 7, func(step int, inputs [][]float32) []float32 {
		var x mat
		for s := 0; s <= step; s++ {
			rows := toMat(inputs[s], n, d)
			refAdd(rows, toMat(m.p.pos, n, d))
			e := sinusoid(s, d)
			for i := range rows {
				for j := range rows[i] {
					rows[i][j] += e[j]
				}
			}
			x = append(x, rows...)
		}
		x = append(x, toMat(m.p.readout, r, d)...)
		in := (step + 1) * n
		sees := func(i, j int) bool { return i >= in || (j < in && j/n <= i/n) }
		y := refStack(&m.p.enc, c, x, sees)
		return flat(y[in:])
	})
}

func TestRecurrentMatchesReference(t *testing.T) {
	c := tinyConfig()
	m := newModel(t, "recurrent", c, 47).(*Recurrent)
	s, n, r, d := c.StateTokens, c.InputTokens, c.OutputTokens, c.Dim
	state := make(mat, s)
	for i := range state {
		state[i] = make([]float64, d)
	}
	compareSteps(t, m, 5, func(step int, inputs [][]float32) []float32 {
		x := append(append(mat{}, state...), toMat(inputs[step], n, d)...)
		refAdd(x, toMat(m.p.pos, s+n, d))
		x = append(x, toMat(m.p.readout, r, d)...)
		y := refStack(&m.p.enc, c, x, all)
		state = y[:s]
		return flat(y[s+n:])
	})
}

func TestConcatMatchesReference(t *testing.T) {
	// The read over every input row so far, computed from scratch: the
	// cached logits must not change it. MaxSteps 4 < 6 steps: the memory
	// grows on the way.
	c := tinyConfig()
	m := newModel(t, "concat", c, 53).(*Concat)
	n, r, d := c.InputTokens, c.OutputTokens, c.Dim
	compareSteps(t, m, 6, func(step int, inputs [][]float32) []float32 {
		var v mat
		for s := 0; s <= step; s++ {
			v = append(v, toMat(inputs[s], n, d)...)
		}
		logits := refMLP(&m.p.read.MLP, refLN(v, m.p.read.LN.Scale, m.p.read.LN.Bias, c.LayerNormEps)) // (N, r)
		z := make(mat, r)
		for k := 0; k < r; k++ {
			top := math.Inf(-1)
			for i := range v {
				top = math.Max(top, logits[i][k])
			}
			var sum float64
			w := make([]float64, len(v))
			for i := range v {
				w[i] = math.Exp(logits[i][k] - top)
				sum += w[i]
			}
			z[k] = make([]float64, d)
			for i := range v {
				for j := 0; j < d; j++ {
					z[k][j] += w[i] / sum * v[i][j]
				}
			}
		}
		refAdd(z, toMat(m.p.encPos, r, d))
		return flat(refStack(&m.p.enc, c, z, all))
	})
}

func TestLSTMMatchesReference(t *testing.T) {
	c := tinyConfig()
	m := newModel(t, "lstm", c, 59).(*LSTM)
	n, r, d, k := c.InputTokens, c.OutputTokens, c.Dim, c.LSTMHidden
	h, cell := make([]float64, k), make([]float64, k)
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	compareSteps(t, m, 5, func(step int, inputs [][]float32) []float32 {
		in := toMat(inputs[step], n, d)
		pool := make(mat, 1)
		pool[0] = make([]float64, d)
		for _, row := range in {
			for j, v := range row {
				pool[0][j] += v / float64(n)
			}
		}
		x := refLN(pool, m.p.inLN.Scale, m.p.inLN.Bias, c.LayerNormEps)[0]
		z := make([]float64, 4*k)
		for g := range z {
			z[g] = float64(m.p.x.Bias[g]) + float64(m.p.h.Bias[g])
			for j := range x {
				z[g] += x[j] * float64(m.p.x.Kernel[j*4*k+g])
			}
			for j := range h {
				z[g] += h[j] * float64(m.p.h.Kernel[j*4*k+g])
			}
		}
		for j := 0; j < k; j++ {
			cell[j] = sig(z[k+j])*cell[j] + sig(z[j])*math.Tanh(z[2*k+j])
			h[j] = sig(z[3*k+j]) * math.Tanh(cell[j])
		}
		proj := refDense(mat{h}, m.p.out.Kernel, m.p.out.Bias, r*d)
		return flat(refLN(toMat(flat(proj), r, d), m.p.outLN.Scale, m.p.outLN.Bias, c.LayerNormEps))
	})
}

func TestAttendMatchesReference(t *testing.T) {
	// attend with a prefix and a block-causal mask, against a float64
	// loop, for both ways of keeping the probabilities.
	r := rand.New(rand.NewPCG(61, 62))
	const nq, prefix, d, heads = 5, 4, 12, 3
	nk := prefix + nq
	lim := []int{2, 2, 4, 4, 5}
	q, k, v := randFloats(r, nq*d, 1), randFloats(r, nk*d, 1), randFloats(r, nk*d, 1)
	dh := d / heads
	want := make([]float32, nq*d)
	for i := 0; i < nq; i++ {
		for h := 0; h < heads; h++ {
			var w []float64
			var sum float64
			for j := 0; j < prefix+lim[i]; j++ {
				var s float64
				for e := h * dh; e < (h+1)*dh; e++ {
					s += float64(q[i*d+e]) * float64(k[j*d+e])
				}
				w = append(w, math.Exp(s/math.Sqrt(float64(dh))))
				sum += w[j]
			}
			for e := h * dh; e < (h+1)*dh; e++ {
				var o float64
				for j, wj := range w {
					o += wj / sum * float64(v[j*d+e])
				}
				want[i*d+e] = float32(o)
			}
		}
	}
	for _, allHeads := range []bool{false, true} {
		out := make([]float32, nq*d)
		att := make([]float32, heads*nq*nk)
		attend(out, att, q, k, v, nq, nk, d, heads, prefix, lim, allHeads)
		if e := relErr(out, want); e > 1e-6 {
			t.Errorf("allHeads %v: differs from the reference by %.2e", allHeads, e)
		}
		if allHeads {
			// Masked probabilities are exactly zero; each row sums to 1.
			for h := 0; h < heads; h++ {
				for i := 0; i < nq; i++ {
					row := att[(h*nq+i)*nk : (h*nq+i+1)*nk]
					var sum float64
					for j, p := range row {
						if j >= prefix+lim[i] && p != 0 {
							t.Errorf("head %d row %d: masked key %d has probability %g", h, i, j, p)
						}
						sum += float64(p)
					}
					if math.Abs(sum-1) > 1e-6 {
						t.Errorf("head %d row %d: probabilities sum to %g", h, i, sum)
					}
				}
			}
		}
	}
}

func TestWindowSeesOnlyTheLastSteps(t *testing.T) {
	// Two histories that differ only before the last h steps give
	// bit-identical outputs; one that differs inside the window does not.
	c := tinyConfig()
	m := newModel(t, "window", c, 67)
	r := rand.New(rand.NewPCG(67, 68))
	nd, rd := sizes(m)
	run := m.NewRunner()
	tail := [][]float32{randFloats(r, nd, 1), randFloats(r, nd, 1)} // h = 2
	play := func(prefix ...[]float32) []float32 {
		st := m.NewState()
		out := make([]float32, rd)
		for _, in := range append(prefix, tail...) {
			run.Step(st, in, out)
		}
		return out
	}
	a := play(randFloats(r, nd, 1), randFloats(r, nd, 1))
	b := play(randFloats(r, nd, 1))
	if relErr(a, b) != 0 {
		t.Error("the output depends on a step older than the window")
	}
	tail[0] = randFloats(r, nd, 1)
	if relErr(play(), a) == 0 {
		t.Error("the output does not depend on a step inside the window")
	}
}
