package ttm

import (
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/nn"
)

// BenchmarkTapeStep measures one recorded step forward and its backward
// pass, on one goroutine with single-threaded BLAS (data-parallel training
// runs one Tape per core).
func BenchmarkTapeStep(b *testing.B) {
	robot, _ := Preset("robot")
	small, _ := Preset("small")
	mhaMixer := robot
	mhaMixer.MemoryMode, mhaMixer.ProcessingUnit = QueryAttention, Mixer
	addErase := robot
	addErase.MemoryMode, addErase.ProcessingUnit = AddErase, MLP
	threads := nn.Threads()
	nn.SetThreads(1)
	defer nn.SetThreads(threads)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"small", small}, {"robot", robot}, {"robot-TL-MHA-mixer", mhaMixer}, {"robot-TL-AddErase-mlp", addErase}} {
		b.Run(tc.name, func(b *testing.B) {
			m, err := NewModel(tc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			m.Init(1)
			c := m.Config
			r := rand.New(rand.NewPCG(1, 2))
			in, out := randFloats(r, c.InputTokens*c.Dim, 1), make([]float32, c.ProcessSize*c.Dim)
			dOut, dIn := randFloats(r, c.ProcessSize*c.Dim, 1), make([]float32, c.InputTokens*c.Dim)
			dMem, grads := make([]float32, c.MemorySize*c.Dim), make([]float32, m.NumParams())
			tape, mem := NewTape(m, 1), NewMemory(c)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tape.Reset()
				tape.Forward(mem, in, out)
				clear(dMem)
				tape.Backward(dOut, dMem, dIn, grads)
			}
		})
	}
}
