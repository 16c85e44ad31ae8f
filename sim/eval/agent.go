package eval

import (
	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/vision"
)

// PolicyAgent drives the simulator with a learned policy: the same
// policy.Step the node runs, on the rendered frame decoded as an rgb8
// sensor_msgs/Image, so simulator, robot and replay share one code path.
// It never reads the privileged state (Observation.State).
//
// Two ablations are built in:
//   - NoMemory: the TTM memory is zeroed before every step (the agent
//     switches policy.Policy.SetNoMemory on). Off, the agent leaves the
//     policy's setting alone: the checkpoint's own (a checkpoint trained
//     without memory still runs without), or what the caller set.
//   - the memory knock-out (SetKnockout): once, before the first step whose
//     frame comes at or after a given step, the state that holds past
//     frames (the TTM memory and the window of recent frames) is reset to
//     its episode-start value; the previous action and the step count are
//     kept. The harness sets it from Episode.CueSteps; the agent itself is
//     told only a step number.
//
// A PolicyAgent is not safe for concurrent use; several agents may share
// one Policy in turns (each keeps its own State).
type PolicyAgent struct {
	// NoMemory zeroes the memory before every step.
	NoMemory bool

	p        *policy.Policy
	st       *policy.State
	obs      policy.Observation
	img      vision.Image
	action   []float32
	knockAt  int  // step of the knock-out; 0: none
	knocked  bool // the knock-out happened in this episode
	knockHit int  // the frame step it happened before; -1: not yet
}

var (
	_ sim.Agent  = (*PolicyAgent)(nil)
	_ keypointer = (*PolicyAgent)(nil) // the harness scores its keypoints
	_ goalProber = (*PolicyAgent)(nil) // and its goal probe
)

// NewPolicyAgent returns an agent acting with p, with a fresh state.
func NewPolicyAgent(p *policy.Policy) *PolicyAgent {
	return &PolicyAgent{p: p, st: p.NewState(), action: make([]float32, p.ActionSpace().Len()), knockHit: -1}
}

// Policy returns the agent's policy.
func (a *PolicyAgent) Policy() *policy.Policy { return a.p }

// State returns the agent's live policy state: read it, do not keep it.
func (a *PolicyAgent) State() *policy.State { return a.st }

// SetKnockout arms the memory knock-out for the episodes that follow:
// before the first Act on a frame of step >= step, the memory and the
// frame window are reset. step <= 0 disarms it.
func (a *PolicyAgent) SetKnockout(step int) { a.knockAt = max(step, 0) }

// KnockedOutAt reports the step of the frame before which the knock-out
// reset the state in the current episode, or -1 if it has not happened.
func (a *PolicyAgent) KnockedOutAt() int { return a.knockHit }

// Keypoint returns the policy's keypoint i on the last frame it acted on
// (see policy.Policy.Keypoint).
func (a *PolicyAgent) Keypoint(i int) (u, v float32, ok bool) { return a.p.Keypoint(i) }

// GoalEstimate returns the policy's goal probe after the last Act (see
// policy.Policy.GoalEstimate); nil without a probe.
func (a *PolicyAgent) GoalEstimate() []float32 { return a.p.GoalEstimate() }

// Reset starts an episode: fresh memory, window and previous action.
func (a *PolicyAgent) Reset(instruction string) {
	a.st.Reset()
	a.obs.Instruction = instruction
	a.knocked = false
	a.knockHit = -1
}

// Act runs one policy step on the observation's frame.
func (a *PolicyAgent) Act(o *sim.Observation) ([]float32, error) {
	if a.knockAt > 0 && !a.knocked && o.Step >= a.knockAt {
		a.st.ResetMemory()
		a.st.Window.Reset()
		a.knocked = true
		a.knockHit = o.Step
	}
	a.img = vision.Image{Height: uint32(o.Height), Width: uint32(o.Width), Encoding: "rgb8", Step: uint32(3 * o.Width), Data: o.Image}
	frame, err := vision.DecodeImage(&a.img)
	if err != nil {
		return nil, err
	}
	a.obs.Frame = frame
	a.obs.Proprio = o.Proprio
	if a.NoMemory {
		if err := a.p.SetNoMemory(true); err != nil {
			return nil, err
		}
	}
	if err := a.p.Step(&a.obs, a.st, a.action); err != nil {
		return nil, err
	}
	return a.action, nil
}
