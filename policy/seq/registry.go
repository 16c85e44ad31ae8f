package seq

import (
	"fmt"
	"strings"

	"github.com/ttmrobot/ttm/internal/layer"
	"github.com/ttmrobot/ttm/internal/safetensors"
	"github.com/ttmrobot/ttm/ttm"
)

// modelNames lists the registry, the TTM first (the default).
var modelNames = []string{"ttm", "ttm-nomem", "erase-add", "concat", "window", "causal", "recurrent", "lstm"}

// Names lists the models New builds, the default ("ttm") first.
func Names() []string { return append([]string(nil), modelNames...) }

// Interfaces checked at compile time.
var (
	_ Model = (*TTM)(nil)
	_ Model = (*Concat)(nil)
	_ Model = (*Window)(nil)
	_ Model = (*Causal)(nil)
	_ Model = (*Recurrent)(nil)
	_ Model = (*LSTM)(nil)
)

// New builds the model called name for c, with zero parameters (call
// Init or load them).
func New(name string, c Config) (Model, error) {
	switch name {
	case "ttm", "ttm-nomem", "erase-add":
		return NewTTM(name, c)
	case "concat":
		return NewConcat(c)
	case "window":
		return NewWindow(c)
	case "causal":
		return NewCausal(c)
	case "recurrent":
		return NewRecurrent(c)
	case "lstm":
		return NewLSTM(c)
	default:
		return nil, fmt.Errorf("seq: unknown model %q (have %s)", name, strings.Join(modelNames, ", "))
	}
}

// FromJSON rebuilds a model from a checkpoint: its registry name, the
// configuration its ConfigJSON stored (for the TTM variants the ttm.Config
// JSON) and its parameters in Specs order (copied). Every problem is an
// error naming what is wrong: an unknown name, a configuration that does
// not parse or validate, a parameter count that does not match, a
// parameter that is not finite.
func FromJSON(name, configJSON string, params []float32) (Model, error) {
	m, err := FromConfigJSON(name, configJSON)
	if err != nil {
		return nil, err
	}
	if err := SetParams(m, params); err != nil {
		return nil, err
	}
	return m, nil
}

// FromConfigJSON builds the model called name from the configuration its
// ConfigJSON stored, with zero parameters: what a loader needs to learn
// the model's tensors before it reads them.
func FromConfigJSON(name, configJSON string) (Model, error) {
	if isTTMName(name) {
		tc, err := ttm.ParseConfig([]byte(configJSON))
		if err != nil {
			return nil, fmt.Errorf("seq %s: %w", name, err)
		}
		tm, err := ttm.NewModel(tc)
		if err != nil {
			return nil, fmt.Errorf("seq %s: %w", name, err)
		}
		return WrapTTM(name, tm)
	}
	c, err := ParseConfig(name, []byte(configJSON))
	if err != nil {
		return nil, err
	}
	return New(name, c)
}

// Load reads m's parameters from f, each tensor named prefix plus its
// spec's name, checking presence, shape and values; every other tensor
// that owns claims is reported as unexpected. It calls ParamsChanged.
func Load(m Model, f *safetensors.File, prefix string, owns func(string) bool) error {
	params := m.Params()
	set := safetensors.Set{What: "sequence model " + m.Name() + " checkpoint", Owns: owns, Tensors: layer.Wants(prefix, m.Specs(), params)}
	if err := f.Load(set); err != nil {
		return err
	}
	m.ParamsChanged()
	return nil
}

// SetParams copies params (Specs order) into m after checking their count
// and their values (safetensors.CheckWeights), and calls ParamsChanged.
func SetParams(m Model, params []float32) error {
	dst := m.Params()
	if len(params) != len(dst) {
		return fmt.Errorf("seq %s: %d parameters given, the configuration needs %d", m.Name(), len(params), len(dst))
	}
	for _, s := range m.Specs() {
		if err := safetensors.CheckWeights(s.Name, params[s.Offset:s.Offset+s.Size]); err != nil {
			return fmt.Errorf("seq %s: %w", m.Name(), err)
		}
	}
	copy(dst, params)
	m.ParamsChanged()
	return nil
}

// NumParams is the number of float32 parameters of m.
func NumParams(m Model) int { return len(m.Params()) }
