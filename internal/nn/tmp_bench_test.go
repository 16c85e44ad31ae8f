package nn

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"
)

func hugeFloats(n int, huge bool) []float32 {
	const align = 2 << 20
	b, err := syscall.Mmap(-1, 0, n*4+align, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	off := (align - int(uintptr(unsafe.Pointer(&b[0])))%align) % align
	b = b[off : off+n*4]
	if huge {
		if err := syscall.Madvise(b, 14); err != nil { // MADV_HUGEPAGE
			panic(err)
		}
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
}

func BenchmarkTmpHuge(b *testing.B) {
	for _, huge := range []bool{false, true} {
		for _, s := range []struct{ k, n int }{{512, 512}, {512, 1536}} {
			count := 64 << 20 / (4 * s.k * s.n)
			r := rand.New(rand.NewPCG(1, 1))
			all := hugeFloats(count*s.k*s.n, huge)
			ps := make([]*Packed, count)
			for i := range ps {
				ps[i] = &Packed{K: s.k, N: s.n, Data: all[i*s.k*s.n : (i+1)*s.k*s.n]}
				ps[i].Repack(randSlice(r, s.k*s.n, 1))
			}
			in, out := randSlice(r, 16*s.k, 1), make([]float32, 16*s.n)
			scratch := make([]float32, PackScratchSize(s.k))
			for _, par := range []int{1, 2} {
				b.Run(fmt.Sprintf("huge=%v/%dx%d/par%d", huge, s.k, s.n, par), func(b *testing.B) {
					SetParallelism(par)
					defer SetParallelism(1)
					for i := 0; i < b.N; i++ {
						MatMulPacked(out, in, ps[i%count], 16, scratch)
					}
					b.ReportMetric(float64(4*s.k*s.n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				})
			}
		}
	}
}
