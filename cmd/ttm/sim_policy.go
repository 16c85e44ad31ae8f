package main

import (
	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim/eval"
)

// newPolicyAgent is the agent ttm sim drives the simulator with: the
// evaluation harness's eval.PolicyAgent (the policy's own Step on the
// rendered frame, as the node runs it), with the policy's no-memory
// setting as the caller left it.
func newPolicyAgent(p *policy.Policy) *eval.PolicyAgent { return eval.NewPolicyAgent(p) }
