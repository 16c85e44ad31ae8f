package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/sim/eval"
)

func init() {
	register(command{name: "eval", summary: "score policies closed loop in the simulator (success per family, ablations, shards) or offline on recorded episodes", run: runEval})
}

const evalSynopsis = `(--policy CKPT.safetensors ... and/or --expert) [--tasks all|families|memory|NAME,...] [--episodes N] [--seed S]
        [--no-memory] [--ablations nomem,knockout] [--latency 0|measured|DURATION] [--rate HZ] [--workers N]
        [--shard i/N] [--videos K] [--traces K] [--size HxW] [--data DIR] --out DIR
   or: ttm eval merge --out DIR SHARD_DIR...

Closed loop (default): every run (each checkpoint, each of its ablations, the expert) plays
N seeded episodes of every task; episode i uses seed S+i. Writes DIR/ledger.json (deterministic),
DIR/timing.json (latencies), DIR/summary.md, DIR/success_per_family.png, DIR/success_vs_length.png
and DIR/videos/RUN/TASK-EPISODE.gif for the first K episodes of each task. Checkpoints with a
keypoint token also get their keypoint error (pixels from the simulator's hand, target and destination points; over all frames,
and over those within 8 px of the point: its precision where it marks the right thing).
Every checkpoint is compared with the noise-free expert on the states its rollouts reach (mode,
arm displacement, gripper); --traces K writes DIR/traces/RUN/TASK-EPISODE.csv: both actions, the hand, the target and the grasp per step.
Offline (--data DIR): per-step action error (MAE per dimension, bin accuracy) of each checkpoint
and ablation on the recorded episodes of a dataset (index.json and bags), per task family,
with teacher forcing; writes DIR/offline.json and DIR/summary.md.`

// stringList is a flag that may be given several times, each a comma list.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p == "" {
			return fmt.Errorf("empty item in %q", v)
		}
		*s = append(*s, p)
	}
	return nil
}

func runEval(env *environment, args []string) error {
	if len(args) > 0 && args[0] == "merge" {
		return runEvalMerge(env, args[1:])
	}
	fl := newFlags(env, "eval", evalSynopsis)
	var policies stringList
	fl.Var(&policies, "policy", "evaluate the policy in this checkpoint `file` (repeat or separate by commas to compare checkpoints)")
	expert := fl.Bool("expert", false, "also evaluate the scripted experts (they should succeed on nearly every episode)")
	tasks := fl.String("tasks", "all", "tasks: all, families, memory, or names separated by commas")
	episodes := fl.Int("episodes", 50, "episodes per task")
	seed := fl.Uint64("seed", 1, "seed of the first episode; episode i of every task uses seed+i")
	noMemory := fl.Bool("no-memory", false, "run the checkpoints with the memory zeroed before every step instead of as they are (one trained without memory runs without either way; the ledger's runs say \"memory\": \"none (checkpoint)\")")
	ablations := fl.String("ablations", "", "also run each checkpoint with these ablations: nomem (memory zeroed every step), knockout (memory reset right after the cue of memory tasks)")
	latency := fl.String("latency", "0", "latency between a frame and its action taking effect: 0, measured, or a duration such as 200ms (rounded up to whole 1/3 s steps)")
	rate := fl.Float64("rate", 3, "control rate in Hz that deadline misses are counted against")
	workers := fl.Int("workers", 0, "episodes played in parallel (default: the number of CPUs), each worker with its own copy of each policy")
	shard := fl.String("shard", "", "run only shard `i/N` of the episodes and write a partial ledger for ttm eval merge")
	videos := fl.Int("videos", 0, "record the first K episodes of every task and run as GIFs")
	traces := fl.Int("traces", 0, "write the first K episodes of every task and checkpoint run as CSV: the policy's action and the expert's on each state")
	size := fl.String("size", "256x320", "headcam image size HxW (default: the first checkpoint's input size; 256x320 with --expert alone)")
	data := fl.String("data", "", "offline: score the checkpoints on the recorded episodes in `DIR` instead of closed loop")
	out := fl.String("out", "", "output `DIR`")
	if err := parseFlags(fl, args, false); err != nil {
		return err
	}
	if err := requireFlag("out", *out); err != nil {
		return err
	}
	if len(policies) == 0 && !*expert {
		return fmt.Errorf("%w: give --policy or --expert", errUsage)
	}
	taskList, err := sim.SelectTasks(*tasks)
	if err != nil {
		return fmt.Errorf("%w: --tasks: %v", errUsage, err)
	}
	abl, err := eval.ParseAblations(*ablations)
	if err != nil {
		return fmt.Errorf("%w: --ablations: %v", errUsage, err)
	}
	if *data != "" {
		if *expert {
			return fmt.Errorf("%w: --data scores checkpoints; --expert is for closed loop", errUsage)
		}
		if len(policies) == 0 {
			return fmt.Errorf("%w: --data needs --policy", errUsage)
		}
		if *workers < 0 {
			return fmt.Errorf("%w: --workers %d: want 0 (all CPUs) or more", errUsage, *workers)
		}
		return runEvalOffline(env, offlineArgs{data: *data, out: *out, policies: policies, tasks: taskList, noMemory: *noMemory,
			ablations: abl, workers: *workers})
	}
	cfg := eval.Config{Tasks: taskList, Episodes: *episodes, Seed: *seed, Rate: *rate, Workers: *workers, Videos: *videos, Traces: *traces, Log: env.log}
	if cfg.Height, cfg.Width, err = sim.ParseSize(*size); err != nil {
		return fmt.Errorf("%w: --size: %v", errUsage, err)
	}
	if !givenFlags(fl)["size"] && len(policies) > 0 {
		// Frames rendered at another size would be resized to one the
		// policy never saw in training: render at its own input size.
		p, err := policy.Load(policies[0], policy.Options{Log: env.log, NoBackbone: true})
		if err != nil {
			return err
		}
		pre := p.Spec().Vision.Preprocess
		p.Close()
		cfg.Height, cfg.Width = pre.Height, pre.Width
		env.log.Info("frame size from the checkpoint", "size", fmt.Sprintf("%dx%d", cfg.Height, cfg.Width), "checkpoint", policies[0])
	}
	if cfg.Latency, err = eval.ParseLatency(*latency); err != nil {
		return fmt.Errorf("%w: --latency: %v", errUsage, err)
	}
	if *shard != "" {
		if cfg.Shard, err = eval.ParseShard(*shard); err != nil {
			return fmt.Errorf("%w: --shard: %v", errUsage, err)
		}
	}
	switch {
	case *episodes < 1:
		return fmt.Errorf("%w: --episodes %d: want at least 1", errUsage, *episodes)
	case *rate <= 0:
		return fmt.Errorf("%w: --rate %g: want a positive rate", errUsage, *rate)
	case *workers < 0:
		return fmt.Errorf("%w: --workers %d: want 0 (all CPUs) or more", errUsage, *workers)
	case *videos < 0 || *videos > *episodes:
		return fmt.Errorf("%w: --videos %d: want 0..--episodes", errUsage, *videos)
	case *traces < 0 || *traces > *episodes:
		return fmt.Errorf("%w: --traces %d: want 0..--episodes", errUsage, *traces)
	}
	variants := checkpointVariants(*noMemory, abl)
	names := runNames(policies)
	for i, path := range policies {
		runs, err := eval.PolicyRuns(names[i], path, variants, policy.Options{Log: env.log})
		if err != nil {
			return err
		}
		cfg.Runs = append(cfg.Runs, runs...)
	}
	if *expert {
		cfg.Runs = append(cfg.Runs, eval.ExpertRun(sim.ExpertOptions{}))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	cfg.VideoDir = filepath.Join(*out, eval.VideoDir)
	cfg.TraceDir = filepath.Join(*out, eval.TraceDir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	led, tim, err := eval.Evaluate(ctx, cfg)
	if err != nil {
		return err
	}
	if err := eval.WriteOutputs(*out, led, tim); err != nil {
		return err
	}
	env.log.Info("evaluation written", "dir", *out, "overall_success", fmt.Sprintf("%.1f%%", 100*led.Overall.SuccessRate),
		"wall", fmt.Sprintf("%.1fs", tim.WallSeconds))
	_, err = fmt.Fprint(env.stdout, eval.Summary(led, tim))
	return err
}

// checkpointVariants is the list of runs of each checkpoint: the plain one
// (or the no-memory one with --no-memory), then the ablations.
func checkpointVariants(noMemory bool, ablations []eval.Ablation) []eval.Ablation {
	v := []eval.Ablation{eval.AblationNone}
	if noMemory {
		v[0] = eval.AblationNoMemory
	}
	for _, a := range ablations {
		if a != v[0] {
			v = append(v, a)
		}
	}
	return v
}

// runNames labels checkpoints by their file names without the extension,
// numbered when two are alike (or called "expert").
func runNames(paths []string) []string {
	names := make([]string, len(paths))
	count := map[string]int{"expert": 1}
	for i, p := range paths {
		n := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		n = strings.ReplaceAll(n, "+", "_") // "+" separates the ablation
		count[n]++
		if count[n] > 1 {
			n = fmt.Sprintf("%s-%d", n, count[n])
		}
		names[i] = n
	}
	return names
}

func runEvalMerge(env *environment, args []string) error {
	fl := newFlags(env, "eval merge", "--out DIR SHARD_DIR...")
	out := fl.String("out", "", "output `DIR` for the merged ledger, summary and plots")
	if err := parseFlags(fl, args, true); err != nil {
		return err
	}
	if err := requireFlag("out", *out); err != nil {
		return err
	}
	if fl.NArg() == 0 {
		return fmt.Errorf("%w: give the shards' output directories", errUsage)
	}
	led, err := eval.MergeDirs(*out, fl.Args())
	if err != nil {
		return err
	}
	env.log.Info("merged", "shards", fl.NArg(), "dir", *out, "overall_success", fmt.Sprintf("%.1f%%", 100*led.Overall.SuccessRate))
	return nil
}
