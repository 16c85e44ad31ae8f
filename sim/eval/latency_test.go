package eval

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/sim"
)

func TestLatencySteps(t *testing.T) {
	for _, c := range []struct {
		lat      string
		measured time.Duration
		want     int
	}{
		{"0", 0, 0},
		{"0", time.Second, 0}, // a fixed latency ignores the clock
		{"1ns", 0, 1},
		{"333ms", 0, 1},
		{"333333333ns", 0, 1},
		{"334ms", 0, 2},
		{"1s", 0, 3},
		{"1001ms", 0, 4},
		{"measured", 0, 0},
		{"measured", 40 * time.Millisecond, 1},
		{"measured", 700 * time.Millisecond, 3},
	} {
		l, err := ParseLatency(c.lat)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Steps(c.measured); got != c.want {
			t.Errorf("latency %s, measured %v: %d steps, want %d", c.lat, c.measured, got, c.want)
		}
	}
	for _, bad := range []string{"-1s", "fast", "2h", "10"} {
		if _, err := ParseLatency(bad); err == nil {
			t.Errorf("ParseLatency(%q) accepted", bad)
		}
	}
}

// scripted acts with a different arm motion at every decision and records
// the steps of the frames it was shown.
type scripted struct {
	seen []int
	act  []float32
}

func (a *scripted) Reset(string) { a.seen = nil }
func (a *scripted) Act(o *sim.Observation) ([]float32, error) {
	a.act = scriptedAction(len(a.seen))
	a.seen = append(a.seen, o.Step)
	return a.act, nil
}

// scriptedAction is decision k's action: arm mode, a displacement that
// turns with k, the gripper open.
func scriptedAction(k int) []float32 {
	a := make([]float32, 11)
	a[action.DimMode] = action.ModeArm
	a[action.DimWorldX] = float32(0.6 * math.Sin(0.7*float64(k)))
	a[action.DimWorldY] = float32(0.6 * math.Cos(0.7*float64(k)))
	a[action.DimWorldZ] = 0.2
	a[action.DimGripper] = -1
	return a
}

// Under a latency of d steps the world moves d steps with the old action
// before each new one takes effect, and the agent sees every max(d,1)-th
// frame: the episode equals a replay of that schedule by hand.
func TestLatencyHoldsPreviousAction(t *testing.T) {
	task, _ := sim.TaskByName("pick")
	const seed = 4
	var final []*sim.State
	for _, c := range []struct {
		lat string
		d   int
	}{{"0", 0}, {"300ms", 1}, {"500ms", 2}, {"1s", 3}} {
		lat, _ := ParseLatency(c.lat)
		ep, err := sim.NewEpisode(task, seed, sim.Options{Height: 16, Width: 16})
		if err != nil {
			t.Fatal(err)
		}
		start := ep.State().Clone()
		agent := &scripted{}
		res, err := playEpisode(ep, agent, false, lat, make([]byte, 16*16*3), make([]float32, 11), make([]float32, 11), nil, nil, nil, func(time.Duration) {})
		if err != nil {
			t.Fatal(err)
		}
		D := max(c.d, 1)
		if res.Steps != task.MaxSteps || res.Decisions != (task.MaxSteps+D-1)/D {
			t.Errorf("latency %s: %d steps, %d decisions; want %d and %d", c.lat, res.Steps, res.Decisions, task.MaxSteps, (task.MaxSteps+D-1)/D)
		}
		for k, s := range agent.seen {
			if s != k*D {
				t.Fatalf("latency %s: decision %d saw the frame of step %d, want %d", c.lat, k, s, k*D)
			}
		}
		// The replay: step s applies the hold action while s < d, then
		// decision (s-d)/D's action.
		re, _ := sim.NewEpisode(task, seed, sim.Options{Height: 16, Width: 16})
		hold := make([]float32, 11)
		HoldAction(hold)
		for s := 0; !re.Done(); s++ {
			a := hold
			if s >= c.d {
				a = scriptedAction((s - c.d) / D)
			}
			if _, err := re.Step(a); err != nil {
				t.Fatal(err)
			}
			if s == c.d-1 && !reflect.DeepEqual(re.State().EE, start.EE) {
				t.Errorf("latency %s: the hand moved while only the hold action was applied", c.lat)
			}
		}
		if !reflect.DeepEqual(ep.State(), re.State()) {
			t.Errorf("latency %s: the episode differs from the replay of its schedule:\n%+v\n%+v", c.lat, ep.State(), re.State())
		}
		final = append(final, ep.State().Clone())
		ep.Close()
		re.Close()
	}
	for i := 1; i < len(final); i++ {
		if reflect.DeepEqual(final[0].EE, final[i].EE) {
			t.Errorf("latency case %d ends where no latency does: the delay had no effect", i)
		}
	}
}

// A measured latency of a fast agent (well under a step) is one step.
func TestMeasuredLatency(t *testing.T) {
	task, _ := sim.TaskByName("pick")
	ep, _ := sim.NewEpisode(task, 4, sim.Options{Height: 16, Width: 16})
	defer ep.Close()
	agent := &scripted{}
	var took []time.Duration
	res, err := playEpisode(ep, agent, false, Latency{Measured: true}, make([]byte, 16*16*3), make([]float32, 11), make([]float32, 11), nil, nil, nil,
		func(d time.Duration) { took = append(took, d) })
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range took {
		if d >= time.Second/3 {
			t.Skipf("a decision took %v on a busy machine: not a one-step latency", d)
		}
	}
	if res.Decisions != task.MaxSteps || len(took) != res.Decisions {
		t.Errorf("%d decisions, %d timed, want %d", res.Decisions, len(took), task.MaxSteps)
	}
	for k, s := range agent.seen {
		if s != k {
			t.Fatalf("decision %d saw frame %d", k, s)
		}
	}
	fixed, _ := sim.NewEpisode(task, 4, sim.Options{Height: 16, Width: 16})
	defer fixed.Close()
	if _, err := playEpisode(fixed, &scripted{}, false, Latency{Fixed: time.Millisecond}, make([]byte, 16*16*3), make([]float32, 11), make([]float32, 11), nil, nil, nil,
		func(time.Duration) {}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ep.State(), fixed.State()) {
		t.Error("measured latency of a fast agent did not act as a one-step latency")
	}
}
