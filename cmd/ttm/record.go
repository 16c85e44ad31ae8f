package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
)

func init() {
	register(command{name: "record", summary: "record episodes as ROS bags: a dataset from the experts or a policy, or live topics", run: runRecord})
}

const recordSynopsis = `(--experts [--label expert] | --policy CKPT.safetensors [--no-memory] [--label expert [--beta B]]) --out DIR [--tasks all|families|memory|NAME,...] [--episodes N] [--seed S] [--size HxW] [--max-steps N] [--noise X] [--base-noise X] [--pause P]
       ttm record --ros --out FILE.bag [--duration D] [__ns:=NS] [__master:=URI] [from:=to ...]
       ttm record --index --out DIR [--task NAME]

With --index the bags already in DIR (a robot's demonstrations: rosbag record
of its camera, /tf, /tf_static, /joint_states, the instruction and the action
topic, in the root namespace) are added to DIR's index, so that ttm train
reads them; a bag without the simulator's episode info is a successful
demonstration of --task.

With --policy --label expert the dataset is for DAgger: the policy acts (at each
step, with probability --beta, the noise-free scripted expert's action is
executed instead) and every step is labelled with the action the expert would
take in the state the rollout reached. The index names the agent
"dagger:CKPT:beta=B" and marks each episode "label": "expert"; ttm train keeps
such episodes even when the rollout failed.

With --experts --label expert (DART: Laskey et al. 2017, "DART: Noise
Injection for Robust Imitation Learning") the expert acts with the --noise
and --base-noise given, and every step is labelled with the noise-free
expert's action in the state reached: the noise spreads the states a policy
learns from, and the labels stay the clean ones.`

// runRecord builds a dataset folder, one bag per episode and index.json,
// or with --ros records the node's live topics to one bag.
func runRecord(env *environment, args []string) error {
	rosArgs, err := ros.ParseArgs("ttm_record", args, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	fl := newFlags(env, "record", recordSynopsis)
	experts := fl.Bool("experts", false, "record the scripted experts")
	fl.BoolVar(experts, "expert", false, "same as --experts")
	policyPath := fl.String("policy", "", "record rollouts of the policy in this checkpoint `file`")
	noMemory := fl.Bool("no-memory", false, "policy: zero the TTM memory before every step")
	label := fl.String("label", "", "record this `label` in place of the executed actions; only \"expert\" (the noise-free expert's action on each state visited: DAgger with --policy, DART with --experts)")
	beta := fl.Float64("beta", 0, "with --label: probability in [0, 1] that a step executes the expert's action instead of the policy's")
	index := fl.Bool("index", false, "index the bags in --out (a robot's demonstrations) for ttm train")
	task := fl.String("task", "", "--index: the task of the bags that do not name theirs")
	live := fl.Bool("ros", false, "record the live topics of a running node (image, camera_info, proprio, tf, tf_static, joint_states, instruction, action, episode_done) to --out FILE.bag")
	duration := fl.Duration("duration", 0, "--ros: stop after this long (0: at SIGINT)")
	out := fl.String("out", "", "dataset `folder` (or with --ros the bag file)")
	tasks := fl.String("tasks", "all", "tasks: all, families, memory, or names separated by commas")
	episodes := fl.Int("episodes", 10, "episodes per task; episode i of a task uses seed+i")
	seed := fl.Uint64("seed", 1, "seed of each task's first episode")
	size := fl.String("size", "256x320", "headcam image size HxW (with --policy: the policy's input size unless given)")
	noise := fl.Float64("noise", 0, "expert: Gaussian noise on the arm displacement, in action units")
	baseNoise := fl.Float64("base-noise", 0, "expert: Gaussian noise on the base velocities (m/s, rad/s)")
	pause := fl.Float64("pause", 0, "expert: probability of a pause starting at each step")
	maxSteps := fl.Int("max-steps", 0, "end each episode after this many steps (0: the task's own step cap)")
	memoryLabels := fl.Bool("memory-labels", false, "label a memory task's cued target and put back's spot in every frame, not only while the cue shows (for a policy whose keypoints read its memory: preset small-memory-film)")
	if err := parseFlags(fl, rosArgs.Rest, false); err != nil {
		return err
	}
	if err := requireFlag("out", *out); err != nil {
		return err
	}
	given := givenFlags(fl)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *index {
		for f := range given {
			if f != "index" && f != "out" && f != "task" {
				return fmt.Errorf("%w: --%s does not apply to --index", errUsage, f)
			}
		}
		return indexBags(env, *out, *task)
	}
	if given["task"] {
		return fmt.Errorf("%w: --task is for --index (recording takes --tasks)", errUsage)
	}
	if *live {
		for _, f := range []string{"experts", "expert", "policy", "tasks", "episodes", "seed", "size", "noise", "base-noise", "pause", "no-memory", "max-steps", "label", "beta"} {
			if given[f] {
				return fmt.Errorf("%w: --%s does not apply to --ros", errUsage, f)
			}
		}
		return recordLive(ctx, env, rosArgs, *out, *duration)
	}
	if len(rosArgs.Remaps) > 0 || len(rosArgs.Params) > 0 || given["duration"] {
		return fmt.Errorf("%w: ROS arguments and --duration need --ros", errUsage)
	}
	if *experts == (*policyPath != "") {
		return fmt.Errorf("%w: give exactly one of --experts, --policy and --ros", errUsage)
	}
	switch {
	case given["label"] && *label != sim.LabelExpert:
		return fmt.Errorf("%w: --label %q: the only labels are %q (the scripted expert's)", errUsage, *label, sim.LabelExpert)
	case given["label"] && *experts && given["beta"]:
		return fmt.Errorf("%w: --beta is for --policy rollouts (a noisy expert's steps are all its own)", errUsage)
	case given["beta"] && !given["label"]:
		return fmt.Errorf("%w: --beta needs --label expert", errUsage)
	}
	if err := probabilityFlag("beta", *beta); err != nil {
		return err
	}
	cfg := datasetConfig{dir: *out, episodes: *episodes, seed: *seed, maxSteps: *maxSteps}
	if cfg.tasks, err = sim.SelectTasks(*tasks); err != nil {
		return fmt.Errorf("%w: --tasks: %v", errUsage, err)
	}
	if cfg.h, cfg.w, err = sim.ParseSize(*size); err != nil {
		return fmt.Errorf("%w: --size: %v", errUsage, err)
	}
	switch {
	case cfg.episodes < 1:
		return fmt.Errorf("%w: --episodes %d: want at least 1", errUsage, cfg.episodes)
	case cfg.maxSteps < 0:
		return fmt.Errorf("%w: --max-steps %d is negative", errUsage, cfg.maxSteps)
	case *noise < 0 || *baseNoise < 0 || *pause < 0 || *pause >= 1:
		return fmt.Errorf("%w: --noise and --base-noise must be >= 0 and --pause in [0, 1)", errUsage)
	}
	if *experts {
		x := sim.ExpertOptions{Noise: *noise, BaseNoise: *baseNoise, PauseProb: *pause}
		cfg.expert = &x
		cfg.agentName = fmt.Sprintf("expert noise=%g base_noise=%g pause=%g", x.Noise, x.BaseNoise, x.PauseProb)
		cfg.newAgent = func(ep *sim.Episode) (sim.Agent, error) { return sim.ExpertAgent{Expert: ep.Expert(x)}, nil }
		if *label != "" {
			// DART: the noisy expert acts, the noise-free one labels.
			cfg.agentName += " label=" + *label
			cfg.label = *label
			cfg.newAgent = func(ep *sim.Episode) (sim.Agent, error) {
				return sim.NewEpisodeDAgger(ep, sim.ExpertAgent{Expert: ep.Expert(x)}, 0)
			}
		}
	} else {
		if given["noise"] || given["base-noise"] || given["pause"] {
			return fmt.Errorf("%w: --noise, --base-noise and --pause are for --experts", errUsage)
		}
		p, err := policy.Load(*policyPath, policy.Options{Log: env.log})
		if err != nil {
			return err
		}
		defer p.Close()
		if err := ablateMemory(p, *noMemory); err != nil {
			return err
		}
		if pre := p.Spec().Vision.Preprocess; !given["size"] {
			cfg.h, cfg.w = pre.Height, pre.Width
		}
		agent := newPolicyAgent(p)
		cfg.agentName = "policy:" + filepath.Base(*policyPath)
		cfg.newAgent = func(*sim.Episode) (sim.Agent, error) { return agent, nil }
		if *label != "" {
			cfg.agentName = fmt.Sprintf("dagger:%s:beta=%g", filepath.Base(*policyPath), *beta)
			cfg.label = *label
			cfg.newAgent = func(ep *sim.Episode) (sim.Agent, error) { return sim.NewEpisodeDAgger(ep, agent, *beta) }
		}
		if *noMemory {
			cfg.agentName += " no-memory"
		}
	}
	if cfg.maxSteps > 0 {
		cfg.agentName += fmt.Sprintf(" max_steps=%d", cfg.maxSteps)
	}
	if cfg.memoryLabels = *memoryLabels; cfg.memoryLabels {
		cfg.agentName += " memory_labels"
	}
	return recordDataset(ctx, env, cfg)
}

// probabilityFlag checks that flag's value p is a probability in [0, 1]
// (NaN is not).
func probabilityFlag(flag string, p float64) error {
	if p >= 0 && p <= 1 {
		return nil
	}
	return fmt.Errorf("%w: --%s %v: want a probability in [0, 1]", errUsage, flag, p)
}

// datasetConfig is what ttm record --experts/--policy was asked for.
type datasetConfig struct {
	dir          string
	tasks        []*sim.Task
	episodes     int
	seed         uint64
	maxSteps     int
	memoryLabels bool
	h, w         int
	agentName    string
	expert       *sim.ExpertOptions
	label        string // sim.LabelExpert for DAgger rollouts
	newAgent     func(ep *sim.Episode) (sim.Agent, error)
}

// errInterrupted is returned when SIGINT or SIGTERM stopped a recording.
var errInterrupted = errors.New("interrupted")

// recordDataset records the episodes missing from cfg.dir, updating the
// index after each one, so an interrupted run keeps what it finished and a
// rerun resumes.
func recordDataset(ctx context.Context, env *environment, cfg datasetConfig) error {
	if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	ix, err := sim.ReadIndex(cfg.dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		ix = &sim.Index{Version: sim.IndexVersion, Height: cfg.h, Width: cfg.w, Agent: cfg.agentName}
	case err != nil:
		return err
	case ix.Height != cfg.h || ix.Width != cfg.w:
		return fmt.Errorf("%w: dataset %s holds %dx%d frames, this run would record %dx%d (--size)", errUsage, cfg.dir, ix.Height, ix.Width, cfg.h, cfg.w)
	case ix.Agent != cfg.agentName:
		return fmt.Errorf("%w: dataset %s was recorded by %q, this run would record %q", errUsage, cfg.dir, ix.Agent, cfg.agentName)
	}

	total := len(cfg.tasks) * cfg.episodes
	env.log.Info("recording dataset", "dir", cfg.dir, "tasks", len(cfg.tasks), "episodes_per_task", cfg.episodes, "agent", cfg.agentName,
		"size", fmt.Sprintf("%dx%d", cfg.h, cfg.w), "already", len(ix.Episodes))
	start := time.Now()
	done, recorded := 0, 0
	for _, task := range cfg.tasks {
		for i := range cfg.episodes {
			seed := cfg.seed + uint64(i)
			file := sim.EpisodeFile(task.Name, seed)
			have, err := adopt(env, cfg, ix, task, seed, file)
			if err != nil {
				return err
			}
			if !have {
				res, err := recordOne(ctx, cfg, task, seed, file)
				if errors.Is(err, sim.ErrInterrupted) {
					env.log.Warn("interrupted: the episode under way was discarded; rerun the same command to resume",
						"kept", len(ix.Episodes), "task", task.Name, "seed", seed)
					return fmt.Errorf("%w after %d of %d episodes (%s kept)", errInterrupted, done, total, filepath.Join(cfg.dir, sim.IndexFile))
				}
				if err != nil {
					return err
				}
				ix.Episodes = append(ix.Episodes, sim.IndexEntry{File: file, Task: res.Task, Family: sim.TaskFamily(task),
					Instruction: res.Instruction, Seed: res.Seed, Steps: res.Steps, Success: res.Success, Label: cfg.label,
					Period: sim.StepPeriod.Seconds()})
				if err := sim.WriteIndex(cfg.dir, ix); err != nil {
					return err
				}
				recorded++
			}
			done++
			elapsed := time.Since(start)
			rate := float64(recorded) / elapsed.Seconds()
			eta := time.Duration(0)
			if recorded > 0 {
				eta = time.Duration(float64(total-done) / rate * float64(time.Second))
			}
			env.log.Info("episode", "done", done, "total", total, "task", task.Name, "seed", seed, "new", !have,
				"episodes_per_s", fmt.Sprintf("%.2f", rate), "eta", eta.Round(time.Second))
		}
	}
	env.log.Info("dataset complete", "dir", cfg.dir, "episodes", len(ix.Episodes), "recorded_now", recorded, "elapsed", time.Since(start).Round(time.Millisecond))
	return printDatasetTable(env, ix)
}

// adopt reports whether the episode is already in the dataset. A bag that
// exists but is not indexed (the run stopped between the bag's rename and
// the index update) is checked and indexed; an unreadable one is removed.
func adopt(env *environment, cfg datasetConfig, ix *sim.Index, task *sim.Task, seed uint64, file string) (bool, error) {
	path := filepath.Join(cfg.dir, file)
	_, statErr := os.Stat(path)
	if ix.Find(file) >= 0 {
		if statErr != nil {
			return false, fmt.Errorf("dataset %s: the index lists %s, but: %w", cfg.dir, file, statErr)
		}
		return true, nil
	}
	if statErr != nil {
		return false, nil
	}
	ep, err := sim.ReadEpisode(path, sim.ReadOptions{})
	if err == nil && (ep.Info.Task != task.Name || ep.Info.Seed != seed || ep.Info.Height != cfg.h || ep.Info.Width != cfg.w || ep.Info.Agent != cfg.agentName) {
		err = fmt.Errorf("it holds %s seed %d at %dx%d by %q", ep.Info.Task, ep.Info.Seed, ep.Info.Height, ep.Info.Width, ep.Info.Agent)
	}
	if err != nil {
		env.log.Warn("re-recording an unindexed bag that does not fit", "file", path, "reason", err)
		return false, os.Remove(path)
	}
	ix.Episodes = append(ix.Episodes, sim.IndexEntryFor(file, ep.Info))
	env.log.Info("indexed a bag the last run finished", "file", path)
	return true, sim.WriteIndex(cfg.dir, ix)
}

func recordOne(ctx context.Context, cfg datasetConfig, task *sim.Task, seed uint64, file string) (sim.Result, error) {
	ep, err := sim.NewEpisode(task, seed, sim.Options{Height: cfg.h, Width: cfg.w})
	if err != nil {
		return sim.Result{}, err
	}
	defer ep.Close()
	agent, err := cfg.newAgent(ep)
	if err != nil {
		return sim.Result{}, err
	}
	return sim.RecordEpisode(filepath.Join(cfg.dir, file), ep, agent,
		sim.RecordOptions{Agent: cfg.agentName, Expert: cfg.expert, MaxSteps: cfg.maxSteps, Context: ctx, Label: cfg.label, MemoryLabels: cfg.memoryLabels})
}

func printDatasetTable(env *environment, ix *sim.Index) error {
	type row struct{ n, ok, steps int }
	rows := map[string]*row{}
	var order []string
	for _, e := range ix.Episodes {
		r := rows[e.Task]
		if r == nil {
			r = &row{}
			rows[e.Task] = r
			order = append(order, e.Task)
		}
		r.n++
		r.steps += e.Steps
		if e.Success {
			r.ok++
		}
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "task\tepisodes\tsuccess\tmean steps\t")
	for _, t := range order {
		r := rows[t]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t\n", t, r.n, r.ok, float64(r.steps)/float64(r.n))
	}
	return tw.Flush()
}

// indexBags adds the bags in dir that its index (made if missing) lacks:
// each must read as an episode (frames, an action per step) of the
// index's frame size; one without episode info is a successful
// demonstration of task.
func indexBags(env *environment, dir, task string) error {
	ix, err := sim.ReadIndex(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		ix = &sim.Index{Version: sim.IndexVersion, Agent: "bags"}
	case err != nil:
		return err
	}
	bags, err := filepath.Glob(filepath.Join(dir, "*.bag"))
	if err != nil {
		return err
	}
	added := 0
	for _, path := range bags {
		file := filepath.Base(path)
		if ix.Find(file) >= 0 {
			continue
		}
		ep, err := sim.ReadEpisode(path, sim.ReadOptions{})
		if err != nil {
			return fmt.Errorf("index %s: %w", dir, err)
		}
		if !ep.HasInfo {
			if task == "" {
				return fmt.Errorf("%w: index %s: %s does not say its task: give --task", errUsage, dir, file)
			}
			ep.Info.Task, ep.Info.Family, ep.Info.Success = task, task, true
		}
		for k, s := range ep.Steps {
			if s.Action == nil {
				return fmt.Errorf("index %s: %s: step %d has no action (record the action topic with the frames)", dir, file, k)
			}
		}
		if ix.Height == 0 {
			ix.Height, ix.Width = ep.Info.Height, ep.Info.Width
		}
		if ep.Info.Height != ix.Height || ep.Info.Width != ix.Width {
			return fmt.Errorf("index %s: %s has %dx%d frames, the dataset %dx%d", dir, file, ep.Info.Height, ep.Info.Width, ix.Height, ix.Width)
		}
		ix.Episodes = append(ix.Episodes, sim.IndexEntryFor(file, ep.Info))
		added++
		env.log.Info("indexed", "file", file, "task", ep.Info.Task, "steps", len(ep.Steps), "rate_hz", 1/ep.Info.Period,
			"proprio", ep.ProprioLabel != "")
	}
	if added == 0 {
		return fmt.Errorf("index %s: no bag to add (%d bags, all indexed)", dir, len(bags))
	}
	if err := sim.WriteIndex(dir, ix); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "indexed %d bags in %s (%d episodes)\n", added, dir, len(ix.Episodes))
	return nil
}

// recordLive records the node's topics until SIGINT or the duration.
func recordLive(ctx context.Context, env *environment, rosArgs *ros.Args, out string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: --duration %v is negative", errUsage, d)
	}
	if err := makeOutDir(filepath.Dir(out)); err != nil {
		return err
	}
	stats, err := ros.Record(ctx, ros.RecordConfig{Args: rosArgs, Out: out, Duration: d, Log: env.log})
	if err != nil {
		return err
	}
	total := 0
	for _, n := range stats.Messages {
		total += n
	}
	fmt.Fprintf(env.stdout, "recorded %d messages to %s (%v), %d dropped\n", total, out, stats.End.Sub(stats.Start).Round(time.Millisecond), stats.Dropped)
	return nil
}
