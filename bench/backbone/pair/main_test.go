package main

import "testing"

func TestMedianInterval(t *testing.T) {
	seq := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(n - i) // descending: the function must sort
		}
		return v
	}
	cases := []struct {
		name        string
		v           []float64
		lo, mid, hi float64
	}{
		// n = 9: 4.5 ∓ 2.94 gives ranks 1 and 8 (1-based), the median the 5th.
		{"odd", seq(9), 1, 5, 8},
		// n = 40: 20 ∓ 6.20 gives ranks 13 and 27; the median is between the 20th and 21st.
		{"even", seq(40), 13, 20.5, 27},
		// n = 4: the interval is the whole sample.
		{"small", []float64{3, 1, 4, 2}, 1, 2.5, 4},
	}
	for _, c := range cases {
		lo, mid, hi := medianInterval(c.v)
		if lo != c.lo || mid != c.mid || hi != c.hi {
			t.Errorf("%s: got %v %v %v, want %v %v %v", c.name, lo, mid, hi, c.lo, c.mid, c.hi)
		}
	}
}
