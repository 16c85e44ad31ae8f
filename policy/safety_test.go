package policy

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"
)

func rt1Rates() []float64 {
	r := make([]float64, 11)
	for i := range r {
		r[i] = 2 // units per second
	}
	return r
}

func newTestFilter(t testing.TB, cfg SafetyConfig) *Filter {
	t.Helper()
	f, err := NewFilter(action.RT1(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFilterRejectsNonFiniteActions(t *testing.T) {
	f := newTestFilter(t, SafetyConfig{})
	out := make([]float32, 11)
	good := []float32{1, 0.5, 0, 0, 0, 0, 0, 0.8, 0, 0.3, 0}
	f.Apply(out, good, 0.1)
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		p := append([]float32(nil), good...)
		p[action.DimBaseX] = bad
		v := f.Apply(out, p, 0.1)
		if !v.Rejected {
			t.Errorf("%g accepted", bad)
		}
		// The stop action: gripper and mode held, displacements and velocities zero.
		if out[action.DimGripper] != 0.8 || out[action.DimMode] != 1 || out[action.DimWorldX] != 0 || out[action.DimBaseX] != 0 {
			t.Errorf("after rejecting %g: %v", bad, out)
		}
	}
}

func TestFilterClampsAndRateLimits(t *testing.T) {
	f := newTestFilter(t, SafetyConfig{MaxRate: rt1Rates()})
	out := make([]float32, 11)
	p := make([]float32, 11)
	p[action.DimMode] = 7      // out of range category
	p[action.DimWorldX] = 3    // above 1
	p[action.DimBaseX] = -0.5  // from rest: at most 2·0.1 = 0.2 per step
	p[action.DimGripper] = 0.9 // absolute target, first action: not limited
	v := f.Apply(out, p, 0.1)  // dt 0.1 s
	if !v.Clamped || !v.RateLimited {
		t.Errorf("verdict %+v", v)
	}
	want := map[int]float32{action.DimMode: 2, action.DimWorldX: 0.2, action.DimBaseX: -0.2, action.DimGripper: 0.9}
	for i, w := range want {
		if math.Abs(float64(out[i]-w)) > 1e-6 {
			t.Errorf("dimension %s: %g, want %g", action.RT1().Dims[i].Name, out[i], w)
		}
	}
	// Later steps approach the proposal at the limited rate.
	for i := 0; i < 3; i++ {
		f.Apply(out, p, 0.1)
	}
	if math.Abs(float64(out[action.DimBaseX]+0.5)) > 1e-6 || math.Abs(float64(out[action.DimWorldX]-0.8)) > 1e-6 {
		t.Errorf("after 4 steps: base x %g (want -0.5), world x %g (want 0.8)", out[action.DimBaseX], out[action.DimWorldX])
	}
}

func TestFilterStopHoldsTargetsAndRampsVelocities(t *testing.T) {
	f := newTestFilter(t, SafetyConfig{MaxRate: rt1Rates()})
	out := make([]float32, 11)
	p := make([]float32, 11)
	p[action.DimMode], p[action.DimGripper], p[action.DimBaseX] = action.ModeBase, -0.6, 0.5
	for i := 0; i < 10; i++ {
		f.Apply(out, p, 0.1)
	}
	if out[action.DimBaseX] != 0.5 {
		t.Fatalf("base x %g, want 0.5", out[action.DimBaseX])
	}
	f.Stop(out, 0.1)
	if out[action.DimGripper] != -0.6 || out[action.DimMode] != action.ModeBase {
		t.Errorf("stop did not hold the gripper and mode: %v", out)
	}
	if math.Abs(float64(out[action.DimBaseX]-0.3)) > 1e-6 {
		t.Errorf("stop jumped the base velocity to %g, want the ramp value 0.3", out[action.DimBaseX])
	}
	f.Stop(out, 0.1)
	f.Stop(out, 0.1)
	if out[action.DimBaseX] != 0 {
		t.Errorf("base velocity %g after ramping down, want 0", out[action.DimBaseX])
	}
}

func TestFilterKeepsTheWorkspace(t *testing.T) {
	ws := &Workspace{Min: [3]float64{-0.5, -0.5, 0}, Max: [3]float64{0.5, 0.5, 1}, Scale: 0.1}
	f := newTestFilter(t, SafetyConfig{Workspace: ws})
	f.Reset([3]float64{0.45, 0, 0.5})
	out := make([]float32, 11)
	p := make([]float32, 11)
	p[action.DimWorldX] = 1 // 0.1 m a step toward the x limit at 0.5
	v := f.Apply(out, p, 0.1)
	if !v.Workspace || math.Abs(float64(out[action.DimWorldX])-0.5) > 1e-5 {
		t.Errorf("first step: verdict %+v, world x %g, want 0.5 (the 5 cm left)", v, out[action.DimWorldX])
	}
	for i := 0; i < 5; i++ {
		f.Apply(out, p, 0.1)
	}
	if tx := f.Target()[0]; tx > 0.5 || out[action.DimWorldX] != 0 {
		t.Errorf("target x %g, displacement %g at the wall", tx, out[action.DimWorldX])
	}
	p[action.DimWorldX] = -1
	if v := f.Apply(out, p, 0.1); v.Workspace || out[action.DimWorldX] != -1 {
		t.Errorf("moving away from the wall was cut: %+v %g", v, out[action.DimWorldX])
	}
}

// Whatever the model proposes, what leaves the filter is finite, in bounds,
// rate limited and inside the workspace.
func TestFilterInvariants(t *testing.T) {
	ws := &Workspace{Min: [3]float64{-1, -1, 0}, Max: [3]float64{1, 1, 1}, Scale: 0.05}
	f := newTestFilter(t, SafetyConfig{MaxRate: rt1Rates(), Workspace: ws})
	r := rand.New(rand.NewPCG(1, 2))
	space := action.RT1()
	out, prev := make([]float32, 11), make([]float32, 11)
	p := make([]float32, 11)
	for step := 0; step < 5000; step++ {
		for i := range p {
			switch r.IntN(20) {
			case 0:
				p[i] = float32(math.NaN())
			case 1:
				p[i] = float32(math.Inf(1 - 2*r.IntN(2)))
			default:
				p[i] = float32(r.NormFloat64() * 3)
			}
		}
		var v Verdict
		if r.IntN(10) == 0 {
			v = f.Stop(out, 0.1)
		} else {
			v = f.Apply(out, p, 0.1)
		}
		for i, d := range space.Dims {
			x := float64(out[i])
			if math.IsNaN(x) || x < d.Low || x > d.High {
				t.Fatalf("step %d: %s = %g", step, d.Name, x)
			}
			// The workspace wins over the rate limit: at a wall the
			// displacement drops to what is left, however sudden.
			arm := i == action.DimWorldX || i == action.DimWorldY || i == action.DimWorldZ
			if len(d.Categories) == 0 && step > 0 && !(arm && v.Workspace) && math.Abs(x-float64(prev[i])) > 0.2+1e-6 {
				t.Fatalf("step %d: %s jumped from %g to %g", step, d.Name, prev[i], x)
			}
		}
		for k := range 3 {
			if tg := f.Target()[k]; tg < ws.Min[k] || tg > ws.Max[k] {
				t.Fatalf("step %d: target %v left the workspace", step, f.Target())
			}
		}
		copy(prev, out)
	}
}

func TestFilterDoesNotAllocate(t *testing.T) {
	f := newTestFilter(t, SafetyConfig{MaxRate: rt1Rates(), Workspace: &Workspace{Min: [3]float64{-1, -1, -1}, Max: [3]float64{1, 1, 1}, Scale: 0.1}})
	out, p := make([]float32, 11), make([]float32, 11)
	if a := testing.AllocsPerRun(100, func() { f.Apply(out, p, 0.1); f.Stop(out, 0.1) }); a != 0 {
		t.Errorf("%.1f allocations per call", a)
	}
}

func TestNewFilterChecksConfig(t *testing.T) {
	for name, cfg := range map[string]SafetyConfig{
		"rates":     {MaxRate: []float64{1, 2}},
		"negative":  {MaxRate: append(rt1Rates()[:10], -1)},
		"scale":     {Workspace: &Workspace{Max: [3]float64{1, 1, 1}}},
		"empty box": {Workspace: &Workspace{Scale: 1}},
	} {
		if _, err := NewFilter(action.RT1(), cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
