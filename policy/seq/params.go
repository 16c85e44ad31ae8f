package seq

import (
	"math/rand/v2"
	"sync"

	"github.com/ttmrobot/ttm/internal/layer"
)

// Parameters live in one flat []float32 per model, cut into named views
// by a layer.Table; gradients use the same layout, through a second set of
// views that a Tape rebinds to the grads slice it is given. The models'
// biases start at zero.

// base holds what every model of this package (all but the TTM adapter)
// shares: name, configuration, flat parameters and their table.
type base struct {
	name   string
	cfg    Config
	params []float32
	table  layer.Table

	packOnce sync.Once // guards the dense layers' packed kernels
}

func (b *base) Name() string        { return b.name }
func (b *base) Params() []float32   { return b.params }
func (b *base) Specs() []TensorSpec { return b.table.Specs }
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
	for _, s := range b.table.Specs {
		s.Init.Fill(b.params[s.Offset:s.Offset+s.Size], r)
	}
}

// ParamsChanged drops the packed copies of the weights; the next
// Runner.Step packs them again (allocating, once). It must not run while a
// Runner of the model is stepping (Tapes use the weights unpacked).
func (b *base) ParamsChanged() {
	b.packOnce = sync.Once{}
	for _, l := range b.table.Denses {
		l.Packed = nil
	}
}

// prepack packs, once per change of the parameters, every dense layer whose
// width is a multiple of nn.PanelWidth. Runners call it before each step;
// after the first it costs one atomic load.
func (b *base) prepack() {
	b.packOnce.Do(func() {
		for _, l := range b.table.Denses {
			l.Pack()
		}
	})
}

// finish allocates the parameters registered in b.table.
func (b *base) finish() { b.params = b.table.Allocate() }

func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}
