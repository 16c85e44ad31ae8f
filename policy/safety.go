package policy

import (
	"fmt"
	"math"

	"github.com/ttmrobot/ttm/internal/action"
)

// SafetyConfig is what the safety filter enforces. It knows nothing of the
// model: only the action space and the robot's limits.
type SafetyConfig struct {
	// MaxRate is the largest change of each dimension per second, in action
	// space order; 0 means unlimited. Categorical dimensions are never rate
	// limited. An empty slice limits nothing.
	MaxRate []float64 `json:"max_rate,omitempty"`
	// Workspace, if set, keeps the commanded end-effector target inside a box.
	Workspace *Workspace `json:"workspace,omitempty"`
}

// Workspace bounds the end-effector target, which the filter integrates from
// the arm's displacement dimensions (world_vector/x, y, z).
type Workspace struct {
	Min   [3]float64 `json:"min"`   // metres
	Max   [3]float64 `json:"max"`   // metres
	Scale float64    `json:"scale"` // metres per unit of world_vector
}

// Verdict says what the filter did to one action.
type Verdict struct {
	Rejected    bool // a NaN or Inf: the whole action was replaced by the stop action
	Clamped     bool // a value was outside its dimension's bounds
	RateLimited bool // a value moved faster than its MaxRate
	Workspace   bool // the arm displacement was cut to stay inside the workspace
}

// Modified reports whether the action went out different from how it came in.
func (v Verdict) Modified() bool { return v.Rejected || v.Clamped || v.RateLimited || v.Workspace }

// Filter is the last stage before actions reach the robot. Every action
// passes through Apply (or Stop, when the node is not acting), in order:
// non-finite values reject the whole action; values are clamped to their
// bounds; each dimension's change is limited to MaxRate·dt; the arm's
// displacement is cut so the end-effector target stays in the workspace.
// It remembers the last action it let out, so stopping holds targets
// instead of jumping. It allocates nothing.
type Filter struct {
	space   action.Space
	cfg     SafetyConfig
	last    []float32 // last action let out
	started bool      // last holds a real action
	arm     [3]int    // indices of world_vector/x, y, z, or -1
	target  [3]float64
}

// NewFilter checks cfg against the action space.
func NewFilter(space action.Space, cfg SafetyConfig) (*Filter, error) {
	if err := space.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.MaxRate) != 0 && len(cfg.MaxRate) != space.Len() {
		return nil, fmt.Errorf("safety: max_rate has %d entries, the action space %d dimensions", len(cfg.MaxRate), space.Len())
	}
	for i, r := range cfg.MaxRate {
		if r < 0 || math.IsNaN(r) {
			return nil, fmt.Errorf("safety: max_rate of %s is %g", space.Dims[i].Name, r)
		}
	}
	f := &Filter{space: space, cfg: cfg, last: make([]float32, space.Len()), arm: [3]int{-1, -1, -1}}
	for i, d := range space.Dims {
		for k, name := range []string{"world_vector/x", "world_vector/y", "world_vector/z"} {
			if d.Name == name {
				f.arm[k] = i
			}
		}
	}
	if w := cfg.Workspace; w != nil {
		if f.arm[0] < 0 || f.arm[1] < 0 || f.arm[2] < 0 {
			return nil, fmt.Errorf("safety: a workspace needs world_vector/x, y and z dimensions")
		}
		if !(w.Scale > 0) {
			return nil, fmt.Errorf("safety: workspace scale is %g, want > 0", w.Scale)
		}
		for k := range 3 {
			if !(w.Min[k] < w.Max[k]) {
				return nil, fmt.Errorf("safety: workspace axis %d: min %g is not below max %g", k, w.Min[k], w.Max[k])
			}
		}
	}
	f.Reset([3]float64{})
	return f, nil
}

// Reset starts an episode: no previous action (the robot is taken to be at
// rest) and the end-effector target at position, which is clamped into the
// workspace.
func (f *Filter) Reset(position [3]float64) {
	clear(f.last)
	f.started = false
	f.target = position
	if w := f.cfg.Workspace; w != nil {
		for k := range 3 {
			f.target[k] = min(max(position[k], w.Min[k]), w.Max[k])
		}
	}
}

// Target is the end-effector target the filter has integrated.
func (f *Filter) Target() [3]float64 { return f.target }

// Last is the last action the filter let out (zeros before the first).
func (f *Filter) Last() []float32 { return f.last }

// Apply filters proposed into out (both of the action space's length),
// dt seconds after the previous action.
func (f *Filter) Apply(out, proposed []float32, dt float64) Verdict {
	n := f.space.Len()
	if len(proposed) != n || len(out) != n {
		panic(fmt.Sprintf("policy: Filter.Apply: %d and %d values for %d dimensions", len(out), len(proposed), n))
	}
	for _, v := range proposed {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			stop := f.Stop(out, dt)
			stop.Rejected = true
			return stop
		}
	}
	var v Verdict
	for i, d := range f.space.Dims {
		a := d.Clamp(proposed[i])
		if a != proposed[i] {
			v.Clamped = true
		}
		if len(d.Categories) > 0 {
			a = float32(d.Bin(a)) // categories are whole numbers
		} else if f.started || d.Stop == action.StopZero {
			// Before the first action, a action.StopZero dimension starts from rest (0);
			// a action.StopHold one (an absolute target) has no known previous value.
			if lim := f.rateLimit(i, a, dt); lim != a {
				a, v.RateLimited = lim, true
			}
		}
		out[i] = a
	}
	v.Workspace = f.limitWorkspace(out)
	copy(f.last, out)
	f.started = true
	return v
}

// Stop writes the action that holds the robot where it is into out: action.StopHold
// dimensions repeat the last action, action.StopZero ones move toward zero as fast
// as their rate limit allows. The node sends it whenever it may not act
// (no fresh frame, e-stop, a rejected action, a missed deadline). Before
// the first action it holds zeros, so a node should not publish until it
// has acted once.
func (f *Filter) Stop(out []float32, dt float64) Verdict {
	for i, d := range f.space.Dims {
		a := f.last[i]
		if d.Stop == action.StopZero {
			a = f.rateLimit(i, 0, dt)
		}
		out[i] = a
	}
	v := Verdict{Workspace: f.limitWorkspace(out)}
	copy(f.last, out)
	f.started = true // what went out is now the robot's last command
	return v
}

// rateLimit moves last[i] toward a by at most MaxRate[i]·dt.
func (f *Filter) rateLimit(i int, a float32, dt float64) float32 {
	if len(f.cfg.MaxRate) == 0 || f.cfg.MaxRate[i] == 0 {
		return a
	}
	step := float32(f.cfg.MaxRate[i] * max(dt, 0))
	prev := f.last[i]
	return min(max(a, prev-step), prev+step)
}

// limitWorkspace cuts the arm displacement in out so the integrated target
// stays inside the workspace, and advances the target.
func (f *Filter) limitWorkspace(out []float32) bool {
	w := f.cfg.Workspace
	if w == nil {
		return false
	}
	cut := false
	for k, i := range f.arm {
		next := f.target[k] + float64(out[i])*w.Scale
		if bounded := min(max(next, w.Min[k]), w.Max[k]); bounded != next {
			out[i] = float32((bounded - f.target[k]) / w.Scale)
			cut = true
		}
		// float32 rounding of a cut displacement must not leave the box.
		f.target[k] = min(max(f.target[k]+float64(out[i])*w.Scale, w.Min[k]), w.Max[k])
	}
	return cut
}
