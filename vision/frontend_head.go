package vision

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ttmrobot/ttm/internal/nn"
)

// ParamSpec names one parameter tensor of the head: its name under
// Prefix, its shape, and its place in the flat parameter slice.
type ParamSpec struct {
	Name   string
	Shape  []int
	Offset int
	Size   int
	init   paramInit
}

// paramInit says how Init fills a tensor.
type paramInit struct {
	kind          paramInitKind
	fanIn, fanOut int     // xavier
	std           float64 // normal
	value         float64 // const
	gridWidth     int     // sincos2d: positions per row
}

type paramInitKind int

const (
	initZeros paramInitKind = iota
	initOnes
	initXavier
	initNormal
	initSinCos2D
	initConst
)

func (in paramInit) fill(dst []float32, r *rand.Rand) {
	switch in.kind {
	case initZeros:
		clear(dst)
	case initOnes:
		for i := range dst {
			dst[i] = 1
		}
	case initXavier:
		limit := math.Sqrt(6 / float64(in.fanIn+in.fanOut))
		for i := range dst {
			dst[i] = float32((2*r.Float64() - 1) * limit)
		}
	case initNormal:
		for i := range dst {
			dst[i] = float32(r.NormFloat64() * in.std)
		}
	case initConst:
		for i := range dst {
			dst[i] = float32(in.value)
		}
	case initSinCos2D:
		sinCos2D(dst, in.gridWidth, in.fanOut)
	default:
		panic(fmt.Sprintf("vision: unknown initialiser %d", in.kind))
	}
}

// HeadParams are the head's tensors as views of one flat slice: the
// parameters themselves, or gradients and optimiser moments of the same
// layout (see Head.View).
type HeadParams struct {
	ProjKernel   []float32 // (C, d): the 1x1 convolution, input-major as Flax stores it
	ProjBias     []float32 // (d)
	PosEmbed     []float32 // (Positions, d), or nil without positional embedding
	FiLM         FiLMParams
	TokenLearner TokenLearnerParams
	Keypoints    KeypointParams // nil views without HeadConfig.Keypoints
}

// Head is the trainable Go side of the front end: a 1x1 projection of the
// backbone's feature map to d channels, FiLM from the instruction
// embedding (unless the backbone applies it), and TokenLearner to K tokens.
// A Head is read-only while FrontEnds run on it.
type Head struct {
	Config HeadConfig
	Params []float32   // every parameter, in Specs order
	Specs  []ParamSpec // name, shape and offset of each tensor
	P      HeadParams  // views of Params
}

// NewHead allocates a head for c (defaults applied) with all parameters zero.
func NewHead(c HeadConfig) (*Head, error) {
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	h := &Head{Config: c}
	h.Specs = headSpecs(c)
	last := h.Specs[len(h.Specs)-1]
	h.Params = make([]float32, last.Offset+last.Size)
	h.P = h.View(h.Params)
	return h, nil
}

// headSpecs lists the tensors of a head in checkpoint order, with names in
// Flax style: the TokenLearner under scenic's module names.
func headSpecs(c HeadConfig) []ParamSpec {
	C, d, e, k, hid := c.FeatureChannels, c.Dim, c.EmbeddingDim, c.Tokens, c.TokenLearnerHidden
	var specs []ParamSpec
	off := 0
	add := func(name string, in paramInit, shape ...int) {
		n := 1
		for _, s := range shape {
			n *= s
		}
		specs = append(specs, ParamSpec{Name: name, Shape: shape, Offset: off, Size: n, init: in})
		off += n
	}
	zeros, ones := paramInit{kind: initZeros}, paramInit{kind: initOnes}
	xavier := func(in, out int) paramInit { return paramInit{kind: initXavier, fanIn: in, fanOut: out} }
	mlpBias := paramInit{kind: initNormal, std: 1e-6} // scenic MlpBlock
	add("conv1x1/kernel", xavier(C, d), C, d)
	add("conv1x1/bias", zeros, d)
	switch {
	case c.Positions > 0 && c.PositionGridWidth > 0:
		add("pos_embedding", paramInit{kind: initSinCos2D, gridWidth: c.PositionGridWidth, fanOut: d}, c.Positions, d)
	case c.Positions > 0:
		add("pos_embedding", paramInit{kind: initNormal, std: 0.02}, c.Positions, d)
	}
	if c.FiLM == FiLMHead {
		add("film/mult/kernel", zeros, e, d)
		add("film/mult/bias", zeros, d)
		add("film/add/kernel", zeros, e, d)
		add("film/add/bias", zeros, d)
	}
	tl := "TokenLearnerModuleV11_0/"
	add(tl+"LayerNorm_0/scale", ones, d)
	add(tl+"LayerNorm_0/bias", zeros, d)
	add(tl+"token_masking/Dense_0/kernel", xavier(d, hid), d, hid)
	add(tl+"token_masking/Dense_0/bias", mlpBias, hid)
	if c.Keypoints {
		k--
	}
	add(tl+"token_masking/Dense_1/kernel", xavier(hid, k), hid, k)
	add(tl+"token_masking/Dense_1/bias", mlpBias, k)
	if c.Keypoints {
		add("keypoints/log_scale", paramInit{kind: initConst, value: KeypointLogScaleInit}, d)
		add("keypoints/dense/kernel", xavier(2*d, d), 2*d, d)
		add("keypoints/dense/bias", zeros, d)
	}
	return specs
}

// View cuts flat, which must have NumParams elements, into the head's
// tensors. Views are full slice expressions: an append cannot spill into
// the next tensor.
func (h *Head) View(flat []float32) HeadParams {
	if len(flat) != len(h.Params) {
		panic(fmt.Sprintf("vision: Head.View of %d floats, the head has %d", len(flat), len(h.Params)))
	}
	v := map[string][]float32{}
	for _, s := range h.Specs {
		v[s.Name] = flat[s.Offset : s.Offset+s.Size : s.Offset+s.Size]
	}
	tl := "TokenLearnerModuleV11_0/"
	return HeadParams{
		ProjKernel: v["conv1x1/kernel"],
		ProjBias:   v["conv1x1/bias"],
		PosEmbed:   v["pos_embedding"],
		FiLM: FiLMParams{
			MultKernel: v["film/mult/kernel"], MultBias: v["film/mult/bias"],
			AddKernel: v["film/add/kernel"], AddBias: v["film/add/bias"],
		},
		TokenLearner: TokenLearnerParams{
			LNScale: v[tl+"LayerNorm_0/scale"], LNBias: v[tl+"LayerNorm_0/bias"],
			Kernel0: v[tl+"token_masking/Dense_0/kernel"], Bias0: v[tl+"token_masking/Dense_0/bias"],
			Kernel1: v[tl+"token_masking/Dense_1/kernel"], Bias1: v[tl+"token_masking/Dense_1/bias"],
		},
		Keypoints: KeypointParams{LogScale: v["keypoints/log_scale"], Kernel: v["keypoints/dense/kernel"], Bias: v["keypoints/dense/bias"]},
	}
}

// NumParams is the number of float32 parameters.
func (h *Head) NumParams() int { return len(h.Params) }

// Init fills the parameters deterministically for a seed: xavier-uniform
// kernels, N(0, 1e-6) TokenLearner MLP biases, unit LayerNorm scale, and
// zeros elsewhere; FiLM is all zeros, so it starts as the identity.
func (h *Head) Init(seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x7669_7369_6f6e_2f68)) // "vision/h"
	for _, s := range h.Specs {
		s.init.fill(h.Params[s.Offset:s.Offset+s.Size], r)
	}
}

// HeadActs holds one frame's activations through the head (what the
// backward pass needs) and scratch space. N is fixed when it is made.
type HeadActs struct {
	N     int
	Proj  []float32 // (N, d) after the 1x1 projection
	Gamma []float32 // (d) FiLM scale, e·W_m + b_m
	Beta  []float32 // (d) FiLM shift, e·W_a + b_a
	FiLM  []float32 // (N, d) after FiLM: TokenLearner's input
	TL    *TokenLearnerActs
	KP    *KeypointActs // nil without keypoints

	dX, dProj, dGamma, dBeta []float32 // backward scratch: (N, d), (N, d), (d), (d)
}

// NewActs allocates activations for a feature map of n positions.
func (h *Head) NewActs(n int) *HeadActs {
	c := h.Config
	d := c.Dim
	a := &HeadActs{
		N: n, Proj: make([]float32, n*d), Gamma: make([]float32, d), Beta: make([]float32, d),
		FiLM: make([]float32, n*d), TL: NewTokenLearnerActs(n, d, c.TokenLearnerHidden, h.learnedTokens()),
		dX: make([]float32, n*d), dProj: make([]float32, n*d), dGamma: make([]float32, d), dBeta: make([]float32, d),
	}
	if c.Keypoints {
		a.KP = NewKeypointActs(n, d, c.PositionGridWidth)
	}
	return a
}

// ProjectForward applies the 1x1 convolution to a channel-major feature
// map: out[p] = Σ_c feat[c, p]·w[c] + b, so each of the N positions becomes
// one token. feat (C, N) as the backbone writes it, w (C, d), b (d),
// out (N, d).
func ProjectForward(out, feat, w, b []float32, c, n, d int) {
	mustHave("ProjectForward feat", feat, c*n)
	mustHave("ProjectForward w", w, c*d)
	nn.SetRows(out, b, n, d)
	nn.Gemm(true, false, n, d, c, 1, feat, n, w, d, 1, out, d)
}

// ProjectBackward accumulates the gradients of ProjectForward; dFeat
// (C, N) may be nil.
func ProjectBackward(dFeat, dW, dB, dOut, feat, w []float32, c, n, d int) {
	mustHave("ProjectBackward dOut", dOut, n*d)
	nn.SumRows(dB, dOut, n, d)
	nn.Gemm(false, false, c, d, n, 1, feat, n, dOut, d, 1, dW, d)
	if dFeat != nil {
		nn.Gemm(false, true, c, n, d, 1, w, d, dOut, d, 1, dFeat, n)
	}
}

// Forward computes one frame's K tokens, out (K, d), from its feature map
// feat (C, N) and the instruction embedding e (E; unused when the backbone
// applies FiLM), keeping the activations in a. It does not allocate.
func (h *Head) Forward(out []float32, a *HeadActs, feat, e []float32) {
	c := h.Config
	n, d := a.N, c.Dim
	ProjectForward(a.Proj, feat, h.P.ProjKernel, h.P.ProjBias, c.FeatureChannels, n, d)
	if h.P.PosEmbed != nil {
		mustHave("Head.Forward positions", h.P.PosEmbed, n*d)
		nn.Add(a.Proj, h.P.PosEmbed[:n*d])
	}
	x := a.Proj
	if c.FiLM == FiLMHead {
		mustHave("Head.Forward embedding", e, c.EmbeddingDim)
		FiLMCoefficients(a.Gamma, a.Beta, e, &h.P.FiLM, c.EmbeddingDim, d)
		FiLMForward(a.FiLM, a.Proj, a.Gamma, a.Beta, n, d)
		x = a.FiLM
	}
	k := h.learnedTokens()
	TokenLearnerForward(out[:k*d], a.TL, x, &h.P.TokenLearner, float32(c.LayerNormEps))
	if c.Keypoints {
		KeypointsForward(out[k*d:(k+1)*d], a.KP, x, &h.P.Keypoints)
	}
}

// learnedTokens is the number of TokenLearner tokens: all of Tokens, or
// all but the keypoint token.
func (h *Head) learnedTokens() int {
	if h.Config.Keypoints {
		return h.Config.Tokens - 1
	}
	return h.Config.Tokens
}

// Backward accumulates the gradients of Forward into g (a View of a
// gradient slice) and, unless nil, into dEmb (E) and dFeat (C, N).
// dOut (K, d); a, feat and e are the forward pass's. It does not allocate.
func (h *Head) Backward(g *HeadParams, dEmb, dFeat, dOut []float32, a *HeadActs, feat, e []float32) {
	c := h.Config
	n, d := a.N, c.Dim
	dProj := a.dProj
	clear(dProj)
	k := h.learnedTokens()
	if c.FiLM == FiLMHead {
		clear(a.dX)
		TokenLearnerBackward(a.dX, &g.TokenLearner, dOut[:k*d], a.TL, a.FiLM, &h.P.TokenLearner)
		if c.Keypoints {
			KeypointsBackward(a.dX, &g.Keypoints, dOut[k*d:(k+1)*d], a.KP, a.FiLM, &h.P.Keypoints)
		}
		clear(a.dGamma)
		clear(a.dBeta)
		FiLMBackward(dProj, a.dGamma, a.dBeta, a.dX, a.Proj, a.Gamma, n, d)
		FiLMCoefficientsBackward(dEmb, &g.FiLM, a.dGamma, a.dBeta, e, &h.P.FiLM, c.EmbeddingDim, d)
	} else {
		TokenLearnerBackward(dProj, &g.TokenLearner, dOut[:k*d], a.TL, a.Proj, &h.P.TokenLearner)
		if c.Keypoints {
			KeypointsBackward(dProj, &g.Keypoints, dOut[k*d:(k+1)*d], a.KP, a.Proj, &h.P.Keypoints)
		}
	}
	if g.PosEmbed != nil {
		nn.Add(g.PosEmbed[:n*d], dProj)
	}
	ProjectBackward(dFeat, g.ProjKernel, g.ProjBias, dProj, feat, h.P.ProjKernel, c.FeatureChannels, n, d)
}

// sinCos2D writes the 2-D sine-cosine code of a grid of positions, width
// per row, into dst (positions, d), scaled by 1/2 so that it does not drown
// the projected features: the first half of each row codes the row index,
// the second half the column, each as sin and cos pairs at frequencies from
// one radian per position down to 1/100 (a grid of tens of positions
// needs none lower).
func sinCos2D(dst []float32, width, d int) {
	const scale, lowest = 0.5, 0.01
	q := d / 4 // frequencies per axis
	for p := range len(dst) / d {
		row := dst[p*d : (p+1)*d]
		clear(row)
		for axis, x := range [2]float64{float64(p / width), float64(p % width)} {
			for k := range q {
				w := math.Pow(lowest, float64(k)/float64(max(q-1, 1)))
				row[axis*2*q+2*k] = float32(scale * math.Sin(x*w))
				row[axis*2*q+2*k+1] = float32(scale * math.Cos(x*w))
			}
		}
	}
}
