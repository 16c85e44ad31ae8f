// Package membw measures this machine's memory read bandwidth, the floor
// under any computation that has to stream its weights from memory.
package membw

import (
	"bytes"
	"sync"
	"time"
)

// Read returns the best of rounds measurements of read bandwidth in bytes
// per second, scanning a buffer of size bytes split between goroutines.
// The scan is bytes.IndexByte for a byte that is not there: the standard
// library's vectorised (AVX2 on amd64) search, which reads every byte once
// and does almost nothing else. The buffer should be several times larger
// than the last-level cache for the figure to mean main memory.
func Read(size, goroutines, rounds int) float64 {
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = 1 // touch every page before timing
	}
	part := size / goroutines
	best := 0.0
	for r := 0; r < rounds; r++ {
		start := time.Now()
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func(s []byte) {
				defer wg.Done()
				if bytes.IndexByte(s, 0) >= 0 {
					panic("membw: buffer was not filled")
				}
			}(buf[g*part : (g+1)*part])
		}
		wg.Wait()
		best = max(best, float64(part*goroutines)/time.Since(start).Seconds())
	}
	return best
}
