package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/sim/eval"
)

// offlineArgs is what ttm eval --data was asked to do.
type offlineArgs struct {
	data, out string
	policies  []string
	tasks     []*sim.Task
	noMemory  bool
	ablations []eval.Ablation
	workers   int
}

// runEvalOffline scores the checkpoints (and their ablations) on the
// recorded episodes of a dataset: DIR/offline.json and DIR/summary.md.
func runEvalOffline(env *environment, a offlineArgs) error {
	cfg := eval.OfflineConfig{Data: a.data, Tasks: a.tasks, Workers: a.workers, Log: env.log}
	names := runNames(a.policies)
	for i, path := range a.policies {
		runs, err := eval.PolicyRuns(names[i], path, checkpointVariants(a.noMemory, a.ablations), policy.Options{Log: env.log})
		if err != nil {
			return err
		}
		cfg.Runs = append(cfg.Runs, runs...)
	}
	if err := os.MkdirAll(a.out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	led, err := eval.EvaluateOffline(ctx, cfg)
	if err != nil {
		return err
	}
	if err := eval.WriteOffline(a.out, led); err != nil {
		return err
	}
	env.log.Info("offline evaluation written", "dir", a.out)
	_, err = fmt.Fprint(env.stdout, eval.OfflineSummary(led))
	return err
}
