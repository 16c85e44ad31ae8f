package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/sim/simnode"
)

// wantsROS reports whether a sim command line asks for --ros (before a
// "--" that ends the flags). ROS arguments (name:=value) may then appear
// anywhere, as roslaunch appends them.
func wantsROS(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "ros" {
			continue
		}
		if !hasVal {
			return true
		}
		on, err := strconv.ParseBool(val)
		return on || err != nil // a bad value is reported by the flag parser
	}
	return false
}

// runSimROS is `ttm sim --ros`: the simulator as a ROS node driven by the
// policy node's actions, until its episodes are done or SIGINT/SIGTERM.
func runSimROS(env *environment, args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return simROS(ctx, env, args)
}

// simROS parses a `ttm sim --ros` command line and runs the simulator node
// until its episodes are done or ctx ends (then it reports what finished
// and returns nil, as a ROS node told to shut down does).
func simROS(ctx context.Context, env *environment, args []string) error {
	rosArgs, err := ros.ParseArgs("ttm_sim", args, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	fl := newFlags(env, "sim", "--ros [--tasks all|families|memory|NAME,...] [--episodes N] [--seed S] [--size HxW] [--max-steps N] [--out DIR] [__name:=NAME] [__ns:=NS] [from:=to ...]")
	fl.Bool("ros", true, "run the simulator as a ROS node: publish headcam/image_raw and instruction, act on action")
	tasks := fl.String("tasks", "all", "tasks to run: all, families, memory, or names separated by commas")
	episodes := fl.Int("episodes", 1, "episodes per task")
	seed := fl.Uint64("seed", 1, "seed of the first episode; episode i of every task uses seed+i")
	size := fl.String("size", "256x320", "headcam image size HxW")
	maxSteps := fl.Int("max-steps", 0, "end an episode after this many steps (0: the task's own cap)")
	out := fl.String("out", "", "write each episode's headcam strip (PNG) and rollout (GIF) into `DIR`")
	frames := fl.Int("frames", 10, "frames per episode in a strip")
	gif := fl.Bool("gif", true, "with --out, also write an animated GIF of each episode")
	actionTimeout := fl.Duration("action-timeout", simnode.DefaultActionTimeout, "publish the frame again when no action came within this long")
	episodeTimeout := fl.Duration("episode-timeout", simnode.DefaultEpisodeTimeout, "give an episode up when no action came within this long")
	startTimeout := fl.Duration("start-timeout", simnode.DefaultStartTimeout, "how long to wait for the policy node's first action")
	noReset := fl.Bool("no-reset", false, "do not call the policy node's reset_memory service at episode starts")
	expert := fl.Bool("expert", false, "(not with --ros)")
	policyPath := fl.String("policy", "", "(not with --ros)")
	if err := parseFlags(fl, rosArgs.Rest, false); err != nil {
		return err
	}
	if *expert || *policyPath != "" {
		return fmt.Errorf("%w: --ros takes its actions from the policy node over ROS: drop --expert and --policy (run `ttm node --policy FILE` beside it)", errUsage)
	}
	conf := simnode.Config{Args: rosArgs, Episodes: *episodes, Seed: *seed, MaxSteps: *maxSteps, ActionTimeout: *actionTimeout,
		EpisodeTimeout: *episodeTimeout, StartTimeout: *startTimeout, NoReset: *noReset, Log: env.log}
	if conf.Tasks, err = sim.SelectTasks(*tasks); err != nil {
		return fmt.Errorf("%w: --tasks: %v", errUsage, err)
	}
	if conf.Height, conf.Width, err = sim.ParseSize(*size); err != nil {
		return fmt.Errorf("%w: --size: %v", errUsage, err)
	}
	switch {
	case *episodes < 1:
		return fmt.Errorf("%w: --episodes %d: want at least 1", errUsage, *episodes)
	case *maxSteps < 0:
		return fmt.Errorf("%w: --max-steps %d is negative", errUsage, *maxSteps)
	case *frames < 2 || *frames > 100:
		return fmt.Errorf("%w: --frames %d: want 2..100", errUsage, *frames)
	case *actionTimeout <= 0 || *episodeTimeout < *actionTimeout || *startTimeout < *actionTimeout:
		return fmt.Errorf("%w: want 0 < --action-timeout <= --episode-timeout, --start-timeout", errUsage)
	}
	var rec *episodeRecorder
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		rec = &episodeRecorder{dir: *out, stripFrames: *frames, h: conf.Height, w: conf.Width, gif: *gif, log: env.log}
		conf.Frame = rec.frame
		conf.EpisodeDone = rec.finish
	}

	start := time.Now()
	results, runErr := simnode.Run(ctx, conf)
	interrupted := runErr != nil && ctx.Err() != nil
	if interrupted {
		env.log.Info("interrupted; reporting the finished episodes", "episodes", len(results))
		runErr = nil
	}
	if len(results) > 0 {
		if err := printSimTable(env, rosTaskStats(conf.Tasks, results)); err != nil {
			return err
		}
	}
	stalled := 0
	for _, r := range results {
		if r.Stalled {
			stalled++
		}
	}
	env.log.Info("simulator node finished", "episodes", len(results), "stalled", stalled, "elapsed", time.Since(start).Round(time.Millisecond))
	if rec != nil && len(rec.written) > 0 {
		fmt.Fprintf(env.stdout, "\nheadcam strips and rollouts of %d episodes in %s\n", len(results), *out)
	}
	switch {
	case runErr != nil:
		return runErr
	case rec != nil && rec.err != nil:
		return rec.err
	case stalled > 0:
		return fmt.Errorf("%d of %d episodes stalled: no action from the policy node within --episode-timeout %v", stalled, len(results), *episodeTimeout)
	}
	return nil
}

// rosTaskStats sums results per task, in the order of tasks; tasks with no
// finished episode are left out.
func rosTaskStats(tasks []*sim.Task, results []simnode.Result) []taskStats {
	var stats []taskStats
	for _, t := range tasks {
		st := taskStats{task: t}
		for _, r := range results {
			if r.Task != t.Name {
				continue
			}
			st.n++
			st.steps += r.Steps
			if r.Success {
				st.ok++
			}
			if r.Terminated {
				st.terminate++
			}
		}
		if st.n > 0 {
			stats = append(stats, st)
		}
	}
	return stats
}
