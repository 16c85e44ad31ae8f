package eval

import (
	"testing"

	"github.com/ttmrobot/ttm/sim"
)

// framesOf renders the first n frames of a task's episode with the world
// held still (HoldAction), so a memory task's cue plays out untouched.
func framesOf(t *testing.T, task string, seed uint64, n, h, w int) [][]byte {
	t.Helper()
	tk, err := sim.TaskByName(task)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := sim.NewEpisode(tk, seed, sim.Options{Height: h, Width: w})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	hold := make([]float32, 11)
	HoldAction(hold)
	var frames [][]byte
	for range n {
		img := make([]byte, h*w*3)
		if err := ep.Render(img); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, img)
		if _, err := ep.Step(hold); err != nil {
			t.Fatal(err)
		}
	}
	return frames
}

// The knock-out resets the memory and the frame window right before the
// frame of the cue step, once: the state after that step is the one a
// policy reaches from a fresh memory and window on the same frame and
// previous action, and not the one it reaches without the reset.
func TestKnockoutResetsMemoryAtCue(t *testing.T) {
	p := loadTiny(t, 6)
	const h, w, cue = 64, 80, 3
	frames := framesOf(t, "cue_pick", 2, 6, h, w)
	agent := NewPolicyAgent(p)
	agent.SetKnockout(cue)
	plain := NewPolicyAgent(p) // the same policy without the ablation
	agent.Reset("pick the object that was marked")
	plain.Reset("pick the object that was marked")
	fresh := p.NewState().Hash()
	obs := func(step int) *sim.Observation {
		return &sim.Observation{Image: frames[step], Height: h, Width: w, Step: step}
	}
	for step := range frames {
		if step == cue {
			if agent.State().Hash() == fresh || agent.State().Window.Len() == 0 {
				t.Fatal("memory still fresh before the cue step: nothing to knock out")
			}
			// The reference: reset memory and window by hand, keep the
			// previous action and step count.
			ref := agent.State().Clone()
			ref.Memory().Reset()
			ref.Window.Reset()
			refAgent := NewPolicyAgent(p)
			refAgent.State().CopyFrom(ref)
			refAgent.obs.Instruction = "pick the object that was marked"
			if _, err := refAgent.Act(obs(step)); err != nil {
				t.Fatal(err)
			}
			if _, err := agent.Act(obs(step)); err != nil {
				t.Fatal(err)
			}
			if _, err := plain.Act(obs(step)); err != nil {
				t.Fatal(err)
			}
			if got, want := agent.State().Hash(), refAgent.State().Hash(); got != want {
				t.Errorf("memory after the knock-out step %016x, want %016x (stepped from a fresh memory)", got, want)
			}
			if agent.State().Hash() == plain.State().Hash() {
				t.Error("the knock-out changed nothing: same memory as without it")
			}
			if agent.State().Window.Len() != 1 {
				t.Errorf("window holds %d frames after the knock-out step, want 1 (the cue frames dropped)", agent.State().Window.Len())
			}
			if agent.KnockedOutAt() != cue {
				t.Errorf("KnockedOutAt %d, want %d", agent.KnockedOutAt(), cue)
			}
			continue
		}
		before := agent.State().Clone()
		if _, err := agent.Act(obs(step)); err != nil {
			t.Fatal(err)
		}
		if _, err := plain.Act(obs(step)); err != nil {
			t.Fatal(err)
		}
		if step < cue {
			if agent.State().Hash() != plain.State().Hash() || agent.KnockedOutAt() != -1 {
				t.Errorf("step %d: the knock-out acted before the cue step", step)
			}
		}
		if step > cue { // once only: a step from before's state, not from a fresh one
			ref := NewPolicyAgent(p)
			ref.State().CopyFrom(before)
			ref.obs.Instruction = "pick the object that was marked"
			if _, err := ref.Act(obs(step)); err != nil {
				t.Fatal(err)
			}
			if agent.State().Hash() != ref.State().Hash() {
				t.Errorf("step %d: memory reset again", step)
			}
		}
	}
	// A new episode disarms nothing but clears the record.
	agent.Reset("x")
	if agent.KnockedOutAt() != -1 || agent.State().Hash() != fresh {
		t.Error("Reset kept the knock-out record or the memory")
	}
}

// Episode.CueSteps is the number of first frames showing the cue: the
// ring or arrow is drawn in frames 0..CueSteps-1 and gone after; the
// put_back slide arrives in frame CueSteps-1.
func TestCueSteps(t *testing.T) {
	for _, c := range []struct {
		task string
		want int
	}{
		{"pick", 0}, {"knock", 0}, {"upright", 0}, {"move", 0}, {"drawer", 0},
		{"cue_pick", 3}, {"pointed_drawer", 3}, {"put_back", 5},
	} {
		tk, _ := sim.TaskByName(c.task)
		ep, err := sim.NewEpisode(tk, 9, sim.Options{Height: 48, Width: 60})
		if err != nil {
			t.Fatal(err)
		}
		got := ep.CueSteps()
		ep.Close()
		if got != c.want {
			t.Errorf("%s: CueSteps %d, want %d", c.task, got, c.want)
		}
	}
	// Ring and arrow: magenta pixels (the cue colour) until the cue ends.
	magenta := func(img []byte) int {
		n := 0
		for i := 0; i < len(img); i += 3 {
			if img[i] > 200 && img[i+1] < 60 && img[i+2] > 160 {
				n++
			}
		}
		return n
	}
	for _, task := range []string{"cue_pick", "pointed_drawer"} {
		frames := framesOf(t, task, 9, 5, 96, 120)
		for step, f := range frames {
			if shown := magenta(f) > 0; shown != (step < 3) {
				t.Errorf("%s frame %d: cue shown %v, want %v", task, step, shown, step < 3)
			}
		}
	}
	// put_back: the slid object stops changing in the frame of step 4.
	frames := framesOf(t, "put_back", 9, 8, 96, 120)
	differs := func(a, b []byte) bool { return string(a) != string(b) }
	for step := 1; step < len(frames); step++ {
		if moved := differs(frames[step-1], frames[step]); moved != (step >= 2 && step <= 4) {
			t.Errorf("put_back frame %d differs from frame %d: %v, want %v", step, step-1, moved, step >= 2 && step <= 4)
		}
	}
}
