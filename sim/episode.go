package sim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/ttmrobot/ttm/internal/action"
)

// Default image size: the RT-1 camera's 256 rows by 320 columns.
const (
	DefaultHeight = 256
	DefaultWidth  = 320
)

// Options configures an episode.
type Options struct {
	// Height and Width of rendered frames. They default to DefaultHeight
	// and DefaultWidth.
	Height, Width int
}

// Episode is one seeded run of a task. The same task, seed and actions give
// the same states and frames, bit for bit. An Episode is not safe for
// concurrent use.
type Episode struct {
	task        *Task
	seed        uint64
	instruction string
	s           *State
	phys        *rand.Rand // physics randomness (how dropped objects land)
	h, w        int
	rend        *Renderer // created by the first Render
	done        bool
	act         [11]float32
	cueSteps    int // frames that show the memory cue, fixed at the start
}

// NewEpisode sets up task with the given seed.
func NewEpisode(task *Task, seed uint64, opts Options) (*Episode, error) {
	if task == nil || task.setup == nil {
		return nil, errors.New("sim: new episode: no task (use TaskByName or Tasks)")
	}
	if opts.Height == 0 {
		opts.Height = DefaultHeight
	}
	if opts.Width == 0 {
		opts.Width = DefaultWidth
	}
	if opts.Height < 8 || opts.Width < 8 || opts.Height > MaxImageSide || opts.Width > MaxImageSide {
		return nil, fmt.Errorf("sim: new episode: image size %dx%d: each side must be in [8, %d]", opts.Height, opts.Width, MaxImageSide)
	}
	h := fnv.New64a()
	h.Write([]byte(task.Name))
	salt := h.Sum64()
	r := rand.New(rand.NewPCG(seed, salt))
	s := startState(r)
	ins := task.setup(r, s)
	return &Episode{task: task, seed: seed, instruction: ins, s: s,
		phys: rand.New(rand.NewPCG(seed, salt^0x9e3779b97f4a7c15)), h: opts.Height, w: opts.Width,
		cueSteps: cueFrames(&s.Goal)}, nil
}

// StartGoal is where task's goal stands at the start of its episode with
// seed, in the robot's base frame at that start (metres): the goal's object
// (a memory task's cued one; put_back's, on the spot it must return to)
// or a drawer goal's handle. Once a memory task's cue is gone, only a
// policy that remembers the cue knows this point.
func StartGoal(task *Task, seed uint64) (Vec3, error) {
	ep, err := NewEpisode(task, seed, Options{})
	if err != nil {
		return Vec3{}, err
	}
	defer ep.Close()
	return ep.s.ToBase(ep.s.goalPoint()), nil
}

// cueFrames is the number of first frames that show g's memory cue: the
// ring or arrow's Goal.CueSteps, or, for put_back, every frame up to the
// one where the slide arrives (the frame of step SlideStart+SlideSteps-1).
func cueFrames(g *Goal) int {
	if g.Kind == GoalPutBack && g.SlideSteps > 0 {
		return g.SlideStart + g.SlideSteps
	}
	if g.Cue != CueNone {
		return g.CueSteps
	}
	return 0
}

// Task returns the episode's task.
func (e *Episode) Task() *Task { return e.task }

// Seed returns the episode's seed.
func (e *Episode) Seed() uint64 { return e.seed }

// Instruction returns the language instruction.
func (e *Episode) Instruction() string { return e.instruction }

// CueSteps returns how many first frames (those of steps 0 .. CueSteps-1)
// show a memory task's cue: what a policy must remember, because later
// frames do not show it. It is 0 for tasks without a cue. It is fixed when
// the episode is set up. It is privileged, like State: an evaluation
// harness reads it (to knock the memory out right after the cue), an agent
// must not.
func (e *Episode) CueSteps() int { return e.cueSteps }

// ImageSize returns the rendered frames' height and width.
func (e *Episode) ImageSize() (h, w int) { return e.h, e.w }

// State returns the live privileged state. Callers must not modify it;
// Clone it to keep a copy.
func (e *Episode) State() *State { return e.s }

// Steps returns the number of steps taken.
func (e *Episode) Steps() int { return e.s.Step }

// Done reports whether the episode has ended: a terminate action, or
// the task's step cap.
func (e *Episode) Done() bool { return e.done }

// Success reports whether the current state satisfies the task.
func (e *Episode) Success() bool { return Success(e.s) }

// Render draws the head camera's current view into dst, an (H, W, 3) RGB
// buffer of H·W·3 bytes.
func (e *Episode) Render(dst []byte) error {
	if e.rend == nil {
		r, err := NewRenderer(e.h, e.w)
		if err != nil {
			return err
		}
		e.rend = r
	}
	return e.rend.Render(dst, e.s)
}

// Observe renders the current view into dst and returns the instruction:
// everything a policy sees.
func (e *Episode) Observe(dst []byte) (string, error) {
	return e.instruction, e.Render(dst)
}

// Step applies one RT-1 action (action.RT1 layout, 11 values). Values
// outside a dimension's bounds are clamped; the mode is rounded to the
// nearest category. NaN or Inf, a wrong length, or a step after the end are
// errors. It reports whether the episode has ended.
func (e *Episode) Step(act []float32) (done bool, err error) {
	if e.done {
		return true, errors.New("sim: step after the episode ended")
	}
	if len(act) != len(rt1.Dims) {
		return false, fmt.Errorf("sim: action has %d values, want %d (action.RT1 layout)", len(act), len(rt1.Dims))
	}
	for i, v := range act {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return false, fmt.Errorf("sim: action %s is %v", rt1.Dims[i].Name, v)
		}
		e.act[i] = rt1.Dims[i].Clamp(v)
	}
	e.act[action.DimMode] = float32(rt1.Dims[action.DimMode].Bin(act[action.DimMode]))
	if err := e.s.Check(); err != nil { // the caller changed the live state
		return false, err
	}
	terminate := e.s.apply(e.act[:], e.phys)
	e.s.Step++
	e.s.slide()
	e.done = terminate || e.s.Step >= e.task.MaxSteps
	return e.done, nil
}

// Expert returns a scripted expert for this episode. Its noise is seeded
// from opts.Seed and the episode's seed together.
func (e *Episode) Expert(opts ExpertOptions) Expert {
	opts.Seed = opts.Seed*0x9e3779b97f4a7c15 ^ e.seed
	return NewExpert(opts)
}

// Close frees the renderer's OpenCV image.
func (e *Episode) Close() {
	if e.rend != nil {
		e.rend.Close()
		e.rend = nil
	}
}
