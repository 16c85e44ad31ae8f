package ttm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/nn"
)

// BenchmarkStep measures one TTM step per preset and mode, with the packed
// products shared by one and by two goroutines. make bench runs it.
func BenchmarkStep(b *testing.B) {
	robot, _ := Preset("robot")
	small, _ := Preset("small")
	mixer := robot
	mixer.MemoryMode, mixer.ProcessingUnit = QueryAttention, Mixer
	addErase := robot
	addErase.MemoryMode, addErase.ProcessingUnit = AddErase, MLP
	nn.SetThreads(1)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"robot", robot}, {"robot-TL-MHA-mixer", mixer}, {"robot-TL-AddErase-mlp", addErase}, {"small", small}} {
		m, err := NewModel(tc.cfg)
		if err != nil {
			b.Fatal(err)
		}
		m.Init(1)
		c := m.Config
		r := rand.New(rand.NewPCG(1, 2))
		in := randFloats(r, c.InputTokens*c.Dim, 1)
		out := make([]float32, c.ProcessSize*c.Dim)
		for _, par := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/par-%d", tc.name, par), func(b *testing.B) {
				nn.SetParallelism(par)
				defer nn.SetParallelism(1)
				mc := NewMachine(m)
				mem := NewMemory(c)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					mc.Step(mem, in, out)
				}
				b.ReportMetric(float64(c.FLOPs())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
