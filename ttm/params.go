package ttm

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ttmrobot/ttm/internal/nn"
)

// ParamSpec names one parameter tensor: its Flax path (without the
// checkpoint prefix), shape, and place in the model's flat parameter slice.
type ParamSpec struct {
	Name   string
	Shape  []int
	Offset int
	Size   int
	init   initializer
}

// initializer fills a new parameter the way Flax initialises it.
type initializer struct {
	kind          initKind
	fanIn, fanOut int     // xavier
	std           float64 // normal
}

type initKind int

const (
	initZeros initKind = iota
	initOnes
	initXavierUniform
	initNormal
)

func (in initializer) fill(dst []float32, r *rand.Rand) {
	switch in.kind {
	case initZeros:
		clear(dst)
	case initOnes:
		for i := range dst {
			dst[i] = 1
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
		panic(fmt.Sprintf("ttm: unknown initializer %d", in.kind))
	}
}

// paramTable collects parameter specs and the struct fields that will view
// them; allocate then cuts one flat slice into those views.
type paramTable struct {
	specs []ParamSpec
	dests []*[]float32
	size  int
}

func (t *paramTable) add(dst *[]float32, name string, in initializer, shape ...int) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	t.specs = append(t.specs, ParamSpec{Name: name, Shape: shape, Offset: t.size, Size: n, init: in})
	t.dests = append(t.dests, dst)
	t.size += n
}

func (t *paramTable) allocate() []float32 {
	flat := make([]float32, t.size)
	for i, s := range t.specs {
		*t.dests[i] = flat[s.Offset : s.Offset+s.Size : s.Offset+s.Size]
	}
	return flat
}

func xavier(fanIn, fanOut int) initializer {
	return initializer{kind: initXavierUniform, fanIn: fanIn, fanOut: fanOut}
}

var (
	zeros   = initializer{kind: initZeros}
	ones    = initializer{kind: initOnes}
	posInit = initializer{kind: initNormal, std: 0.02} // positional embeddings, query tokens (BERT)
	mlpBias = initializer{kind: initNormal, std: 1e-6} // scenic MlpBlock biases
)

// Parameter groups. Each mirrors one Flax module; kernels are stored
// input-major (in, out), as Flax does.

type layerNorm struct {
	scale, bias []float32 // (d)
}

func (ln *layerNorm) register(t *paramTable, path string, d int) {
	t.add(&ln.scale, path+"/scale", ones, d)
	t.add(&ln.bias, path+"/bias", zeros, d)
}

type dense struct {
	kernel []float32 // (in, out)
	bias   []float32 // (out)
	in     int
	out    int

	packed *nn.Packed // kernel laid out for nn.MatMulPacked; nil until Model.prepack
}

func (l *dense) register(t *paramTable, path string, in, out int, bias initializer) {
	l.in, l.out = in, out
	t.add(&l.kernel, path+"/kernel", xavier(in, out), in, out)
	t.add(&l.bias, path+"/bias", bias, out)
}

// mlpBlock is scenic's MlpBlock: Dense_0 -> gelu -> Dense_1.
type mlpBlock struct {
	d0, d1 dense
}

func (b *mlpBlock) register(t *paramTable, path string, in, hidden, out int) {
	b.d0.register(t, path+"/Dense_0", in, hidden, mlpBias)
	b.d1.register(t, path+"/Dense_1", hidden, out, mlpBias)
}

// attention is Flax's MultiHeadDotProductAttention with query, key, value
// kernels (d, H, dh) and out kernel (H, dh, d). Stored row-major, (d, H, dh)
// is the (d, d) matrix whose columns are grouped by head, so each is a dense.
type attention struct {
	query, key, value, out dense
	heads                  int

	// Fused products built by Model.prepack: [query | key | value] for
	// self-attention, [key | value] for cross-attention, with their biases.
	qkv, kv         *nn.Packed
	qkvBias, kvBias []float32
}

func (a *attention) register(t *paramTable, path string, d, heads int) {
	a.heads = heads
	dh := d / heads
	for _, p := range []struct {
		l    *dense
		name string
	}{{&a.query, "query"}, {&a.key, "key"}, {&a.value, "value"}} {
		p.l.in, p.l.out = d, d
		t.add(&p.l.kernel, path+"/"+p.name+"/kernel", xavier(d, d), d, heads, dh)
		t.add(&p.l.bias, path+"/"+p.name+"/bias", zeros, heads, dh)
	}
	a.out.in, a.out.out = d, d
	t.add(&a.out.kernel, path+"/out/kernel", xavier(d, d), heads, dh, d)
	t.add(&a.out.bias, path+"/out/bias", zeros, d)
}

// tokenLearnerParams is scenic's TokenLearnerModuleV11.
type tokenLearnerParams struct {
	ln  layerNorm
	mlp mlpBlock // token_masking: d -> hidden -> K
}

func (p *tokenLearnerParams) register(t *paramTable, path string, d, hidden, k int) {
	p.ln.register(t, path+"/LayerNorm_0", d)
	p.mlp.register(t, path+"/token_masking", d, hidden, k)
}

// queryAttentionParams is the reference's TokenLearnerMHA.
type queryAttentionParams struct {
	tokens []float32 // (1, K, d)
	attn   attention
}

func (p *queryAttentionParams) register(t *paramTable, path string, d, heads, k int) {
	t.add(&p.tokens, path+"/tokens", posInit, 1, k, d)
	p.attn.register(t, path+"/attn", d, heads)
}

// addEraseParams is the reference's TokenAddEraseWrite.
type addEraseParams struct {
	ln  [3]layerNorm // on M, on O for erase, on O for add
	mlp [5]mlpBlock  // select d->h->Kw, erase r->h->Kw, d->h->d, add r->h->Kw, d->h->d
}

func (p *addEraseParams) register(t *paramTable, path string, c Config) {
	d, h, kw, r := c.Dim, c.SummariserHidden, c.WriteHeads, c.ProcessSize
	for i := range p.ln {
		p.ln[i].register(t, fmt.Sprintf("%s/LayerNorm_%d", path, i), d)
	}
	shapes := [5][2]int{{d, kw}, {r, kw}, {d, d}, {r, kw}, {d, d}}
	for i, s := range shapes {
		p.mlp[i].register(t, fmt.Sprintf("%s/MlpBlock_%d", path, i), s[0], h, s[1])
	}
}

type encoderBlock struct {
	ln0  layerNorm
	attn attention
	ln1  layerNorm
	mlp  mlpBlock
}

type mixerBlock struct {
	ln0     layerNorm
	token   mlpBlock // r -> mixer_token_dim -> r, along the token axis
	ln1     layerNorm
	channel mlpBlock // d -> mlp_dim -> d
}

// params are the weights of one TTM, as views into one flat slice.
type params struct {
	readPos, writePos []float32 // (1, m+n, d), (1, m+n+r, d); only with positional embeddings

	readTL, writeTL   tokenLearnerParams
	readMHA, writeMHA queryAttentionParams
	addErase          addEraseParams

	encPos  []float32 // (1, r, d)
	enc     []encoderBlock
	encNorm layerNorm

	mix     []mixerBlock
	mixNorm layerNorm

	mlpNorms  []layerNorm // num_layers + 1
	mlpBlocks []mlpBlock
}

// register lists every parameter of c in checkpoint order, with its Flax name.
func (p *params) register(t *paramTable, c Config) {
	m, n, r, d, h := c.MemorySize, c.InputTokens, c.ProcessSize, c.Dim, c.SummariserHidden
	if c.UsePositionalEmbedding {
		t.add(&p.readPos, "read_pos_embed/pos_embedding", posInit, 1, m+n, d)
		t.add(&p.writePos, "write_pos_embed/pos_embedding", posInit, 1, m+n+r, d)
	}
	switch c.MemoryMode {
	case TokenLearner:
		p.readTL.register(t, "TokenLearnerModuleV11_0", d, h, r)
		p.writeTL.register(t, "TokenLearnerModuleV11_1", d, h, m)
	case AddErase:
		p.readTL.register(t, "TokenLearnerModuleV11_0", d, h, r)
		p.addErase.register(t, "TokenAddEraseWrite_0", c)
	case QueryAttention:
		p.readMHA.register(t, "TokenLearnerMHA_0", d, c.SummariserHeads, r)
		p.writeMHA.register(t, "TokenLearnerMHA_1", d, c.SummariserHeads, m)
	case Pool:
	}
	switch c.ProcessingUnit {
	case Transformer:
		t.add(&p.encPos, "Encoder_0/posembed_input/pos_embedding", posInit, 1, r, d)
		p.enc = make([]encoderBlock, c.NumLayers)
		for l := range p.enc {
			b := &p.enc[l]
			path := fmt.Sprintf("Encoder_0/encoderblock_%d", l)
			b.ln0.register(t, path+"/LayerNorm_0", d)
			b.attn.register(t, path+"/MultiHeadDotProductAttention_0", d, c.NumHeads)
			b.ln1.register(t, path+"/LayerNorm_1", d)
			b.mlp.register(t, path+"/MlpBlock_0", d, c.MLPDim, d)
		}
		p.encNorm.register(t, "Encoder_0/encoder_norm", d)
	case Mixer:
		p.mix = make([]mixerBlock, c.NumLayers)
		for l := range p.mix {
			b := &p.mix[l]
			path := fmt.Sprintf("MixerBlock_%d", l)
			b.ln0.register(t, path+"/LayerNorm_0", d)
			b.token.register(t, path+"/token_mixing", r, c.MixerTokenDim, r)
			b.ln1.register(t, path+"/LayerNorm_1", d)
			b.channel.register(t, path+"/channel_mixing", d, c.MLPDim, d)
		}
		p.mixNorm.register(t, "LayerNorm_0", d)
	case MLP:
		p.mlpNorms = make([]layerNorm, c.NumLayers+1)
		p.mlpBlocks = make([]mlpBlock, c.NumLayers)
		for l := range p.mlpBlocks {
			p.mlpNorms[l].register(t, fmt.Sprintf("LayerNorm_%d", l), d)
			p.mlpBlocks[l].register(t, fmt.Sprintf("MlpBlock_%d", l), d, c.MLPDim, d)
		}
		p.mlpNorms[c.NumLayers].register(t, fmt.Sprintf("LayerNorm_%d", c.NumLayers), d)
	}
}
