package flops

import "testing"

func TestPeakIsPlausible(t *testing.T) {
	if !Available {
		t.Skip("no cgo: no FMA loop")
	}
	// Anything real lies between 100 MFLOP/s and 100 TFLOP/s.
	for _, threads := range []int{1, 2} {
		p := Peak(threads, 2)
		if p < 1e8 || p > 1e14 {
			t.Errorf("peak %.3g FLOP/s on %d threads is implausible", p, threads)
		}
		t.Logf("FMA peak on %d threads: %.1f GFLOP/s", threads, p/1e9)
	}
}
