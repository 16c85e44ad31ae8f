package node

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/language"
)

func TestDurationStat(t *testing.T) {
	var s durationStat
	scratch := make([]time.Duration, recentLen)
	if q := s.summary(scratch); q.Count != 0 || q.P99 != 0 {
		t.Fatalf("empty: %+v", q)
	}
	// 1..100 ms: the recent window holds the last 64 (37..100 ms).
	for i := 1; i <= 100; i++ {
		s.add(time.Duration(i) * time.Millisecond)
	}
	q := s.summary(scratch)
	// Nearest rank over 37..100: p50 is the 32nd value (68), p99 the 64th (100).
	want := map[string][2]time.Duration{
		"P50":       {q.P50, 68 * time.Millisecond},
		"P99":       {q.P99, 100 * time.Millisecond},
		"RecentMax": {q.RecentMax, 100 * time.Millisecond},
		"Max":       {q.Max, 100 * time.Millisecond},
		"Last":      {q.Last, 100 * time.Millisecond},
		"Mean":      {q.Mean, 50500 * time.Microsecond},
	}
	for name, v := range want {
		if v[0] != v[1] {
			t.Errorf("%s = %v, want %v", name, v[0], v[1])
		}
	}
	if q.Count != 100 || q.RecentSamples != recentLen {
		t.Errorf("count %d, recent %d", q.Count, q.RecentSamples)
	}
	// Whole-run quantiles from the histogram: 50 ms and 99 ms, within one
	// bucket (2^(1/16), 4.4 %) above.
	for _, c := range []struct {
		got, want time.Duration
	}{{q.TotalP50, 50 * time.Millisecond}, {q.TotalP99, 99 * time.Millisecond}} {
		if r := float64(c.got) / float64(c.want); r < 1 || r > math.Exp2(1.0/16) {
			t.Errorf("histogram quantile %v, want within [%v, %v]", c.got, c.want, time.Duration(float64(c.want)*math.Exp2(1.0/16)))
		}
	}
	s.add(-time.Second) // a clock stepping back counts as zero
	if q := s.summary(scratch); q.Last != 0 {
		t.Errorf("negative sample recorded as %v", q.Last)
	}
}

func TestHistBuckets(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{
		{0, 0},
		{999 * time.Nanosecond, 0},
		{time.Microsecond, 1},
		{2 * time.Microsecond, 1 + histPerOctave},
		{time.Hour * 1000, histBuckets - 1},
	} {
		if got := histBucket(tc.d); got != tc.want {
			t.Errorf("histBucket(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
	// Every duration lies below its bucket's upper edge.
	for _, d := range []time.Duration{1500, time.Millisecond, 77 * time.Millisecond, 3 * time.Second} {
		if b := histBucket(d); histUpper(b) < d || b > 0 && histUpper(b-1) > d {
			t.Errorf("%v in bucket %d [%v, %v)", d, b, histUpper(b-1), histUpper(b))
		}
	}
}

func TestLogText(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes, two a rune
	for _, tc := range []struct{ in, want string }{
		{"pick up the can", "pick up the can"},
		{strings.Repeat("a", logInstructionBytes), strings.Repeat("a", logInstructionBytes)},
		{strings.Repeat("a", 1<<20), strings.Repeat("a", logInstructionBytes) + "... (1048576 bytes)"},
		{long, strings.Repeat("é", logInstructionBytes/2) + "... (300 bytes)"},
		{"a" + long, "a" + strings.Repeat("é", logInstructionBytes/2-1) + "... (301 bytes)"},
	} {
		if got := logText(tc.in); got != tc.want {
			t.Errorf("logText(%d bytes) = %q, want %q", len(tc.in), got, tc.want)
		}
	}
}

// TestInputsInstructions: empty and over-long instructions are refused and
// counted without starting an episode; a repeated one changes nothing.
func TestInputsInstructions(t *testing.T) {
	in := NewInputs(ros.NewManualClock(time.Unix(5, 0)))
	seq := func() uint64 { return in.currentInstruction().seq }
	for _, text := range []string{"", strings.Repeat("x", language.MaxInstructionBytes+1)} {
		if _, err := in.SetInstruction(text); err == nil {
			t.Errorf("instruction of %d bytes accepted", len(text))
		}
	}
	if n := in.instructionsBad.Load(); n != 2 || seq() != 0 {
		t.Errorf("%d instructions counted refused, episode %d; want 2 and no episode started", n, seq())
	}
	if _, err := in.SetInstruction(strings.Repeat("x", language.MaxInstructionBytes)); err != nil {
		t.Errorf("an instruction of the limit's length: %v", err)
	}
	in = NewInputs(ros.NewManualClock(time.Unix(5, 0)))
	steps := []struct {
		do      func() bool
		changed bool
		useText bool
	}{
		{func() bool { c, _ := in.SetInstruction("a"); return c }, true, true},
		{func() bool { c, _ := in.SetInstruction("a"); return c }, false, true},
		{func() bool { return in.SetEmbedding([]float32{1, 2}) }, true, false},
		{func() bool { c, _ := in.SetInstruction("a"); return c }, false, false}, // a planner repeating both
		{func() bool { return in.SetEmbedding([]float32{1, 2}) }, false, false},
		{func() bool { c, _ := in.SetInstruction("b"); return c }, true, true},
		{func() bool { return in.SetEmbedding([]float32{1, 3}) }, true, false},
	}
	want := uint64(0)
	for i, s := range steps {
		if got := s.do(); got != s.changed {
			t.Errorf("step %d changed = %v, want %v", i, got, s.changed)
		}
		want += b2u(s.changed)
		if cur := in.currentInstruction(); seq() != want || cur.useText != s.useText {
			t.Errorf("step %d: seq %d useText %v; want %d %v", i, cur.seq, cur.useText, want, s.useText)
		}
	}
	e := []float32{4, 5}
	in.SetEmbedding(e)
	e[0] = 9
	if got := in.currentInstruction().embedding; got[0] != 4 {
		t.Error("SetEmbedding kept the caller's slice")
	}
}

func TestSlopeRate(t *testing.T) {
	// 10 Hz with alternating ±30 ms jitter: (last - first) would say 10.06 Hz
	// for 21 samples; the fit stays within 0.1 %.
	var ts []float64
	for i := range 21 {
		j := 30e6
		if i%2 == 1 {
			j = -30e6
		}
		ts = append(ts, 1e18+float64(i)*1e8+j)
	}
	r, err := slopeRate(ts)
	if err != nil || math.Abs(r-10) > 0.01 {
		t.Errorf("slopeRate = %v, %v; want 10", r, err)
	}
	if _, err := slopeRate(ts[:2]); err == nil {
		t.Error("two samples accepted")
	}
}
