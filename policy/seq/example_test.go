package seq_test

import (
	"fmt"

	"github.com/ttmrobot/ttm/policy/seq"
)

// A sequence model maps each step's n input tokens to r output tokens,
// carrying a State through the episode; a Tape trains it over a window of
// steps.
func Example() {
	c, err := seq.Preset("recurrent", "small")
	if err != nil {
		panic(err)
	}
	m, err := seq.New("recurrent", c)
	if err != nil {
		panic(err)
	}
	m.Init(1)
	sh := m.Shape()
	input := make([]float32, sh.InputTokens*sh.Dim)
	output := make([]float32, sh.OutputTokens*sh.Dim)

	// Inference: one Runner, one State per episode.
	run, st := m.NewRunner(), m.NewState()
	for t := 0; t < 3; t++ {
		run.Step(st, input, output)
	}
	fmt.Printf("%s: %d input tokens -> %d output tokens of width %d, %d steps taken\n",
		m.Name(), sh.InputTokens, sh.OutputTokens, sh.Dim, st.Steps())

	// Training: forward over a window, backward in reverse order.
	tape := m.NewTape(2)
	grads := make([]float32, len(m.Params()))
	dOut, dIn := make([]float32, len(output)), make([]float32, len(input))
	dOut[0] = 1 // ∂L/∂output[0] of each step
	tape.Forward(st, input, output)
	tape.Forward(st, input, output)
	tape.Backward(dOut, dIn, grads)
	tape.Backward(dOut, dIn, grads)
	fmt.Println("steps taken:", st.Steps())
	// Output:
	// recurrent: 16 input tokens -> 8 output tokens of width 64, 3 steps taken
	// steps taken: 5
}

// Every model at the same size, with its cost per step.
func ExampleNames() {
	for _, name := range seq.Names() {
		c, _ := seq.Preset(name, "small")
		m, _ := seq.New(name, c)
		grows := m.FLOPs(999) > m.FLOPs(0)
		fmt.Printf("%-9s cost grows with the episode: %v\n", name, grows)
	}
	// Output:
	// ttm       cost grows with the episode: false
	// ttm-nomem cost grows with the episode: false
	// erase-add cost grows with the episode: false
	// concat    cost grows with the episode: true
	// window    cost grows with the episode: false
	// causal    cost grows with the episode: true
	// recurrent cost grows with the episode: false
	// lstm      cost grows with the episode: false
}
