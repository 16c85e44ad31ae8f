package eval

import (
	"fmt"
	"path/filepath"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/vision"
)

// A Player is one worker's agent for a run. The harness opens one Player
// per worker and run, calls Begin before each episode and Close at the end.
type Player interface {
	// Begin prepares an agent for ep and returns it. A privileged agent
	// (a scripted expert) is given the simulator state in its
	// observations; any other gets Observation.State == nil. Begin may read
	// privileged facts of the episode to set up an ablation (the cue
	// length); the agent it returns must not get them otherwise.
	Begin(ep *sim.Episode) (agent sim.Agent, privileged bool, err error)
	Close() error
}

// RunSpec is one column of an evaluation.
type RunSpec struct {
	// Name labels the run in the ledger, the table and the plots; names
	// must be distinct.
	Name string
	// Agent is the kind of agent: "policy", "expert", or another word for a
	// custom player.
	Agent            string
	Checkpoint       string // the checkpoint's file name, for policies
	CheckpointSHA256 string
	Ablation         Ablation
	// Memory is MemoryCheckpoint for a checkpoint trained without memory
	// (it runs without, with no ablation), else empty: the checkpoint
	// runs with its memory unless Ablation takes it away.
	Memory string
	// NewPlayer opens a worker's player.
	NewPlayer func() (Player, error)

	loadPolicy func() (*policy.Policy, error) // policy runs: loads a copy (offline scoring)
}

// ExpertRun is the scripted experts as a run: a check of the harness, since
// they succeed on nearly every episode.
func ExpertRun(opts sim.ExpertOptions) RunSpec {
	return RunSpec{Name: "expert", Agent: "expert", Ablation: AblationNone,
		NewPlayer: func() (Player, error) { return expertPlayer{opts}, nil }}
}

type expertPlayer struct{ opts sim.ExpertOptions }

func (p expertPlayer) Begin(ep *sim.Episode) (sim.Agent, bool, error) {
	return sim.ExpertAgent{Expert: ep.Expert(p.opts)}, true, nil
}

func (expertPlayer) Close() error { return nil }

// MemoryCheckpoint is RunSpec.Memory (and the ledger's run "memory") of a
// checkpoint trained without memory: it runs without as it is, where the
// nomem ablation takes the memory from a checkpoint trained with it.
const MemoryCheckpoint = "none (checkpoint)"

// PolicyRuns returns the runs of one checkpoint, one per variant in
// order (no variants: the plain run): name for AblationNone, name+nomem,
// name+knockout for the ablations. Every worker loads its own copy of the
// policy with opts (Threads defaults to 1: one OpenCV thread per worker).
// The nomem ablation is a switch of the ttm model: for a checkpoint of
// another sequence model it is left out (logged to opts.Log), and it is an
// error when it is the only variant asked for. A checkpoint trained
// without memory (ttm.config no_memory) has none to zero: its runs say so
// (RunSpec.Memory), and its nomem variant is its plain run, left out when
// that is asked for too (logged).
func PolicyRuns(name, path string, variants []Ablation, opts policy.Options) ([]RunSpec, error) {
	sum, err := vision.FileSHA256(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if opts.Threads == 0 {
		opts.Threads = 1
	}
	if len(variants) == 0 {
		variants = []Ablation{AblationNone}
	}
	memory, err := checkpointMemory(path)
	if err != nil {
		return nil, err
	}
	var runs []RunSpec
	for i, ab := range variants {
		switch ab {
		case AblationNone, AblationNoMemory, AblationKnockout:
		default:
			return nil, fmt.Errorf("checkpoint %s: unknown ablation %q", path, ab)
		}
		if containsAblation(variants[:i], ab) {
			return nil, fmt.Errorf("checkpoint %s: ablation %s given twice", path, ab)
		}
		if ab == AblationNoMemory && memory == MemoryCheckpoint {
			if containsAblation(variants, AblationNone) {
				if opts.Log != nil {
					opts.Log.Warn("ablation left out: the checkpoint was trained without memory and runs without as it is", "checkpoint", path, "ablation", ab)
				}
				continue
			}
			ab = AblationNone
		}
		if ab == AblationNoMemory {
			model, err := zeroableMemory(path)
			if err != nil {
				return nil, err
			}
			if model != "" {
				if len(variants) == 1 {
					return nil, fmt.Errorf("checkpoint %s: the no-memory ablation zeroes the ttm model's memory; this checkpoint runs %q", path, model)
				}
				if opts.Log != nil {
					opts.Log.Warn("ablation left out: the checkpoint's model has no ttm memory to zero", "checkpoint", path, "model", model, "ablation", ab)
				}
				continue
			}
		}
		n := name
		if ab != AblationNone {
			n += "+" + string(ab)
		}
		load := func() (*policy.Policy, error) { return policy.Load(path, opts) }
		runs = append(runs, RunSpec{Name: n, Agent: "policy", Checkpoint: filepath.Base(path), CheckpointSHA256: sum, Ablation: ab,
			Memory: memory, loadPolicy: load,
			NewPlayer: func() (Player, error) {
				p, err := load()
				if err != nil {
					return nil, err
				}
				return &policyPlayer{agent: NewPolicyAgent(p), ablation: ab}, nil
			}})
	}
	return runs, nil
}

// zeroableMemory returns "" when the checkpoint at path runs the ttm model
// (policy.SetNoMemory applies), else the name of its model.
func zeroableMemory(path string) (string, error) {
	p, err := policy.Load(path, policy.Options{NoBackbone: true})
	if err != nil {
		return "", err
	}
	defer p.Close()
	if p.SetNoMemory(true) != nil {
		return p.ModelName(), nil
	}
	return "", nil
}

// checkpointMemory returns MemoryCheckpoint when the checkpoint at path
// was trained without memory, else "".
func checkpointMemory(path string) (string, error) {
	p, err := policy.Load(path, policy.Options{NoBackbone: true})
	if err != nil {
		return "", err
	}
	defer p.Close()
	if p.Spec().TTM.NoMemory {
		return MemoryCheckpoint, nil
	}
	return "", nil
}

type policyPlayer struct {
	agent    *PolicyAgent
	ablation Ablation
}

func (p *policyPlayer) Begin(ep *sim.Episode) (sim.Agent, bool, error) {
	p.agent.NoMemory = p.ablation == AblationNoMemory
	p.agent.SetKnockout(0)
	if p.ablation == AblationKnockout {
		p.agent.SetKnockout(ep.CueSteps())
	}
	return p.agent, false, nil
}

func (p *policyPlayer) Close() error { return p.agent.Policy().Close() }
