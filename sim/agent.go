package sim

import (
	"errors"
	"fmt"
)

// Observation is what an agent is given at each step.
type Observation struct {
	// Image is the head camera frame, (Height, Width, 3) RGB. It is reused
	// by the next step: copy it to keep it.
	Image         []byte
	Height, Width int
	Instruction   string
	Step          int
	// Proprio is the robot's proprioception (State.Proprio, action.ArmProprio's
	// layout), which a learned policy may read. It is reused by the next step.
	Proprio []float32
	// State is the privileged simulator state, for scripted experts. A
	// learned policy must not read it.
	State *State
}

// Agent acts in closed loop: Reset at the start of each episode, then one
// Act per step. The action (action.RT1 layout) may be the agent's own
// buffer; it is used before the next Act.
type Agent interface {
	Reset(instruction string)
	Act(obs *Observation) ([]float32, error)
}

// ExpertAgent runs a scripted expert as an Agent; it reads only
// Observation.State.
type ExpertAgent struct{ Expert Expert }

var _ Agent = ExpertAgent{}

// Reset does nothing: an expert is made for one episode.
func (ExpertAgent) Reset(string) {}

// Act returns the expert's action for the privileged state.
func (a ExpertAgent) Act(obs *Observation) ([]float32, error) {
	if obs.State == nil {
		return nil, errors.New("sim: expert agent needs the privileged state")
	}
	return a.Expert.Act(obs.State), nil
}

// Result is the outcome of one episode.
type Result struct {
	Task        string
	Seed        uint64
	Instruction string
	Steps       int
	Success     bool
	// Terminated: the agent ended the episode (rather than the step cap).
	Terminated bool
}

// FrameFunc receives every frame of an episode: the frame seen before
// each step (step = 0, 1, ...) and, last, the final frame (step = the
// number of steps taken). img is reused after the call returns.
type FrameFunc func(step int, img []byte) error

// Run plays ep to the end with agent, rendering a frame before every step,
// and reports the outcome. onFrame, if not nil, sees every frame.
func Run(ep *Episode, agent Agent, onFrame FrameFunc) (Result, error) {
	h, w := ep.ImageSize()
	img := make([]byte, h*w*3)
	obs := Observation{Image: img, Height: h, Width: w, Instruction: ep.Instruction(), State: ep.State(), Proprio: make([]float32, ProprioLen)}
	agent.Reset(ep.Instruction())
	res := Result{Task: ep.Task().Name, Seed: ep.Seed(), Instruction: ep.Instruction()}
	for !ep.Done() {
		if err := ep.Render(img); err != nil {
			return res, err
		}
		obs.Step = ep.Steps()
		ep.State().Proprio(obs.Proprio)
		if onFrame != nil {
			if err := onFrame(obs.Step, img); err != nil {
				return res, err
			}
		}
		act, err := agent.Act(&obs)
		if err != nil {
			return res, fmt.Errorf("sim: %s seed %d step %d: agent: %w", res.Task, res.Seed, obs.Step, err)
		}
		if _, err := ep.Step(act); err != nil {
			return res, fmt.Errorf("sim: %s seed %d step %d: %w", res.Task, res.Seed, obs.Step, err)
		}
	}
	if onFrame != nil {
		if err := ep.Render(img); err != nil {
			return res, err
		}
		if err := onFrame(ep.Steps(), img); err != nil {
			return res, err
		}
	}
	res.Steps, res.Success, res.Terminated = ep.Steps(), ep.Success(), ep.State().Terminated
	return res, nil
}
