package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/ttmrobot/ttm/internal/flops"
	"github.com/ttmrobot/ttm/internal/membw"
	"github.com/ttmrobot/ttm/internal/nn"
	"github.com/ttmrobot/ttm/ttm"
	"github.com/ttmrobot/ttm/ttm/reference"
)

func init() {
	register(command{name: "bench", summary: "measure the latency of TTM steps (and the machine's memory floor)", run: runBench})
}

// benchResult is the JSON printed by `ttm bench --json`.
type benchResult struct {
	Steps         int     `json:"steps"`
	Threads       int     `json:"threads"`
	Gemm          string  `json:"gemm"`
	Kernel        string  `json:"kernel"` // the instructions of the packed product (nn.Kernel)
	MedianMS      float64 `json:"median_ms"`
	P99MS         float64 `json:"p99_ms"`
	MaxMS         float64 `json:"max_ms"`
	FirstMS       float64 `json:"first_ms"` // median over steps within the first 100 of fresh episodes
	LastMS        float64 `json:"last_ms"`  // median over the steps right after the timed episode's last
	Window        int     `json:"window"`   // steps in each; the two are timed alternately
	GFLOPs        float64 `json:"gflops"`   // achieved, at the median
	AllocsPerStep float64 `json:"allocs_per_step"`
	WeightsMB     float64 `json:"weights_mb"`
	BandwidthGBs  float64 `json:"bandwidth_gbs,omitempty"`    // memory read bandwidth, all threads
	FloorMS       float64 `json:"floor_ms,omitempty"`         // weights / bandwidth
	PeakGFLOPs    float64 `json:"peak_gflops,omitempty"`      // float32 FMA peak, all threads
	ComputeMS     float64 `json:"compute_floor_ms,omitempty"` // step FLOPs / peak
	PyTorchMS     float64 `json:"pytorch_median_ms,omitempty"`
	Speedup       float64 `json:"speedup_vs_pytorch,omitempty"`
}

func runBench(env *environment, args []string) error {
	fs := newFlags(env, "bench", "--weights W.safetensors [--steps N] [--json] [--threads T] [--pytorch]")
	weights := fs.String("weights", "", "TTM checkpoint `file`")
	steps := fs.Int("steps", 1000, "steps of one episode to time")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	threads := fs.Int("threads", runtime.NumCPU(), "goroutines sharing each large matrix product")
	bandwidth := fs.Bool("bandwidth", true, "measure memory read bandwidth and the FMA peak, and the step's floors")
	pytorch := fs.Bool("pytorch", false, "also time the PyTorch reference (eager, 1 thread) on the same weights")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	if err := requireFlag("weights", *weights); err != nil {
		return err
	}
	if *steps < 1 {
		return fmt.Errorf("%w: --steps must be at least 1", errUsage)
	}
	m, err := ttm.Load(*weights)
	if err != nil {
		return err
	}
	c := m.Config
	nn.SetThreads(1) // our own workers share the products; OpenBLAS threads would compete with them
	nn.SetParallelism(*threads)
	res := benchResult{Steps: *steps, Threads: *threads, Gemm: nn.Backend(), Kernel: nn.Kernel(), WeightsMB: float64(4*m.NumParams()) / 1e6}

	mc, mem := ttm.NewMachine(m), ttm.NewMemory(c)
	r := rand.New(rand.NewPCG(1, 1))
	input := make([]float32, c.InputTokens*c.Dim)
	for i := range input {
		input[i] = float32(r.NormFloat64())
	}
	out := make([]float32, c.ProcessSize*c.Dim)
	for i := 0; i < 20; i++ { // warm caches and the worker team, then start a fresh episode
		mc.Step(mem, input, out)
	}
	mem.Reset()

	lat := make([]time.Duration, *steps)
	var before, after, logBefore, logAfter runtime.MemStats
	var logAllocs uint64
	runtime.GC()
	runtime.ReadMemStats(&before)
	start, lastLog := time.Now(), time.Now()
	for i := range lat {
		t0 := time.Now()
		mc.Step(mem, input, out)
		lat[i] = time.Since(t0)
		if now := time.Now(); now.Sub(lastLog) > 10*time.Second {
			runtime.ReadMemStats(&logBefore)
			done := float64(i+1) / float64(len(lat))
			eta := time.Duration(float64(now.Sub(start)) * (1 - done) / done)
			env.log.Info("benchmark", "step", i+1, "of", len(lat), "last_ms", ms(lat[i]), "eta", eta.Round(time.Second))
			runtime.ReadMemStats(&logAfter)
			logAllocs += logAfter.Mallocs - logBefore.Mallocs
			lastLog = now
		}
	}
	runtime.ReadMemStats(&after)
	res.AllocsPerStep = float64(after.Mallocs-before.Mallocs-logAllocs) / float64(len(lat))

	// Step 1 against step N: a fresh episode's first steps and this
	// episode's steps after N, interleaved pair by pair so that whatever
	// else the machine is doing slows both alike.
	window := max(1, min(1000, len(lat)/10))
	res.Window = window
	fresh, freshMem := ttm.NewMachine(m), ttm.NewMemory(c)
	first, last := make([]time.Duration, window), make([]time.Duration, window)
	for i := 0; i < window; i++ {
		if i%100 == 0 {
			freshMem.Reset() // stay within the first 100 steps of an episode
		}
		t0 := time.Now()
		fresh.Step(freshMem, input, out)
		first[i] = time.Since(t0)
		t0 = time.Now()
		mc.Step(mem, input, out)
		last[i] = time.Since(t0)
	}
	res.FirstMS = ms(median(first))
	res.LastMS = ms(median(last))
	sorted := slices.Clone(lat)
	slices.Sort(sorted)
	res.MedianMS = ms(sorted[len(sorted)/2])
	res.P99MS = ms(sorted[min(len(sorted)-1, len(sorted)*99/100)])
	res.MaxMS = ms(sorted[len(sorted)-1])
	res.GFLOPs = float64(c.FLOPs()) / (res.MedianMS / 1e3) / 1e9

	if *bandwidth {
		bw := membw.Read(512<<20, *threads, 5)
		res.BandwidthGBs = bw / 1e9
		res.FloorMS = 4 * float64(m.NumParams()) / bw * 1e3
		if flops.Available {
			peak := flops.Peak(*threads, 5)
			res.PeakGFLOPs = peak / 1e9
			res.ComputeMS = float64(c.FLOPs()) / peak * 1e3
		}
	}
	if *pytorch {
		if res.PyTorchMS, err = pytorchMedian(env, *weights); err != nil {
			return err
		}
		res.Speedup = res.PyTorchMS / res.MedianMS
	}

	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		return enc.Encode(res)
	}
	w := env.stdout
	fmt.Fprintf(w, "TTM step, %s/%s, m=%d r=%d n=%d d=%d, %d layers, %.1f MB of weights\n",
		c.MemoryMode, c.ProcessingUnit, c.MemorySize, c.ProcessSize, c.InputTokens, c.Dim, c.NumLayers, res.WeightsMB)
	fmt.Fprintf(w, "%d steps, %d threads, Gemm %s, packed kernel %s\n\n", res.Steps, res.Threads, res.Gemm, res.Kernel)
	fmt.Fprintf(w, "  median        %8.3f ms   (%.1f GFLOP/s)\n", res.MedianMS, res.GFLOPs)
	fmt.Fprintf(w, "  p99           %8.3f ms\n", res.P99MS)
	fmt.Fprintf(w, "  max           %8.3f ms\n", res.MaxMS)
	fmt.Fprintf(w, "  %-13s %8.3f ms   (median over %d steps among the first 100 of fresh episodes)\n", "step ~1", res.FirstMS, res.Window)
	fmt.Fprintf(w, "  %-13s %8.3f ms   (median of steps %d-%d, interleaved with the above: %+.1f%%)\n",
		fmt.Sprintf("step ~%d", res.Steps), res.LastMS, res.Steps+1, res.Steps+res.Window, 100*(res.LastMS/res.FirstMS-1))
	fmt.Fprintf(w, "  allocations   %8.3f per step\n", res.AllocsPerStep)
	if *bandwidth {
		fmt.Fprintf(w, "  memory floor  %8.3f ms   (%.1f MB at %.1f GB/s read bandwidth; median is %.1fx the floor)\n",
			res.FloorMS, res.WeightsMB, res.BandwidthGBs, res.MedianMS/res.FloorMS)
		if res.ComputeMS > 0 {
			fmt.Fprintf(w, "  compute floor %8.3f ms   (%.2f GFLOP at the %.0f GFLOP/s FMA peak of %d threads; median is %.1fx it)\n",
				res.ComputeMS, float64(c.FLOPs())/1e9, res.PeakGFLOPs, res.Threads, res.MedianMS/res.ComputeMS)
		}
	}
	if *pytorch {
		fmt.Fprintf(w, "  PyTorch eager %8.3f ms   (1 thread; this is %.1fx faster)\n", res.PyTorchMS, res.Speedup)
	}
	return nil
}

// pytorchMedian times the PyTorch reference on the same weights.
func pytorchMedian(env *environment, weights string) (float64, error) {
	dir, err := os.MkdirTemp("", "ttm-bench")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	cmd, err := reference.Command(dir, "bench", "--weights", weights, "--steps", "200", "--threads", "1")
	if err != nil {
		return 0, err
	}
	env.log.Info("timing the PyTorch reference", "steps", 200)
	b, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("pytorch reference: %w", err)
	}
	var r struct {
		MedianMS float64 `json:"median_ms"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("pytorch reference printed %q: %w", b, err)
	}
	return r.MedianMS, nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
