//go:build !cgo || purego

package nn

const backendName = "gonum"

// SetThreads is a no-op for gonum's pure-Go kernels, which are single-threaded
// for the sizes used here.
func SetThreads(int) {}

// Threads reports 1: gonum's kernels run on the calling goroutine.
func Threads() int { return 1 }
