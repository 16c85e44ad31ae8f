package main

import (
	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/vision"
)

// policyAgent drives the simulator with a learned policy: the same
// policy.Step the node runs, on the rendered frame decoded as an rgb8
// sensor_msgs/Image, so simulator, robot and replay share one code path.
// It never reads the privileged state.
type policyAgent struct {
	p      *policy.Policy
	st     *policy.State
	obs    policy.Observation
	img    vision.Image
	action []float32
}

var _ sim.Agent = (*policyAgent)(nil)

func newPolicyAgent(p *policy.Policy) *policyAgent {
	return &policyAgent{p: p, st: p.NewState(), action: make([]float32, p.ActionSpace().Len())}
}

// Reset starts an episode: fresh memory, window and previous action.
func (a *policyAgent) Reset(instruction string) {
	a.st.Reset()
	a.obs.Instruction = instruction
}

// Act runs one policy step on the observation's frame.
func (a *policyAgent) Act(o *sim.Observation) ([]float32, error) {
	a.img = vision.Image{Height: uint32(o.Height), Width: uint32(o.Width), Encoding: "rgb8", Step: uint32(3 * o.Width), Data: o.Image}
	frame, err := vision.DecodeImage(&a.img)
	if err != nil {
		return nil, err
	}
	a.obs.Frame = frame
	if err := a.p.Step(&a.obs, a.st, a.action); err != nil {
		return nil, err
	}
	return a.action, nil
}
