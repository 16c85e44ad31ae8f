package ttm

import "github.com/ttmrobot/ttm/internal/nn"

// A processor maps the r read tokens to r output tokens: out, in (r, d).
type processor interface {
	process(out, in []float32)
}

var (
	_ processor = (*transformerUnit)(nil)
	_ processor = (*mixerUnit)(nil)
	_ processor = (*mlpUnit)(nil)
)

// transformerUnit is the reference's pre-LayerNorm ViT encoder:
//
//	x = Z + P_proc
//	x = x + MHA(LN_0(x));  x = x + MLP(LN_1(x))   for each block
//	O = LN_final(x)
type transformerUnit struct {
	p           *params
	r, d        int
	eps         float32
	x, y, z     []float32 // (r, d)
	qkv         []float32 // (r, 3d)
	att         []float32 // (H, r, r)
	o           []float32 // (r, d)
	hidden      []float32 // (r, mlp)
	packScratch []float32
}

func newTransformerUnit(p *params, c Config, pack []float32) *transformerUnit {
	r, d := c.ProcessSize, c.Dim
	return &transformerUnit{
		p: p, r: r, d: d, eps: float32(c.LayerNormEps),
		x: make([]float32, r*d), y: make([]float32, r*d), z: make([]float32, r*d),
		qkv: make([]float32, 3*r*d), att: make([]float32, c.NumHeads*r*r), o: make([]float32, r*d),
		hidden: make([]float32, r*c.MLPDim), packScratch: pack,
	}
}

func (u *transformerUnit) process(out, in []float32) {
	r, d := u.r, u.d
	copy(u.x, in[:r*d])
	nn.Add(u.x, u.p.encPos)
	for i := range u.p.enc {
		b := &u.p.enc[i]
		b.ln0.Forward(u.y, u.x, r, d, u.eps)
		b.attn.SelfAttention(u.z, u.qkv, u.att, u.o, u.y, r, d, u.packScratch)
		nn.Add(u.x, u.z)
		b.ln1.Forward(u.y, u.x, r, d, u.eps)
		b.mlp.Forward(u.z, u.hidden, u.y, r, u.packScratch)
		nn.Add(u.x, u.z)
	}
	u.p.encNorm.Forward(out, u.x, r, d, u.eps)
}

// mixerUnit is MLP-Mixer: token mixing along the r axis (r -> 128 -> r),
// channel mixing along d, both residual, then a final LayerNorm.
type mixerUnit struct {
	p           *params
	r, d        int
	eps         float32
	x, y, z     []float32 // (r, d)
	tokHidden   []float32 // (mixer_token_dim, d)
	hidden      []float32 // (r, mlp)
	packScratch []float32
}

func newMixerUnit(p *params, c Config, pack []float32) *mixerUnit {
	r, d := c.ProcessSize, c.Dim
	return &mixerUnit{
		p: p, r: r, d: d, eps: float32(c.LayerNormEps),
		x: make([]float32, r*d), y: make([]float32, r*d), z: make([]float32, r*d),
		tokHidden: make([]float32, c.MixerTokenDim*d), hidden: make([]float32, r*c.MLPDim), packScratch: pack,
	}
}

func (u *mixerUnit) process(out, in []float32) {
	r, d := u.r, u.d
	copy(u.x, in[:r*d])
	for i := range u.p.mix {
		b := &u.p.mix[i]
		b.ln0.Forward(u.y, u.x, r, d, u.eps)
		b.token.ForwardTokens(u.z, u.tokHidden, u.y, d)
		nn.Add(u.x, u.z)
		b.ln1.Forward(u.y, u.x, r, d, u.eps)
		b.channel.Forward(u.z, u.hidden, u.y, r, u.packScratch)
		nn.Add(u.x, u.z)
	}
	u.p.mixNorm.Forward(out, u.x, r, d, u.eps)
}

// mlpUnit is the reference's MLP processing unit: x = MLP(LN(x)) per layer,
// with no residual connection, then a final LayerNorm.
type mlpUnit struct {
	p           *params
	r, d        int
	eps         float32
	x, y        []float32 // (r, d)
	hidden      []float32 // (r, mlp)
	packScratch []float32
}

func newMLPUnit(p *params, c Config, pack []float32) *mlpUnit {
	r, d := c.ProcessSize, c.Dim
	return &mlpUnit{
		p: p, r: r, d: d, eps: float32(c.LayerNormEps),
		x: make([]float32, r*d), y: make([]float32, r*d),
		hidden: make([]float32, r*c.MLPDim), packScratch: pack,
	}
}

func (u *mlpUnit) process(out, in []float32) {
	r, d := u.r, u.d
	copy(u.x, in[:r*d])
	for i := range u.p.mlpBlocks {
		u.p.mlpNorms[i].Forward(u.y, u.x, r, d, u.eps)
		u.p.mlpBlocks[i].Forward(u.x, u.hidden, u.y, r, u.packScratch)
	}
	u.p.mlpNorms[len(u.p.mlpBlocks)].Forward(out, u.x, r, d, u.eps)
}
