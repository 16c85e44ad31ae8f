package ttm

import "fmt"

// Trace runs steps over a sequence of inputs (T, n, d) from the memory
// start (m, d; nil for zeros) and returns the processing unit's outputs
// (T, r, d) and the memory after each step (T, m, d). It is how a port of
// trained weights is checked against the framework that trained them.
func Trace(mc *Machine, inputs, start []float32) (outputs, memories []float32, err error) {
	c := mc.Config()
	m, n, r, d := c.MemorySize, c.InputTokens, c.ProcessSize, c.Dim
	if len(inputs)%(n*d) != 0 {
		return nil, nil, fmt.Errorf("trace: inputs hold %d floats, not a whole number of %dx%d steps", len(inputs), n, d)
	}
	steps := len(inputs) / (n * d)
	mem := NewMemory(c)
	if start != nil {
		if len(start) != m*d {
			return nil, nil, fmt.Errorf("trace: start memory holds %d floats, want %dx%d", len(start), m, d)
		}
		copy(mem.Tokens, start)
	}
	outputs = make([]float32, steps*r*d)
	memories = make([]float32, steps*m*d)
	for t := 0; t < steps; t++ {
		mc.Step(mem, inputs[t*n*d:(t+1)*n*d], outputs[t*r*d:(t+1)*r*d])
		copy(memories[t*m*d:], mem.Tokens)
	}
	return outputs, memories, nil
}
