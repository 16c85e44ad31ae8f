package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ttmrobot/ttm/internal/atomicfile"
	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/policy/dataset"
	"github.com/ttmrobot/ttm/policy/seq"
	"github.com/ttmrobot/ttm/policy/train"
	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/vision"
)

func init() {
	register(command{name: "train", summary: "behavioural cloning of a policy from a dataset of episode bags", run: runTrain})
}

// trainFiles are the files a training run writes beside its checkpoint.
type trainFiles struct {
	ckpt, backbone, state, log, curve string
}

func newTrainFiles(out string) trainFiles {
	base := strings.TrimSuffix(out, filepath.Ext(out))
	return trainFiles{ckpt: out, backbone: base + ".backbone.onnx", state: base + ".trainstate.safetensors",
		log: base + ".train.json", curve: base + ".curve.png"}
}

// trainLog is the JSON log: the run's settings and learning curve.
type trainLog struct {
	Command  string         `json:"command"`
	Preset   string         `json:"preset"`
	Model    string         `json:"model"` // the sequence model (seq.Names)
	Data     string         `json:"data"`  // --data: the dataset folders, separated by commas
	Datasets []dataset.Use  `json:"datasets"`
	Episodes int            `json:"episodes"`
	Steps    int            `json:"dataset_steps"`
	Params   int            `json:"trainable_parameters"`
	Config   train.Config   `json:"config"`
	History  []train.Record `json:"history"`
}

func runTrain(env *environment, args []string) error {
	def := train.DefaultConfig()
	fl := newFlags(env, "train", "--data DIR[,DIR...] --preset NAME [--model NAME] --out CKPT.safetensors [--steps N] [--no-memory] [--init CKPT]")
	data := fl.String("data", "", "dataset `folders` separated by commas (index.json and episode bags, from ttm record); "+
		"failed episodes are skipped unless --all-episodes, except expert-labelled ones (ttm record --label expert)")
	preset := fl.String("preset", "small", "policy preset for fresh weights: "+strings.Join(policy.PresetNames(), ", ")+" (ignored with --init or when resuming)")
	model := fl.String("model", "", "sequence model of fresh weights: "+strings.Join(seq.Names(), ", ")+
		" (default ttm; with --init or when resuming it must match the checkpoint's)")
	out := fl.String("out", "", "checkpoint `file` to write; its training state, JSON log and learning curve go beside it")
	initFrom := fl.String("init", "", "start from this checkpoint `file` instead of fresh weights")
	steps := fl.Int("steps", def.Steps, "optimiser updates")
	batch := fl.Int("batch", def.Batch, "windows per update")
	window := fl.Int("window", def.Window, "steps per window (truncated backpropagation through time)")
	lr := fl.Float64("lr", def.LR, "peak learning rate")
	seed := fl.Uint64("seed", def.Seed, "seed of the fresh weights and of the episode sampling")
	workers := fl.Int("workers", def.Workers, "worker goroutines (data-parallel over the batch); results depend on it")
	noMemory := fl.Bool("no-memory", false, "train the ablation: TTM memory zeroed before every step, recorded in the checkpoint (ttm.config no_memory), which then runs without memory everywhere")
	taskNames := fl.String("tasks", "all", "train on these tasks' episodes of the datasets only: all, families, memory, or names separated by commas")
	allEpisodes := fl.Bool("all-episodes", false, "also train on episodes that did not succeed (expert-labelled ones are always kept)")
	logEvery := fl.Int("log-every", 20, "log every N updates")
	ckptEvery := fl.Int("checkpoint-every", 200, "write checkpoint and state every N updates")
	cacheDir := fl.String("cache", "", "feature cache `folder` (default DATA/.features; with several datasets, one subfolder each)")
	keypointWeight := fl.Float64("keypoint-weight", train.DefaultKeypointWeight, "weight of the keypoint supervision (the simulator's hand, target and destination image points), for a head with a keypoint token; 0: none")
	geometryOwn := fl.Float64("geometry-own", train.DefaultGeometryOwn, "for a policy with target geometry, which trains on the labelled points' back-projection: over the second half of the updates, the share of windows that read the policy's own keypoints instead")
	goalWeight := fl.Float64("goal-weight", train.DefaultGoalWeight, "weight of the goal probe's loss (where the goal stood at the episode's start; the simulator's datasets), for a policy with a goal probe; 0: none")
	if err := parseFlags(fl, args, false); err != nil {
		return err
	}
	if err := requireFlag("data", *data); err != nil {
		return err
	}
	given := givenFlags(fl)
	dirs, err := splitDataFlag(*data)
	if err != nil {
		return err
	}
	selected, err := sim.SelectTasks(*taskNames)
	if err != nil {
		return fmt.Errorf("%w: --tasks: %v", errUsage, err)
	}
	var tasks []string // nil: every task
	if *taskNames != "all" {
		for _, t := range selected {
			tasks = append(tasks, t.Name)
		}
	}
	if err := requireFlag("out", *out); err != nil {
		return err
	}
	if *model != "" && !slices.Contains(seq.Names(), *model) {
		return fmt.Errorf("%w: --model %q: unknown sequence model (have %s)", errUsage, *model, strings.Join(seq.Names(), ", "))
	}
	if *noMemory && *model != "" && *model != "ttm" {
		return fmt.Errorf("%w: --no-memory is the ttm model's ablation; train --model ttm-nomem instead of --model %s --no-memory", errUsage, *model)
	}
	if *logEvery < 1 || *ckptEvery < 1 {
		return fmt.Errorf("%w: --log-every and --checkpoint-every must be positive", errUsage)
	}
	// withFlags is c with the settings the command line gives; the
	// auxiliary losses' weights only where given, ConfigFor's otherwise.
	withFlags := func(c train.Config) train.Config {
		c.Steps, c.Batch, c.Window, c.LR = *steps, *batch, *window, *lr
		c.Seed, c.Workers, c.NoMemory = *seed, *workers, *noMemory
		if given["keypoint-weight"] {
			c.KeypointWeight, c.KeypointSigma = *keypointWeight, vision.DefaultKeypointSigma
		}
		if given["geometry-own"] {
			c.GeometryOwn = *geometryOwn
		}
		if given["goal-weight"] {
			c.GoalWeight = *goalWeight
		}
		return c
	}
	// The flags' ranges, before any file is written (the policy's parts
	// are known once it is loaded).
	check := withFlags(train.DefaultConfig())
	check.GeometryLabels = true
	if err := check.Validate(); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	files := newTrainFiles(*out)
	log := env.log.Named("train")
	if err := os.MkdirAll(filepath.Dir(files.ckpt), 0o755); err != nil {
		return fmt.Errorf("checkpoint folder: %w", err)
	}

	// The starting point: a run to resume, a given checkpoint, or fresh weights.
	resume := fileExists(files.state) && fileExists(files.ckpt)
	start := files.ckpt
	switch {
	case resume:
		log.Info("resuming", "checkpoint", files.ckpt, "state", files.state)
	case *initFrom != "":
		start = *initFrom
	default:
		spec, err := policy.Preset(*preset)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		spec.Policy.Model = *model
		spec.TTM.NoMemory = *noMemory
		if err := policy.Create(spec, *seed, "", files.ckpt, log); err != nil {
			return err
		}
	}
	p, err := policy.Load(start, policy.Options{Log: log})
	if err != nil {
		return err
	}
	defer p.Close()
	cfg := withFlags(train.ConfigFor(p.Spec()))
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	switch ckptNoMemory := p.Spec().TTM.NoMemory; {
	case ckptNoMemory:
		cfg.NoMemory = true // trained without memory, it goes on without
	case *noMemory:
		return fmt.Errorf("%w: --no-memory, but %s was trained with memory: a policy without memory starts from fresh weights", errUsage, start)
	}
	if *model != "" && *model != p.ModelName() {
		return fmt.Errorf("%w: --model %s, but %s runs the sequence model %s", errUsage, *model, start, p.ModelName())
	}
	backbone := p.BackbonePath()
	if abs, _ := filepath.Abs(backbone); abs != mustAbs(files.backbone) && !resume {
		if err := copyFile(backbone, files.backbone); err != nil {
			return fmt.Errorf("copy backbone beside the checkpoint: %w", err)
		}
		backbone = files.backbone
	}

	eps, total, uses, err := dataset.Load(env.log.Named("data"), p, dirs, *cacheDir, tasks, *allEpisodes)
	if err != nil {
		return err
	}
	if was, rate := p.Rate(), uses[0].Rate; was > 0 && math.Abs(was-rate) > dataset.RateTolerance*max(was, rate) {
		log.Warn("the policy learnt at another rate before; it now learns at the demonstrations' rate", "was_hz", was, "rate_hz", rate)
	}
	if err := p.SetRate(uses[0].Rate); err != nil {
		return err
	}
	nparams := 0
	for _, g := range p.Groups() {
		nparams += len(g.Params)
	}
	log.Info("training", "model", p.ModelName(), "episodes", len(eps), "steps", total, "trainable_parameters", nparams, "updates", cfg.Steps,
		"batch", cfg.Batch, "window", cfg.Window, "workers", cfg.Workers, "no_memory", cfg.NoMemory)
	tr, err := train.New(cfg, p, eps, log)
	if err != nil {
		return err
	}
	if resume {
		if err := tr.LoadState(files.state); err != nil {
			return fmt.Errorf("%w (delete %s to start over)", err, files.state)
		}
		log.Info("resumed", "update", tr.Updates(), "of", cfg.Steps)
	}
	record := trainLog{Command: "ttm train " + strings.Join(args, " "), Preset: p.Spec().Policy.Preset, Model: p.ModelName(), Data: *data, Datasets: uses,
		Episodes: len(eps), Steps: total, Params: nparams, Config: cfg}
	checkpoint := func(tr *train.Trainer) error {
		if err := p.SaveAs(files.ckpt, backbone); err != nil {
			return fmt.Errorf("save checkpoint: %w", err)
		}
		if err := tr.SaveState(files.state); err != nil {
			return fmt.Errorf("save training state: %w", err)
		}
		record.History = tr.History()
		js, err := json.MarshalIndent(record, "", "  ")
		if err != nil {
			return err
		}
		if err := atomicfile.WriteBytes(files.log, append(js, '\n')); err != nil {
			return err
		}
		if len(record.History) > 0 {
			title := fmt.Sprintf("ttm train %s %s: %d episodes, batch %d x %d steps", record.Preset, record.Model, len(eps), cfg.Batch, cfg.Window)
			if cfg.NoMemory {
				title += ", without memory"
			}
			if err := train.PlotCurve(files.curve, title, record.History); err != nil {
				return err
			}
		}
		log.Info("checkpoint", "update", tr.Updates(), "file", files.ckpt)
		return nil
	}
	stop := make(chan struct{})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		if _, ok := <-sig; ok {
			log.Warn("interrupted: finishing the update and writing a checkpoint")
			close(stop)
		}
	}()
	began := time.Now()
	if err := tr.Run(*logEvery, *ckptEvery, checkpoint, stop); err != nil {
		return err
	}
	log.Info("done", "updates", tr.Updates(), "took", time.Since(began).Round(time.Second),
		"checkpoint", files.ckpt, "curve", files.curve, "log", files.log)
	return nil
}

// splitDataFlag splits --data into dataset folders: one, or several
// separated by commas; each named once.
func splitDataFlag(data string) ([]string, error) {
	var dirs []string
	seen := map[string]string{}
	for _, d := range strings.Split(data, ",") {
		if strings.TrimSpace(d) == "" {
			return nil, fmt.Errorf("%w: --data %q: an empty folder name", errUsage, data)
		}
		abs := mustAbs(d)
		if prev, dup := seen[abs]; dup {
			return nil, fmt.Errorf("%w: --data names the folder %s twice (%q and %q)", errUsage, abs, prev, d)
		}
		seen[abs] = d
		dirs = append(dirs, d)
	}
	return dirs, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func mustAbs(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	return abs
}

// copyFile copies src to dst atomically.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(dst, b)
}
