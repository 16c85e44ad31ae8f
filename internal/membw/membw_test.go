package membw

import "testing"

func TestReadIsPlausible(t *testing.T) {
	// Anything real lies between 100 MB/s and 1 TB/s.
	bw := Read(32<<20, 2, 2)
	if bw < 1e8 || bw > 1e12 {
		t.Errorf("read bandwidth %.3g B/s is implausible", bw)
	}
}
