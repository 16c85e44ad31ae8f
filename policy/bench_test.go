package policy

import (
	"path/filepath"
	"testing"

	"github.com/ttmrobot/ttm/internal/nn"
)

// BenchmarkStep times one whole policy step (front end with its backbone,
// TTM, head) for each preset, on a fresh checkpoint.
func BenchmarkStep(b *testing.B) {
	nn.SetThreads(1)
	nn.SetParallelism(2)
	defer nn.SetParallelism(1)
	for _, name := range []string{"small", "robot"} {
		b.Run(name, func(b *testing.B) {
			spec, err := Preset(name)
			if err != nil {
				b.Fatal(err)
			}
			path := filepath.Join(b.TempDir(), name+".safetensors")
			if err := Create(spec, 1, "", path, nil); err != nil {
				b.Fatal(err)
			}
			p, err := Load(path, Options{Threads: 2})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			st := p.NewState()
			act := make([]float32, p.ActionSpace().Len())
			obs := &Observation{Frame: frame(1), Instruction: "pick the coke can"}
			if err := p.Step(obs, st, act); err != nil { // first frame: buffers sized
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p.Step(obs, st, act); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
