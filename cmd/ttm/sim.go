package main

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/sim/eval"
)

func init() {
	register(command{name: "sim", summary: "closed-loop episodes in the built-in simulator, with a success table and headcam strips", run: runSim})
}

// simConfig is what the sim command was asked to do.
type simConfig struct {
	tasks     []*sim.Task
	episodes  int
	seed      uint64
	h, w      int
	out       string
	frames    int
	expert    sim.ExpertOptions
	newAgent  func(ep *sim.Episode) sim.Agent
	agentName string
}

// runSim plays episodes of the chosen tasks in-process and prints a
// per-task success table. The agent is the scripted expert (--expert);
// a learned policy plugs in through sim.Agent. With --ros the simulator is
// a ROS node driven by the policy node instead (sim_ros.go).
func runSim(env *environment, args []string) error {
	if wantsROS(args) {
		return runSimROS(env, args) // sim_ros.go
	}
	fl := newFlags(env, "sim", "(--expert | --policy CKPT.safetensors | --ros) [--tasks all|families|memory|NAME,...] [--episodes N] [--seed S] [--size HxW] [--out DIR]")
	tasks := fl.String("tasks", "all", "tasks to run: all, families, memory, or names separated by commas")
	episodes := fl.Int("episodes", 10, "episodes per task")
	seed := fl.Uint64("seed", 1, "seed of the first episode; episode i of every task uses seed+i")
	expert := fl.Bool("expert", false, "act with the scripted experts")
	policyPath := fl.String("policy", "", "act with the policy in this checkpoint `file`")
	noMemory := fl.Bool("no-memory", false, "policy: zero the TTM memory before every step (the paper's ablation)")
	size := fl.String("size", "256x320", "headcam image size HxW")
	out := fl.String("out", "", "write a PNG strip of headcam frames per task into `DIR`")
	frames := fl.Int("frames", 10, "frames per episode in a strip")
	noise := fl.Float64("noise", 0, "expert: Gaussian noise on the arm displacement, in action units")
	baseNoise := fl.Float64("base-noise", 0, "expert: Gaussian noise on the base velocities (m/s, rad/s)")
	pause := fl.Float64("pause", 0, "expert: probability of a pause starting at each step")
	fl.Bool("ros", false, "run as a ROS node driven by `ttm node` over a master (see ttm sim --ros -h)")
	if err := parseFlags(fl, args, false); err != nil {
		return err
	}
	if *expert == (*policyPath != "") {
		return fmt.Errorf("%w: give exactly one of --expert, --policy and --ros", errUsage)
	}
	cfg := simConfig{episodes: *episodes, seed: *seed, out: *out, frames: *frames, agentName: "expert",
		expert: sim.ExpertOptions{Noise: *noise, BaseNoise: *baseNoise, PauseProb: *pause}}
	var err error
	if cfg.tasks, err = sim.SelectTasks(*tasks); err != nil {
		return fmt.Errorf("%w: --tasks: %v", errUsage, err)
	}
	if cfg.h, cfg.w, err = sim.ParseSize(*size); err != nil {
		return fmt.Errorf("%w: --size: %v", errUsage, err)
	}
	switch {
	case cfg.episodes < 1:
		return fmt.Errorf("%w: --episodes %d: want at least 1", errUsage, cfg.episodes)
	case cfg.frames < 2 || cfg.frames > 100:
		return fmt.Errorf("%w: --frames %d: want 2..100", errUsage, cfg.frames)
	case *noise < 0 || *baseNoise < 0 || *pause < 0 || *pause >= 1:
		return fmt.Errorf("%w: --noise and --base-noise must be >= 0 and --pause in [0, 1)", errUsage)
	}
	cfg.newAgent = func(ep *sim.Episode) sim.Agent { return sim.ExpertAgent{Expert: ep.Expert(cfg.expert)} }
	if *policyPath != "" {
		p, err := policy.Load(*policyPath, policy.Options{Log: env.log})
		if err != nil {
			return err
		}
		defer p.Close()
		if err := ablateMemory(p, *noMemory); err != nil {
			return err
		}
		agent := newPolicyAgent(p)
		cfg.agentName = "policy"
		cfg.newAgent = func(*sim.Episode) sim.Agent { return agent }
	}
	if cfg.out != "" {
		if err := os.MkdirAll(cfg.out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	return simulate(env, cfg)
}

// taskStats accumulates one task's results.
type taskStats struct {
	task      *sim.Task
	n, ok     int
	steps     int
	terminate int
}

func simulate(env *environment, cfg simConfig) error {
	env.log.Info("simulating", "tasks", len(cfg.tasks), "episodes_per_task", cfg.episodes, "agent", cfg.agentName,
		"size", fmt.Sprintf("%dx%d", cfg.h, cfg.w), "seed", cfg.seed)
	start := time.Now()
	stats := make([]taskStats, len(cfg.tasks))
	for ti, task := range cfg.tasks {
		st := &stats[ti]
		st.task = task
		var strip *image.RGBA
		if cfg.out != "" {
			strip = image.NewRGBA(image.Rect(0, 0, stripMargin+cfg.frames*cfg.w, cfg.episodes*cfg.h))
		}
		for i := range cfg.episodes {
			res, frames, err := playEpisode(cfg, task, cfg.seed+uint64(i), strip != nil)
			if err != nil {
				return err
			}
			st.n++
			st.steps += res.Steps
			if res.Success {
				st.ok++
			}
			if res.Terminated {
				st.terminate++
			}
			if strip != nil {
				drawStripRow(strip, i, frames, cfg, res.Success)
			}
			env.log.Debug("episode", "task", task.Name, "seed", res.Seed, "instruction", res.Instruction,
				"success", res.Success, "steps", res.Steps, "terminated", res.Terminated)
		}
		env.log.Info("task done", "task", task.Name, "success", st.ok, "episodes", st.n, "elapsed", time.Since(start).Round(time.Millisecond))
		if strip != nil {
			path := filepath.Join(cfg.out, task.Name+".png")
			if err := writePNG(path, strip); err != nil {
				return err
			}
			env.log.Info("strip written", "path", path)
		}
	}
	return printSimTable(env, stats)
}

// playEpisode runs one episode; with keep, it returns copies of all its frames.
func playEpisode(cfg simConfig, task *sim.Task, seed uint64, keep bool) (sim.Result, [][]byte, error) {
	ep, err := sim.NewEpisode(task, seed, sim.Options{Height: cfg.h, Width: cfg.w})
	if err != nil {
		return sim.Result{}, nil, err
	}
	defer ep.Close()
	var frames [][]byte
	var onFrame sim.FrameFunc
	if keep {
		onFrame = func(_ int, img []byte) error {
			frames = append(frames, append([]byte(nil), img...))
			return nil
		}
	}
	res, err := sim.Run(ep, cfg.newAgent(ep), onFrame)
	return res, frames, err
}

// stripMargin is the width of the success bar at the left of each row.
const stripMargin = 8

// drawStripRow puts cfg.frames frames, evenly spaced from the first to the
// last, in row i of the strip, after a green (success) or red bar.
func drawStripRow(strip *image.RGBA, i int, frames [][]byte, cfg simConfig, success bool) {
	y0 := i * cfg.h
	bar := [3]byte{200, 30, 30}
	if success {
		bar = [3]byte{30, 170, 60}
	}
	for y := y0; y < y0+cfg.h; y++ {
		for x := range stripMargin - 2 {
			p := strip.PixOffset(x, y)
			strip.Pix[p], strip.Pix[p+1], strip.Pix[p+2], strip.Pix[p+3] = bar[0], bar[1], bar[2], 255
		}
	}
	if len(frames) == 0 {
		return
	}
	for k := range cfg.frames {
		f := frames[k*(len(frames)-1)/(cfg.frames-1)]
		x0 := stripMargin + k*cfg.w
		for y := range cfg.h {
			for x := range cfg.w {
				s := 3 * (y*cfg.w + x)
				p := strip.PixOffset(x0+x, y0+y)
				strip.Pix[p], strip.Pix[p+1], strip.Pix[p+2], strip.Pix[p+3] = f[s], f[s+1], f[s+2], 255
			}
		}
	}
}

func writePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func printSimTable(env *environment, stats []taskStats) error {
	tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "task\tmemory\tepisodes\tsuccess\trate\t95 % interval\tmean steps\tterminated\t")
	var n, ok int
	for _, st := range stats {
		mem := "no"
		if st.task.Memory {
			mem = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%.1f\t%d\t\n", st.task.Name, mem, st.n, st.ok,
			rateAndInterval(st.ok, st.n), float64(st.steps)/float64(st.n), st.terminate)
		n += st.n
		ok += st.ok
	}
	if n > 0 {
		fmt.Fprintf(tw, "all\t\t%d\t%d\t%s\t\t\t\n", n, ok, rateAndInterval(ok, n))
	}
	return tw.Flush()
}

// rateAndInterval formats k successes of n > 0 as the rate and its 95 %
// Wilson interval, two tab-separated cells: "60.0%\t23-88%".
func rateAndInterval(k, n int) string {
	lo, hi := eval.Wilson(k, n)
	return fmt.Sprintf("%.1f%%\t%.0f-%.0f%%", 100*float64(k)/float64(n), 100*lo, 100*hi)
}
