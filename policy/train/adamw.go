package train

import (
	"math"

	"github.com/ttmrobot/ttm/policy"
)

// AdamW is Adam with decoupled weight decay (Loshchilov and Hutter 2019),
// over the policy's parameter groups:
//
//	m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²
//	θ -= lr·( m/(1-β1^t) / (sqrt(v/(1-β2^t)) + ε) + λ·θ )
//
// Weight decay skips one-dimensional tensors (biases, LayerNorm scales) as
// is usual; Decay says per parameter whether it applies.
type AdamW struct {
	Beta1, Beta2, Eps, WeightDecay float64
	M, V                           []policy.Group // moments, same layout as the parameters
	Decay                          [][]bool       // per group and parameter
	Step                           int            // updates done
}

// NewAdamW makes the optimiser's state for params; decays[i][j] says
// whether parameter j of group i is decayed.
func NewAdamW(params []policy.Group, decays [][]bool, weightDecay float64) *AdamW {
	o := &AdamW{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: weightDecay, Decay: decays}
	for _, g := range params {
		o.M = append(o.M, policy.Group{Name: g.Name, Params: make([]float32, len(g.Params))})
		o.V = append(o.V, policy.Group{Name: g.Name, Params: make([]float32, len(g.Params))})
	}
	return o
}

// Update applies one step with learning rate lr.
func (o *AdamW) Update(params, grads []policy.Group, lr float64) {
	o.Step++
	b1, b2 := float32(o.Beta1), float32(o.Beta2)
	c1 := float32(1 / (1 - math.Pow(o.Beta1, float64(o.Step))))
	c2 := float32(1 / (1 - math.Pow(o.Beta2, float64(o.Step))))
	lr32, eps, wd := float32(lr), float32(o.Eps), float32(o.WeightDecay)
	for i, g := range params {
		p, gr, m, v, dec := g.Params, grads[i].Params, o.M[i].Params, o.V[i].Params, o.Decay[i]
		for j := range p {
			m[j] = b1*m[j] + (1-b1)*gr[j]
			v[j] = b2*v[j] + (1-b2)*gr[j]*gr[j]
			u := (m[j] * c1) / (float32(math.Sqrt(float64(v[j]*c2))) + eps)
			if dec[j] {
				u += wd * p[j]
			}
			p[j] -= lr32 * u
		}
	}
}

// Schedule is linear warm-up to Peak over Warmup updates, then cosine decay
// to Peak·Floor at Total updates.
type Schedule struct {
	Peak          float64
	Warmup, Total int
	Floor         float64
}

// At returns the learning rate of update step (0-based).
func (s Schedule) At(step int) float64 {
	if step < s.Warmup {
		return s.Peak * float64(step+1) / float64(s.Warmup)
	}
	if s.Total <= s.Warmup {
		return s.Peak
	}
	t := math.Min(1, float64(step-s.Warmup)/float64(s.Total-s.Warmup))
	return s.Peak * (s.Floor + (1-s.Floor)*0.5*(1+math.Cos(math.Pi*t)))
}

// ClipGlobalNorm scales grads so their global L2 norm is at most maxNorm
// (no-op when maxNorm <= 0) and returns the norm before clipping.
func ClipGlobalNorm(grads []policy.Group, maxNorm float64) float64 {
	var ss float64
	for _, g := range grads {
		for _, v := range g.Params {
			ss += float64(v) * float64(v)
		}
	}
	norm := math.Sqrt(ss)
	if maxNorm > 0 && norm > maxNorm {
		s := float32(maxNorm / norm)
		for _, g := range grads {
			for j := range g.Params {
				g.Params[j] *= s
			}
		}
	}
	return norm
}
