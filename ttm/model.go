package ttm

import (
	"math/rand/v2"
	"sync"

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
	var t paramTable
	m.p.register(&t, c)
	m.Params = t.allocate()
	m.Specs = t.specs
	return m, nil
}

// Init fills the parameters as Flax initialises them (xavier-uniform
// kernels, near-zero biases, unit LayerNorm scales, N(0, 0.02) positional
// embeddings and query tokens), deterministically for a seed.
func (m *Model) Init(seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x7474_6d5f_696e_6974)) // "ttm_init"
	for _, s := range m.Specs {
		s.init.fill(m.Params[s.Offset:s.Offset+s.Size], r)
	}
	m.invalidatePacked()
}

// NumParams is the number of float32 parameters.
func (m *Model) NumParams() int { return len(m.Params) }

// invalidatePacked drops packed copies after the parameters changed.
func (m *Model) invalidatePacked() {
	m.packOnce = sync.Once{}
	m.forEachChannelDense(func(l *dense) { l.packed = nil })
	m.forEachAttention(func(a *attention) { a.qkv, a.kv, a.qkvBias, a.kvBias = nil, nil, nil, nil })
}

// prepack builds packed copies of the weights of every product that
// benefits: dense layers whose output width is a multiple of the panel
// width, and fused query/key/value products. It runs once per model.
func (m *Model) prepack() {
	m.packOnce.Do(func() {
		m.forEachChannelDense(func(l *dense) {
			if l.kernel != nil && l.out%nn.PanelWidth == 0 {
				l.packed = nn.Pack(l.kernel, l.in, l.out)
			}
		})
		d := m.Config.Dim
		if d%nn.PanelWidth != 0 {
			return
		}
		for i := range m.p.enc {
			a := &m.p.enc[i].attn
			a.qkv = nn.PackColumns(d, [][]float32{a.query.kernel, a.key.kernel, a.value.kernel}, []int{d, d, d})
			a.qkvBias = concat(a.query.bias, a.key.bias, a.value.bias)
		}
		for _, a := range []*attention{&m.p.readMHA.attn, &m.p.writeMHA.attn} {
			if a.key.kernel != nil {
				a.kv = nn.PackColumns(d, [][]float32{a.key.kernel, a.value.kernel}, []int{d, d})
				a.kvBias = concat(a.key.bias, a.value.bias)
			}
		}
	})
}

// forEachChannelDense visits every dense layer applied along the channel
// axis (the mixer's token-mixing layers are applied along the token axis
// and are not visited).
func (m *Model) forEachChannelDense(f func(*dense)) {
	mlp := func(b *mlpBlock) { f(&b.d0); f(&b.d1) }
	p := &m.p
	mlp(&p.readTL.mlp)
	mlp(&p.writeTL.mlp)
	for i := range p.addErase.mlp {
		if i != 1 && i != 3 { // MlpBlock_1 and _3 mix the token axis
			mlp(&p.addErase.mlp[i])
		}
	}
	m.forEachAttention(func(a *attention) { f(&a.query); f(&a.key); f(&a.value); f(&a.out) })
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

func (m *Model) forEachAttention(f func(*attention)) {
	f(&m.p.readMHA.attn)
	f(&m.p.writeMHA.attn)
	for i := range m.p.enc {
		f(&m.p.enc[i].attn)
	}
}

func concat(parts ...[]float32) []float32 {
	var out []float32
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
