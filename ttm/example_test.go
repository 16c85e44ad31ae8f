package ttm_test

import (
	"fmt"

	"github.com/ttmrobot/ttm/ttm"
)

// A TTM step reads from the memory and the step's input tokens, processes
// r tokens and writes the memory back. The memory is an explicit value: it
// can be snapshotted, restored and hashed.
func ExampleMachine_Step() {
	c, _ := ttm.Preset("small")
	model, _ := ttm.NewModel(c)
	model.Init(1)
	machine := ttm.NewMachine(model)

	mem := ttm.NewMemory(c) // zeros: the start of an episode
	input := make([]float32, c.InputTokens*c.Dim)
	output := make([]float32, c.ProcessSize*c.Dim)
	for i := range input {
		input[i] = float32(i%7) - 3
	}
	machine.Step(mem, input, output)
	snapshot := mem.Clone()
	machine.Step(mem, input, output)
	second := mem.Hash()

	mem.CopyFrom(snapshot) // go back one step and replay it
	machine.Step(mem, input, output)
	fmt.Println("steps:", mem.Steps, "replay identical:", mem.Hash() == second)
	// Output: steps: 2 replay identical: true
}
