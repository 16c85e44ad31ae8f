//go:build cgo

// Package openblas links OpenBLAS (Debian's libopenblas-dev) behind gonum's
// BLAS interface, through gonum/netlib, and exposes its thread setting.
package openblas

// #cgo LDFLAGS: -lopenblas
// extern void openblas_set_num_threads(int);
// extern int openblas_get_num_threads(void);
import "C"

import "gonum.org/v1/netlib/blas/netlib"

// Implementation is OpenBLAS as a gonum blas.Float32 and blas.Float64.
type Implementation = netlib.Implementation

// SetThreads sets the number of threads OpenBLAS uses for one call.
func SetThreads(n int) { C.openblas_set_num_threads(C.int(max(n, 1))) }

// Threads reports the number of threads OpenBLAS uses for one call.
func Threads() int { return int(C.openblas_get_num_threads()) }
