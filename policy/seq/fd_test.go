package seq

import "github.com/ttmrobot/ttm/internal/fdcheck"

// The finite-difference checker lives in internal/fdcheck (shared with the
// ttm package's tests); these are its names in this package's tests.
type fdVar = fdcheck.Var

var requireFD = fdcheck.Require

func dot(x, g []float32) float64 {
	var s float64
	for i, v := range x {
		s += float64(v) * float64(g[i])
	}
	return s
}
