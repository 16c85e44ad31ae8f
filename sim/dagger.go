package sim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// DAgger (Ross, Gordon and Bagnell 2011, "A Reduction of Imitation Learning
// and Structured Prediction to No-Regret Online Learning"): roll out the
// learner, mixing in the expert's own action with probability beta at each
// step, and label every state the rollout visits with the action the expert
// would take there. Trained on these labels too, the learner sees the
// states its own mistakes lead to, where behavioural cloning on expert
// episodes alone has no data.

// LabelExpert is the label (RecordOptions.Label, EpisodeInfo.Label,
// IndexEntry.Label) of episodes whose recorded actions are the noise-free
// scripted expert's on the states visited, whatever agent acted.
const LabelExpert = "expert"

// Labeler is an Agent that labels each step with an action other than the
// one it executes. RecordEpisode writes the label of each step to the
// action topic, where other agents' executed actions go. Label returns the
// label of the latest Act (action.RT1 layout); the slice is the agent's own
// and is overwritten by the next Act.
type Labeler interface {
	Label() []float32
}

// DAggerAgent is the DAgger rollout agent: at each step it asks the expert
// for its action on the privileged state and the learner for its action on
// the observation, executes the expert's with probability Beta (a seeded
// coin, the same flips for the same seed) or else the learner's, and
// labels the step with the expert's action. The learner acts on every step,
// also those where the expert's action is executed, so its memory follows
// the whole episode.
//
// Like an Expert, a DAggerAgent serves one episode: the expert remembers
// its progress through the task. Reset resets the learner and restarts the
// coin from the seed. A DAggerAgent is not safe for concurrent use.
type DAggerAgent struct {
	learner Agent
	expert  Expert
	beta    float64
	seed    uint64
	coin    *rand.PCG
	rng     *rand.Rand
	label   []float32 // (11) the expert's action of the latest step, a copy

	steps, expertSteps int
}

var (
	_ Agent   = (*DAggerAgent)(nil)
	_ Labeler = (*DAggerAgent)(nil)
)

// daggerSalt keeps the coin's stream apart from the other seeded streams.
const daggerSalt = 0xda66e5da66e5

// NewDAggerAgent returns a DAgger agent: learner acts, expert labels, and
// the expert's action is executed instead of the learner's with
// probability beta in [0, 1] at each step, drawn from a generator seeded
// with seed. The expert should be noise-free (ExpertOptions{}): its
// actions are the labels.
func NewDAggerAgent(learner Agent, expert Expert, beta float64, seed uint64) (*DAggerAgent, error) {
	switch {
	case learner == nil:
		return nil, errors.New("sim: dagger agent: no learner")
	case expert == nil:
		return nil, errors.New("sim: dagger agent: no expert")
	case math.IsNaN(beta) || beta < 0 || beta > 1:
		return nil, fmt.Errorf("sim: dagger agent: beta %v: want a probability in [0, 1]", beta)
	}
	coin := rand.NewPCG(seed, daggerSalt)
	return &DAggerAgent{learner: learner, expert: expert, beta: beta, seed: seed, coin: coin, rng: rand.New(coin),
		label: make([]float32, 0, len(rt1.Dims))}, nil
}

// NewEpisodeDAgger returns the DAgger agent for one episode: ep's scripted
// expert without noise (ep.Expert(ExpertOptions{})) labels, and the coin is
// seeded from the episode's task and seed.
func NewEpisodeDAgger(ep *Episode, learner Agent, beta float64) (*DAggerAgent, error) {
	h := fnv.New64a()
	h.Write([]byte(ep.Task().Name))
	return NewDAggerAgent(learner, ep.Expert(ExpertOptions{}), beta, ep.Seed()*0x9e3779b97f4a7c15^h.Sum64())
}

// Beta returns the probability of executing the expert's action.
func (a *DAggerAgent) Beta() float64 { return a.beta }

// Reset starts an episode: the learner is reset and the coin restarts from
// the seed.
func (a *DAggerAgent) Reset(instruction string) {
	a.learner.Reset(instruction)
	a.coin.Seed(a.seed, daggerSalt)
	a.label = a.label[:0]
	a.steps, a.expertSteps = 0, 0
}

// Act labels the step with the expert's action on obs.State, runs the
// learner on obs and returns the action to execute: the expert's with
// probability Beta, else the learner's.
func (a *DAggerAgent) Act(obs *Observation) ([]float32, error) {
	if obs.State == nil {
		return nil, errors.New("sim: dagger agent: the expert needs the privileged state")
	}
	x := a.expert.Act(obs.State)
	a.label = append(a.label[:0], x...) // the expert reuses x
	l, err := a.learner.Act(obs)
	if err != nil {
		return nil, fmt.Errorf("learner: %w", err)
	}
	a.steps++
	if a.rng.Float64() < a.beta {
		a.expertSteps++
		return x, nil
	}
	return l, nil
}

// Label returns the expert's action of the latest step (nil before the
// first Act of an episode). It is overwritten by the next Act.
func (a *DAggerAgent) Label() []float32 {
	if len(a.label) == 0 {
		return nil
	}
	return a.label
}

// Steps returns the number of steps acted in this episode.
func (a *DAggerAgent) Steps() int { return a.steps }

// ExpertSteps returns how many steps of this episode executed the expert's
// action rather than the learner's.
func (a *DAggerAgent) ExpertSteps() int { return a.expertSteps }
