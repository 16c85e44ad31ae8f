package eval

import (
	"context"
	"testing"

	"github.com/ttmrobot/ttm/sim"
)

// FuzzParseLedger: any input is a ledger or an error, never a panic; a
// ledger it accepts marshals and parses again to the same bytes.
func FuzzParseLedger(f *testing.F) {
	led, _, err := Evaluate(context.Background(), Config{Tasks: []*sim.Task{mustTask("pick")}, Episodes: 2, Height: 16, Width: 16,
		Runs: []RunSpec{ExpertRun(sim.ExpertOptions{})}, Shard: Shard{Index: 0, Count: 2}})
	if err != nil {
		f.Fatal(err)
	}
	b, _ := led.Marshal()
	f.Add(b)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":2,"runs":[]}`))
	f.Add([]byte(`{"version":1,"bogus":3}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseLedger(data)
		if err != nil {
			return
		}
		b1, err := l.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		l2, err := ParseLedger(b1)
		if err != nil {
			t.Fatalf("a marshalled ledger does not parse: %v", err)
		}
		b2, _ := l2.Marshal()
		if string(b1) != string(b2) {
			t.Fatal("ledger does not round-trip")
		}
		Merge([]*Ledger{l}) // must not panic on any parsed ledger
		Summary(l, nil)
	})
}

func mustTask(name string) *sim.Task {
	t, err := sim.TaskByName(name)
	if err != nil {
		panic(err)
	}
	return t
}

// FuzzParseOptions: the command-line parsers reject or accept, never
// panic, and what they accept is in range.
func FuzzParseOptions(f *testing.F) {
	for _, s := range []string{"0/1", "3/4", "4/4", "-1/2", "a/b", "1/", "nomem,knockout", "nomem,nomem", "none", "",
		"measured", "0", "150ms", "-2s", "1h1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if sh, err := ParseShard(s); err == nil && (sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count) {
			t.Fatalf("ParseShard(%q) = %+v", s, sh)
		}
		if as, err := ParseAblations(s); err == nil {
			for i, a := range as {
				if (a != AblationNoMemory && a != AblationKnockout) || containsAblation(as[:i], a) {
					t.Fatalf("ParseAblations(%q) = %v", s, as)
				}
			}
		}
		if l, err := ParseLatency(s); err == nil {
			if l.Fixed < 0 || l.Steps(0) < 0 {
				t.Fatalf("ParseLatency(%q) = %+v", s, l)
			}
			if back, err := ParseLatency(l.String()); err != nil || back != l {
				t.Fatalf("latency %q does not round-trip: %+v -> %q -> %+v, %v", s, l, l.String(), back, err)
			}
		}
	})
}
