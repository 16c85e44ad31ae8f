package eval

import (
	"math"
	"testing"
)

func TestWilson(t *testing.T) {
	z2 := z95 * z95
	for _, c := range []struct {
		k, n      int
		low, high float64
		tol       float64
		source    string
	}{
		// Newcombe (1998), "Two-sided confidence intervals for the single
		// proportion", Statistics in Medicine 17:857-872, Table I, method 3
		// (score interval without continuity correction), 4 decimals.
		{81, 263, 0.2553, 0.3662, 5e-5, "Newcombe"},
		{15, 148, 0.0624, 0.1605, 5e-5, "Newcombe"},
		{0, 20, 0.0000, 0.1611, 5e-5, "Newcombe"},
		{1, 29, 0.0061, 0.1718, 5e-5, "Newcombe"},
		// Closed forms at the ends: k = 0 gives [0, z²/(n+z²)], k = n gives
		// [n/(n+z²), 1].
		{0, 10, 0, z2 / (10 + z2), 1e-12, "k=0"},
		{10, 10, 10 / (10 + z2), 1, 1e-12, "k=n"},
		{0, 1, 0, z2 / (1 + z2), 1e-12, "k=0, n=1"},
		// k = n/2: centred on 1/2, half-width z/(1+z²/n)·sqrt(1/4n + z²/4n²):
		// for n = 10, 1.959964/1.384146 · sqrt(0.025 + 0.0096037) = 0.263407.
		{5, 10, 0.5 - 0.263407, 0.5 + 0.263407, 1e-6, "k=n/2"},
	} {
		low, high := Wilson(c.k, c.n)
		if math.Abs(low-c.low) > c.tol || math.Abs(high-c.high) > c.tol {
			t.Errorf("Wilson(%d, %d) = [%.6f, %.6f], want [%.6f, %.6f] (%s)", c.k, c.n, low, high, c.low, c.high, c.source)
		}
	}
	// Invariants: the interval holds the estimate, lies in [0, 1], and
	// mirrors under k -> n-k.
	for n := 1; n <= 60; n++ {
		for k := 0; k <= n; k++ {
			low, high := Wilson(k, n)
			p := float64(k) / float64(n)
			if low < 0 || high > 1 || low > p || high < p {
				t.Fatalf("Wilson(%d, %d) = [%g, %g] does not hold %g within [0, 1]", k, n, low, high, p)
			}
			ml, mh := Wilson(n-k, n)
			if math.Abs(low-(1-mh)) > 1e-12 || math.Abs(high-(1-ml)) > 1e-12 {
				t.Fatalf("Wilson(%d, %d) = [%g, %g] is not the mirror of Wilson(%d, %d) = [%g, %g]", k, n, low, high, n-k, n, ml, mh)
			}
		}
	}
}

func TestStats(t *testing.T) {
	i := func(v int) *int { return &v }
	es := []EpisodeResult{
		{Task: "pick", Success: true, Steps: 10, StepsToSuccess: i(8), Terminated: true},
		{Task: "pick", Success: false, Steps: 60},
		{Task: "pick", Success: true, Steps: 30, StepsToSuccess: i(20), Terminated: true},
		{Task: "pick", Success: true, Steps: 60, StepsToSuccess: i(50)},
	}
	s := stats(es)
	// 3 of 4; steps to success 8, 20, 50: mean 26, median 20; mean steps 40.
	if s.Episodes != 4 || s.Successes != 3 || s.SuccessRate != 0.75 || s.Terminated != 2 || s.MeanSteps != 40 {
		t.Errorf("stats %+v", s)
	}
	if s.MeanStepsToSuccess == nil || *s.MeanStepsToSuccess != 26 || *s.MedianStepsToSuccess != 20 {
		t.Errorf("steps to success: mean %v, median %v, want 26 and 20", s.MeanStepsToSuccess, s.MedianStepsToSuccess)
	}
	if lo, hi := Wilson(3, 4); s.CILow != lo || s.CIHigh != hi {
		t.Errorf("interval [%g, %g], want Wilson(3, 4) = [%g, %g]", s.CILow, s.CIHigh, lo, hi)
	}
	if m := median([]int{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of 1..4 = %g, want 2.5", m)
	}
	none := stats(es[1:2])
	if none.SuccessRate != 0 || none.MeanStepsToSuccess != nil || none.MedianStepsToSuccess != nil {
		t.Errorf("no successes: %+v", none)
	}
}
