package node

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestPhaseShift(t *testing.T) {
	const ms = time.Millisecond
	cases := []struct {
		name                string
		age, interval, want time.Duration
	}{
		{"a margin after the frame: in phase", 3 * ms, 30 * ms, 0},
		{"a little late: half of it earlier", 4 * ms, 30 * ms, -ms / 2},
		{"late by 7 ms: at most the step earlier", 10 * ms, 30 * ms, -2 * ms},
		{"just before the next frame: later", 28 * ms, 30 * ms, 2 * ms},
		{"5 ms before the next frame's margin: later", 25 * ms, 30 * ms, 2 * ms},
		{"1 ms before the margin: half of it later", 2 * ms, 30 * ms, ms / 2},
		{"1 ms before the next frame", 29 * ms, 30 * ms, 2 * ms},
		{"the frame came after the scheduled time", -1 * ms, 30 * ms, 2 * ms},
		{"two intervals old, 3 ms before a frame's margin", 60 * ms, 30 * ms, 1500 * time.Microsecond},
		{"half an interval off: later", 18 * ms, 30 * ms, 2 * ms},
		{"a fast camera: the margin is a quarter interval", 2 * ms, 8 * ms, 0},
		{"a fast camera, 1 ms late", 3 * ms, 8 * ms, -ms / 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := phaseShift(c.age, c.interval, 2*ms); got != c.want {
				t.Errorf("phaseShift(%v, %v, 2ms) = %v, want %v", c.age, c.interval, got, c.want)
			}
		})
	}
}

// TestLoopFollowsCamera runs the loop on the manual clock with a camera
// whose frames arrive 1 ms after the ticks' unlocked times (the worst
// phase: each tick would act on a frame a whole camera period old) and
// checks where the ticks go.
func TestLoopFollowsCamera(t *testing.T) {
	const ms = time.Millisecond
	period := LoopConfig{Rate: DefaultRate}.Period()
	maxStep := period / phaseStepShare
	cases := []struct {
		name     string
		follow   bool
		interval time.Duration // between frames
		jitter   time.Duration // each arrival up to this late
		stopAt   int           // the camera stalls after this tick (0: never)
		// over the last half of the ticks: the frame's age at each tick
		minAge, maxAge time.Duration
		// and the mean tick interval's distance from the period
		maxMeanOff time.Duration
	}{
		{"30 Hz camera, locked", true, period / 3, 0, 0, 2500 * time.Microsecond, 3500 * time.Microsecond, 10 * time.Microsecond},
		{"30 Hz camera, unlocked", false, period / 3, 0, 0, period/3 - ms - time.Microsecond, period/3 - ms + time.Microsecond, 0},
		{"30 Hz camera with 1 ms of arrival jitter, locked", true, period / 3, ms, 0, 0, 5 * ms, 100 * time.Microsecond},
		{"10 Hz camera, locked", true, period, 0, 0, 2500 * time.Microsecond, 3500 * time.Microsecond, 10 * time.Microsecond},
		{"15 Hz camera: two ticks per three frames", true, period * 2 / 3, 0, 0, 0, period * 2 / 3, period / 100},
		{"a camera that stalls keeps the last phase", true, period / 3, 0, 30, 0, time.Minute, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, loadPolicy(t, actingPath(t)), LoopConfig{FollowCamera: c.follow})
			first := h.clock.Now()
			rng := rand.New(rand.NewPCG(1, 2))
			nextFrame, frames := first.Add(ms), 0
			arrival := time.Time{}
			const ticks = 80
			scheds := []time.Time{first}
			var ages []time.Duration
			for k := 1; k < ticks; k++ {
				var next time.Time
				h.waitUntil(func() bool {
					var ok bool
					next, ok = h.clock.Waiting()
					return ok && next.After(scheds[len(scheds)-1])
				}, func() string { return fmt.Sprintf("the loop does not wait for tick %d", k+1) })
				for (c.stopAt == 0 || k <= c.stopAt) && !nextFrame.After(next) {
					at := nextFrame.Add(time.Duration(rng.Int64N(int64(c.jitter) + 1)))
					if at.After(next) {
						break // it comes after this tick
					}
					h.clock.Set(at)
					frames++
					if err := h.in.PutImage(SyntheticImage(128, 160, frames), at); err != nil {
						t.Fatal(err)
					}
					arrival = at
					nextFrame = nextFrame.Add(c.interval)
				}
				h.clock.Set(next)
				h.waitTicks(uint64(k + 1))
				scheds = append(scheds, next)
				ages = append(ages, next.Sub(arrival))
			}
			for k := 1; k < len(scheds); k++ {
				if d := scheds[k].Sub(scheds[k-1]); d < period-maxStep || d > period+maxStep {
					t.Fatalf("tick %d came %v after the one before; want %v ± %v", k+1, d, period, maxStep)
				}
				if !c.follow && scheds[k].Sub(scheds[k-1]) != period {
					t.Fatalf("unlocked, tick %d came %v after the one before; want %v", k+1, scheds[k].Sub(scheds[k-1]), period)
				}
			}
			half := ticks / 2
			for k := half; k < len(ages); k++ {
				if ages[k] < c.minAge || ages[k] > c.maxAge {
					t.Errorf("tick %d acts on a frame %v old; want %v to %v (ages %v)", k+2, ages[k], c.minAge, c.maxAge, ages[half:])
					break
				}
			}
			mean := scheds[len(scheds)-1].Sub(scheds[half]) / time.Duration(len(scheds)-1-half)
			if off := (mean - period).Abs(); off > c.maxMeanOff {
				t.Errorf("the ticks came every %v on average; want %v ± %v", mean, period, c.maxMeanOff)
			}
			if c.stopAt > 0 {
				for k := c.stopAt + 2; k < len(scheds); k++ {
					if d := scheds[k].Sub(scheds[k-1]); d != period {
						t.Fatalf("with the camera stalled, tick %d came %v after the one before; want %v", k+1, d, period)
					}
				}
			}
		})
	}
}
