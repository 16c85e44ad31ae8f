package policy

import (
	"fmt"
	"math"

	"github.com/ttmrobot/ttm/internal/nn"
)

// Previous-action tokens, the proprioception token and the action head:
// the policy's own parameters, at the two ends of the sequence model.
//
//	token_i  = Embed_i[bin(a_prev,i)]                      (d)      one per dimension
//	token_p  = q·P + c                                     (d)      q: the proprioception (Q)
//	pooled   = mean over the r TTM output tokens            (d)
//	logits   = pooled·W + b                                 (Σ_i width_i)
//	a_i      = Value_i(argmax logits_i)   for a discrete dimension (width = bins)
//	a_i      = clamp(logits_i)            for a continuous one     (width = 1)
//
// Parameters are views into one flat slice, named under a prefix.

// outputWidth is how many head outputs dimension d needs.
func outputWidth(d Dimension) int {
	if d.Bins == 0 {
		return 1
	}
	return d.Bins
}

// inputRows is how many embedding rows dimension d needs: one per bin, or
// for a continuous dimension, two rows interpolated by the value's position
// in [Low, High].
func inputRows(d Dimension) int {
	if d.Bins == 0 {
		return 2
	}
	return d.Bins
}

// actionHead holds the action embeddings and the output head.
type actionHead struct {
	space   ActionSpace
	dim     int         // d, the TTM width
	embed   [][]float32 // per dimension (inputRows, d)
	kernel  []float32   // (d, Σ width)
	bias    []float32   // (Σ width)
	offsets []int       // start of each dimension's outputs
	width   int         // Σ width
	nProp   int         // Q, proprioception values; 0: no proprioception token
	propW   []float32   // (Q, d)
	propB   []float32   // (d)
}

// paramSpec is one named parameter of the policy outside the TTM.
type paramSpec struct {
	name  string
	shape []int
	dst   *[]float32
}

func newActionHead(space ActionSpace, d, nProprio int) *actionHead {
	h := &actionHead{space: space, dim: d, embed: make([][]float32, space.Len()), nProp: nProprio}
	for _, dm := range space.Dims {
		h.offsets = append(h.offsets, h.width)
		h.width += outputWidth(dm)
	}
	return h
}

// specs lists the head's parameters under prefix.
func (h *actionHead) specs(prefix string) []paramSpec {
	var s []paramSpec
	for i, dm := range h.space.Dims {
		s = append(s, paramSpec{fmt.Sprintf("%saction_embed/%d", prefix, i), []int{inputRows(dm), h.dim}, &h.embed[i]})
	}
	s = append(s, paramSpec{prefix + "head/kernel", []int{h.dim, h.width}, &h.kernel})
	s = append(s, paramSpec{prefix + "head/bias", []int{h.width}, &h.bias})
	if h.nProp > 0 {
		s = append(s, paramSpec{prefix + "proprio/kernel", []int{h.nProp, h.dim}, &h.propW})
		s = append(s, paramSpec{prefix + "proprio/bias", []int{h.dim}, &h.propB})
	}
	return s
}

// proprioToken writes the proprioception token (d) of q (Q).
func (h *actionHead) proprioToken(token, q []float32) {
	nn.Dense(token, q, h.propW, h.propB, 1, h.nProp, h.dim)
}

// proprioTokenBackward accumulates the gradients of the proprioception
// token's Dense layer, g's propW and propB, from dToken (d); q is what the
// forward pass read.
func (h *actionHead) proprioTokenBackward(g *actionHead, dToken, q []float32) {
	nn.DenseBackward(nil, g.propW, g.propB, dToken, q, h.propW, 1, h.nProp, h.dim)
}

// actionTokens writes one token per dimension of the previous action a
// into tokens (A, d).
func (h *actionHead) actionTokens(tokens, a []float32) {
	d := h.dim
	for i, dm := range h.space.Dims {
		dst := tokens[i*d : (i+1)*d]
		if dm.Bins > 0 {
			b := dm.Bin(a[i])
			copy(dst, h.embed[i][b*d:(b+1)*d])
			continue
		}
		t := float32((float64(dm.Clamp(a[i])) - dm.Low) / (dm.High - dm.Low))
		lo, hi := h.embed[i][:d], h.embed[i][d:2*d]
		for j := range dst {
			dst[j] = (1-t)*lo[j] + t*hi[j]
		}
	}
}

// logitsOf computes logits (Σ width) = mean of the r output tokens out
// (r, d), kept in pooled (d), through the head's Dense layer: the forward
// pass both inference (decode) and training (Learner) take.
func (h *actionHead) logitsOf(logits, pooled, out []float32, r int) {
	d := h.dim
	clear(pooled)
	for t := 0; t < r; t++ {
		nn.Add(pooled, out[t*d:(t+1)*d])
	}
	inv := 1 / float32(r)
	for j := range pooled {
		pooled[j] *= inv
	}
	nn.Dense(logits, pooled, h.kernel, h.bias, 1, d, h.width)
}

// decode computes the logits from the TTM output (r, d) into logits
// (Σ width), using pooled (d) as scratch, and the action into a.
func (h *actionHead) decode(a, logits, pooled, out []float32, r int) {
	h.logitsOf(logits, pooled, out, r)
	for i, dm := range h.space.Dims {
		l := logits[h.offsets[i] : h.offsets[i]+outputWidth(dm)]
		if dm.Bins == 0 {
			a[i] = l[0]
			continue
		}
		best, arg := float32(math.Inf(-1)), 0
		for b, v := range l {
			if v > best {
				best, arg = v, b
			}
		}
		a[i] = dm.Value(arg)
	}
}
