package ttm_test

import (
	"fmt"

	"github.com/ttmrobot/ttm/ttm"
)

// Backpropagation through a window of steps: Forward records the steps,
// Backward pops them in reverse, carrying dL/d(memory) from each step to the
// one before it and accumulating the parameter gradients.
func ExampleTape() {
	c, _ := ttm.Preset("small")
	model, _ := ttm.NewModel(c)
	model.Init(1)
	const window = 3
	tape := ttm.NewTape(model, window)

	// Forward: a fresh episode, one input per step.
	mem := ttm.NewMemory(c)
	inputs := make([][]float32, window)
	outputs := make([][]float32, window)
	for t := range inputs {
		inputs[t] = make([]float32, c.InputTokens*c.Dim)
		for i := range inputs[t] {
			inputs[t][i] = float32((i+t)%5) - 2
		}
		outputs[t] = make([]float32, c.ProcessSize*c.Dim)
		tape.Forward(mem, inputs[t], outputs[t])
	}
	fmt.Println("recorded:", tape.Len())

	// Backward with L = Σ_t Σ outputs[t]: dL/dO = 1 at every step, and
	// nothing depends on the memory after the window.
	grads := make([]float32, model.NumParams())
	dMem := make([]float32, c.MemorySize*c.Dim)
	dInput := make([]float32, c.InputTokens*c.Dim)
	dOut := make([]float32, c.ProcessSize*c.Dim)
	for i := range dOut {
		dOut[i] = 1
	}
	for tape.Len() > 0 {
		tape.Backward(dOut, dMem, dInput, grads)
	}
	fmt.Println("left:", tape.Len())

	// The output is LayerNorm(x)·scale + bias, so each output's gradient
	// reaches the final bias once: 3 steps x 8 rows.
	for _, s := range model.Specs {
		if s.Name == "Encoder_0/encoder_norm/bias" {
			fmt.Println("dL/d(final bias):", grads[s.Offset])
		}
	}

	// An optimizer step would now change model.Params, then:
	model.ParamsChanged()
	// Output:
	// recorded: 3
	// left: 0
	// dL/d(final bias): 24
}
