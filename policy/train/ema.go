package train

import (
	"fmt"

	"github.com/ttmrobot/ttm/policy"
)

// EMA is an exponential moving average of the parameters (Polyak
// averaging), updated after every optimiser step:
//
//	a = a + (1-decay)·(θ - a)
//
// which averages the last ~1/(1-decay) updates' weights. Training never
// reads it: it is a second set of weights, saved beside the checkpoint,
// that tends to act better than the last update's (the noise of the last
// updates averages out). It starts from the weights training starts from.
type EMA struct {
	Decay  float64
	Params []policy.Group // same layout as the policy's
}

// NewEMA starts an average of params.
func NewEMA(params []policy.Group, decay float64) *EMA {
	e := &EMA{Decay: decay}
	for _, g := range params {
		e.Params = append(e.Params, policy.Group{Name: g.Name, Params: append([]float32(nil), g.Params...)})
	}
	return e
}

// Update moves the average toward params.
func (e *EMA) Update(params []policy.Group) {
	k := float32(1 - e.Decay)
	for i, g := range params {
		a := e.Params[i].Params[:len(g.Params)]
		for j, v := range g.Params {
			a[j] += k * (v - a[j])
		}
	}
}

// swap exchanges the values of params and the average, group by group.
func (e *EMA) swap(params []policy.Group) {
	for i, g := range params {
		a := e.Params[i].Params[:len(g.Params)]
		for j, v := range g.Params {
			g.Params[j], a[j] = a[j], v
		}
	}
}

// WithAverage runs f with the policy's parameters replaced by their moving
// average (Config.EMA), for saving or evaluating it, and puts the trained
// parameters back afterwards. It is an error without an average.
func (tr *Trainer) WithAverage(f func() error) error {
	if tr.ema == nil {
		return fmt.Errorf("train: no moving average (config ema is 0)")
	}
	params := tr.p.Groups()
	tr.ema.swap(params)
	tr.p.ParamsChanged()
	defer func() {
		tr.ema.swap(params)
		tr.p.ParamsChanged()
	}()
	return f()
}
