package sim

import (
	"errors"
	"strings"
	"testing"
)

func TestRunWithExpert(t *testing.T) {
	task, _ := TaskByName("cue_pick")
	ep, _ := NewEpisode(task, 5, Options{Height: 32, Width: 40})
	defer ep.Close()
	var steps []int
	res, err := Run(ep, ExpertAgent{ep.Expert(ExpertOptions{})}, func(step int, img []byte) error {
		if len(img) != 32*40*3 {
			t.Fatalf("frame of %d bytes", len(img))
		}
		steps = append(steps, step)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || !res.Terminated || res.Task != "cue_pick" || res.Seed != 5 || res.Instruction != ep.Instruction() {
		t.Errorf("result %+v", res)
	}
	// One frame before each step, and the final one.
	if len(steps) != res.Steps+1 || steps[0] != 0 || steps[len(steps)-1] != res.Steps {
		t.Errorf("frames at steps %v for %d steps", steps, res.Steps)
	}
}

// badAgent returns a fixed action.
type badAgent struct {
	act   []float32
	err   error
	reset string
}

func (b *badAgent) Reset(instruction string)            { b.reset = instruction }
func (b *badAgent) Act(*Observation) ([]float32, error) { return b.act, b.err }

func TestRunErrors(t *testing.T) {
	task, _ := TaskByName("pick")
	for _, c := range []struct {
		name  string
		agent *badAgent
		hook  FrameFunc
		want  string
	}{
		{"short action", &badAgent{act: make([]float32, 3)}, nil, "3 values"},
		{"agent error", &badAgent{err: errors.New("policy broke")}, nil, "policy broke"},
		{"frame error", &badAgent{act: make([]float32, 11)}, func(int, []byte) error { return errors.New("disk full") }, "disk full"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ep, _ := NewEpisode(task, 1, Options{Height: 16, Width: 16})
			defer ep.Close()
			_, err := Run(ep, c.agent, c.hook)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
			if c.agent.reset != ep.Instruction() {
				t.Errorf("agent reset with %q, want the instruction", c.agent.reset)
			}
		})
	}
	// ExpertAgent without the privileged state.
	if _, err := (ExpertAgent{NewExpert(ExpertOptions{})}).Act(&Observation{}); err == nil {
		t.Error("expert agent acted without a state")
	}
}
