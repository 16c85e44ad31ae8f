package eval

import "math"

// z95 is the standard normal quantile for a two-sided 95 % interval,
// Φ⁻¹(0.975).
const z95 = 1.959963984540054

// Wilson returns the 95 % Wilson score interval of a success rate with k
// successes in n trials:
//
//	centre = (p + z²/2n) / (1 + z²/n)
//	half   = z / (1 + z²/n) · sqrt(p(1-p)/n + z²/4n²)
//
// with p = k/n and z = 1.96. Unlike the normal approximation it stays
// inside [0, 1] and is not empty at k = 0 or k = n. n must be positive and
// 0 <= k <= n.
func Wilson(k, n int) (low, high float64) {
	if n <= 0 || k < 0 || k > n {
		panic("eval: Wilson: need 0 <= k <= n and n > 0")
	}
	nf := float64(n)
	p := float64(k) / nf
	z2 := z95 * z95
	den := 1 + z2/nf
	centre := (p + z2/(2*nf)) / den
	half := z95 / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	low, high = max(0, centre-half), min(1, centre+half)
	// At the ends the bound is exactly 0 or 1 (centre ± half cancels);
	// rounding must not leave the estimate outside its interval.
	if k == 0 {
		low = 0
	}
	if k == n {
		high = 1
	}
	return low, high
}
