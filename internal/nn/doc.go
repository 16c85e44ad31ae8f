// Package nn holds the float32 kernels every model in this project is built
// from: matrix products through gonum's BLAS interface, LayerNorm, GELU,
// softmax and the small row/column helpers around them.
//
// The style follows llm.c: plain row-major []float32 slices, one function per
// operation, outputs first, then inputs, then sizes. Each forward kernel sits
// beside its backward kernel; backward kernels accumulate (+=) into gradient
// slices, which callers zero explicitly. Shape letters used below:
//
//	N = rows (tokens), C = channels (width), K = output columns.
//
// Shape mismatches are programmer errors and panic with a message prefixed
// by "nn: "; nothing here allocates.
package nn
