package seq

import (
	"fmt"

	"github.com/ttmrobot/ttm/ttm"
)

// Programmer errors (wrong sizes, a full tape, a state of another model)
// panic with a message naming the model and what is wrong, as the nn
// kernels and the ttm package do; nothing here fails for reasons outside
// the program.

func checkStep(who string, c Config, input, output []float32) {
	if len(input) != c.InputTokens*c.Dim || len(output) != c.OutputTokens*c.Dim {
		panic(fmt.Sprintf("seq: %s step: input %d, output %d floats; want %d (%d tokens x %d), %d (%d x %d)",
			who, len(input), len(output), c.InputTokens*c.Dim, c.InputTokens, c.Dim, c.OutputTokens*c.Dim, c.OutputTokens, c.Dim))
	}
}

func checkTapeRoom(who string, n, steps int) {
	if n >= steps {
		panic(fmt.Sprintf("seq: %s Tape.Forward: the tape holds %d steps and is full; Reset or Backward first", who, steps))
	}
}

func checkBackward(who string, c Config, dOutput, dInput, grads []float32, params, recorded int) {
	if len(dOutput) != c.OutputTokens*c.Dim || len(dInput) != c.InputTokens*c.Dim || len(grads) != params {
		panic(fmt.Sprintf("seq: %s Tape.Backward: dOutput %d, dInput %d, grads %d floats; want %d, %d, %d",
			who, len(dOutput), len(dInput), len(grads), c.OutputTokens*c.Dim, c.InputTokens*c.Dim, params))
	}
	if recorded == 0 {
		panic(fmt.Sprintf("seq: %s Tape.Backward: no recorded step left", who))
	}
}

// valuer is implemented by every State of this package: its contents as
// float slices, for tests that compare states within a tolerance.
type valuer interface {
	values() [][]float32
}

var (
	_ valuer = (*windowState)(nil)
	_ valuer = (*tokenState)(nil)
	_ valuer = (*lstmState)(nil)
	_ valuer = (*ttmState)(nil)
	_ valuer = (*kvState)(nil)
	_ valuer = (*memState)(nil)
)

// hashSeed starts a hash chain of hashFloats.
const hashSeed = ttm.HashOffset

// hashFloats continues an FNV-1a 64 hash h over the little-endian bytes of
// x (ttm.HashFloatsFrom), so equal hashes mean bit-identical contents (0
// and -0 differ).
func hashFloats(h uint64, x []float32) uint64 { return ttm.HashFloatsFrom(h, x) }

// hashInt continues h over the 8 little-endian bytes of v.
func hashInt(h uint64, v int) uint64 {
	const prime = 1099511628211
	u := uint64(v)
	for i := 0; i < 8; i++ {
		h = (h ^ (u >> (8 * i) & 0xff)) * prime
	}
	return h
}
