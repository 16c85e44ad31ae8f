package seq

import (
	"fmt"

	"github.com/ttmrobot/ttm/ttm"
)

// TTM adapts the ttm package's Token Turing Machine to Model. Three
// registry names build one:
//
//   - "ttm": TokenLearner read and write (the paper's TTM);
//   - "ttm-nomem": the same with the memory zeroed before every step (the
//     paper's Table 5 ablation, ttm.Config.NoMemory);
//   - "erase-add": TokenLearner read, NTM-style erase-and-add write
//     (ttm.AddErase, the paper's Table 5).
//
// Its State wraps a *ttm.Memory (see TTMMemory). Checkpoints keep the ttm
// package's own format: ConfigJSON is the ttm.Config JSON, and the
// tensors are the ttm.Model's (Model exposes it).
type TTM struct {
	name  string
	model *ttm.Model
}

// ttmConfig is the ttm.Config the registry name `name` builds from c.
func ttmConfig(name string, c Config) ttm.Config {
	tc := ttm.Config{
		MemorySize: c.MemoryTokens, ProcessSize: c.OutputTokens, InputTokens: c.InputTokens, Dim: c.Dim,
		NumLayers: c.Layers, NumHeads: c.Heads, MLPDim: c.MLPDim, SummariserHidden: c.SummariserHidden,
		MemoryMode: ttm.TokenLearner, ProcessingUnit: ttm.Transformer, LayerNormEps: c.LayerNormEps,
	}
	switch name {
	case "ttm-nomem":
		tc.NoMemory = true
	case "erase-add":
		tc.MemoryMode = ttm.AddErase
	}
	return tc.WithDefaults()
}

// NewTTM builds the TTM variant `name` ("ttm", "ttm-nomem" or "erase-add")
// for c, with zero parameters.
func NewTTM(name string, c Config) (*TTM, error) {
	c = c.WithDefaults()
	if err := c.ValidateFor(name); err != nil {
		return nil, err
	}
	if !isTTMName(name) {
		return nil, fmt.Errorf("seq: %q is not a TTM variant (want ttm, ttm-nomem or erase-add)", name)
	}
	m, err := ttm.NewModel(ttmConfig(name, c))
	if err != nil {
		return nil, fmt.Errorf("seq %s: %w", name, err)
	}
	return WrapTTM(name, m)
}

func isTTMName(name string) bool { return name == "ttm" || name == "ttm-nomem" || name == "erase-add" }

// WrapTTM adapts an existing ttm.Model (for example one loaded from a
// checkpoint) as the variant `name`, which must agree with its
// configuration: "ttm-nomem" needs NoMemory, "erase-add" the TL-AddErase
// memory mode, "ttm" neither.
func WrapTTM(name string, m *ttm.Model) (*TTM, error) {
	c := m.Config
	switch name {
	case "ttm":
		if c.NoMemory || c.MemoryMode == ttm.AddErase {
			return nil, fmt.Errorf("seq: a ttm model with no_memory %v and memory mode %s is not %q", c.NoMemory, c.MemoryMode, name)
		}
	case "ttm-nomem":
		if !c.NoMemory {
			return nil, fmt.Errorf("seq: %q needs a ttm model with no_memory set", name)
		}
	case "erase-add":
		if c.MemoryMode != ttm.AddErase || c.NoMemory {
			return nil, fmt.Errorf("seq: %q needs a ttm model with memory mode %s and memory, it has %s (no_memory %v)", name, ttm.AddErase, c.MemoryMode, c.NoMemory)
		}
	default:
		return nil, fmt.Errorf("seq: %q is not a TTM variant (want ttm, ttm-nomem or erase-add)", name)
	}
	return &TTM{name: name, model: m}, nil
}

// TTMOf adapts m as it is configured, whatever its memory mode,
// processing unit and no_memory switch, under the name "ttm": the TTM a
// policy runs when it names no other sequence model.
func TTMOf(m *ttm.Model) *TTM { return &TTM{name: "ttm", model: m} }

// Model is the adapted ttm.Model.
func (t *TTM) Model() *ttm.Model { return t.model }

func (t *TTM) Name() string { return t.name }

func (t *TTM) Shape() Shape {
	c := t.model.Config
	return Shape{InputTokens: c.InputTokens, OutputTokens: c.ProcessSize, Dim: c.Dim}
}

func (t *TTM) Params() []float32   { return t.model.Params }
func (t *TTM) Specs() []TensorSpec { return t.model.Specs }
func (t *TTM) Init(seed uint64)    { t.model.Init(seed) }
func (t *TTM) ParamsChanged()      { t.model.ParamsChanged() }

// ConfigJSON is the ttm.Config, as the ttm package stores it.
func (t *TTM) ConfigJSON() string { return t.model.Config.JSON() }

// FLOPs is the same at every step (ttm.Config.FLOPs).
func (t *TTM) FLOPs(step int) int64 { return t.model.Config.FLOPs() }

// ttmState is a TTM's memory.
type ttmState struct{ mem *ttm.Memory }

func (t *TTM) NewState() State { return &ttmState{mem: ttm.NewMemory(t.model.Config)} }

// TTMMemory is the memory inside a TTM variant's State, or nil for the
// State of another model.
func TTMMemory(s State) *ttm.Memory {
	if ts, ok := s.(*ttmState); ok {
		return ts.mem
	}
	return nil
}

func (s *ttmState) Reset()       { s.mem.Reset() }
func (s *ttmState) Clone() State { return &ttmState{mem: s.mem.Clone()} }
func (s *ttmState) Hash() uint64 { return s.mem.Hash() }
func (s *ttmState) Steps() int   { return int(s.mem.Steps) }
func (s *ttmState) CopyFrom(o State) {
	src, ok := o.(*ttmState)
	if !ok {
		panic(fmt.Sprintf("seq: ttm state: restoring a %T", o))
	}
	s.mem.CopyFrom(src.mem)
}

func (s *ttmState) values() [][]float32 { return [][]float32{s.mem.Tokens} }

func ttmStateOf(s State) *ttmState {
	ts, ok := s.(*ttmState)
	if !ok {
		panic(fmt.Sprintf("seq: ttm model given a %T state", s))
	}
	return ts
}

// NoMemorySwitch is implemented by the Runners and Tapes of the models
// whose memory can be switched off at run time, the TTM's: the paper's
// no-memory ablation (ttm.Machine.NoMemory), the memory zeroed before
// every step with the same computation. Other models' ablations are
// models of their own ("ttm-nomem").
type NoMemorySwitch interface {
	SetNoMemory(on bool)
	NoMemory() bool
}

var (
	_ NoMemorySwitch = (*ttmRunner)(nil)
	_ NoMemorySwitch = (*ttmTape)(nil)
)

type ttmRunner struct{ mc *ttm.Machine }

func (r *ttmRunner) SetNoMemory(on bool) { r.mc.NoMemory = on }
func (r *ttmRunner) NoMemory() bool      { return r.mc.NoMemory }

func (t *TTM) NewRunner() Runner { return &ttmRunner{mc: ttm.NewMachine(t.model)} }

func (r *ttmRunner) Step(s State, input, output []float32) {
	r.mc.Step(ttmStateOf(s).mem, input, output)
}

type ttmTape struct {
	tape *ttm.Tape
	dMem []float32 // (m, d): dL/d(memory after the step being popped)
}

func (t *TTM) NewTape(steps int) Tape {
	c := t.model.Config
	return &ttmTape{tape: ttm.NewTape(t.model, steps), dMem: make([]float32, c.MemorySize*c.Dim)}
}

func (t *ttmTape) Reset() { t.tape.Reset() }

func (t *ttmTape) SetNoMemory(on bool) { t.tape.NoMemory = on }
func (t *ttmTape) NoMemory() bool      { return t.tape.NoMemory }

func (t *ttmTape) Forward(s State, input, output []float32) {
	t.tape.Forward(ttmStateOf(s).mem, input, output)
	clear(t.dMem) // the newest step's memory feeds nothing recorded
}

func (t *ttmTape) Backward(dOutput, dInput, grads []float32) {
	t.tape.Backward(dOutput, t.dMem, dInput, grads)
}
