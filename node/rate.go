package node

import (
	"fmt"
	"math"
)

// RateMismatch is what the node does when its ~rate differs from the rate
// the policy learnt its per-step actions at (policy.Config.Rate): run at
// 10 Hz, a policy that learnt at 3 Hz moves the arm 3.3 times as fast.
type RateMismatch string

// The ~rate_mismatch values.
const (
	// RateRefuse refuses to start (the default).
	RateRefuse RateMismatch = "refuse"
	// RateRescale scales the per-step actions (action.PerStep: the arm's
	// displacements) by the trained rate over ~rate, so the arm moves as
	// fast as in the demonstrations. Velocities (the base's) are per
	// second and need no scaling; the gripper and the mode are targets.
	RateRescale RateMismatch = "rescale"
	// RateLockstep acts as trained, each action one trained step: for a
	// simulator that steps once per action whatever the wall clock (ttm
	// sim --ros), never for a robot.
	RateLockstep RateMismatch = "lockstep"
)

// rateMatch is how far, relatively, ~rate may be from the trained rate and
// still count as it.
const rateMatch = 0.01

// ParseRateMismatch reads a ~rate_mismatch value.
func ParseRateMismatch(s string) (RateMismatch, error) {
	switch m := RateMismatch(s); m {
	case RateRefuse, RateRescale, RateLockstep:
		return m, nil
	}
	return "", fmt.Errorf("~rate_mismatch %q: want %s, %s or %s", s, RateRefuse, RateRescale, RateLockstep)
}

// ChooseRate returns the control rate and the scale of the per-step
// actions for the ~rate parameter (0: unset) and the rate the policy
// learnt at (0: unknown). Unset, the rate is the trained one (DefaultRate
// when unknown); set to another, mismatch decides (see RateMismatch).
func ChooseRate(param, trained float64, mismatch RateMismatch) (rate, scale float64, err error) {
	switch {
	case param == 0 && trained == 0:
		return DefaultRate, 1, nil
	case param == 0:
		return trained, 1, nil
	case trained == 0 || math.Abs(param-trained) <= rateMatch*trained:
		return param, 1, nil
	}
	switch mismatch {
	case RateRescale:
		return param, trained / param, nil
	case RateLockstep:
		return param, 1, nil
	}
	return 0, 0, fmt.Errorf("the policy learnt its per-step actions at %.4g Hz; at ~rate %.4g Hz its arm would move %.3g times as fast: "+
		"leave ~rate unset (or set it to %.4g), or set ~rate_mismatch to %s (scale the per-step actions by %.3g) or %s (a simulator that steps once per action)",
		trained, param, param/trained, trained, RateRescale, trained/param, RateLockstep)
}
