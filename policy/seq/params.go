package seq

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/ttmrobot/ttm/internal/nn"
)

// Parameters live in one flat []float32 per model, cut into named views
// by a paramTable; gradients use the same layout, through a second set of
// views that a Tape rebinds to the grads slice it is given.

// initializer fills a new parameter tensor.
type initializer struct {
	kind          initKind
	fanIn, fanOut int     // xavier
	std           float64 // normal
	value         float32 // constant
}

type initKind int

const (
	initConst initKind = iota
	initXavierUniform
	initNormal
)

var (
	zeros   = initializer{kind: initConst}
	ones    = initializer{kind: initConst, value: 1}
	posInit = initializer{kind: initNormal, std: 0.02} // positional embeddings, learned tokens
)

func xavier(fanIn, fanOut int) initializer {
	return initializer{kind: initXavierUniform, fanIn: fanIn, fanOut: fanOut}
}

func constant(v float32) initializer { return initializer{kind: initConst, value: v} }

func (in initializer) fill(dst []float32, r *rand.Rand) {
	switch in.kind {
	case initConst:
		for i := range dst {
			dst[i] = in.value
		}
	case initXavierUniform:
		limit := math.Sqrt(6 / float64(in.fanIn+in.fanOut))
		for i := range dst {
			dst[i] = float32((2*r.Float64() - 1) * limit)
		}
	case initNormal:
		for i := range dst {
			dst[i] = float32(r.NormFloat64() * in.std)
		}
	default:
		panic(fmt.Sprintf("seq: unknown initializer %d", in.kind))
	}
}

// paramTable collects tensor specs and the struct fields that view them.
type paramTable struct {
	specs []TensorSpec
	inits []initializer
	dests []*[]float32
	size  int
	bound *float32 // &flat[0] of the slice the views now cut

	denses []*dense // every dense layer registered, for packing
}

func (t *paramTable) add(dst *[]float32, name string, in initializer, shape ...int) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	t.specs = append(t.specs, TensorSpec{Name: name, Shape: shape, Offset: t.size, Size: n})
	t.inits = append(t.inits, in)
	t.dests = append(t.dests, dst)
	t.size += n
}

// allocate makes the flat slice and points the views at it.
func (t *paramTable) allocate() []float32 {
	flat := make([]float32, t.size)
	t.bind(flat)
	return flat
}

// bind points every view at its part of flat (len t.size), with full
// slice expressions so that no view can spill into its neighbour.
func (t *paramTable) bind(flat []float32) {
	if len(flat) != t.size {
		panic(fmt.Sprintf("seq: binding %d floats to a table of %d", len(flat), t.size))
	}
	if len(flat) > 0 && &flat[0] == t.bound {
		return
	}
	for i, s := range t.specs {
		*t.dests[i] = flat[s.Offset : s.Offset+s.Size : s.Offset+s.Size]
	}
	if len(flat) > 0 {
		t.bound = &flat[0]
	}
}

// base holds what every model of this package (all but the TTM adapter)
// shares: name, configuration, flat parameters and their table.
type base struct {
	name   string
	cfg    Config
	params []float32
	table  paramTable

	packOnce sync.Once // guards the dense layers' packed kernels
}

func (b *base) Name() string        { return b.name }
func (b *base) Params() []float32   { return b.params }
func (b *base) Specs() []TensorSpec { return b.table.specs }
func (b *base) ConfigJSON() string  { return b.cfg.JSON() }
func (b *base) Config() Config      { return b.cfg }

func (b *base) Shape() Shape {
	return Shape{InputTokens: b.cfg.InputTokens, OutputTokens: b.cfg.OutputTokens, Dim: b.cfg.Dim}
}

// Init fills the parameters as Flax initialises them (xavier-uniform
// kernels, zero biases, unit LayerNorm scales, N(0, 0.02) positional
// embeddings and learned tokens), deterministically for a seed and the
// model's name.
func (b *base) Init(seed uint64) {
	r := rand.New(rand.NewPCG(seed, hashString(b.name)))
	for i, s := range b.table.specs {
		b.table.inits[i].fill(b.params[s.Offset:s.Offset+s.Size], r)
	}
}

// ParamsChanged drops the packed copies of the weights; the next
// Runner.Step packs them again (allocating, once). It must not run while a
// Runner of the model is stepping (Tapes use the weights unpacked).
func (b *base) ParamsChanged() {
	b.packOnce = sync.Once{}
	for _, l := range b.table.denses {
		l.packed = nil
	}
}

// prepack packs, once per change of the parameters, every dense layer whose
// width is a multiple of nn.PanelWidth. Runners call it before each step;
// after the first it costs one atomic load.
func (b *base) prepack() {
	b.packOnce.Do(func() {
		for _, l := range b.table.denses {
			if l.out%nn.PanelWidth == 0 {
				l.packed = nn.Pack(l.kernel, l.in, l.out)
			}
		}
	})
}

// finish allocates the parameters registered in b.table.
func (b *base) finish() { b.params = b.table.allocate() }

func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}
