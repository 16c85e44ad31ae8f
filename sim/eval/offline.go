package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/sim"
)

// OfflineFile is the offline evaluation's ledger in the output directory.
const OfflineFile = "offline.json"

// OfflineConfig is an offline evaluation: policies scored step by step
// against the actions recorded in a dataset of episode bags.
type OfflineConfig struct {
	// Data is the dataset folder: episode bags and their index
	// (sim.ReadIndex).
	Data string
	// Tasks keeps the episodes of these tasks; nil keeps all.
	Tasks []*sim.Task
	// Runs are policy runs (PolicyRuns); the nomem and knockout ablations
	// apply as in closed loop.
	Runs []RunSpec
	// Workers score episodes in parallel; it defaults to runtime.NumCPU().
	Workers int
	// Log receives progress; it defaults to a logger that discards
	// everything.
	Log hclog.Logger
}

// OfflineLedger is the deterministic record of an offline evaluation
// (offline.json).
//
// Each recorded frame goes through the policy in order (PolicyAgent, the
// node's code path), with teacher forcing: the previous action the policy
// is given at each step is the recorded one, not its own prediction, so
// each step is scored on the demonstration's history. For each action
// dimension: the mean absolute error between predicted and recorded
// values (the recorded value clamped to the dimension's bounds, as the
// simulator and the safety filter clamp), and, for discrete dimensions,
// the share of steps whose predicted bin is the recorded value's bin (for
// the mode, its category).
type OfflineLedger struct {
	Version int          `json:"version"`
	Data    string       `json:"data"`
	Dims    []string     `json:"dims"` // action dimension names, the order of every per-dimension list
	Runs    []OfflineRun `json:"runs"`
}

// OfflineRun is one checkpoint (or ablation) over the dataset.
type OfflineRun struct {
	Name             string   `json:"name"`
	Checkpoint       string   `json:"checkpoint"`
	CheckpointSHA256 string   `json:"checkpoint_sha256"`
	Ablation         Ablation `json:"ablation"`
	// Memory is MemoryCheckpoint when the checkpoint was trained without
	// memory (RunLedger.Memory).
	Memory    string                 `json:"memory,omitempty"`
	Overall   ActionError            `json:"overall"`
	PerFamily map[string]ActionError `json:"per_family"`
	Episodes  []OfflineEpisode       `json:"episodes"`
}

// OfflineEpisode is one recorded episode's score.
type OfflineEpisode struct {
	File  string      `json:"file"`
	Task  string      `json:"task"`
	Seed  uint64      `json:"seed"`
	Error ActionError `json:"error"`
}

// ActionError is the per-step action error over a set of steps. A
// dimension is scored only on the steps whose recorded mode uses it (RT-1's
// arm deltas in arm mode, base velocities in base mode; see
// action.Space.Gated), as the trainer's loss is: elsewhere the node
// publishes zero whatever the head says.
type ActionError struct {
	Steps int `json:"steps"`
	// DimSteps is the number of steps scored per dimension.
	DimSteps []int `json:"dim_steps"`
	// MAE is the mean absolute error per dimension, over its scored steps.
	MAE []float64 `json:"mae"`
	// BinAccuracy is the share of steps with the recorded bin, per
	// dimension; null for continuous dimensions.
	BinAccuracy []*float64 `json:"bin_accuracy"`
}

// errorSums accumulates ActionError over steps of one action space.
type errorSums struct {
	space  action.Space
	steps  int
	scored []int
	absSum []float64
	hits   []int
}

func newErrorSums(space action.Space) *errorSums {
	n := space.Len()
	return &errorSums{space: space, scored: make([]int, n), absSum: make([]float64, n), hits: make([]int, n)}
}

// add scores one step: pred and rec in the action space's layout.
func (s *errorSums) add(pred, rec []float32) {
	mode := int(math.Round(float64(rec[action.DimMode]))) // as policy.Learner's mode-gated loss reads it
	for i, d := range s.space.Dims {
		if s.space.Gated(i, mode) {
			continue
		}
		s.scored[i]++
		r := d.Clamp(rec[i])
		diff := float64(pred[i]) - float64(r)
		if diff < 0 {
			diff = -diff
		}
		s.absSum[i] += diff
		if d.Bins > 0 && d.Bin(pred[i]) == d.Bin(r) {
			s.hits[i]++
		}
	}
	s.steps++
}

// merge adds o's sums to s.
func (s *errorSums) merge(o *errorSums) {
	for i := range s.absSum {
		s.scored[i] += o.scored[i]
		s.absSum[i] += o.absSum[i]
		s.hits[i] += o.hits[i]
	}
	s.steps += o.steps
}

// result returns the means.
func (s *errorSums) result() ActionError {
	e := ActionError{Steps: s.steps, DimSteps: slices.Clone(s.scored), MAE: make([]float64, len(s.absSum)), BinAccuracy: make([]*float64, len(s.absSum))}
	for i, d := range s.space.Dims {
		if s.scored[i] == 0 {
			continue
		}
		e.MAE[i] = s.absSum[i] / float64(s.scored[i])
		if d.Bins > 0 {
			acc := float64(s.hits[i]) / float64(s.scored[i])
			e.BinAccuracy[i] = &acc
		}
	}
	return e
}

// EvaluateOffline scores every run on the dataset's episodes.
func EvaluateOffline(ctx context.Context, cfg OfflineConfig) (*OfflineLedger, error) {
	if cfg.Workers == 0 {
		cfg.Workers = runtime.NumCPU()
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.Workers < 1 {
		return nil, fmt.Errorf("eval: offline: %d workers", cfg.Workers)
	}
	if len(cfg.Runs) == 0 {
		return nil, errors.New("eval: offline: no runs (give a policy)")
	}
	for _, r := range cfg.Runs {
		if r.loadPolicy == nil {
			return nil, fmt.Errorf("eval: offline: run %s is not a policy (offline scoring needs one)", r.Name)
		}
	}
	ix, err := sim.ReadIndex(cfg.Data)
	if err != nil {
		return nil, fmt.Errorf("eval: offline: %w", err)
	}
	keep := map[string]bool{}
	for _, t := range cfg.Tasks {
		keep[t.Name] = true
	}
	var entries []sim.IndexEntry
	for _, e := range ix.Episodes {
		if len(cfg.Tasks) == 0 || keep[e.Task] {
			entries = append(entries, e)
		}
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("eval: offline: no episodes of the chosen tasks in %s (%d episodes)", cfg.Data, len(ix.Episodes))
	}
	space := action.RT1()
	led := &OfflineLedger{Version: LedgerVersion, Data: filepath.Clean(cfg.Data)}
	for _, d := range space.Dims {
		led.Dims = append(led.Dims, d.Name)
	}
	type job struct{ run, entry int }
	var jobs []job
	for ri, r := range cfg.Runs {
		led.Runs = append(led.Runs, OfflineRun{Name: r.Name, Checkpoint: r.Checkpoint, CheckpointSHA256: r.CheckpointSHA256,
			Ablation: r.Ablation, Memory: r.Memory, Episodes: make([]OfflineEpisode, len(entries))})
		for ei := range entries {
			jobs = append(jobs, job{ri, ei})
		}
	}
	sums := make([][]*errorSums, len(cfg.Runs)) // per run, per entry
	for ri := range sums {
		sums[ri] = make([]*errorSums, len(entries))
	}
	cfg.Log.Info("offline evaluation", "data", cfg.Data, "episodes", len(entries), "runs", len(cfg.Runs), "workers", cfg.Workers)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan job)
	var (
		mu       sync.Mutex // guards firstErr, done
		firstErr error
		done     int
	)
	start := time.Now()
	prog := progress{log: cfg.Log, total: len(jobs), start: start, every: 5 * time.Second, noSuccess: true}
	var wg sync.WaitGroup
	for range min(cfg.Workers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agents := map[int]*PolicyAgent{}
			defer func() {
				for _, a := range agents {
					a.Policy().Close()
				}
			}()
			for j := range next {
				a, ok := agents[j.run]
				if !ok {
					p, err := cfg.Runs[j.run].loadPolicy()
					if err != nil {
						mu.Lock()
						firstErr = cmpErr(firstErr, fmt.Errorf("eval: offline: run %s: %w", cfg.Runs[j.run].Name, err))
						mu.Unlock()
						cancel()
						continue
					}
					if err := space.CompareLayout(p.ActionSpace()); err != nil {
						p.Close()
						mu.Lock()
						firstErr = cmpErr(firstErr, fmt.Errorf("eval: offline: run %s: %w", cfg.Runs[j.run].Name, err))
						mu.Unlock()
						cancel()
						continue
					}
					a = NewPolicyAgent(p)
					a.NoMemory = cfg.Runs[j.run].Ablation == AblationNoMemory
					agents[j.run] = a
				}
				e := entries[j.entry]
				s, err := scoreEpisode(filepath.Join(cfg.Data, e.File), e, a, cfg.Runs[j.run].Ablation == AblationKnockout)
				mu.Lock()
				if err != nil {
					firstErr = cmpErr(firstErr, fmt.Errorf("eval: offline: run %s: %w", cfg.Runs[j.run].Name, err))
					cancel()
				} else {
					sums[j.run][j.entry] = s
					done++
					prog.add(false)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case next <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr == nil && done != len(jobs) {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return nil, firstErr
	}
	for ri := range led.Runs {
		r := &led.Runs[ri]
		overall := newErrorSums(sums[ri][0].space)
		fam := map[string]*errorSums{}
		for ei, e := range entries {
			s := sums[ri][ei]
			r.Episodes[ei] = OfflineEpisode{File: e.File, Task: e.Task, Seed: e.Seed, Error: s.result()}
			overall.merge(s)
			if fam[e.Task] == nil {
				fam[e.Task] = newErrorSums(s.space)
			}
			fam[e.Task].merge(s)
		}
		r.Overall = overall.result()
		r.PerFamily = map[string]ActionError{}
		for f, s := range fam {
			r.PerFamily[f] = s.result()
		}
	}
	return led, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// scoreEpisode plays a recorded episode's frames through agent with
// teacher forcing and returns its error sums, in the policy's action space
// (bin accuracy for the dimensions its head bins).
func scoreEpisode(path string, e sim.IndexEntry, a *PolicyAgent, knockout bool) (*errorSums, error) {
	space := a.Policy().ActionSpace()
	rec, err := sim.ReadEpisode(path, sim.ReadOptions{})
	if err != nil {
		return nil, err
	}
	a.Reset(rec.Info.Instruction)
	a.SetKnockout(0)
	if knockout {
		cue, err := recordedCue(e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.File, err)
		}
		a.SetKnockout(cue)
	}
	s := newErrorSums(space)
	obs := sim.Observation{Height: rec.Info.Height, Width: rec.Info.Width, Instruction: rec.Info.Instruction}
	for k, st := range rec.Steps {
		if len(st.Action) != space.Len() {
			return nil, fmt.Errorf("%s step %d: recorded action has %d values, want %d", e.File, k, len(st.Action), space.Len())
		}
		obs.Image, obs.Step, obs.Proprio = st.Image, k, st.Proprio
		pred, err := a.Act(&obs)
		if err != nil {
			return nil, fmt.Errorf("%s step %d: %w", e.File, k, err)
		}
		s.add(pred, st.Action)
		// Teacher forcing: the next step sees the recorded action.
		prev := a.State().Prev
		for i, d := range space.Dims {
			prev[i] = d.Clamp(st.Action[i])
		}
	}
	return s, nil
}

// recordedCue is the cue length of a recorded simulator episode: the same
// task and seed set up the same cue.
func recordedCue(e sim.IndexEntry) (int, error) {
	t, err := sim.TaskByName(e.Task)
	if err != nil {
		return 0, fmt.Errorf("knockout needs a simulator task: %w", err)
	}
	ep, err := sim.NewEpisode(t, e.Seed, sim.Options{Height: 8, Width: 8})
	if err != nil {
		return 0, err
	}
	defer ep.Close()
	return ep.CueSteps(), nil
}

// WriteOffline writes offline.json and summary.md into dir.
func WriteOffline(dir string, l *OfflineLedger) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("encode offline ledger: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, OfflineFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write offline ledger: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, SummaryFile), []byte(OfflineSummary(l)), 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// OfflineSummary is the offline ledger as markdown: per run, a table of
// MAE and bin accuracy per dimension (columns) and family (rows).
func OfflineSummary(l *OfflineLedger) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Offline evaluation\n\nDataset `%s`. Per-step action error with teacher forcing (the policy is given the recorded previous action); each dimension over the steps whose recorded mode uses it (arm deltas in arm mode, base velocities in base mode), as the trainer's loss.\n", l.Data)
	for _, r := range l.Runs {
		fmt.Fprintf(&b, "\n## %s\n\n`%s` (sha256 %.12s), ablation %s", r.Name, r.Checkpoint, r.CheckpointSHA256, r.Ablation)
		if r.Memory != "" {
			fmt.Fprintf(&b, ", memory %s", r.Memory)
		}
		fmt.Fprintf(&b, ", %d steps.\n\n", r.Overall.Steps)
		fams := make([]string, 0, len(r.PerFamily))
		seen := map[string]bool{}
		for _, e := range r.Episodes {
			if !seen[e.Task] {
				seen[e.Task] = true
				fams = append(fams, e.Task)
			}
		}
		for _, what := range []string{"MAE", "bin accuracy"} {
			fmt.Fprintf(&b, "%s per dimension:\n\n| family | steps |", what)
			for _, d := range l.Dims {
				fmt.Fprintf(&b, " %s |", d)
			}
			b.WriteString("\n| --- | --- |" + strings.Repeat(" --- |", len(l.Dims)) + "\n")
			row := func(name string, e ActionError) {
				fmt.Fprintf(&b, "| %s | %d |", name, e.Steps)
				for i := range l.Dims {
					switch {
					case what == "MAE" && i < len(e.MAE) && i < len(e.DimSteps) && e.DimSteps[i] > 0:
						fmt.Fprintf(&b, " %.3f |", e.MAE[i])
					case what != "MAE" && i < len(e.BinAccuracy) && e.BinAccuracy[i] != nil:
						fmt.Fprintf(&b, " %.3f |", *e.BinAccuracy[i])
					default:
						b.WriteString(" – |")
					}
				}
				b.WriteString("\n")
			}
			for _, f := range fams {
				row(f, r.PerFamily[f])
			}
			row("**overall**", r.Overall)
			b.WriteString("\n")
		}
	}
	return b.String()
}
