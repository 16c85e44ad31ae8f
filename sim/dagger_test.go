package sim

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// drift is the learner of the DAgger tests: a scripted expert so noisy and
// hesitant that it leaves the expert's state distribution, the way a
// half-trained policy does. It acts in closed loop and deterministically.
var drift = ExpertOptions{Seed: 11, Noise: 0.4, BaseNoise: 0.15, PauseProb: 0.25}

func newEpisode(t testing.TB, task string, seed uint64, h, w int) *Episode {
	t.Helper()
	tk, err := TaskByName(task)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := NewEpisode(tk, seed, Options{Height: h, Width: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ep.Close)
	return ep
}

// executed wraps a DAgger agent and keeps the actions it returns, the
// executed ones; it is a Labeler through the embedded agent.
type executed struct {
	*DAggerAgent
	acts [][]float32
}

func (e *executed) Act(o *Observation) ([]float32, error) {
	a, err := e.DAggerAgent.Act(o)
	if err == nil {
		e.acts = append(e.acts, slices.Clone(a))
	}
	return a, err
}

// The labels in a DAgger bag are what a fresh noise-free expert says on the
// states the rollout visited: the episode is replayed from its seed with
// the executed actions, and a new expert is asked at every state.
func TestDAggerLabelsAreExpertActions(t *testing.T) {
	for _, tc := range []struct {
		task string
		seed uint64
		beta float64
	}{
		{"pick", 3, 0.5},
		{"knock", 2, 0.3}, // the expert remembers its sweep direction
		{"cue_pick", 4, 0},
		{"drawer", 1, 0.8},
	} {
		t.Run(fmt.Sprintf("%s-beta%g", tc.task, tc.beta), func(t *testing.T) {
			const h, w = 48, 64
			ep := newEpisode(t, tc.task, tc.seed, h, w)
			d, err := NewEpisodeDAgger(ep, ExpertAgent{Expert: ep.Expert(drift)}, tc.beta)
			if err != nil {
				t.Fatal(err)
			}
			ex := &executed{DAggerAgent: d}
			path := filepath.Join(t.TempDir(), "ep.bag")
			res, err := RecordEpisode(path, ep, ex, RecordOptions{Label: LabelExpert, Start: t0})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := ReadEpisode(path, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Info.Label != LabelExpert || len(rec.Steps) != res.Steps || len(ex.acts) != res.Steps || d.Steps() != res.Steps {
				t.Fatalf("label %q, %d recorded steps, %d executed, agent counted %d, result %d",
					rec.Info.Label, len(rec.Steps), len(ex.acts), d.Steps(), res.Steps)
			}
			switch n := d.ExpertSteps(); {
			case tc.beta == 0 && n != 0:
				t.Errorf("beta 0: the expert's action was executed %d times", n)
			case tc.beta > 0 && (n == 0 || n == res.Steps):
				t.Errorf("beta %g: the expert's action was executed on %d of %d steps", tc.beta, n, res.Steps)
			}

			replay := newEpisode(t, tc.task, tc.seed, h, w)
			fresh := replay.Expert(ExpertOptions{})
			img := make([]byte, h*w*3)
			relabelled := 0 // steps whose label is not the executed action
			for k, s := range rec.Steps {
				if err := replay.Render(img); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(s.Image, img) {
					t.Fatalf("step %d: the recorded frame is not the replayed state's", k)
				}
				want := fresh.Act(replay.State())
				if !slices.Equal(s.Action, want) {
					t.Fatalf("step %d: label %v, a fresh expert says %v", k, s.Action, want)
				}
				if !slices.Equal(ex.acts[k], want) {
					relabelled++
				}
				if _, err := replay.Step(ex.acts[k]); err != nil {
					t.Fatalf("step %d: %v", k, err)
				}
			}
			if !replay.Done() || replay.Steps() != res.Steps || replay.Success() != res.Success {
				t.Errorf("replay: done %v after %d steps, success %v; recorded %+v", replay.Done(), replay.Steps(), replay.Success(), res)
			}
			// Otherwise the bag could hold the executed actions and pass.
			if relabelled == 0 {
				t.Errorf("every executed action equals its label: the test does not tell them apart")
			}
			t.Logf("%d steps, success %v, expert executed %d, label != executed on %d", res.Steps, res.Success, d.ExpertSteps(), relabelled)
		})
	}
}

// beta = 1 executes the expert on every step: the bag is the expert's own
// recording, frame for frame and action for action, whatever the learner
// says.
func TestDAggerBetaOneIsTheExpert(t *testing.T) {
	for _, task := range []string{"pick", "drawer", "cue_pick"} {
		t.Run(task, func(t *testing.T) {
			const h, w, seed = 32, 40, 6
			dir := t.TempDir()
			epx := newEpisode(t, task, seed, h, w)
			want, err := RecordEpisode(filepath.Join(dir, "expert.bag"), epx, ExpertAgent{Expert: epx.Expert(ExpertOptions{})}, RecordOptions{Start: t0})
			if err != nil {
				t.Fatal(err)
			}
			ep := newEpisode(t, task, seed, h, w)
			d, err := NewEpisodeDAgger(ep, ExpertAgent{Expert: ep.Expert(drift)}, 1)
			if err != nil {
				t.Fatal(err)
			}
			got, err := RecordEpisode(filepath.Join(dir, "dagger.bag"), ep, d, RecordOptions{Label: LabelExpert, Start: t0})
			if err != nil {
				t.Fatal(err)
			}
			if got != want || !got.Success {
				t.Fatalf("dagger beta 1: %+v, expert: %+v", got, want)
			}
			if d.ExpertSteps() != got.Steps {
				t.Errorf("expert executed on %d of %d steps", d.ExpertSteps(), got.Steps)
			}
			a, err := ReadEpisode(filepath.Join(dir, "expert.bag"), ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := ReadEpisode(filepath.Join(dir, "dagger.bag"), ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for k := range a.Steps {
				if !bytes.Equal(a.Steps[k].Image, b.Steps[k].Image) || !slices.Equal(a.Steps[k].Action, b.Steps[k].Action) {
					t.Fatalf("step %d differs from the expert's recording", k)
				}
			}
			if a.Info.Label != "" || b.Info.Label != LabelExpert {
				t.Errorf("labels %q and %q, want none and %q", a.Info.Label, b.Info.Label, LabelExpert)
			}
		})
	}
}

// beta = 0 executes the learner on every step: the world follows the
// learner exactly as when the learner plays alone.
func TestDAggerBetaZeroFollowsTheLearner(t *testing.T) {
	for _, task := range []string{"pick", "move"} {
		t.Run(task, func(t *testing.T) {
			const h, w, seed = 32, 40, 9
			run := func(wrap func(ep *Episode, learner Agent) Agent) (Result, [][]float32, [][]byte) {
				ep := newEpisode(t, task, seed, h, w)
				learner := ExpertAgent{Expert: ep.Expert(drift)}
				agent := wrap(ep, learner)
				var acts [][]float32
				var frames [][]byte
				res, err := Run(ep, agentFunc(func(o *Observation) ([]float32, error) {
					a, err := agent.Act(o)
					acts = append(acts, slices.Clone(a))
					return a, err
				}), func(_ int, img []byte) error {
					frames = append(frames, slices.Clone(img))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return res, acts, frames
			}
			wantRes, wantActs, wantFrames := run(func(_ *Episode, l Agent) Agent { return l })
			var d *DAggerAgent
			gotRes, gotActs, gotFrames := run(func(ep *Episode, l Agent) Agent {
				var err error
				if d, err = NewEpisodeDAgger(ep, l, 0); err != nil {
					t.Fatal(err)
				}
				return d
			})
			if gotRes != wantRes || !reflect.DeepEqual(gotActs, wantActs) || !reflect.DeepEqual(gotFrames, wantFrames) {
				t.Fatalf("beta 0 rollout %+v differs from the learner's own %+v", gotRes, wantRes)
			}
			if d.ExpertSteps() != 0 || d.Steps() != gotRes.Steps {
				t.Errorf("expert executed %d times over %d steps", d.ExpertSteps(), d.Steps())
			}
		})
	}
}

// fixedAgent returns its own buffer, so the caller can tell by address
// whether an action came from it.
type fixedAgent struct {
	act    []float32
	err    error
	resets int
}

func (f *fixedAgent) Reset(string)                        { f.resets++ }
func (f *fixedAgent) Act(*Observation) ([]float32, error) { return f.act, f.err }

// The coin: executed with the frequency beta, the same flips for the same
// seed and again after Reset, other flips for another seed; labels are
// copies of the expert's action.
func TestDAggerCoin(t *testing.T) {
	ep := newEpisode(t, "pick", 1, 16, 16)
	obs := &Observation{State: ep.State()}
	learner := &fixedAgent{act: make([]float32, 11)}
	flips := func(d *DAggerAgent, n int) []bool {
		out := make([]bool, n)
		for i := range out {
			a, err := d.Act(obs)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = &a[0] != &learner.act[0]
		}
		return out
	}
	const n = 4000
	for _, beta := range []float64{0, 0.1, 0.3, 0.5, 0.9, 1} {
		d, err := NewDAggerAgent(learner, ep.Expert(ExpertOptions{}), beta, 42)
		if err != nil {
			t.Fatal(err)
		}
		d.Reset("x")
		f := flips(d, n)
		k := 0
		for _, e := range f {
			if e {
				k++
			}
		}
		// Binomial standard deviation at most 0.008 for n = 4000: 5 of them.
		if got := float64(k) / n; math.Abs(got-beta) > 0.04 || (beta == 0) != (k == 0) || (beta == 1) != (k == n) {
			t.Errorf("beta %g: expert executed on %d of %d steps", beta, k, n)
		}
		if d.ExpertSteps() != k || d.Steps() != n {
			t.Errorf("beta %g: counted %d of %d, flipped %d of %d", beta, d.ExpertSteps(), d.Steps(), k, n)
		}
		d.Reset("x")
		if d.Steps() != 0 || d.ExpertSteps() != 0 || d.Label() != nil {
			t.Errorf("beta %g: after Reset %d steps, %d expert, label %v", beta, d.Steps(), d.ExpertSteps(), d.Label())
		}
		if again := flips(d, n); !slices.Equal(again, f) {
			t.Errorf("beta %g: after Reset the coin flips differently", beta)
		}
		if beta > 0 && beta < 1 {
			other, _ := NewDAggerAgent(learner, ep.Expert(ExpertOptions{}), beta, 43)
			if slices.Equal(flips(other, n), f) {
				t.Errorf("beta %g: seeds 42 and 43 flip alike", beta)
			}
		}
	}
	if learner.resets == 0 {
		t.Error("Reset did not reset the learner")
	}

	// The label is the expert's action, copied: the expert reuses its slice.
	d, _ := NewDAggerAgent(learner, ep.Expert(ExpertOptions{}), 1, 1)
	twin := ep.Expert(ExpertOptions{})
	a, _ := d.Act(obs)
	label := d.Label()
	want := twin.Act(ep.State())
	if !slices.Equal(label, want) || !slices.Equal(a, want) || &label[0] == &a[0] {
		t.Errorf("label %v (executed %v), want a copy of %v", label, a, want)
	}
	a[0] = 99 // what the expert would do to its slice on the next step
	if label[0] == 99 {
		t.Error("the label shares the expert's slice")
	}
}

func TestDAggerErrors(t *testing.T) {
	ep := newEpisode(t, "pick", 1, 16, 16)
	x := ep.Expert(ExpertOptions{})
	learner := &fixedAgent{act: make([]float32, 11)}
	for _, tc := range []struct {
		name    string
		learner Agent
		expert  Expert
		beta    float64
		want    string
	}{
		{"no learner", nil, x, 0.5, "no learner"},
		{"no expert", learner, nil, 0.5, "no expert"},
		{"negative beta", learner, x, -0.1, "beta -0.1"},
		{"beta above 1", learner, x, 1.5, "beta 1.5"},
		{"NaN beta", learner, x, math.NaN(), "beta NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d, err := NewDAggerAgent(tc.learner, tc.expert, tc.beta, 1); err == nil || d != nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("agent %v, error %v; want an error containing %q", d, err, tc.want)
			}
		})
	}

	d, _ := NewDAggerAgent(learner, x, 0.5, 1)
	if _, err := d.Act(&Observation{}); err == nil || !strings.Contains(err.Error(), "privileged state") {
		t.Errorf("act without the state: %v", err)
	}
	broke := errors.New("policy broke")
	d, _ = NewEpisodeDAgger(ep, &fixedAgent{err: broke}, 0.5)
	if _, err := Run(ep, d, nil); !errors.Is(err, broke) || !strings.Contains(err.Error(), "learner: policy broke") {
		t.Errorf("learner error: %v", err)
	}
}

// badLabeler labels steps with a fixed label.
type badLabeler struct {
	ExpertAgent
	label []float32
}

func (b badLabeler) Label() []float32 { return b.label }

func TestRecordLabelerErrors(t *testing.T) {
	nan := make([]float32, 11)
	nan[3] = float32(math.NaN())
	for _, tc := range []struct {
		name  string
		agent func(ep *Episode) Agent
		label string
		want  string
	}{
		{"labeler without a label", func(ep *Episode) Agent {
			d, _ := NewEpisodeDAgger(ep, ExpertAgent{Expert: ep.Expert(drift)}, 0.5)
			return d
		}, "", "RecordOptions.Label must say"},
		{"label without a labeler", func(ep *Episode) Agent { return ExpertAgent{Expert: ep.Expert(ExpertOptions{})} }, LabelExpert, "does not label its steps"},
		{"short label", func(ep *Episode) Agent {
			return badLabeler{ExpertAgent{Expert: ep.Expert(ExpertOptions{})}, make([]float32, 3)}
		}, "mine", "label of 3 values"},
		{"NaN label", func(ep *Episode) Agent {
			return badLabeler{ExpertAgent{Expert: ep.Expert(ExpertOptions{})}, nan}
		}, "mine", "label world_vector/z is NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := newEpisode(t, "pick", 1, 16, 16)
			path := filepath.Join(t.TempDir(), "ep.bag")
			_, err := RecordEpisode(path, ep, tc.agent(ep), RecordOptions{Label: tc.label})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a failed recording left %s", path)
			}
		})
	}
}

// Index entries carry the episode's label; an index written before labels
// existed still reads, its episodes unlabelled.
func TestIndexLabel(t *testing.T) {
	dir := t.TempDir()
	info := EpisodeInfo{Task: "pick", Family: "pick", Instruction: "pick the can", Seed: 2, Steps: 7, Label: LabelExpert}
	ix := &Index{Version: IndexVersion, Height: 32, Width: 40, Agent: "dagger:p.safetensors:beta=0.3",
		Episodes: []IndexEntry{IndexEntryFor(EpisodeFile("pick", 2), info)}}
	if ix.Episodes[0].Label != LabelExpert {
		t.Fatalf("IndexEntryFor dropped the label: %+v", ix.Episodes[0])
	}
	if err := WriteIndex(dir, ix); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadIndex(dir); err != nil || !reflect.DeepEqual(got, ix) {
		t.Errorf("read %+v (%v), wrote %+v", got, err, ix)
	}
	old := `{"version":1,"height":32,"width":40,"agent":"expert","episodes":[{"file":"pick-000001.bag","task":"pick","family":"pick","instruction":"x","seed":1,"steps":5,"success":true}]}`
	if err := os.WriteFile(filepath.Join(dir, IndexFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadIndex(dir)
	if err != nil || len(got.Episodes) != 1 || got.Episodes[0].Label != "" || got.Episodes[0].Steps != 5 {
		t.Errorf("old index: %+v, %v", got, err)
	}
}

// A DAgger step allocates nothing once the label buffer exists.
func TestDAggerActAllocs(t *testing.T) {
	ep := newEpisode(t, "pick", 1, 16, 16)
	obs := &Observation{State: ep.State()}
	d, _ := NewDAggerAgent(&fixedAgent{act: make([]float32, 11)}, ep.Expert(ExpertOptions{}), 0.5, 1)
	if n := testing.AllocsPerRun(200, func() {
		if _, err := d.Act(obs); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Act allocates %v times per step", n)
	}
}

// A DAgger rollout: a learner acts (here a very noisy scripted expert
// standing in for a policy), the noise-free expert's action is executed
// instead on about half the steps, and the bag holds the expert's labels.
func ExampleNewEpisodeDAgger() {
	dir, _ := os.MkdirTemp("", "dagger")
	defer os.RemoveAll(dir)
	task, _ := TaskByName("pick")
	ep, err := NewEpisode(task, 3, Options{Height: 32, Width: 40})
	if err != nil {
		panic(err)
	}
	defer ep.Close()
	learner := ExpertAgent{Expert: ep.Expert(ExpertOptions{Seed: 1, Noise: 0.4, PauseProb: 0.2})}
	agent, err := NewEpisodeDAgger(ep, learner, 0.5)
	if err != nil {
		panic(err)
	}
	path := filepath.Join(dir, EpisodeFile("pick", 3))
	res, err := RecordEpisode(path, ep, agent, RecordOptions{Agent: "dagger:example:beta=0.5", Label: LabelExpert})
	if err != nil {
		panic(err)
	}
	got, err := ReadEpisode(path, ReadOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(got.Info.Agent, got.Info.Label, len(got.Steps) == res.Steps)
	fmt.Println(agent.ExpertSteps() > 0 && agent.ExpertSteps() < res.Steps)
	// Output:
	// dagger:example:beta=0.5 expert true
	// true
}
