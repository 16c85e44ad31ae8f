package eval

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"time"
)

// Timing is what an evaluation measured with the clock, written as
// timing.json beside the ledger: it differs from run to run, so it is kept
// out of ledger.json, whose bytes are reproducible.
type Timing struct {
	// WallSeconds is the evaluation's elapsed time; for merged shards the
	// sum of the shards'.
	WallSeconds float64 `json:"wall_seconds"`
	Workers     int     `json:"workers"`
	// Rate is the control rate (Hz) deadlines are counted against.
	Rate float64      `json:"rate_hz"`
	Runs []*RunTiming `json:"runs"`
}

// RunTiming is one run's agent latency per decision (Agent.Act: for a
// policy, decoding the frame and the whole policy step).
type RunTiming struct {
	Name      string  `json:"name"`
	Decisions int     `json:"decisions"`
	MeanMS    float64 `json:"mean_ms"`
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
	MaxMS     float64 `json:"max_ms"`
	// DeadlineMisses counts decisions slower than one control period.
	DeadlineMisses int `json:"deadline_misses"`
	// Histogram of latencies: [bucket, count] pairs in bucket order; bucket
	// b holds latencies in [g^b, g^(b+1)) ns with g = 1.01, so percentiles
	// of merged shards are exact to 1 %.
	Histogram [][2]int64 `json:"histogram"`
	SumNS     int64      `json:"sum_ns"`
	MaxNS     int64      `json:"max_ns"`

	counts map[int64]int64
}

const histGrowth = 1.01

func newRunTiming(name string) *RunTiming {
	return &RunTiming{Name: name, counts: map[int64]int64{}}
}

// add records one decision's latency.
func (t *RunTiming) add(d time.Duration, deadline time.Duration) {
	ns := max(int64(d), 1)
	t.counts[int64(math.Floor(math.Log(float64(ns))/math.Log(histGrowth)))]++
	t.Decisions++
	t.SumNS += ns
	t.MaxNS = max(t.MaxNS, ns)
	if deadline > 0 && d > deadline {
		t.DeadlineMisses++
	}
}

// merge adds o's records to t.
func (t *RunTiming) merge(o *RunTiming) {
	for b, c := range o.counts {
		t.counts[b] += c
	}
	t.Decisions += o.Decisions
	t.SumNS += o.SumNS
	t.MaxNS = max(t.MaxNS, o.MaxNS)
	t.DeadlineMisses += o.DeadlineMisses
}

// finish computes the summary fields from the records.
func (t *RunTiming) finish() {
	t.Histogram = t.Histogram[:0]
	for b, c := range t.counts {
		t.Histogram = append(t.Histogram, [2]int64{b, c})
	}
	slices.SortFunc(t.Histogram, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	if t.Decisions == 0 {
		t.MeanMS, t.P50MS, t.P99MS, t.MaxMS = 0, 0, 0, 0
		return
	}
	t.MeanMS = float64(t.SumNS) / float64(t.Decisions) / 1e6
	t.MaxMS = float64(t.MaxNS) / 1e6
	t.P50MS = t.percentile(0.50) / 1e6
	t.P99MS = t.percentile(0.99) / 1e6
}

// percentile returns the q-quantile in ns: the geometric middle of the
// bucket holding the ceil(q·n)-th latency, at most the maximum.
func (t *RunTiming) percentile(q float64) float64 {
	rank := int64(math.Ceil(q * float64(t.Decisions)))
	var seen int64
	for _, bc := range t.Histogram {
		seen += bc[1]
		if seen >= rank {
			return math.Min(math.Pow(histGrowth, float64(bc[0])+0.5), float64(t.MaxNS))
		}
	}
	return float64(t.MaxNS)
}

// restore rebuilds the records from the histogram read from JSON.
func (t *RunTiming) restore() {
	t.counts = map[int64]int64{}
	for _, bc := range t.Histogram {
		t.counts[bc[0]] += bc[1]
	}
}

// Run returns the named run's timing, or nil.
func (t *Timing) Run(name string) *RunTiming {
	for _, r := range t.Runs {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// WriteFile writes the timing as indented JSON.
func (t *Timing) WriteFile(path string) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return fmt.Errorf("encode timing: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write timing: %w", err)
	}
	return nil
}

// ReadTiming reads a timing file.
func ReadTiming(path string) (*Timing, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read timing: %w", err)
	}
	var t Timing
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("timing %s: %w", path, err)
	}
	for _, r := range t.Runs {
		if r == nil {
			return nil, fmt.Errorf("timing %s: null run", path)
		}
		r.restore()
	}
	return &t, nil
}
