package eval

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
)

// The scripted experts solve (nearly) every episode: the harness counts
// their successes as the simulator's own loop (sim.Run) does.
func TestExpertScoresFull(t *testing.T) {
	var logs bytes.Buffer
	cfg := Config{Tasks: tasks(t, "all"), Episodes: 3, Seed: 11, Height: 32, Width: 40, Workers: 2,
		Runs: []RunSpec{ExpertRun(sim.ExpertOptions{})},
		Log:  hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})}
	led, tim, err := Evaluate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pick", "knock", "upright", "move", "drawer", "cue_pick", "put_back", "pointed_drawer"}
	if len(led.PerFamily) != len(want) {
		t.Errorf("families %v, want %v", keys(led.PerFamily), want)
	}
	for _, f := range want {
		st, ok := led.PerFamily[f]
		if !ok || st.Episodes != 3 || st.SuccessRate != 1 || st.Successes != 3 {
			t.Errorf("per_family.%s = %+v, want 3 of 3 episodes solved", f, st)
		}
	}
	if led.Overall.Episodes != 24 || led.Overall.SuccessRate != 1 || led.Primary != "expert" {
		t.Errorf("overall %+v of %s", led.Overall, led.Primary)
	}
	if g := led.Groups[GroupMemory]; g.Episodes != 9 || g.Successes != 9 {
		t.Errorf("memory group %+v", g)
	}
	// Every episode against the simulator's own loop.
	run := led.Run("expert")
	for _, e := range run.Episodes {
		task, _ := sim.TaskByName(e.Task)
		ep, err := sim.NewEpisode(task, e.Seed, sim.Options{Height: 32, Width: 40})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.Run(ep, sim.ExpertAgent{Expert: ep.Expert(sim.ExpertOptions{})}, nil)
		ep.Close()
		if err != nil {
			t.Fatal(err)
		}
		if e.Seed != 11+uint64(e.Index) || res.Success != e.Success || res.Steps != e.Steps || res.Terminated != e.Terminated ||
			res.Instruction != e.Instruction || e.Decisions != e.Steps {
			t.Errorf("%s episode %d: ledger %+v, sim.Run %+v", e.Task, e.Index, e, res)
		}
		if e.StepsToSuccess == nil || *e.StepsToSuccess > e.Steps || *e.StepsToSuccess < 1 {
			t.Errorf("%s episode %d: steps to success %v of %d steps", e.Task, e.Index, e.StepsToSuccess, e.Steps)
		}
	}
	if rt := tim.Run("expert"); rt == nil || rt.Decisions != int(led.Overall.MeanSteps*24+0.5) {
		t.Errorf("timing %+v, want one decision per step", rt)
	}
	if !strings.Contains(logs.String(), "progress") || !strings.Contains(logs.String(), "episodes=24/24") {
		t.Errorf("no final progress line:\n%s", logs.String())
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// An agent that terminates at once scores 0 everywhere, in one step.
func TestTerminatorScoresZero(t *testing.T) {
	all := tasks(t, "all")
	for _, task := range all { // no task starts solved
		for i := range 3 {
			ep, err := sim.NewEpisode(task, 5+uint64(i), sim.Options{Height: 16, Width: 16})
			if err != nil {
				t.Fatal(err)
			}
			if ep.Success() {
				t.Fatalf("%s seed %d is solved before any step", task.Name, 5+i)
			}
		}
	}
	cfg := Config{Tasks: all, Episodes: 3, Seed: 5, Height: 16, Width: 16, Workers: 3,
		Runs: []RunSpec{customRun("quitter", func() sim.Agent { return &terminator{} })}}
	led, _, err := Evaluate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for f, st := range led.PerFamily {
		if st.Successes != 0 || st.SuccessRate != 0 || st.Terminated != 3 || st.MeanSteps != 1 || st.MeanStepsToSuccess != nil {
			t.Errorf("per_family.%s = %+v, want 0 successes, 3 terminated in 1 step", f, st)
		}
		if lo, hi := Wilson(0, 3); st.CILow != lo || st.CIHigh != hi {
			t.Errorf("per_family.%s interval [%g, %g]", f, st.CILow, st.CIHigh)
		}
	}
	if led.Overall.SuccessRate != 0 || led.Overall.Episodes != 24 {
		t.Errorf("overall %+v", led.Overall)
	}
}

// Two evaluations of the same checkpoint and seed write the same ledger
// bytes, whatever the number of workers; the knock-out runs beside it.
func TestLedgerDeterministic(t *testing.T) {
	path := tinyCheckpoint(t, 8)
	runs, err := PolicyRuns("tiny", path, []Ablation{AblationNone, AblationKnockout}, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ledgers [][]byte
	for _, workers := range []int{2, 1} {
		cfg := Config{Tasks: tasks(t, "cue_pick,put_back"), Episodes: 2, Seed: 1, Height: 64, Width: 80, Workers: workers, Runs: runs}
		led, _, err := Evaluate(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := led.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		ledgers = append(ledgers, b)
		if led.Primary != "tiny" || led.Runs[1].Name != "tiny+knockout" || led.Runs[0].CheckpointSHA256 == "" {
			t.Fatalf("runs %s, %s", led.Runs[0].Name, led.Runs[1].Name)
		}
	}
	if !bytes.Equal(ledgers[0], ledgers[1]) {
		t.Errorf("same checkpoint and seed, different ledgers:\n%s\n---\n%s", ledgers[0], ledgers[1])
	}
	led, err := ParseLedger(ledgers[0])
	if err != nil {
		t.Fatal(err)
	}
	// The policy played real episodes (this checkpoint's run past the cue
	// in some of them), and the knock-out happened right after the cue.
	steps, knocked := 0, 0
	for _, e := range led.Run("tiny+knockout").Episodes {
		steps += e.Steps
		if e.KnockoutStep != nil {
			knocked++
		}
		if want := map[string]int{"cue_pick": 3, "put_back": 5}[e.Task]; e.CueSteps != want {
			t.Errorf("%s cue_steps %d, want %d", e.Task, e.CueSteps, want)
		}
		if (e.KnockoutStep != nil) != (e.Steps > e.CueSteps) || (e.KnockoutStep != nil && *e.KnockoutStep != e.CueSteps) {
			t.Errorf("%s episode %d: knock-out at %v in a %d-step episode with a %d-frame cue", e.Task, e.Index, e.KnockoutStep, e.Steps, e.CueSteps)
		}
	}
	for _, e := range led.Run("tiny").Episodes {
		if e.KnockoutStep != nil {
			t.Errorf("the plain run was knocked out: %+v", e)
		}
	}
	if steps < 8 || knocked == 0 {
		t.Errorf("the policy played only %d steps in 4 episodes, %d knocked out", steps, knocked)
	}
}

func TestShardsMergeToSingleRun(t *testing.T) {
	base := Config{Tasks: tasks(t, "pick,knock,cue_pick,put_back"), Episodes: 5, Seed: 3, Height: 16, Width: 16, Workers: 2,
		Runs: []RunSpec{ExpertRun(sim.ExpertOptions{Noise: 0.3, PauseProb: 0.2}), customRun("quitter", func() sim.Agent { return &terminator{} })}}
	whole, _, err := Evaluate(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := whole.Marshal()
	const n = 3
	var shards []*Ledger
	total := 0
	for i := range n {
		cfg := base
		cfg.Shard = Shard{Index: i, Count: n}
		l, _, err := Evaluate(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if l.Setup.Shard == nil || *l.Setup.Shard != cfg.Shard {
			t.Fatalf("shard ledger setup %+v", l.Setup)
		}
		total += len(l.Runs[0].Episodes)
		// Reload, as merge reads files.
		b, _ := l.Marshal()
		if l, err = ParseLedger(b); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, l)
	}
	if total != 4*5 {
		t.Errorf("shards hold %d episodes, want 20", total)
	}
	merged, err := Merge([]*Ledger{shards[2], shards[0], shards[1]})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := merged.Marshal()
	if !bytes.Equal(got, want) {
		t.Errorf("merged shards differ from the single run:\n%s\n---\n%s", got, want)
	}
	if whole.Run("expert").Overall.Successes == whole.Run("expert").Overall.Episodes {
		t.Log("note: the noisy expert solved everything; the merge is still checked byte for byte")
	}

	for _, c := range []struct {
		name   string
		shards []*Ledger
		want   string
	}{
		{"missing", shards[:2], "2 shard ledgers"},
		{"twice", []*Ledger{shards[0], shards[0], shards[1]}, "twice"},
		{"not a shard", []*Ledger{whole}, "not a shard"},
		{"other seed", []*Ledger{shards[0], shards[1], withSeed(shards[2], 4)}, "another setup"},
	} {
		if _, err := Merge(c.shards); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func withSeed(l *Ledger, seed uint64) *Ledger {
	c := *l
	c.Setup.Seed = seed
	return &c
}

func TestConfigErrors(t *testing.T) {
	ok := Config{Tasks: tasks(t, "pick"), Episodes: 1, Runs: []RunSpec{ExpertRun(sim.ExpertOptions{})}}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no tasks", func(c *Config) { c.Tasks = nil }, "no tasks"},
		{"no episodes", func(c *Config) { c.Episodes = 0 }, "episodes"},
		{"no runs", func(c *Config) { c.Runs = nil }, "no runs"},
		{"same names", func(c *Config) { c.Runs = append(c.Runs, ExpertRun(sim.ExpertOptions{})) }, "two runs"},
		{"task twice", func(c *Config) { c.Tasks = append(c.Tasks, c.Tasks[0]) }, "twice"},
		{"videos without dir", func(c *Config) { c.Videos = 1 }, "VideoDir"},
		{"bad shard", func(c *Config) { c.Shard = Shard{Index: 3, Count: 2} }, "shard"},
		{"empty shard", func(c *Config) { c.Shard = Shard{Index: 1, Count: 2} }, "no episodes"},
		{"path name", func(c *Config) { c.Runs[0].Name = "../x" }, "file name"},
	} {
		cfg := ok
		cfg.Runs = append([]RunSpec(nil), ok.Runs...)
		c.edit(&cfg)
		if _, _, err := Evaluate(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	bad := customRun("bad", func() sim.Agent { return badAgent{} })
	cfg := ok
	cfg.Runs = []RunSpec{bad}
	if _, _, err := Evaluate(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "3 action values") {
		t.Errorf("short action: %v", err)
	}
}

type badAgent struct{}

func (badAgent) Reset(string)                            {}
func (badAgent) Act(*sim.Observation) ([]float32, error) { return make([]float32, 3), nil }
