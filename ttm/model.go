package ttm

import (
	"math/rand/v2"
	"sync"

	"github.com/ttmrobot/ttm/internal/layer"
	"github.com/ttmrobot/ttm/internal/nn"
)

// Model is one TTM's configuration and weights. Its parameters live in one
// flat slice (Params), cut into views listed by Specs in checkpoint order.
// A Model is read-only while Machines run on it.
type Model struct {
	Config Config
	Params []float32
	Specs  []ParamSpec

	p params

	packOnce sync.Once
}

// NewModel allocates a model for c with all parameters zero.
func NewModel(c Config) (*Model, error) {
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &Model{Config: c}
	var t layer.Table
	m.p.register(&t, c)
	m.Params = t.Allocate()
	m.Specs = t.Specs
	return m, nil
}

// Init fills the parameters as Flax initialises them (xavier-uniform
// kernels, near-zero biases, unit LayerNorm scales, N(0, 0.02) positional
// embeddings and query tokens), deterministically for a seed.
func (m *Model) Init(seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x7474_6d5f_696e_6974)) // "ttm_init"
	for _, s := range m.Specs {
		s.Init.Fill(m.Params[s.Offset:s.Offset+s.Size], r)
	}
	m.invalidatePacked()
}

// NumParams is the number of float32 parameters.
func (m *Model) NumParams() int { return len(m.Params) }

// invalidatePacked drops packed copies after the parameters changed.
func (m *Model) invalidatePacked() {
	m.packOnce = sync.Once{}
	m.forEachChannelDense(func(l *layer.Dense) { l.Packed = nil })
	m.forEachAttention(func(a *layer.Attention) { a.Unpack() })
}

// prepack builds packed copies of the weights of every product that
// benefits: dense layers whose output width is a multiple of the panel
// width, and fused query/key/value products. It runs once per model.
func (m *Model) prepack() {
	m.packOnce.Do(func() {
		m.forEachChannelDense(func(l *layer.Dense) { l.Pack() })
		d := m.Config.Dim
		if d%nn.PanelWidth != 0 {
			return
		}
		for i := range m.p.enc {
			m.p.enc[i].attn.PackFused(d, true)
		}
		for _, a := range []*layer.Attention{&m.p.readMHA.attn, &m.p.writeMHA.attn} {
			if a.Key.Kernel != nil {
				a.PackFused(d, false)
			}
		}
	})
}

// forEachChannelDense visits every dense layer applied along the channel
// axis (the mixer's token-mixing layers are applied along the token axis
// and are not visited).
func (m *Model) forEachChannelDense(f func(*layer.Dense)) {
	mlp := func(b *layer.MLP) { f(&b.D0); f(&b.D1) }
	p := &m.p
	mlp(&p.readTL.MLP)
	mlp(&p.writeTL.MLP)
	for i := range p.addErase.mlp {
		if i != 1 && i != 3 { // MlpBlock_1 and _3 mix the token axis
			mlp(&p.addErase.mlp[i])
		}
	}
	m.forEachAttention(func(a *layer.Attention) { f(&a.Query); f(&a.Key); f(&a.Value); f(&a.Out) })
	for i := range p.enc {
		mlp(&p.enc[i].mlp)
	}
	for i := range p.mix {
		mlp(&p.mix[i].channel)
	}
	for i := range p.mlpBlocks {
		mlp(&p.mlpBlocks[i])
	}
}

func (m *Model) forEachAttention(f func(*layer.Attention)) {
	f(&m.p.readMHA.attn)
	f(&m.p.writeMHA.attn)
	for i := range m.p.enc {
		f(&m.p.enc[i].attn)
	}
}
