// Package fdcheck checks analytic gradients against finite differences of
// a float64 loss, for the tests of every package with backward passes.
package fdcheck

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Finite-difference checking of analytic gradients: the kernels of
// internal/nn, the layers, the vision head, the TTM's Tape, policy/seq's
// Tapes and the policy's learner. The loss is usually a
// float64 sum Σ out·g over float32 outputs for fixed random g; numeric
// gradients are central differences of it, computed by the caller's loss
// function; computing it with inference code rather than the training
// forward pass checks a tape's forward and backward passes at once.
//
// Two things limit how closely float32 numeric gradients can agree with
// the analytic ones, and the checker handles both from the numbers alone:
//
//   - Curvature. The tiny models are curved enough that a central
//     difference with step 1e-2 can be 10 % off, and over a window of steps
//     some directions are far more curved than that. Two steps are combined
//     by Richardson extrapolation, which cancels the h² error term, and the
//     step is halved (up to five times) until halving it no longer changes
//     the estimate by more than the tolerance.
//   - Rounding. The float32 forward makes the loss noisy at about 1e-7 of
//     its size (much more over a window, where the recurrence amplifies
//     it), and a difference quotient divides that noise by the step. The
//     checker measures the noise along each tensor and allows five standard
//     deviations of its effect on the quotient, on top of the relative
//     tolerance; it fails outright if that allowance would make the check
//     meaningless.

const (
	fdEps      = 2e-2 // first step (smaller where the gradient exceeds 1, see fdStep)
	fdHalvings = 3    // most times the step is halved
	fdTol      = 1e-2 // relative tolerance
	fdFloor    = 1e-2 // magnitudes below this are compared absolutely, to fdTol·fdFloor
	fdSigmas   = 5    // rounding allowance, in standard deviations
	fdMaxNoise = 5e-2 // largest rounding allowance at step fdEps that still makes a check worth having
)

// Var is one tensor to check: x is perturbed in place, grad holds the
// analytic dL/dx.
type Var struct {
	Name    string
	X, Grad []float32
}

// Indices picks up to n random entries of grad and the entry of largest
// magnitude (so that a check never looks only at near-zero entries).
func Indices(r *rand.Rand, grad []float32, n int) []int {
	if len(grad) <= n+1 {
		idx := make([]int, len(grad))
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	best := 0
	for i, v := range grad {
		if math.Abs(float64(v)) > math.Abs(float64(grad[best])) {
			best = i
		}
	}
	idx := []int{best}
	for _, i := range r.Perm(len(grad))[:n] {
		if i != best {
			idx = append(idx, i)
		}
	}
	return idx
}

// Report is the outcome of one finite-difference check.
type Report struct {
	Fails   []string // one line per mismatch
	Checked int      // entries compared
	Worst   float64  // largest |numeric - analytic| as a fraction of what was allowed
	Noise   float64  // rounding allowance at step fdEps
}

// Check compares the analytic gradients of vars with numeric ones at
// up to `samples`+1 entries per tensor.
func Check(r *rand.Rand, vars []Var, samples int, loss func() float64) Report {
	// noise(h) is the rounding allowance on a Richardson estimate with step h.
	sigma := LossNoise(r, vars, 12, loss)
	noise := func(h float32) float64 { return fdSigmas * richardsonNoise * sigma / float64(h) }
	rep := Report{Noise: noise(fdEps)}
	for _, v := range vars {
		for _, i := range Indices(r, v.Grad, samples) {
			ana := float64(v.Grad[i])
			num, h := numericGrad(v.X, i, fdStep(ana), noise, loss)
			allowed := fdTol*math.Max(fdFloor, math.Max(math.Abs(num), math.Abs(ana))) + noise(h)
			e := math.Abs(num-ana) / allowed
			rep.Worst = math.Max(rep.Worst, e)
			rep.Checked++
			if !(e <= 1) {
				rep.Fails = append(rep.Fails, fmt.Sprintf("%s[%d]: analytic %.6g, numeric %.6g (allowed difference %.2g)", v.Name, i, ana, num, allowed))
			}
		}
	}
	return rep
}

// numericGrad estimates dL/dx[i] by Richardson extrapolation from step h,
// halving the step while that changes the estimate by more than the
// tolerance plus the rounding allowance noise(h). It returns the estimate
// and the step it was made with.
func numericGrad(x []float32, i int, h float32, noise func(float32) float64, loss func() float64) (float64, float32) {
	dh, dh2 := central(x, i, h, loss), central(x, i, h/2, loss)
	est := (4*dh2 - dh) / 3
	for k := 0; k < fdHalvings; k++ {
		dh4 := central(x, i, h/4, loss)
		next := (4*dh4 - dh2) / 3
		if math.Abs(next-est) <= fdTol*math.Max(fdFloor, math.Max(math.Abs(est), math.Abs(next)))+noise(h/2) {
			return est, h
		}
		h, dh2, est = h/2, dh4, next
	}
	return est, h
}

// central is the central difference of loss in x[i] with step h (the step
// float32 actually takes).
func central(x []float32, i int, h float32, loss func() float64) float64 {
	orig := x[i]
	hp, hm := orig+h, orig-h
	x[i] = hp
	lp := loss()
	x[i] = hm
	lm := loss()
	x[i] = orig
	return (lp - lm) / (float64(hp) - float64(hm))
}

// fdStep is the first step for an entry whose analytic gradient is g:
// fdEps, or less where |g| > 1, in proportion. Steep directions tend to be
// the most curved, and their large gradient makes rounding noise matter
// less.
func fdStep(g float64) float32 {
	return float32(fdEps / math.Max(1, math.Abs(g)))
}

// richardsonNoise is the standard deviation of (4 D(h/2) - D(h)) / 3, in
// units of σ/h, when each loss value carries independent noise σ:
// sqrt(2·(4/h)² + 2·(1/(2h))²) / 3 with h = 1.
var richardsonNoise = math.Sqrt(2*16+2*0.25) / 3

// LossNoise estimates the standard deviation of the float32 rounding noise
// of loss when entries of vars change: the residual of quadratics fitted by
// least squares to loss at seven points about 1e-4 apart (a scale on which
// the loss is smooth far below its rounding) along `trials` random entries,
// pooled. The noise is a few units in the last place of the outputs, so
// one entry can show none at all; pooling over entries of all tensors gives
// the noise level of the loss.
func LossNoise(r *rand.Rand, vars []Var, trials int, loss func() float64) float64 {
	const tau = 1e-4
	var worst float64
	for trial := 0; trial < trials; trial++ {
		v := vars[r.IntN(len(vars))]
		i := r.IntN(len(v.X))
		orig := v.X[i]
		var ts, ys [7]float64
		for j := range ys {
			v.X[i] = orig + float32(j-3)*tau
			ts[j] = (float64(v.X[i]) - float64(orig)) / tau // the offset float32 really took
			ys[j] = loss()
		}
		v.X[i] = orig
		worst = math.Max(worst, quadraticResidual(ts[:], ys[:]))
	}
	return worst
}

// quadraticResidual fits y ≈ a + b t + c t² by least squares and returns
// the residual standard deviation, sqrt(Σ e² / (points - 3)).
func quadraticResidual(ts, ys []float64) float64 {
	// Orthogonalise 1, t, t² over the points (Gram-Schmidt), project y.
	n := len(ts)
	basis := [3][]float64{make([]float64, n), make([]float64, n), make([]float64, n)}
	for j, t := range ts {
		basis[0][j], basis[1][j], basis[2][j] = 1, t, t*t
	}
	res := append([]float64(nil), ys...)
	for k := range basis {
		for p := 0; p < k; p++ {
			var dot float64
			for j := range ts {
				dot += basis[k][j] * basis[p][j]
			}
			for j := range ts {
				basis[k][j] -= dot * basis[p][j]
			}
		}
		var norm float64
		for _, b := range basis[k] {
			norm += b * b
		}
		norm = math.Sqrt(norm)
		var proj float64
		for j := range ts {
			basis[k][j] /= norm
			proj += res[j] * basis[k][j]
		}
		for j := range ts {
			res[j] -= proj * basis[k][j]
		}
	}
	var ss float64
	for _, e := range res {
		ss += e * e
	}
	return math.Sqrt(ss / float64(n-3))
}

// Require runs Check and reports mismatches (at most a few) as errors.
func Require(t testing.TB, r *rand.Rand, vars []Var, samples int, loss func() float64) {
	t.Helper()
	rep := Check(r, vars, samples, loss)
	for i, f := range rep.Fails {
		if i == 8 {
			t.Errorf("... and %d more mismatches", len(rep.Fails)-i)
			break
		}
		t.Error(f)
	}
	if rep.Checked == 0 {
		t.Fatal("no gradient entry was checked")
	}
	if rep.Noise > fdMaxNoise {
		t.Errorf("the loss is too noisy to check gradients: rounding allowance %.2g > %.2g", rep.Noise, fdMaxNoise)
	}
	t.Logf("%d entries of %d tensors; worst difference %.2f of the allowed; rounding allowance %.1e at step %g",
		rep.Checked, len(vars), rep.Worst, rep.Noise, fdEps)
}
