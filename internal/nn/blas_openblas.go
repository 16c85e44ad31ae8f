//go:build cgo && !purego

package nn

import (
	"gonum.org/v1/gonum/blas"

	"github.com/ttmrobot/ttm/internal/openblas"
)

const backendName = "openblas"

var impl blas.Float32 = openblas.Implementation{}

// SetThreads sets the number of threads OpenBLAS uses for one product.
func SetThreads(n int) { openblas.SetThreads(n) }

// Threads reports the number of threads OpenBLAS uses.
func Threads() int { return openblas.Threads() }
