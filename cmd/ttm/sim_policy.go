package main

import (
	"fmt"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim/eval"
)

// newPolicyAgent is the agent ttm sim drives the simulator with: the
// evaluation harness's eval.PolicyAgent (the policy's own Step on the
// rendered frame, as the node runs it), with the policy's no-memory
// setting as the caller left it.
func newPolicyAgent(p *policy.Policy) *eval.PolicyAgent { return eval.NewPolicyAgent(p) }

// ablateMemory switches the no-memory ablation on for --no-memory. Without
// it the policy runs as its checkpoint says: one trained without memory
// (ttm.config no_memory) runs without.
func ablateMemory(p *policy.Policy, noMemory bool) error {
	if !noMemory {
		return nil
	}
	if err := p.SetNoMemory(true); err != nil {
		return fmt.Errorf("%w: --no-memory: %v", errUsage, err)
	}
	return nil
}

// memoryNote says how a policy run with --no-memory set to ablation runs
// its memory: "" with it, "checkpoint" for a checkpoint trained without,
// "ablation" when --no-memory zeroes a memory the checkpoint has.
func memoryNote(p *policy.Policy, ablation bool) string {
	switch {
	case p.Spec().TTM.NoMemory:
		return "checkpoint"
	case ablation:
		return "ablation"
	}
	return ""
}
