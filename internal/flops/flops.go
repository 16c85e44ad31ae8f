//go:build cgo

// Package flops measures this machine's float32 arithmetic peak: fused
// multiply-adds on 24 independent registers of the widest vectors the CPU
// runs (AVX-512, else AVX2, else scalar), on several threads at once. It
// is the ceiling over any computation, as internal/membw's bandwidth is
// the floor under one that streams its weights.
package flops

/*
#cgo CFLAGS: -O2
#include "peak.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
)

// Available reports whether Peak measures anything in this build.
const Available = true

// Peak returns the best of rounds measurements of float32 FLOP/s summed
// over threads goroutines, each on an OS thread of its own running the FMA
// loop for about 30 ms.
func Peak(threads, rounds int) float64 {
	const iters = 1 << 23 // about 30 ms with AVX-512 at 3.4 GHz
	best := 0.0
	for r := 0; r < rounds; r++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		total := 0.0
		start := time.Now()
		for t := 0; t < threads; t++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var sink C.float
				f := float64(C.ttm_fma_loop(iters, &sink))
				mu.Lock()
				total += f
				mu.Unlock()
			}()
		}
		wg.Wait()
		best = max(best, total/time.Since(start).Seconds())
	}
	return best
}
