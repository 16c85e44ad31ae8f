package policy

import (
	"fmt"
	"math"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/internal/nn"
	"github.com/ttmrobot/ttm/vision"
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
func outputWidth(d action.Dimension) int {
	if d.Bins == 0 {
		return 1
	}
	return d.Bins
}

// inputRows is how many embedding rows dimension d needs: one per bin, or
// for a continuous dimension, two rows interpolated by the value's position
// in [Low, High].
func inputRows(d action.Dimension) int {
	if d.Bins == 0 {
		return 2
	}
	return d.Bins
}

// actionHead holds the action embeddings and the output head.
type actionHead struct {
	space   action.Space
	dim     int         // d, the TTM width
	embed   [][]float32 // per dimension (inputRows, d)
	kernel  []float32   // (d, Σ width)
	bias    []float32   // (Σ width)
	offsets []int       // start of each dimension's outputs
	width   int         // Σ width
	nProp   int         // Q, proprioception values; 0: no proprioception token
	propW   []float32   // (Q, d)
	propB   []float32   // (d)
	// nFeedback is the language width E with Config.MemoryFiLM, else 0.
	nFeedback int
	feedbackW []float32 // (d, E): the previous step's pooled output into FiLM's embedding
	// nPrior is GeometryPoints·Positions with Config.MemoryPrior, else 0.
	nPrior int
	priorW []float32 // (d, GeometryPoints·Positions): the previous step's pooled output into the keypoint logits
	// nGoal is GoalLen with Config.GoalProbe, else 0.
	nGoal int
	goalW []float32 // (d, GoalLen)
	goalB []float32 // (GoalLen)

	// packed is kernel laid out for nn.MatMulPacked, its width padded with
	// zero columns to whole panels: inference streams the weights once,
	// shared with the worker team. Built by the first decode, dropped by
	// Policy.ParamsChanged; training reads kernel.
	packed *nn.Packed
}

// goalProbe writes the goal probe's estimate of pooled (d) into goal
// (GoalLen).
func (h *actionHead) goalProbe(goal, pooled []float32) {
	nn.Dense(goal, pooled, h.goalW, h.goalB, 1, h.dim, h.nGoal)
}

// goalProbeBackward accumulates the probe's gradients into g's goalW and
// goalB, and ∂loss/∂pooled into dPooled (d), from dGoal (GoalLen).
func (h *actionHead) goalProbeBackward(g *actionHead, dPooled, dGoal, pooled []float32) {
	nn.DenseBackward(dPooled, g.goalW, g.goalB, dGoal, pooled, h.goalW, 1, h.dim, h.nGoal)
}

// filmEmbedding writes FiLM's conditioning for one step into dst (E): the
// instruction embedding emb plus the feedback layer of the previous
// step's pooled output fb (d; nil adds nothing).
func (h *actionHead) filmEmbedding(dst, emb, fb []float32) {
	copy(dst, emb)
	if fb != nil {
		nn.MatMul(dst, fb, h.feedbackW, 1, h.dim, h.nFeedback, true)
	}
}

// filmEmbeddingBackward accumulates the feedback layer's gradient into
// g.feedbackW and, with dFb not nil, ∂loss/∂fb into dFb (d), from dEmb
// (E), the gradient of the step's conditioning; fb is what the forward
// pass read.
func (h *actionHead) filmEmbeddingBackward(g *actionHead, dFb, dEmb, fb []float32) {
	nn.MatMulBackward(dFb, g.feedbackW, dEmb, fb, h.feedbackW, 1, h.dim, h.nFeedback)
}

// keypointPrior writes the memory's prior over the keypoint map into kp's
// Prior, in the rows of the geometry's points (channels 1 to
// GeometryPoints: the target's and the destination's): the prior layer of
// the previous step's pooled output fb (d), or zeros for fb nil. kp gets a
// Prior of zeros on first use.
func (h *actionHead) keypointPrior(kp *vision.KeypointActs, fb []float32) {
	if kp.Prior == nil {
		kp.Prior = make([]float32, kp.D*kp.N)
	}
	prior := h.priorRows(kp.Prior, kp.N)
	if fb == nil {
		clear(prior)
		return
	}
	nn.MatMul(prior, fb, h.priorW, 1, h.dim, h.nPrior, false)
}

// keypointPriorBackward accumulates the prior layer's gradient into
// g.priorW and, with dFb not nil, ∂loss/∂fb into dFb (d), from kp's
// LogitGrad after the step's backward pass; fb is what the forward pass
// read.
func (h *actionHead) keypointPriorBackward(g *actionHead, dFb []float32, kp *vision.KeypointActs, fb []float32) {
	nn.MatMulBackward(dFb, g.priorW, h.priorRows(kp.LogitGrad(), kp.N), fb, h.priorW, 1, h.dim, h.nPrior)
}

// priorRows is the part of a (channels, n) keypoint map x that the prior
// layer writes: the rows after the hand's, one per geometry point.
func (h *actionHead) priorRows(x []float32, n int) []float32 { return x[n : n+h.nPrior] }

// paramSpec is one named parameter of the policy outside the TTM.
type paramSpec struct {
	name  string
	shape []int
	dst   *[]float32
}

func newActionHead(c Config, d, langWidth, positions int) *actionHead {
	space := c.ActionSpace
	h := &actionHead{space: space, dim: d, embed: make([][]float32, space.Len()), nProp: c.proprioInputs()}
	if c.MemoryFiLM {
		h.nFeedback = langWidth
	}
	if c.MemoryPrior {
		h.nPrior = c.geometryPoints() * positions
	}
	if c.GoalProbe {
		h.nGoal = GoalLen
	}
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
	if h.nFeedback > 0 {
		s = append(s, paramSpec{prefix + "memory_film/kernel", []int{h.dim, h.nFeedback}, &h.feedbackW})
	}
	if h.nPrior > 0 {
		s = append(s, paramSpec{prefix + "memory_prior/kernel", []int{h.dim, h.nPrior}, &h.priorW})
	}
	if h.nGoal > 0 {
		s = append(s, paramSpec{prefix + "goal_probe/kernel", []int{h.dim, h.nGoal}, &h.goalW})
		s = append(s, paramSpec{prefix + "goal_probe/bias", []int{h.nGoal}, &h.goalB})
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
// pass training (Learner) takes.
func (h *actionHead) logitsOf(logits, pooled, out []float32, r int) {
	h.pool(pooled, out, r)
	nn.Dense(logits, pooled, h.kernel, h.bias, 1, h.dim, h.width)
}

// pool writes the mean of the r output tokens out (r, d) into pooled (d).
func (h *actionHead) pool(pooled, out []float32, r int) {
	d := h.dim
	clear(pooled)
	for t := 0; t < r; t++ {
		nn.Add(pooled, out[t*d:(t+1)*d])
	}
	inv := 1 / float32(r)
	for j := range pooled {
		pooled[j] *= inv
	}
}

// paddedWidth is the head's width rounded up to whole panels.
func (h *actionHead) paddedWidth() int {
	return (h.width + nn.PanelWidth - 1) / nn.PanelWidth * nn.PanelWidth
}

// pack lays the kernel out for nn.MatMulPacked (allocating).
func (h *actionHead) pack() {
	n := h.paddedWidth()
	padded := make([]float32, h.dim*n)
	for i := range h.dim {
		copy(padded[i*n:i*n+h.width], h.kernel[i*h.width:(i+1)*h.width])
	}
	h.packed = nn.Pack(padded, h.dim, n)
}

// decode computes the logits from the TTM output (r, d) into logits
// (paddedWidth; the first Σ width are the head's), using pooled (d) and
// pack (nn.PackScratchSize(d)) as scratch, and the action into a. Its
// logits equal logitsOf's up to rounding, and bit for bit up to d = 256
// when Gemm is the project's own product (nn.Backend() "packed").
func (h *actionHead) decode(a, logits, pooled, out []float32, r int, pack []float32) {
	h.pool(pooled, out, r)
	if h.packed == nil {
		h.pack()
	}
	copy(logits, h.bias)
	clear(logits[h.width:])
	nn.MatMulPacked(logits, pooled, h.packed, 1, pack)
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
