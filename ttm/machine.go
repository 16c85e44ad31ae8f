package ttm

import (
	"fmt"

	"github.com/ttmrobot/ttm/internal/nn"
)

// Machine runs TTM steps on a Model. It owns all scratch space, so Step
// allocates nothing; it is not safe for concurrent use, but any number of
// Machines may share one Model.
type Machine struct {
	model *Model
	cfg   Config

	// NoMemory runs the paper's ablation: the memory is zeroed before every
	// step, with the same computation. It starts as Config.NoMemory.
	NoMemory bool

	cat     []float32 // (m+n+r, d): [M ; I ; O], raw
	readIn  []float32 // (m+n, d): [M ; I] + P_read, with positional embeddings
	writeIn []float32 // (m+n+r, d): [M ; I ; O] + P_write, with positional embeddings
	z       []float32 // (r, d): read tokens
	next    []float32 // (m, d): the memory being written

	read     summariser
	proc     processor
	write    summariser      // nil for TL-AddErase
	addErase *addEraseWriter // only for TL-AddErase
}

// NewMachine prepares a Machine for m, packing m's large weight matrices on
// first use.
func NewMachine(m *Model) *Machine {
	m.prepack()
	c := m.Config
	mm, n, r, d := c.MemorySize, c.InputTokens, c.ProcessSize, c.Dim
	pack := make([]float32, nn.PackScratchSize(max(d, c.MLPDim, c.SummariserHidden)))
	mc := &Machine{
		model: m, cfg: c, NoMemory: c.NoMemory,
		cat: make([]float32, (mm+n+r)*d), z: make([]float32, r*d), next: make([]float32, mm*d),
	}
	if c.UsePositionalEmbedding {
		mc.readIn = make([]float32, (mm+n)*d)
		mc.writeIn = make([]float32, (mm+n+r)*d)
	}
	p := &m.p
	switch c.MemoryMode {
	case TokenLearner:
		mc.read = newTokenLearner(&p.readTL, mm+n, r, c)
		mc.write = newTokenLearner(&p.writeTL, mm+n+r, mm, c)
	case AddErase:
		mc.read = newTokenLearner(&p.readTL, mm+n, r, c)
		mc.addErase = newAddEraseWriter(&p.addErase, c, pack)
	case QueryAttention:
		mc.read = newQueryAttention(&p.readMHA, mm+n, r, c, pack)
		mc.write = newQueryAttention(&p.writeMHA, mm+n+r, mm, c, pack)
	case Pool:
		mc.read = &poolSummariser{n: mm + n, k: r, d: d}
		mc.write = &poolSummariser{n: mm + n + r, k: mm, d: d}
	default:
		panic(fmt.Sprintf("ttm: memory mode %q", c.MemoryMode)) // Validate rejects it
	}
	switch c.ProcessingUnit {
	case Transformer:
		mc.proc = newTransformerUnit(p, c, pack)
	case Mixer:
		mc.proc = newMixerUnit(p, c, pack)
	case MLP:
		mc.proc = newMLPUnit(p, c, pack)
	default:
		panic(fmt.Sprintf("ttm: processing unit %q", c.ProcessingUnit))
	}
	return mc
}

// Config returns the configuration of the machine's model.
func (mc *Machine) Config() Config { return mc.cfg }

// Step runs one TTM step: it reads from mem and input (n, d), writes the
// processing unit's output (r, d) into output, and replaces mem's tokens
// with the new memory. Wrong sizes are programmer errors and panic.
func (mc *Machine) Step(mem *Memory, input, output []float32) {
	c := mc.cfg
	m, n, r, d := c.MemorySize, c.InputTokens, c.ProcessSize, c.Dim
	if len(mem.Tokens) != m*d || len(input) != n*d || len(output) != r*d {
		panic(fmt.Sprintf("ttm: Step: memory %d, input %d, output %d floats; want %d, %d, %d",
			len(mem.Tokens), len(input), len(output), m*d, n*d, r*d))
	}
	if mc.NoMemory {
		clear(mem.Tokens)
	}
	memRows, inRows, outRows := mc.cat[:m*d], mc.cat[m*d:(m+n)*d], mc.cat[(m+n)*d:]
	copy(memRows, mem.Tokens)
	copy(inRows, input)

	// Read: Z = Summarise_r([M ; I] (+ P_read)).
	readIn := mc.cat[:(m+n)*d]
	if c.UsePositionalEmbedding {
		copy(mc.readIn, readIn)
		nn.Add(mc.readIn, mc.model.p.readPos)
		readIn = mc.readIn
	}
	mc.read.summarise(mc.z, readIn)

	// Process: O = Process(Z), stored as the last r rows of cat.
	mc.proc.process(outRows, mc.z)

	// Write: M_next = Summarise_m([M ; I ; O] (+ P_write)), from the raw M
	// and I. TL-AddErase edits M from O instead; the reference still
	// creates P_write in that mode, but it has no effect.
	if mc.addErase != nil {
		mc.addErase.write(mc.next, mc.cat)
	} else {
		writeIn := mc.cat
		if c.UsePositionalEmbedding {
			copy(mc.writeIn, mc.cat)
			nn.Add(mc.writeIn, mc.model.p.writePos)
			writeIn = mc.writeIn
		}
		mc.write.summarise(mc.next, writeIn)
	}
	copy(mem.Tokens, mc.next)
	copy(output, outRows)
	mem.Steps++
}

// FLOPs estimates the floating-point operations of one step (2 per
// multiply-add, matrix products only), for reporting achieved GFLOP/s.
func (c Config) FLOPs() int64 {
	m, n, r, d, h := int64(c.MemorySize), int64(c.InputTokens), int64(c.ProcessSize), int64(c.Dim), int64(c.SummariserHidden)
	mlp, layers := int64(c.MLPDim), int64(c.NumLayers)
	tl := func(rows, k int64) int64 { return 2 * (rows*d*h + rows*h*k + k*rows*d) }
	mha := func(nq, nk int64) int64 { return 2 * (nq*d*d + 2*nk*d*d + 2*nq*nk*d + nq*d*d) }
	var f int64
	switch c.MemoryMode {
	case TokenLearner:
		f += tl(m+n, r) + tl(m+n+r, m)
	case AddErase:
		kw := int64(c.WriteHeads)
		f += tl(m+n, r) + 2*(m*d*h+m*h*kw) + 2*2*(r*h*d+h*kw*d+kw*d*h+kw*h*d) + 4*m*d*kw
	case QueryAttention:
		f += mha(r, m+n) + mha(m, m+n+r)
	case Pool:
	}
	switch c.ProcessingUnit {
	case Transformer:
		f += layers * (mha(r, r) + 2*2*r*d*mlp)
	case Mixer:
		f += layers * (2*2*r*int64(c.MixerTokenDim)*d + 2*2*r*d*mlp)
	case MLP:
		f += layers * 2 * 2 * r * d * mlp
	}
	return f
}
