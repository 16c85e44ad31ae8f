package eval

import (
	"testing"

	"github.com/ttmrobot/ttm/sim"
)

// A policy agent's step allocates nothing once warm, as the node's does.
func TestPolicyAgentActAllocs(t *testing.T) {
	p := loadTiny(t, 5)
	frames := framesOf(t, "pick", 1, 2, 64, 80)
	a := NewPolicyAgent(p)
	a.SetKnockout(1)
	a.Reset("pick the coke can")
	obs := &sim.Observation{Image: frames[0], Height: 64, Width: 80}
	for range 3 {
		if _, err := a.Act(obs); err != nil {
			t.Fatal(err)
		}
	}
	obs.Image, obs.Step = frames[1], 1
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := a.Act(obs); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Act allocates %.1f times per step", allocs)
	}
}
