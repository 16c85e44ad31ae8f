//go:build !amd64 || purego

package nn

import "testing"

// forEachKernel runs f with the one kernel this build has, the Go loops.
func forEachKernel(t *testing.T, f func(t *testing.T)) { t.Run("go", f) }
