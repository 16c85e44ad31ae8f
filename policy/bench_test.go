package policy

import (
	"path/filepath"
	"testing"

	"github.com/ttmrobot/ttm/internal/nn"
	"github.com/ttmrobot/ttm/policy/seq"
)

// BenchmarkStep times one whole policy step (front end with its backbone,
// TTM, head) for each preset, on a fresh checkpoint.
func BenchmarkStep(b *testing.B) {
	nn.SetThreads(1)
	nn.SetParallelism(2)
	defer nn.SetParallelism(1)
	for _, name := range []string{"small", "small-keypoints", "robot", "robot-b3"} {
		b.Run(name, func(b *testing.B) {
			p, err := Load(presetCheckpoint(b, name), Options{Threads: 2})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			benchSteps(b, p)
		})
	}
}

// benchSteps times p.Step on one frame, after a first step that sizes the
// buffers.
func benchSteps(b *testing.B, p *Policy) {
	st := p.NewState()
	act := make([]float32, p.ActionSpace().Len())
	obs := &Observation{Frame: frame(1), Instruction: "pick the coke can"}
	if err := p.Step(obs, st, act); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.Step(obs, st, act); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepModels times one whole step of the small preset for every
// sequence model (seq.Names), backbone included, all on one backbone.
func BenchmarkStepModels(b *testing.B) {
	nn.SetThreads(1)
	nn.SetParallelism(2)
	defer nn.SetParallelism(1)
	dir := b.TempDir()
	backbone := ""
	for _, name := range seq.Names() {
		b.Run(name, func(b *testing.B) {
			spec, err := Preset("small")
			if err != nil {
				b.Fatal(err)
			}
			spec.Policy.Model = name
			path := filepath.Join(dir, name+".safetensors")
			if err := Create(spec, 1, backbone, path, nil); err != nil {
				b.Fatal(err)
			}
			p, err := Load(path, Options{Threads: 2})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			backbone = p.BackbonePath()
			benchSteps(b, p)
		})
	}
}

// BenchmarkStepTokensModels times StepTokens of the small preset (the
// sequence model and the action head, no backbone) for every sequence
// model, after 10 warm-up steps.
func BenchmarkStepTokensModels(b *testing.B) {
	nn.SetThreads(1)
	for _, name := range seq.Names() {
		b.Run(name, func(b *testing.B) {
			p := benchSeqPolicy(b, name)
			st := p.NewState()
			frame := make([]float32, p.spec.Vision.Head.Tokens*p.spec.TTM.Dim)
			for i := range frame {
				frame[i] = float32(i%13)*0.1 - 0.6
			}
			act := make([]float32, p.ActionSpace().Len())
			for range 10 {
				if err := p.StepTokens(frame, nil, st, act); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p.StepTokens(frame, nil, st, act); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchSeqPolicy is the small preset on the sequence model name, seeded,
// without a backbone.
func benchSeqPolicy(b *testing.B, name string) *Policy {
	b.Helper()
	if name == "ttm" {
		name = ""
	}
	spec, err := Preset("small")
	if err != nil {
		b.Fatal(err)
	}
	spec.Policy.Model = name
	path := filepath.Join(b.TempDir(), "p.safetensors")
	if err := Create(spec, 1, "", path, nil); err != nil {
		b.Fatal(err)
	}
	p, err := Load(path, Options{NoBackbone: true})
	if err != nil {
		b.Fatal(err)
	}
	return p
}
