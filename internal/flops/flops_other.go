//go:build !cgo

package flops

// Available reports whether Peak measures anything in this build: not
// without cgo.
const Available = false

// Peak returns 0 without cgo.
func Peak(threads, rounds int) float64 { return 0 }
