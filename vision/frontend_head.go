package vision

import (
	"fmt"
	"math/rand/v2"

	"github.com/ttmrobot/ttm/internal/layer"
	"github.com/ttmrobot/ttm/internal/nn"
	"github.com/ttmrobot/ttm/internal/nn/cvec"
)

// ParamSpec names one parameter tensor of the head: its name under
// Prefix, its shape, its place in the flat parameter slice and its
// initialiser.
type ParamSpec = layer.Spec

// HeadParams are the head's tensors as views of one flat slice: the
// parameters themselves, or gradients and optimiser moments of the same
// layout (see Head.View).
type HeadParams struct {
	Hidden       HiddenParams // nil views without HeadConfig.Hidden
	ProjKernel   []float32    // (C, d), or (Hidden, d): the 1x1 convolution, input-major as Flax stores it
	ProjBias     []float32    // (d)
	PosEmbed     []float32    // (Positions, d), or nil without positional embedding
	FiLM         FiLMParams
	TokenLearner layer.TokenLearner
	Keypoints    KeypointParams // nil views without HeadConfig.Keypoints
}

// HiddenParams are the tensors of the per-position stage before the
// projection (HeadConfig.Hidden).
type HiddenParams struct {
	Kernel  []float32 // (C, Hidden), or (3, 3, C, Hidden) for a 3x3 kernel
	Bias    []float32 // (Hidden)
	FiLM    FiLMParams
	Kernel2 []float32 // (3, 3, Hidden, Hidden): the second stage (HiddenDepth 2), or nil
	Bias2   []float32 // (Hidden)
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
	add := func(name string, in layer.Init, shape ...int) {
		n := 1
		for _, s := range shape {
			n *= s
		}
		specs = append(specs, ParamSpec{Name: name, Shape: shape, Offset: off, Size: n, Init: in})
		off += n
	}
	zeros, ones, mlpBias, xavier := layer.Zeros, layer.Ones, layer.MLPBias, layer.Xavier
	projIn := C
	if c.Hidden > 0 {
		projIn = c.Hidden
		if c.HiddenKernel == 3 {
			add("hidden/conv3x3/kernel", xavier(9*C, c.Hidden), 3, 3, C, c.Hidden)
			add("hidden/conv3x3/bias", zeros, c.Hidden)
		} else {
			add("hidden/conv1x1/kernel", xavier(C, c.Hidden), C, c.Hidden)
			add("hidden/conv1x1/bias", zeros, c.Hidden)
		}
		if c.FiLM == FiLMHead {
			add("hidden/film/mult/kernel", zeros, e, c.Hidden)
			add("hidden/film/mult/bias", zeros, c.Hidden)
			add("hidden/film/add/kernel", zeros, e, c.Hidden)
			add("hidden/film/add/bias", zeros, c.Hidden)
		}
		if c.HiddenDepth == 2 {
			add("hidden/conv3x3_2/kernel", xavier(9*c.Hidden, c.Hidden), 3, 3, c.Hidden, c.Hidden)
			add("hidden/conv3x3_2/bias", zeros, c.Hidden)
		}
	}
	add("conv1x1/kernel", xavier(projIn, d), projIn, d)
	add("conv1x1/bias", zeros, d)
	switch {
	case c.Positions > 0 && c.PositionGridWidth > 0:
		add("pos_embedding", layer.SinCos2D(c.PositionGridWidth, d), c.Positions, d)
	case c.Positions > 0:
		add("pos_embedding", layer.PosInit, c.Positions, d)
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
		add("keypoints/log_scale", layer.Const(float32(KeypointLogScaleInit)), d)
		add("keypoints/dense/kernel", xavier(2*d, d), 2*d, d)
		add("keypoints/dense/bias", zeros, d)
	}
	if c.LyingProbe {
		add("keypoints/lying/kernel", zeros, d, 1)
		add("keypoints/lying/bias", zeros, 1)
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
	c := h.Config
	v := map[string][]float32{}
	for _, s := range h.Specs {
		v[s.Name] = flat[s.Offset : s.Offset+s.Size : s.Offset+s.Size]
	}
	tl := "TokenLearnerModuleV11_0/"
	return HeadParams{
		Hidden: HiddenParams{Kernel: orElse(v["hidden/conv1x1/kernel"], v["hidden/conv3x3/kernel"]),
			Bias: orElse(v["hidden/conv1x1/bias"], v["hidden/conv3x3/bias"]),
			FiLM: FiLMParams{
				MultKernel: v["hidden/film/mult/kernel"], MultBias: v["hidden/film/mult/bias"],
				AddKernel: v["hidden/film/add/kernel"], AddBias: v["hidden/film/add/bias"],
			},
			Kernel2: v["hidden/conv3x3_2/kernel"], Bias2: v["hidden/conv3x3_2/bias"]},
		ProjKernel: v["conv1x1/kernel"],
		ProjBias:   v["conv1x1/bias"],
		PosEmbed:   v["pos_embedding"],
		FiLM: FiLMParams{
			MultKernel: v["film/mult/kernel"], MultBias: v["film/mult/bias"],
			AddKernel: v["film/add/kernel"], AddBias: v["film/add/bias"],
		},
		TokenLearner: layer.TokenLearner{
			LN: layer.LayerNorm{Scale: v[tl+"LayerNorm_0/scale"], Bias: v[tl+"LayerNorm_0/bias"]},
			MLP: layer.MLP{
				D0: layer.Dense{Kernel: v[tl+"token_masking/Dense_0/kernel"], Bias: v[tl+"token_masking/Dense_0/bias"], In: c.Dim, Out: c.TokenLearnerHidden},
				D1: layer.Dense{Kernel: v[tl+"token_masking/Dense_1/kernel"], Bias: v[tl+"token_masking/Dense_1/bias"], In: c.TokenLearnerHidden, Out: h.learnedTokens()},
			},
		},
		Keypoints: KeypointParams{LogScale: v["keypoints/log_scale"], Kernel: v["keypoints/dense/kernel"], Bias: v["keypoints/dense/bias"],
			LyingKernel: v["keypoints/lying/kernel"], LyingBias: v["keypoints/lying/bias"]},
	}
}

// orElse returns a, or b when a is nil.
func orElse(a, b []float32) []float32 {
	if a != nil {
		return a
	}
	return b
}

// NumParams is the number of float32 parameters.
func (h *Head) NumParams() int { return len(h.Params) }

// Init fills the parameters deterministically for a seed: xavier-uniform
// kernels, N(0, 1e-6) TokenLearner MLP biases, unit LayerNorm scale, and
// zeros elsewhere; FiLM is all zeros, so it starts as the identity.
func (h *Head) Init(seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x7669_7369_6f6e_2f68)) // "vision/h"
	for _, s := range h.Specs {
		s.Init.Fill(h.Params[s.Offset:s.Offset+s.Size], r)
	}
}

// HeadActs holds one frame's activations through the head (what the
// backward pass needs) and scratch space. N is fixed when it is made.
type HeadActs struct {
	N     int
	Hid   *HiddenActs // nil without HeadConfig.Hidden
	Proj  []float32   // (N, d) after the 1x1 projection
	Gamma []float32   // (d) FiLM scale, e·W_m + b_m
	Beta  []float32   // (d) FiLM shift, e·W_a + b_a
	FiLM  []float32   // (N, d) after FiLM: TokenLearner's input
	TL    *layer.TokenLearnerRec
	KP    *KeypointActs // nil without keypoints

	dX, dProj, dGamma, dBeta []float32 // backward scratch: (N, d), (N, d), (d), (d)
	tl                       *layer.TokenLearnerScratch
}

// NewActs allocates activations for a feature map of n positions.
func (h *Head) NewActs(n int) *HeadActs {
	c := h.Config
	d := c.Dim
	a := &HeadActs{
		N: n, Proj: make([]float32, n*d), Gamma: make([]float32, d), Beta: make([]float32, d),
		FiLM: make([]float32, n*d), TL: layer.NewTokenLearnerRec(n, d, c.TokenLearnerHidden, h.learnedTokens()),
		tl: layer.NewTokenLearnerScratch(n, d, c.TokenLearnerHidden, h.learnedTokens()),
		dX: make([]float32, n*d), dProj: make([]float32, n*d), dGamma: make([]float32, d), dBeta: make([]float32, d),
	}
	if c.Keypoints {
		a.KP = NewKeypointActs(n, d, c.PositionGridWidth, c.KeypointWindow)
		if c.LyingProbe {
			a.KP.dLying = make([]float32, n*d)
		}
	}
	if hd := c.Hidden; hd > 0 {
		a.Hid = &HiddenActs{Pre: make([]float32, n*hd), FiLM: make([]float32, n*hd), Out: make([]float32, n*hd),
			Gamma: make([]float32, hd), Beta: make([]float32, hd),
			dOut: make([]float32, n*hd), dFiLM: make([]float32, n*hd), dPre: make([]float32, n*hd),
			dGamma: make([]float32, hd), dBeta: make([]float32, hd)}
		if c.HiddenKernel == 3 {
			a.Hid.Unfolded = make([]float32, 9*c.FeatureChannels*n)
			a.Hid.dUnfolded = make([]float32, 9*c.FeatureChannels*n)
		}
		if c.HiddenDepth == 2 {
			a.Hid.First, a.Hid.FirstT = make([]float32, n*hd), make([]float32, n*hd)
			a.Hid.Unfolded2, a.Hid.Pre2 = make([]float32, 9*hd*n), make([]float32, n*hd)
			a.Hid.dUnfolded2, a.Hid.dFirstT = make([]float32, 9*hd*n), make([]float32, n*hd)
			a.Hid.Second, a.Hid.dFirst = make([]float32, n*hd), make([]float32, n*hd)
		}
	}
	return a
}

// HiddenActs are one frame's activations of the hidden stage.
type HiddenActs struct {
	Unfolded    []float32 // (9C, N) each position's 3x3 neighbourhood (a 3x3 kernel only)
	Pre         []float32 // (N, Hidden) the convolution's output
	FiLM        []float32 // (N, Hidden) after FiLM (a copy of Pre without it)
	Out         []float32 // (N, Hidden) GELU(FiLM), plus the second stage's GELU(Pre2): the projection's input
	Gamma, Beta []float32 // (Hidden)

	// The second stage (HiddenDepth 2): First = GELU(FiLM), its
	// transpose, that transpose unfolded, and its convolution's output.
	First, FirstT, Unfolded2, Pre2, Second []float32 // (N, Hidden), (Hidden, N), (9·Hidden, N), (N, Hidden), GELU(Pre2) (N, Hidden)

	dOut, dFiLM, dPre, dGamma, dBeta, dUnfolded []float32
	dUnfolded2, dFirstT, dFirst                 []float32
}

// Unfold3x3Forward writes each position's 3x3 neighbourhood of feat
// (C, N, on a grid width positions wide) into out (9C, N), channel-major
// like feat: row (ky·3 + kx)·C + c holds channel c at offset (ky-1, kx-1),
// zero beyond the map's edges. A 3x3 convolution is then a 1x1 one over
// out (im2col).
func Unfold3x3Forward(out, feat []float32, c, n, width int) {
	mustHave("Unfold3x3Forward feat", feat, c*n)
	mustHave("Unfold3x3Forward out", out, 9*c*n)
	if n%width != 0 {
		panic(fmt.Sprintf("vision: Unfold3x3Forward: %d positions are not rows of %d", n, width))
	}
	cvec.Unfold3x3(out, feat, c, n, width)
}

// Unfold3x3Backward accumulates the gradient of Unfold3x3Forward into
// dFeat (C, N) from dOut (9C, N).
func Unfold3x3Backward(dFeat, dOut []float32, c, n, width int) {
	mustHave("Unfold3x3Backward dOut", dOut, 9*c*n)
	mustHave("Unfold3x3Backward dFeat", dFeat, c*n)
	if n%width != 0 {
		panic(fmt.Sprintf("vision: Unfold3x3Backward: %d positions are not rows of %d", n, width))
	}
	cvec.Unfold3x3Backward(dFeat, dOut, c, n, width)
}

// unfold3x3BackwardGo is Unfold3x3Backward in Go: the reference the C
// kernel must equal bit for bit.
func unfold3x3BackwardGo(dFeat, dOut []float32, c, n, width int) {
	rows := n / width
	for k := range 9 {
		dy, dx := k/3-1, k%3-1
		for ch := range c {
			dst := dFeat[ch*n : (ch+1)*n]
			src := dOut[(k*c+ch)*n : (k*c+ch+1)*n]
			for y := range rows {
				sy := y + dy
				if sy < 0 || sy >= rows {
					continue
				}
				for x := range width {
					if sx := x + dx; sx >= 0 && sx < width {
						dst[sy*width+sx] += src[y*width+x]
					}
				}
			}
		}
	}
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
	if hd := c.Hidden; hd > 0 {
		ha := a.Hid
		in, inC := feat, c.FeatureChannels
		if c.HiddenKernel == 3 {
			Unfold3x3Forward(ha.Unfolded, feat, inC, n, c.PositionGridWidth)
			in, inC = ha.Unfolded, 9*inC
		}
		ProjectForward(ha.Pre, in, h.P.Hidden.Kernel, h.P.Hidden.Bias, inC, n, hd)
		if c.FiLM == FiLMHead {
			mustHave("Head.Forward embedding", e, c.EmbeddingDim)
			FiLMCoefficients(ha.Gamma, ha.Beta, e, &h.P.Hidden.FiLM, c.EmbeddingDim, hd)
			FiLMForward(ha.FiLM, ha.Pre, ha.Gamma, ha.Beta, n, hd)
		} else {
			copy(ha.FiLM, ha.Pre)
		}
		if c.HiddenDepth == 2 {
			h.secondStageForward(ha, n, hd)
		} else {
			nn.GELUForward(ha.Out, ha.FiLM)
		}
		nn.Dense(a.Proj, ha.Out, h.P.ProjKernel, h.P.ProjBias, n, hd, d)
	} else {
		ProjectForward(a.Proj, feat, h.P.ProjKernel, h.P.ProjBias, c.FeatureChannels, n, d)
	}
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
	layer.TokenLearnerForward(out[:k*d], a.TL, x, &h.P.TokenLearner, float32(c.LayerNormEps))
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
		layer.TokenLearnerBackward(a.dX, &g.TokenLearner, dOut[:k*d], a.TL, a.tl, a.FiLM, &h.P.TokenLearner)
		if c.Keypoints {
			KeypointsBackward(a.dX, &g.Keypoints, dOut[k*d:(k+1)*d], a.KP, a.FiLM, &h.P.Keypoints)
		}
		clear(a.dGamma)
		clear(a.dBeta)
		FiLMBackward(dProj, a.dGamma, a.dBeta, a.dX, a.Proj, a.Gamma, n, d)
		FiLMCoefficientsBackward(dEmb, &g.FiLM, a.dGamma, a.dBeta, e, &h.P.FiLM, c.EmbeddingDim, d)
	} else {
		layer.TokenLearnerBackward(dProj, &g.TokenLearner, dOut[:k*d], a.TL, a.tl, a.Proj, &h.P.TokenLearner)
		if c.Keypoints {
			KeypointsBackward(dProj, &g.Keypoints, dOut[k*d:(k+1)*d], a.KP, a.Proj, &h.P.Keypoints)
		}
	}
	if g.PosEmbed != nil {
		nn.Add(g.PosEmbed[:n*d], dProj)
	}
	hd := c.Hidden
	if hd == 0 {
		ProjectBackward(dFeat, g.ProjKernel, g.ProjBias, dProj, feat, h.P.ProjKernel, c.FeatureChannels, n, d)
		return
	}
	ha := a.Hid
	clear(ha.dOut)
	nn.DenseBackward(ha.dOut, g.ProjKernel, g.ProjBias, dProj, ha.Out, h.P.ProjKernel, n, hd, d)
	clear(ha.dFiLM)
	if c.HiddenDepth == 2 {
		h.secondStageBackward(g, ha, n, hd)
	} else {
		nn.GELUBackward(ha.dFiLM, ha.dOut, ha.FiLM, ha.Out)
	}
	dPre := ha.dFiLM
	if c.FiLM == FiLMHead {
		clear(ha.dPre)
		clear(ha.dGamma)
		clear(ha.dBeta)
		FiLMBackward(ha.dPre, ha.dGamma, ha.dBeta, ha.dFiLM, ha.Pre, ha.Gamma, n, hd)
		FiLMCoefficientsBackward(dEmb, &g.Hidden.FiLM, ha.dGamma, ha.dBeta, e, &h.P.Hidden.FiLM, c.EmbeddingDim, hd)
		dPre = ha.dPre
	}
	if c.HiddenKernel != 3 {
		ProjectBackward(dFeat, g.Hidden.Kernel, g.Hidden.Bias, dPre, feat, h.P.Hidden.Kernel, c.FeatureChannels, n, hd)
		return
	}
	var dIn []float32 // the backbone is frozen: training passes no dFeat
	if dFeat != nil {
		dIn = ha.dUnfolded
		clear(dIn)
	}
	ProjectBackward(dIn, g.Hidden.Kernel, g.Hidden.Bias, dPre, ha.Unfolded, h.P.Hidden.Kernel, 9*c.FeatureChannels, n, hd)
	if dFeat != nil {
		Unfold3x3Backward(dFeat, dIn, c.FeatureChannels, n, c.PositionGridWidth)
	}
}

// secondStageForward: First = GELU(FiLM); Out = First + GELU(conv3x3(First)).
func (h *Head) secondStageForward(ha *HiddenActs, n, hd int) {
	w := h.Config.PositionGridWidth
	nn.GELUForward(ha.First, ha.FiLM)
	nn.Transpose(ha.FirstT, ha.First, n, hd)
	Unfold3x3Forward(ha.Unfolded2, ha.FirstT, hd, n, w)
	ProjectForward(ha.Pre2, ha.Unfolded2, h.P.Hidden.Kernel2, h.P.Hidden.Bias2, 9*hd, n, hd)
	nn.GELUForward(ha.Second, ha.Pre2)
	copy(ha.Out, ha.First)
	nn.Add(ha.Out, ha.Second)
}

// secondStageBackward turns ha.dOut into ha.dFiLM (cleared by the caller)
// through the second stage, accumulating its parameters' gradients. It
// uses ha.dPre as scratch before the first stage needs it.
func (h *Head) secondStageBackward(g *HeadParams, ha *HiddenActs, n, hd int) {
	w := h.Config.PositionGridWidth
	dPre2, dFirst := ha.dPre, ha.dFirst
	clear(dPre2)
	nn.GELUBackward(dPre2, ha.dOut, ha.Pre2, ha.Second)
	clear(ha.dUnfolded2)
	ProjectBackward(ha.dUnfolded2, g.Hidden.Kernel2, g.Hidden.Bias2, dPre2, ha.Unfolded2, h.P.Hidden.Kernel2, 9*hd, n, hd)
	clear(ha.dFirstT)
	Unfold3x3Backward(ha.dFirstT, ha.dUnfolded2, hd, n, w)
	nn.Transpose(dFirst, ha.dFirstT, hd, n)
	nn.Add(dFirst, ha.dOut) // the residual
	nn.GELUBackward(ha.dFiLM, dFirst, ha.FiLM, ha.First)
}
