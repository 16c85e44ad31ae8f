package ttm

import (
	"fmt"

	"github.com/ttmrobot/ttm/internal/layer"
)

// ParamSpec names one parameter tensor: its Flax path (without the
// checkpoint prefix), shape, place in the model's flat parameter slice and
// initialiser.
type ParamSpec = layer.Spec

// Parameter groups. Each mirrors one Flax module; kernels are stored
// input-major (in, out), as Flax does. LayerNorm, Dense, MlpBlock,
// attention and TokenLearner are the layer toolkit's; MlpBlock biases
// start as scenic's, N(0, 1e-6).

// queryAttentionParams is the reference's TokenLearnerMHA.
type queryAttentionParams struct {
	tokens []float32 // (1, K, d)
	attn   layer.Attention
}

func (p *queryAttentionParams) register(t *layer.Table, path string, d, heads, k int) {
	t.Add(&p.tokens, path+"/tokens", layer.PosInit, 1, k, d)
	p.attn.Register(t, path+"/attn", d, heads)
}

// addEraseParams is the reference's TokenAddEraseWrite.
type addEraseParams struct {
	ln  [3]layer.LayerNorm // on M, on O for erase, on O for add
	mlp [5]layer.MLP       // select d->h->Kw, erase r->h->Kw, d->h->d, add r->h->Kw, d->h->d
}

func (p *addEraseParams) register(t *layer.Table, path string, c Config) {
	d, h, kw, r := c.Dim, c.SummariserHidden, c.WriteHeads, c.ProcessSize
	for i := range p.ln {
		p.ln[i].Register(t, fmt.Sprintf("%s/LayerNorm_%d", path, i), d)
	}
	shapes := [5][2]int{{d, kw}, {r, kw}, {d, d}, {r, kw}, {d, d}}
	for i, s := range shapes {
		p.mlp[i].Register(t, fmt.Sprintf("%s/MlpBlock_%d", path, i), s[0], h, s[1], layer.MLPBias)
	}
}

type encoderBlock struct {
	ln0  layer.LayerNorm
	attn layer.Attention
	ln1  layer.LayerNorm
	mlp  layer.MLP
}

type mixerBlock struct {
	ln0     layer.LayerNorm
	token   layer.MLP // r -> mixer_token_dim -> r, along the token axis
	ln1     layer.LayerNorm
	channel layer.MLP // d -> mlp_dim -> d
}

// params are the weights of one TTM, as views into one flat slice.
type params struct {
	readPos, writePos []float32 // (1, m+n, d), (1, m+n+r, d); only with positional embeddings

	readTL, writeTL   layer.TokenLearner
	readMHA, writeMHA queryAttentionParams
	addErase          addEraseParams

	encPos  []float32 // (1, r, d)
	enc     []encoderBlock
	encNorm layer.LayerNorm

	mix     []mixerBlock
	mixNorm layer.LayerNorm

	mlpNorms  []layer.LayerNorm // num_layers + 1
	mlpBlocks []layer.MLP
}

// register lists every parameter of c in checkpoint order, with its Flax name.
func (p *params) register(t *layer.Table, c Config) {
	m, n, r, d, h := c.MemorySize, c.InputTokens, c.ProcessSize, c.Dim, c.SummariserHidden
	if c.UsePositionalEmbedding {
		t.Add(&p.readPos, "read_pos_embed/pos_embedding", layer.PosInit, 1, m+n, d)
		t.Add(&p.writePos, "write_pos_embed/pos_embedding", layer.PosInit, 1, m+n+r, d)
	}
	switch c.MemoryMode {
	case TokenLearner:
		p.readTL.Register(t, "TokenLearnerModuleV11_0", d, h, r, layer.MLPBias)
		p.writeTL.Register(t, "TokenLearnerModuleV11_1", d, h, m, layer.MLPBias)
	case AddErase:
		p.readTL.Register(t, "TokenLearnerModuleV11_0", d, h, r, layer.MLPBias)
		p.addErase.register(t, "TokenAddEraseWrite_0", c)
	case QueryAttention:
		p.readMHA.register(t, "TokenLearnerMHA_0", d, c.SummariserHeads, r)
		p.writeMHA.register(t, "TokenLearnerMHA_1", d, c.SummariserHeads, m)
	case Pool:
	}
	switch c.ProcessingUnit {
	case Transformer:
		t.Add(&p.encPos, "Encoder_0/posembed_input/pos_embedding", layer.PosInit, 1, r, d)
		p.enc = make([]encoderBlock, c.NumLayers)
		for l := range p.enc {
			b := &p.enc[l]
			path := fmt.Sprintf("Encoder_0/encoderblock_%d", l)
			b.ln0.Register(t, path+"/LayerNorm_0", d)
			b.attn.Register(t, path+"/MultiHeadDotProductAttention_0", d, c.NumHeads)
			b.ln1.Register(t, path+"/LayerNorm_1", d)
			b.mlp.Register(t, path+"/MlpBlock_0", d, c.MLPDim, d, layer.MLPBias)
		}
		p.encNorm.Register(t, "Encoder_0/encoder_norm", d)
	case Mixer:
		p.mix = make([]mixerBlock, c.NumLayers)
		for l := range p.mix {
			b := &p.mix[l]
			path := fmt.Sprintf("MixerBlock_%d", l)
			b.ln0.Register(t, path+"/LayerNorm_0", d)
			b.token.Register(t, path+"/token_mixing", r, c.MixerTokenDim, r, layer.MLPBias)
			b.ln1.Register(t, path+"/LayerNorm_1", d)
			b.channel.Register(t, path+"/channel_mixing", d, c.MLPDim, d, layer.MLPBias)
		}
		p.mixNorm.Register(t, "LayerNorm_0", d)
	case MLP:
		p.mlpNorms = make([]layer.LayerNorm, c.NumLayers+1)
		p.mlpBlocks = make([]layer.MLP, c.NumLayers)
		for l := range p.mlpBlocks {
			p.mlpNorms[l].Register(t, fmt.Sprintf("LayerNorm_%d", l), d)
			p.mlpBlocks[l].Register(t, fmt.Sprintf("MlpBlock_%d", l), d, c.MLPDim, d, layer.MLPBias)
		}
		p.mlpNorms[c.NumLayers].Register(t, fmt.Sprintf("LayerNorm_%d", c.NumLayers), d)
	}
}
