package seq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Tests every model runs through the same suite, table-driven over Names().

// tinyConfig is small enough for finite differences. Window 2 within a
// 3-step tape window makes the window model drop a recorded step; MaxSteps
// 4 makes the growing states grow within a test.
func tinyConfig() Config {
	return Config{
		InputTokens: 3, OutputTokens: 2, Dim: 8, Layers: 2, Heads: 2, MLPDim: 12,
		MemoryTokens: 4, SummariserHidden: 6, Window: 2, StateTokens: 3, MaxSteps: 4, LSTMHidden: 5,
	}.WithDefaults()
}

func randFloats(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

// relErr is the normwise relative error max|got-want| / max|want|.
func relErr(got, want []float32) float64 {
	var diff, norm float64
	for i, w := range want {
		diff = math.Max(diff, math.Abs(float64(got[i])-float64(w)))
		norm = math.Max(norm, math.Abs(float64(w)))
	}
	if norm == 0 {
		return diff
	}
	return diff / norm
}

// newModel builds and initialises a model, then moves every parameter a
// little off its initial value, so that no LayerNorm is the identity and
// no bias is zero (a check cannot pass by symmetry).
func newModel(t testing.TB, name string, c Config, seed uint64) Model {
	t.Helper()
	m, err := New(name, c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(seed)
	r := rand.New(rand.NewPCG(seed, 99))
	for i := range m.Params() {
		m.Params()[i] += float32(r.NormFloat64() * 0.05)
	}
	m.ParamsChanged()
	return m
}

func sizes(m Model) (nd, rd int) {
	s := m.Shape()
	return s.InputTokens * s.Dim, s.OutputTokens * s.Dim
}

// warm runs k random steps on s, so that tests start from a State with a
// history.
func warm(m Model, run Runner, s State, k int, r *rand.Rand) {
	nd, rd := sizes(m)
	out := make([]float32, rd)
	for i := 0; i < k; i++ {
		run.Step(s, randFloats(r, nd, 1), out)
	}
}

func TestTapeGradientsFiniteDiff(t *testing.T) {
	// The loss is Σ_t out_t·g_t over a 3-step window that starts from a
	// State with a history. "all" weighs every step; "last" only the
	// third, so the first step's input reaches the loss only through the
	// carried state: its gradient must be zero exactly where the model
	// forgets (ttm-nomem zeroes its memory; the window holds 2 steps) and
	// must agree with finite differences everywhere.
	const steps = 3
	for _, name := range Names() {
		for _, weighting := range []string{"all", "last"} {
			t.Run(name+"/"+weighting, func(t *testing.T) {
				m := newModel(t, name, tinyConfig(), 7)
				r := rand.New(rand.NewPCG(7, hashString(name+weighting)))
				nd, rd := sizes(m)
				run := m.NewRunner()
				start := m.NewState()
				warm(m, run, start, 2, r)
				inputs, gs := make([][]float32, steps), make([][]float32, steps)
				for s := range inputs {
					inputs[s] = randFloats(r, nd, 1)
					gs[s] = randFloats(r, rd, 1)
					if weighting == "last" && s < steps-1 {
						clear(gs[s])
					}
				}
				out := make([]float32, rd)
				tape := m.NewTape(steps)
				st := start.Clone()
				for s := range inputs {
					tape.Forward(st, inputs[s], out)
				}
				grads := make([]float32, len(m.Params()))
				dIn := make([][]float32, steps)
				for s := steps - 1; s >= 0; s-- {
					dIn[s] = make([]float32, nd)
					tape.Backward(gs[s], dIn[s], grads)
				}
				scratch := m.NewState()
				loss := func() float64 {
					m.ParamsChanged()
					scratch.CopyFrom(start)
					var l float64
					for s := range inputs {
						run.Step(scratch, inputs[s], out)
						l += dot(out, gs[s])
					}
					return l
				}
				var vars []fdVar
				for _, s := range m.Specs() {
					vars = append(vars, fdVar{Name: s.Name, X: m.Params()[s.Offset : s.Offset+s.Size], Grad: grads[s.Offset : s.Offset+s.Size]})
				}
				for s := range inputs {
					vars = append(vars, fdVar{Name: fmt.Sprintf("input[%d]", s), X: inputs[s], Grad: dIn[s]})
				}
				requireFD(t, r, vars, 3, loss)

				if weighting == "last" {
					forgets := name == "ttm-nomem" || name == "window"
					var norm float64
					for _, v := range dIn[0] {
						norm += math.Abs(float64(v))
					}
					if forgets && norm != 0 {
						t.Errorf("the first input reaches the third step's output through a state that forgets it: |grad| %.3g", norm)
					}
					if !forgets && norm == 0 {
						t.Error("no gradient reaches the first input through the carried state")
					}
				}
			})
		}
	}
}

func TestTapeForwardMatchesRunner(t *testing.T) {
	// Same inputs through a Runner and a Tape from the same State: the
	// outputs and the states agree within 1e-5 (Runners use packed
	// kernels where the widths allow, at d 64, Tapes plain ones).
	const steps = 5
	for _, size := range []string{"tiny", "small"} {
		for _, name := range Names() {
			c := tinyConfig()
			if size == "small" {
				var err error
				if c, err = Preset(name, "small"); err != nil {
					t.Fatal(err)
				}
			}
			m := newModel(t, name, c, 11)
			r := rand.New(rand.NewPCG(11, hashString(name)))
			nd, rd := sizes(m)
			run, tape := m.NewRunner(), m.NewTape(steps)
			a := m.NewState()
			warm(m, run, a, 3, r)
			b := a.Clone()
			outA, outB := make([]float32, rd), make([]float32, rd)
			for s := 0; s < steps; s++ {
				in := randFloats(r, nd, 1)
				run.Step(a, in, outA)
				tape.Forward(b, in, outB)
				if e := relErr(outB, outA); e > 1e-5 {
					t.Errorf("%s %s step %d: Tape output differs from Runner.Step by %.2e", size, name, s, e)
				}
				va, vb := a.(valuer).values(), b.(valuer).values()
				if len(va) != len(vb) {
					t.Fatalf("%s %s step %d: states of %d and %d parts", size, name, s, len(va), len(vb))
				}
				for i := range va {
					if e := relErr(vb[i], va[i]); e > 1e-5 || len(va[i]) != len(vb[i]) {
						t.Errorf("%s %s step %d: Tape state part %d differs from Runner.Step's by %.2e", size, name, s, i, e)
					}
				}
				if a.Steps() != b.Steps() {
					t.Errorf("%s %s: Runner state counts %d steps, Tape state %d", size, name, a.Steps(), b.Steps())
				}
			}
		}
	}
}

func TestRunnersPackWeights(t *testing.T) {
	// At d 64 Runners multiply with packed weights; ParamsChanged drops
	// them and the next step packs the new ones.
	c, _ := Preset("lstm", "small")
	m := newModel(t, "lstm", c, 17).(*LSTM)
	r := rand.New(rand.NewPCG(17, 18))
	nd, rd := sizes(m)
	run, in := m.NewRunner(), randFloats(r, nd, 1)
	out := make([]float32, rd)
	run.Step(m.NewState(), in, out)
	if m.p.x.Packed == nil || m.p.out.Packed == nil {
		t.Fatal("a Runner step did not pack the weights")
	}
	m.p.out.Kernel[0] += 1
	m.ParamsChanged()
	if m.p.x.Packed != nil {
		t.Fatal("ParamsChanged kept the packed weights")
	}
	changed := make([]float32, rd)
	run.Step(m.NewState(), in, changed)
	if m.p.x.Packed == nil || relErr(changed, out) == 0 {
		t.Error("the step after ParamsChanged does not use the new weights")
	}
}

func TestRunnerStepAllocatesNothing(t *testing.T) {
	// At the small size, from a warm State, within MaxSteps (128) for the
	// models whose State grows.
	for _, name := range Names() {
		c, err := Preset(name, "small")
		if err != nil {
			t.Fatal(err)
		}
		m := newModel(t, name, c, 3)
		r := rand.New(rand.NewPCG(3, 4))
		nd, rd := sizes(m)
		run, st := m.NewRunner(), m.NewState()
		warm(m, run, st, 3, r)
		in, out := randFloats(r, nd, 1), make([]float32, rd)
		if a := testing.AllocsPerRun(20, func() { run.Step(st, in, out) }); a != 0 {
			t.Errorf("%s: Runner.Step allocates %.1f times per step", name, a)
		}
		if st.Steps() != 3+21 {
			t.Errorf("%s: state counts %d steps, want %d", name, st.Steps(), 3+21)
		}
	}
}

func TestTapeAllocatesNothingOnceWarm(t *testing.T) {
	// The second window of the same length from the same State reuses
	// everything the first allocated.
	const steps = 3
	for _, name := range Names() {
		m := newModel(t, name, tinyConfig(), 5)
		r := rand.New(rand.NewPCG(5, 6))
		nd, rd := sizes(m)
		start := m.NewState()
		warm(m, m.NewRunner(), start, 1, r)
		st := start.Clone()
		tape := m.NewTape(steps)
		in, out, dIn := randFloats(r, nd, 1), make([]float32, rd), make([]float32, nd)
		dOut, grads := randFloats(r, rd, 1), make([]float32, len(m.Params()))
		window := func() {
			st.CopyFrom(start)
			tape.Reset()
			for s := 0; s < steps; s++ {
				tape.Forward(st, in, out)
			}
			for s := 0; s < steps; s++ {
				tape.Backward(dOut, dIn, grads)
			}
		}
		if a := testing.AllocsPerRun(3, window); a != 0 {
			t.Errorf("%s: a warm window of %d steps allocates %.1f times", name, steps, a)
		}
	}
}

func TestStateSemantics(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			c := tinyConfig()
			c.MaxSteps = 3 // the growing states grow during the test
			m := newModel(t, name, c, 13)
			r := rand.New(rand.NewPCG(13, 14))
			nd, rd := sizes(m)
			run := m.NewRunner()
			inputs := make([][]float32, 8)
			for i := range inputs {
				inputs[i] = randFloats(r, nd, 1)
			}
			play := func(s State, ins [][]float32) (outs [][]float32) {
				for _, in := range ins {
					out := make([]float32, rd)
					run.Step(s, in, out)
					outs = append(outs, out)
				}
				return outs
			}
			st := m.NewState()
			fresh := st.Hash()
			if st.Steps() != 0 {
				t.Fatalf("a new state counts %d steps", st.Steps())
			}
			first := play(st, inputs[:4])
			if st.Steps() != 4 || st.Hash() == fresh {
				t.Fatalf("after 4 steps: %d steps counted, hash changed %v", st.Steps(), st.Hash() != fresh)
			}
			snap := st.Clone()
			if snap.Hash() != st.Hash() || snap.Steps() != 4 {
				t.Fatal("a clone hashes differently or counts other steps")
			}
			snapHash := snap.Hash()
			cont := play(st, inputs[4:])
			after := st.Hash()
			if snap.Hash() != snapHash {
				t.Error("stepping the original changed its clone")
			}
			// Restoring the snapshot replays bit for bit.
			st.CopyFrom(snap)
			if st.Hash() != snapHash || st.Steps() != 4 {
				t.Error("CopyFrom does not restore the snapshot")
			}
			again := play(st, inputs[4:])
			for i := range cont {
				if hashFloats(hashSeed, cont[i]) != hashFloats(hashSeed, again[i]) {
					t.Errorf("step %d after restoring differs from the first continuation", 4+i)
				}
			}
			if st.Hash() != after {
				t.Error("the state after the replay differs from the first continuation's")
			}
			// A clone continues like the original.
			clone := m.NewState()
			clone.CopyFrom(snap)
			fromClone := play(clone.Clone(), inputs[4:])
			for i := range cont {
				if relErr(fromClone[i], cont[i]) != 0 {
					t.Errorf("step %d from a clone differs", 4+i)
				}
			}
			// Reset is a new episode.
			st.Reset()
			if st.Hash() != fresh || st.Steps() != 0 {
				t.Error("Reset does not bring back the fresh state")
			}
			replay := play(st, inputs[:4])
			for i := range first {
				if relErr(replay[i], first[i]) != 0 {
					t.Errorf("step %d after Reset differs from the first episode", i)
				}
			}
			// Restoring a snapshot of the same size allocates nothing.
			st.CopyFrom(snap)
			if a := testing.AllocsPerRun(5, func() { st.CopyFrom(snap) }); a != 0 {
				t.Errorf("CopyFrom allocates %.1f times", a)
			}
			// A state of another model is refused by name.
			other := "lstm"
			if name == "lstm" {
				other = "recurrent"
			}
			foreign := newModel(t, other, tinyConfig(), 1).NewState()
			msg := panicMessage(func() { st.CopyFrom(foreign) })
			if !strings.HasPrefix(msg, "seq: ") {
				t.Errorf("CopyFrom of a %s state: panic %q, want a seq: message", other, msg)
			}
			msg = panicMessage(func() { run.Step(foreign, inputs[0], make([]float32, rd)) })
			if !strings.HasPrefix(msg, "seq: ") {
				t.Errorf("Step on a %s state: panic %q, want a seq: message", other, msg)
			}
		})
	}
}

func panicMessage(f func()) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			msg = fmt.Sprint(v)
		}
	}()
	f()
	return "no panic"
}

func TestWrongSizesPanicWithMessage(t *testing.T) {
	for _, name := range Names() {
		m := newModel(t, name, tinyConfig(), 1)
		nd, rd := sizes(m)
		st := m.NewState()
		for _, c := range []struct {
			what string
			f    func()
		}{
			{"short input", func() { m.NewRunner().Step(st, make([]float32, nd-1), make([]float32, rd)) }},
			{"long output", func() { m.NewRunner().Step(st, make([]float32, nd), make([]float32, rd+1)) }},
			{"backward on an empty tape", func() {
				m.NewTape(1).Backward(make([]float32, rd), make([]float32, nd), make([]float32, len(m.Params())))
			}},
			{"forward past the tape's end", func() {
				tp := m.NewTape(1)
				tp.Forward(st, make([]float32, nd), make([]float32, rd))
				tp.Forward(st, make([]float32, nd), make([]float32, rd))
			}},
		} {
			if msg := panicMessage(c.f); !strings.HasPrefix(msg, "seq: ") && !strings.HasPrefix(msg, "ttm: ") {
				t.Errorf("%s, %s: panic %q, want a message naming the package", name, c.what, msg)
			}
		}
	}
}

func TestTapesRunConcurrently(t *testing.T) {
	// Two Tapes on one Model in two goroutines compute what one Tape
	// computes alone (run with -race to check they share nothing mutable).
	const steps = 3
	for _, name := range Names() {
		m := newModel(t, name, tinyConfig(), 83)
		r := rand.New(rand.NewPCG(83, 84))
		nd, rd := sizes(m)
		start := m.NewState()
		warm(m, m.NewRunner(), start, 2, r)
		inputs, gs := make([][]float32, steps), make([][]float32, steps)
		for s := range inputs {
			inputs[s], gs[s] = randFloats(r, nd, 1), randFloats(r, rd, 1)
		}
		window := func() []float32 {
			tape, st := m.NewTape(steps), start.Clone()
			out, dIn := make([]float32, rd), make([]float32, nd)
			grads := make([]float32, len(m.Params()))
			for s := range inputs {
				tape.Forward(st, inputs[s], out)
			}
			for s := steps - 1; s >= 0; s-- {
				tape.Backward(gs[s], dIn, grads)
			}
			return grads
		}
		want := window()
		got := make([][]float32, 2)
		done := make(chan int)
		for i := range got {
			go func() {
				got[i] = window()
				done <- i
			}()
		}
		<-done
		<-done
		for i := range got {
			if relErr(got[i], want) != 0 {
				t.Errorf("%s: tape %d in a goroutine computes other gradients", name, i)
			}
		}
	}
}
