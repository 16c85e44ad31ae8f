package ttm

import (
	"strings"

	"github.com/ttmrobot/ttm/internal/fdcheck"
)

// The finite-difference checker lives in internal/fdcheck (shared with
// policy/seq); these are its names in this package's tests.
type fdVar = fdcheck.Var

var requireFD = fdcheck.Require

// paramVars lists every parameter tensor whose name starts with one of the
// prefixes ("" matches all) as an fdVar over model.Params and grads.
func paramVars(m *Model, grads []float32, prefixes ...string) []fdVar {
	var vars []fdVar
	for _, s := range m.Specs {
		for _, p := range prefixes {
			if strings.HasPrefix(s.Name, p) {
				vars = append(vars, fdVar{Name: s.Name, X: m.Params[s.Offset : s.Offset+s.Size], Grad: grads[s.Offset : s.Offset+s.Size]})
				break
			}
		}
	}
	return vars
}

// dot is Σ x·g in float64.
func dot(x, g []float32) float64 {
	var s float64
	for i, v := range x {
		s += float64(v) * float64(g[i])
	}
	return s
}
