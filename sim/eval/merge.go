package eval

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"

	"github.com/ttmrobot/ttm/sim"
)

// Output file names.
const (
	LedgerFile  = "ledger.json"
	TimingFile  = "timing.json"
	SummaryFile = "summary.md"
	VideoDir    = "videos"
	TraceDir    = "traces"
)

// WriteOutputs writes the ledger, the timing (if not nil), the summary and
// the plots into dir, which must exist.
func WriteOutputs(dir string, l *Ledger, t *Timing) error {
	if err := l.WriteFile(filepath.Join(dir, LedgerFile)); err != nil {
		return err
	}
	if t != nil {
		if err := t.WriteFile(filepath.Join(dir, TimingFile)); err != nil {
			return err
		}
	}
	if err := WriteSummary(filepath.Join(dir, SummaryFile), l, t); err != nil {
		return err
	}
	return WritePlots(dir, l)
}

// maxEpisodes bounds the episodes per task a merged ledger may claim.
const maxEpisodes = 1 << 20

// Merge combines the ledgers of the shards of one evaluation into the
// ledger the whole evaluation gives in one process. The shards must agree
// on everything but the shard index, be of one count, each given once,
// and together hold every (task, episode) pair exactly once.
func Merge(shards []*Ledger) (*Ledger, error) {
	if len(shards) == 0 {
		return nil, errors.New("merge: no shards")
	}
	first := shards[0]
	if first.Setup.Shard == nil {
		return nil, errors.New("merge: shard 1 is not a shard ledger (no setup.shard)")
	}
	count := first.Setup.Shard.Count
	if len(shards) != count {
		return nil, fmt.Errorf("merge: %d shard ledgers for an evaluation in %d shards", len(shards), count)
	}
	base := first.Setup
	base.Shard = nil
	if base.Episodes < 1 || base.Episodes > maxEpisodes || len(base.Tasks) == 0 {
		return nil, fmt.Errorf("merge: %d tasks x %d episodes: want at least one task and 1..%d episodes", len(base.Tasks), base.Episodes, maxEpisodes)
	}
	out := &Ledger{Setup: base}
	for _, r := range first.Runs {
		out.Runs = append(out.Runs, RunLedger{Name: r.Name, Agent: r.Agent, Checkpoint: r.Checkpoint,
			CheckpointSHA256: r.CheckpointSHA256, Ablation: r.Ablation, Memory: r.Memory})
	}
	seenShard := make([]bool, count)
	for si, l := range shards {
		if l.Setup.Shard == nil || l.Setup.Shard.Count != count {
			return nil, fmt.Errorf("merge: shard %d: not a shard of %d", si+1, count)
		}
		idx := l.Setup.Shard.Index
		if idx < 0 || idx >= count || seenShard[idx] {
			return nil, fmt.Errorf("merge: shard %d/%d given twice or out of range", idx, count)
		}
		seenShard[idx] = true
		s := l.Setup
		s.Shard = nil
		if !reflect.DeepEqual(s, base) {
			return nil, fmt.Errorf("merge: shard %d/%d was run with another setup (%+v, not %+v)", idx, count, s, base)
		}
		if len(l.Runs) != len(out.Runs) {
			return nil, fmt.Errorf("merge: shard %d/%d has %d runs, shard %d/%d has %d", idx, count, len(l.Runs),
				first.Setup.Shard.Index, count, len(out.Runs))
		}
		for ri := range l.Runs {
			r, o := &l.Runs[ri], &out.Runs[ri]
			if r.Name != o.Name || r.Agent != o.Agent || r.CheckpointSHA256 != o.CheckpointSHA256 || r.Ablation != o.Ablation || r.Memory != o.Memory {
				return nil, fmt.Errorf("merge: shard %d/%d: run %d is %s (%s), not %s (%s)", idx, count, ri, r.Name, r.CheckpointSHA256, o.Name, o.CheckpointSHA256)
			}
			o.Episodes = append(o.Episodes, r.Episodes...)
		}
	}
	// Every pair exactly once, and in its shard.
	tasks := map[string]int{}
	for ti, t := range base.Tasks {
		if _, err := sim.TaskByName(t); err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		tasks[t] = ti
	}
	for _, r := range out.Runs {
		seen := make([]bool, len(base.Tasks)*base.Episodes)
		for _, e := range r.Episodes {
			ti, ok := tasks[e.Task]
			if !ok || e.Index < 0 || e.Index >= base.Episodes {
				return nil, fmt.Errorf("merge: run %s: episode %s %d is not in the evaluation", r.Name, e.Task, e.Index)
			}
			k := ti*base.Episodes + e.Index
			if seen[k] {
				return nil, fmt.Errorf("merge: run %s: episode %s %d is in two shards", r.Name, e.Task, e.Index)
			}
			seen[k] = true
		}
		for k, ok := range seen {
			if !ok {
				return nil, fmt.Errorf("merge: run %s: episode %s %d is in no shard", r.Name, base.Tasks[k/base.Episodes], k%base.Episodes)
			}
		}
	}
	if err := out.finish(); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	return out, nil
}

// MergeTiming adds up the shards' timings: decisions, deadline misses and
// latency histograms (so percentiles are those of all decisions, to 1 %),
// and the shards' wall times.
func MergeTiming(ts []*Timing) *Timing {
	out := &Timing{}
	for _, t := range ts {
		out.WallSeconds += t.WallSeconds
		out.Workers = max(out.Workers, t.Workers)
		out.Rate = t.Rate
		for _, r := range t.Runs {
			o := out.Run(r.Name)
			if o == nil {
				o = newRunTiming(r.Name)
				out.Runs = append(out.Runs, o)
			}
			o.merge(r)
		}
	}
	for _, r := range out.Runs {
		r.finish()
	}
	return out
}

// MergeDirs merges the outputs of shard evaluations (their ledger.json,
// timing.json if every shard has one, and videos) into out, and writes the
// summary and plots there.
func MergeDirs(out string, dirs []string) (*Ledger, error) {
	var ls []*Ledger
	var ts []*Timing
	for _, d := range dirs {
		l, err := ReadLedger(filepath.Join(d, LedgerFile))
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		if t, err := ReadTiming(filepath.Join(d, TimingFile)); err == nil {
			ts = append(ts, t)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	l, err := Merge(ls)
	if err != nil {
		return nil, err
	}
	var t *Timing
	if len(ts) == len(dirs) {
		t = MergeTiming(ts)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if err := copyTree(filepath.Join(d, VideoDir), filepath.Join(out, VideoDir)); err != nil {
			return nil, fmt.Errorf("merge videos of %s: %w", d, err)
		}
	}
	return l, WriteOutputs(out, l, t)
}

// copyTree copies the regular files under src (if it exists) into dst.
func copyTree(src, dst string) error {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		o, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(o, in); err != nil {
			o.Close()
			return err
		}
		return o.Close()
	})
}
