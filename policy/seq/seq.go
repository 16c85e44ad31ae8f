// Package seq holds the sequence models a policy can use between its input
// tokens and its action head: each step maps the step's n input tokens
// (n, d) to r output tokens (r, d), carrying state from one step to the
// next. The Token Turing Machine is one (package ttm, adapted here); the
// others are the alternatives the TTM paper compares against: a window
// Transformer over the last steps (RT-1), a causal Transformer with a
// key/value cache, a recurrent Transformer with state tokens, an LSTM, and
// TTM variants whose write concatenates or erases-and-adds.
//
// Every model has the same three faces: inference (Runner.Step, which
// allocates nothing in steady state), training (Tape: forward over a
// window of consecutive steps, then backward in reverse order, gradients
// checked against finite differences) and cost (FLOPs per step as a
// function of the step's position in the episode).
package seq

import "github.com/ttmrobot/ttm/internal/layer"

// Shape is what the policy sees of a model.
type Shape struct {
	InputTokens  int // n
	OutputTokens int // r
	Dim          int // d
}

// TensorSpec names one tensor in a model's flat parameter slice.
type TensorSpec = layer.Spec

// Model is one sequence model's configuration and weights. A Model is
// read-only while Runners and Tapes use it.
type Model interface {
	// Name is the model's registry name ("ttm", "window", ...).
	Name() string
	Shape() Shape
	// Params is the flat parameter slice (live); Specs cut it into named
	// tensors, in checkpoint order.
	Params() []float32
	Specs() []TensorSpec
	// Init fills the parameters deterministically for a seed.
	Init(seed uint64)
	// ParamsChanged must follow any change to Params (drops caches).
	ParamsChanged()
	// ConfigJSON is the model's configuration as stored in a checkpoint.
	ConfigJSON() string
	NewState() State
	NewRunner() Runner
	// NewTape prepares training over windows of up to steps steps.
	NewTape(steps int) Tape
	// FLOPs is the cost of the step at position step (0-based) of an
	// episode: 2 per multiply-add, matrix products and attention.
	FLOPs(step int) int64
}

// State is what a model carries from one step to the next within an
// episode. It is an explicit value: Reset at episode start, Clone to
// snapshot, CopyFrom to restore (without allocating when the shapes
// allow), Hash to compare bit for bit.
type State interface {
	Reset()
	Clone() State
	CopyFrom(State)
	Hash() uint64
	// Steps is the number of steps taken since Reset.
	Steps() int
}

// Runner runs inference steps. It owns scratch space and is not safe for
// concurrent use; any number of Runners may share one Model.
type Runner interface {
	// Step writes the step's output (r, d) from input (n, d) and advances
	// s. No-memory ablations are model variants ("ttm-nomem"), except the
	// TTM's run-time switch (NoMemorySwitch).
	Step(s State, input, output []float32)
}

// Tape records consecutive steps for truncated backpropagation through
// time. The state at the first Forward after Reset is a constant (no
// gradient flows to earlier steps). Tapes are single-threaded, and several
// Tapes on one Model may run in separate goroutines at the same time.
type Tape interface {
	// Reset starts a new window.
	Reset()
	// Forward runs one step exactly like Runner.Step (within float
	// rounding), advancing s, and records what Backward needs.
	Forward(s State, input, output []float32)
	// Backward pops the most recent step: given dOutput = ∂L/∂output of
	// that step, it accumulates parameter gradients into grads (len
	// Params), overwrites dInput with ∂L/∂input, and carries ∂L/∂state
	// internally to the step before.
	Backward(dOutput, dInput, grads []float32)
}
