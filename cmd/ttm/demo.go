package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/signal"
	"syscall"
)

func init() {
	register(command{name: "demo", summary: "the ROS demo: roscore (if none), the policy node and the simulator node; episodes on the terminal, headcam strips and GIFs on disk", run: runDemo})
}

// demoConfig is what the demo was asked to do.
type demoConfig struct {
	dir       string
	policy    string // checkpoint; "" writes a fresh small policy in dir
	rate      float64
	threads   int
	tasks     string
	episodes  int
	seed      uint64
	maxSteps  int
	ns        string   // ROS namespace of both nodes
	keepAlive bool     // leave roscore running if the demo started it
	nodeArgs  []string // more ROS arguments of the policy node
}

// runDemo runs the project end to end over ROS: a master (roscore, started
// if none answers at ROS_MASTER_URI, stopped at the end), `ttm node` on a
// policy checkpoint, and the simulator as a ROS node driven by it, showing
// each episode's progress and writing its headcam strip and rollout GIF.
// With --ttm it first runs a robot-size TTM episode and the step benchmark.
func runDemo(env *environment, args []string) error {
	fl := newFlags(env, "demo", "[--dir DIR] [--policy CKPT] [--rate HZ] [--tasks LIST] [--episodes N] [--seed S] [--max-steps N] [--ttm [--steps N]]")
	dir := fl.String("dir", "bin/demo", "working `directory` for the demo's files (checkpoint, logs, episodes/)")
	policyPath := fl.String("policy", "", "policy checkpoint `file`; empty: a fresh (untrained) small policy written to DIR/small-policy.safetensors")
	rate := fl.Float64("rate", 0, "the policy node's control rate, Hz; 0: the rate the policy learnt at (RT-1's 3 Hz when it records none; the node refuses a rate its warm-up cannot sustain)")
	threads := fl.Int("threads", 0, "the policy node's threads (0: one per CPU)")
	tasks := fl.String("tasks", "all", "simulator tasks: all, families, memory, or names separated by commas")
	episodes := fl.Int("episodes", 1, "episodes per task")
	seed := fl.Uint64("seed", 1, "seed of the first episode of each task")
	maxSteps := fl.Int("max-steps", 0, "steps per episode at most (0: each task's cap)")
	ns := fl.String("ns", "/demo", "ROS namespace of the two nodes")
	keep := fl.Bool("keep-master", false, "leave a roscore the demo started running at the end")
	ttmPart := fl.Bool("ttm", false, "first run a robot-size TTM episode (memory hashes, replay from a snapshot) and the step benchmark")
	steps := fl.Int("steps", 300, "--ttm: steps in the TTM episode")
	if err := parseFlags(fl, args, false); err != nil {
		return err
	}
	switch {
	case !(*rate >= 0) || math.IsInf(*rate, 0) || *rate > 1000:
		return fmt.Errorf("%w: --rate %g: want 0 (the policy's) or a rate in (0, 1000] Hz", errUsage, *rate)
	case *threads < 0:
		return fmt.Errorf("%w: --threads %d is negative", errUsage, *threads)
	case *episodes < 1:
		return fmt.Errorf("%w: --episodes %d: want at least 1", errUsage, *episodes)
	case *maxSteps < 0:
		return fmt.Errorf("%w: --max-steps %d is negative", errUsage, *maxSteps)
	case *steps < 2:
		return fmt.Errorf("%w: --steps %d: want at least 2", errUsage, *steps)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	if *ttmPart {
		if err := ttmDemo(env, *dir, *steps); err != nil {
			return err
		}
		fmt.Fprintln(env.stdout)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return rosDemo(ctx, env, demoConfig{dir: *dir, policy: *policyPath, rate: *rate, threads: *threads, tasks: *tasks,
		episodes: *episodes, seed: *seed, maxSteps: *maxSteps, ns: *ns, keepAlive: *keep})
}
