//go:build !cgo || purego

package nn

const backendName = "gonum"

// SetThreads is a no-op for gonum's pure-Go kernels, which split a product
// over goroutines themselves when its result spans four or more 64x64 blocks.
func SetThreads(int) {}

// Threads reports 1: gonum has no thread setting.
func Threads() int { return 1 }
