package node

import (
	"fmt"
	"slices"
	"time"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/vision"
)

// warmupUntimed is how many first warm-up steps are not timed: OpenCV's
// first forward passes allocate and plan, which is what warming up is for.
const warmupUntimed = 2

// MinWarmupSteps is the fewest timed steps whose nearest-rank p99 is not
// simply the slowest step: with 20, one slow step of a busy machine refused
// the start.
const MinWarmupSteps = 100

// WarmupResult is what a warm-up measured.
type WarmupResult struct {
	Steps    int           // timed steps
	P50, P99 time.Duration // step latency, nearest rank
	Max      time.Duration
	Budget   time.Duration // the deadline the p99 was held against
}

// Warmup runs the policy steps+warmupUntimed times on a synthetic frame
// (height x width, a deterministic colour pattern) with a throw-away state,
// and returns an error when the p99 of the timed steps exceeds budget (the
// loop's deadline, at most its period): a node that cannot keep its rate
// must not start. The policy's own state is not touched.
func Warmup(p Stepper, steps, height, width int, budget time.Duration) (WarmupResult, error) {
	if steps < MinWarmupSteps {
		return WarmupResult{}, fmt.Errorf("warm-up: %d steps: a p99 needs at least %d (with fewer it is the slowest step)", steps, MinWarmupSteps)
	}
	img := SyntheticImage(height, width, 0)
	frame, err := vision.DecodeImage(img)
	if err != nil {
		return WarmupResult{}, fmt.Errorf("warm-up frame: %w", err)
	}
	st := p.NewState()
	act := make([]float32, p.ActionSpace().Len())
	// A zero reading stands in for the proprioception: the step costs the same.
	obs := &policy.Observation{Frame: frame, Instruction: "pick up the coke can", Proprio: make([]float32, len(p.Proprio()))}
	times := make([]time.Duration, 0, steps)
	for i := range steps + warmupUntimed {
		t0 := time.Now()
		if err := p.Step(obs, st, act); err != nil {
			return WarmupResult{}, fmt.Errorf("warm-up step %d: %w", i+1, err)
		}
		if i >= warmupUntimed {
			times = append(times, time.Since(t0))
		}
	}
	slices.Sort(times)
	r := WarmupResult{Steps: len(times), P50: nearestRank(times, 0.5), P99: nearestRank(times, 0.99), Max: times[len(times)-1], Budget: budget}
	if r.P99 > budget {
		return r, fmt.Errorf("warm-up: the policy's p99 step latency is %v over %d steps (p50 %v), more than the %v deadline of each control period: "+
			"lower ~rate, give the node more threads (--threads) or a faster machine",
			r.P99.Round(100*time.Microsecond), r.Steps, r.P50.Round(100*time.Microsecond), budget)
	}
	return r, nil
}

// SyntheticImage returns a height x width rgb8 image with a smooth colour
// pattern that moves with phase (for warm-up, tests and the soak
// publisher).
func SyntheticImage(height, width, phase int) *vision.Image {
	img := &vision.Image{Height: uint32(height), Width: uint32(width), Encoding: "rgb8", Step: uint32(3 * width),
		Data: make([]byte, 3*width*height)}
	for y := range height {
		row := img.Data[y*3*width : (y+1)*3*width]
		for x := range width {
			row[3*x] = byte(x*255/max(width-1, 1) + phase)
			row[3*x+1] = byte(y*255/max(height-1, 1) + 2*phase)
			row[3*x+2] = byte((x + y + 3*phase) & 0xff)
		}
	}
	return img
}
