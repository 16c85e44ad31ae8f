package eval

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ttmrobot/ttm/sim"
)

// Ablation is how a run changes its checkpoint's policy.
type Ablation string

const (
	// AblationNone runs the checkpoint as it is.
	AblationNone Ablation = "none"
	// AblationNoMemory zeroes the TTM memory before every step (the
	// paper's "no memory" ablation), with the same computation.
	AblationNoMemory Ablation = "nomem"
	// AblationKnockout resets the memory and the frame window once, right
	// after a memory task's cue (before the frame of step
	// Episode.CueSteps); tasks without a cue run unchanged.
	AblationKnockout Ablation = "knockout"
)

// ParseAblations parses a comma-separated list of ablations ("nomem",
// "knockout"); an empty string is none. Duplicates are dropped.
func ParseAblations(s string) ([]Ablation, error) {
	var out []Ablation
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		a := Ablation(strings.TrimSpace(part))
		switch a {
		case AblationNoMemory, AblationKnockout:
		case AblationNone:
			return nil, fmt.Errorf("ablation list %q: %q is not an ablation (the plain run is always there)", s, a)
		default:
			return nil, fmt.Errorf("ablation list %q: unknown ablation %q (have nomem, knockout)", s, a)
		}
		if !containsAblation(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

func containsAblation(as []Ablation, a Ablation) bool {
	for _, x := range as {
		if x == a {
			return true
		}
	}
	return false
}

// Latency is the latency injected between an agent's observation and its
// action taking effect.
//
// The simulator advances in steps of sim.StepSeconds (Δ = 1/3 s) and cannot
// apply part of a step, so a latency L becomes a whole number of steps,
// d = ceil(L/Δ): the action computed on the frame of step t takes effect at
// step t+d; during steps t .. t+d-1 the world keeps moving under the
// previous action (at the start of an episode a hold action: arm mode, no
// motion, gripper open as it starts). The agent reads its next frame when
// its action takes effect, at step t+max(d, 1), as a fixed-rate node that
// is busy computing skips the ticks in between. d = 0 (no latency) is the
// usual simulator benchmark: the world waits for every action. Rounding up
// never hands an agent its action earlier than the latency allows.
type Latency struct {
	// Measured uses each step's measured agent latency.
	Measured bool
	// Fixed is used when Measured is false; 0 means no latency.
	Fixed time.Duration
}

// ParseLatency parses "measured", or a duration such as "0", "150ms",
// "1s".
func ParseLatency(s string) (Latency, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "measured":
		return Latency{Measured: true}, nil
	case "", "0":
		return Latency{}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return Latency{}, fmt.Errorf("latency %q: want measured or a duration such as 150ms", s)
	}
	if d < 0 || d > time.Hour {
		return Latency{}, fmt.Errorf("latency %q: want a duration in [0, 1h]", s)
	}
	return Latency{Fixed: d}, nil
}

// String is the form ParseLatency reads.
func (l Latency) String() string {
	switch {
	case l.Measured:
		return "measured"
	case l.Fixed == 0:
		return "0"
	}
	return l.Fixed.String()
}

// Steps is the delay d = ceil(L/Δ) in simulator steps for a step whose
// agent took measured.
func (l Latency) Steps(measured time.Duration) int {
	L := l.Fixed
	if l.Measured {
		L = measured
	}
	if L <= 0 {
		return 0
	}
	return int(math.Ceil(L.Seconds()/sim.StepSeconds - 1e-9))
}

// Shard is one of Count independent parts of an evaluation. The (task,
// episode) pairs, numbered task by task, go round-robin: pair k belongs to
// shard k mod Count, so every shard gets a share of every task.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// ParseShard parses "i/N" with 0 <= i < N.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want i/N, for example 0/4", s)
	}
	if n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want 0 <= i < N", s)
	}
	return Shard{Index: i, Count: n}, nil
}

func (s Shard) String() string {
	if s.Count == 0 {
		return "all"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Has reports whether pair k (task ti, episode i, with n episodes per task:
// k = ti·n + i) belongs to the shard. The zero Shard holds everything.
func (s Shard) Has(k int) bool { return s.Count <= 1 || k%s.Count == s.Index }
