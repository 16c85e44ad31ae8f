package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/ttmrobot/ttm/internal/nn"
	"github.com/ttmrobot/ttm/ttm"
)

// ttmDemo runs one episode of the robot preset on fresh weights: it shows
// the memory changing step by step at a constant cost, and that the same
// inputs replayed from a snapshot give bit-identical memories; then the
// step benchmark.
func ttmDemo(env *environment, dir string, steps int) error {
	weights := filepath.Join(dir, "robot.safetensors")
	if _, err := os.Stat(weights); errors.Is(err, fs.ErrNotExist) {
		if err := runInit(env, []string{"--preset", "robot", "--seed", "1", "--out", weights}); err != nil {
			return err
		}
	}
	m, err := ttm.Load(weights)
	if err != nil {
		return err
	}
	c := m.Config
	nn.SetThreads(1)
	nn.SetParallelism(runtime.NumCPU())
	env.log.Info("episode", "weights", weights, "memory_tokens", c.MemorySize, "read_tokens", c.ProcessSize,
		"input_tokens", c.InputTokens, "dim", c.Dim, "layers", c.NumLayers, "steps", steps)

	mc, mem := ttm.NewMachine(m), ttm.NewMemory(c)
	r := rand.New(rand.NewPCG(2, 2))
	inputs := make([]float32, steps*c.InputTokens*c.Dim) // a stand-in for camera tokens
	for i := range inputs {
		inputs[i] = float32(r.NormFloat64())
	}
	out := make([]float32, c.ProcessSize*c.Dim)
	stepInput := func(i int) []float32 { return inputs[i*c.InputTokens*c.Dim : (i+1)*c.InputTokens*c.Dim] }
	var snapshot *ttm.Memory
	hashes := make([]uint64, steps)
	var total time.Duration
	fmt.Fprintf(env.stdout, "%6s %10s %18s %10s\n", "step", "latency", "memory hash", "|memory|")
	for i := 0; i < steps; i++ {
		if i == steps/2 {
			snapshot = mem.Clone()
		}
		t0 := time.Now()
		mc.Step(mem, stepInput(i), out)
		d := time.Since(t0)
		total += d
		hashes[i] = mem.Hash()
		if i < 3 || (i+1)%50 == 0 {
			fmt.Fprintf(env.stdout, "%6d %8.2f ms   %016x %10.3f\n", i+1, ms(d), hashes[i], norm(mem.Tokens))
		}
	}
	// Replay the second half from the snapshot: the memory must follow the
	// same bits.
	mem.CopyFrom(snapshot)
	for i := steps / 2; i < steps; i++ {
		mc.Step(mem, stepInput(i), out)
		if mem.Hash() != hashes[i] {
			return fmt.Errorf("replay from the snapshot diverged at step %d", i+1)
		}
	}
	fmt.Fprintf(env.stdout, "\nmean step %.2f ms over %d steps; replaying steps %d-%d from a snapshot gave bit-identical memories\n\n",
		ms(total)/float64(steps), steps, steps/2+1, steps)
	return runBench(env, []string{"--weights", weights, "--steps", "1000"})
}

func norm(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s)
}
