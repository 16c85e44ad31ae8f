package vision

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ttmrobot/ttm/internal/fdcheck"
	"github.com/ttmrobot/ttm/internal/layer"
)

// randomHead returns a head with every parameter random (FiLM included),
// so that no layer is an identity in the tests that use it.
func randomHead(t testing.TB, c HeadConfig, r *rand.Rand) *Head {
	t.Helper()
	h, err := NewHead(c)
	if err != nil {
		t.Fatal(err)
	}
	for i := range h.Params {
		h.Params[i] = float32(r.NormFloat64() * 0.3)
	}
	return h
}

// naiveHead is the head's forward pass from the definitions: projection
// and FiLM in float64, then naiveTokenLearner. feat (C, N), e (E).
func naiveHead(h *Head, feat, e []float32, n int) []float64 {
	c := h.Config
	C, d, E := c.FeatureChannels, c.Dim, c.EmbeddingDim
	if hd := c.Hidden; hd > 0 { // the hidden stage's output becomes the map
		hid := make([]float32, hd*n) // channel-major, as feat
		gw := max(c.PositionGridWidth, 1)
		for p := range n {
			for j := range hd {
				var s float64
				if c.HiddenKernel == 3 {
					s = naiveConv3x3(feat, h.P.Hidden.Kernel, h.P.Hidden.Bias, C, hd, n, gw, p, j)
				} else {
					s = float64(h.P.Hidden.Bias[j])
					for ch := range C {
						s += float64(feat[ch*n+p]) * float64(h.P.Hidden.Kernel[ch*hd+j])
					}
				}
				if c.FiLM == FiLMHead {
					g, b := float64(h.P.Hidden.FiLM.MultBias[j]), float64(h.P.Hidden.FiLM.AddBias[j])
					for i := range E {
						g += float64(e[i]) * float64(h.P.Hidden.FiLM.MultKernel[i*hd+j])
						b += float64(e[i]) * float64(h.P.Hidden.FiLM.AddKernel[i*hd+j])
					}
					s = s*(1+g) + b
				}
				hid[j*n+p] = float32(naiveGELU(s))
			}
		}
		if c.HiddenDepth == 2 { // hid += GELU(conv3x3(hid))
			next := slices.Clone(hid)
			for p := range n {
				for j := range hd {
					next[j*n+p] += float32(naiveGELU(naiveConv3x3(hid, h.P.Hidden.Kernel2, h.P.Hidden.Bias2, hd, hd, n, gw, p, j)))
				}
			}
			hid = next
		}
		feat, C = hid, hd
	}
	x := make([]float32, n*d)
	for p := range n {
		for j := range d {
			s := float64(h.P.ProjBias[j])
			for ch := range C {
				s += float64(feat[ch*n+p]) * float64(h.P.ProjKernel[ch*d+j])
			}
			if h.P.PosEmbed != nil {
				s += float64(h.P.PosEmbed[p*d+j])
			}
			if c.FiLM == FiLMHead {
				g, b := float64(h.P.FiLM.MultBias[j]), float64(h.P.FiLM.AddBias[j])
				for i := range E {
					g += float64(e[i]) * float64(h.P.FiLM.MultKernel[i*d+j])
					b += float64(e[i]) * float64(h.P.FiLM.AddKernel[i*d+j])
				}
				s = s*(1+g) + b
			}
			x[p*d+j] = float32(s)
		}
	}
	out, _ := layer.NaiveTokenLearner(x, &h.P.TokenLearner, n, d, c.TokenLearnerHidden, c.Tokens, c.LayerNormEps)
	return out
}

// naiveConv3x3 is output channel j at position p of a zero-padded 3x3
// convolution by its definition: in (C, N) on a grid gw wide, kernel
// (3, 3, C, out), bias (out).
func naiveConv3x3(in, kernel, bias []float32, c, out, n, gw, p, j int) float64 {
	s := float64(bias[j])
	for ky := range 3 {
		for kx := range 3 {
			y, x := p/gw+ky-1, p%gw+kx-1
			if y < 0 || y >= n/gw || x < 0 || x >= gw {
				continue
			}
			for ch := range c {
				s += float64(in[ch*n+y*gw+x]) * float64(kernel[((ky*3+kx)*c+ch)*out+j])
			}
		}
	}
	return s
}

// naiveGELU is GELU's tanh approximation in float64.
func naiveGELU(s float64) float64 {
	return 0.5 * s * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(s+0.044715*s*s*s)))
}

func TestHeadForwardMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, film := range []FiLMPlacement{FiLMHead, FiLMBackbone} {
		for _, hidden := range []int{0, 10, 30, 60} { // 30: 10 wide with a 3x3 kernel; 60: two 3x3 stages
			c := HeadConfig{FeatureChannels: 24, Dim: 16, EmbeddingDim: 12, Tokens: 4, TokenLearnerHidden: 8, FiLM: film, Hidden: hidden}
			if hidden >= 30 {
				c.Hidden, c.HiddenKernel, c.Positions, c.PositionGridWidth = 10, 3, 20, 5
			}
			if hidden == 60 {
				c.HiddenDepth = 2
			}
			h := randomHead(t, c, r)
			const n = 20
			feat, e := randFloats(r, 24*n, 1), randFloats(r, 12, 1)
			out := make([]float32, 4*16)
			h.Forward(out, h.NewActs(n), feat, e)
			if err := layer.RelErr64(out, naiveHead(h, feat, e, n)); err > 1e-4 {
				t.Errorf("film %s, hidden %d: tokens differ from the definition by %g (relative)", film, hidden, err)
			}
		}
	}
}

// TestHeadFiLMStartsAsIdentity: an initialised head with FiLM gives the
// same tokens as the same head without FiLM, whatever the instruction.
func TestHeadFiLMStartsAsIdentity(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	c := HeadConfig{FeatureChannels: 16, Dim: 32, EmbeddingDim: 8, Tokens: 4, TokenLearnerHidden: 8}
	with, err := NewHead(c)
	if err != nil {
		t.Fatal(err)
	}
	with.Init(3)
	c.FiLM = FiLMBackbone
	without, err := NewHead(c)
	if err != nil {
		t.Fatal(err)
	}
	// Copy every tensor the two heads share, by name.
	for _, s := range without.Specs {
		i := slices.IndexFunc(with.Specs, func(w ParamSpec) bool { return w.Name == s.Name })
		copy(without.Params[s.Offset:s.Offset+s.Size], with.Params[with.Specs[i].Offset:])
	}
	const n = 12
	feat := randFloats(r, 16*n, 1)
	a, b := make([]float32, 4*32), make([]float32, 4*32)
	without.Forward(b, without.NewActs(n), feat, nil)
	for range 3 {
		with.Forward(a, with.NewActs(n), feat, randFloats(r, 8, 5))
		if !slices.Equal(a, b) {
			t.Fatal("initialised FiLM changed the tokens")
		}
	}
}

func TestHeadGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	for _, tc := range []struct {
		film      FiLMPlacement
		keypoints bool
		hidden    int
		supervise bool // SuperviseKeypoints' loss added
		window    int  // KeypointWindow, on a 4x3 map instead of 2x2
	}{
		{FiLMHead, false, 0, false, 0}, {FiLMBackbone, false, 0, false, 0}, {FiLMHead, true, 0, false, 0}, {FiLMBackbone, true, 0, false, 0},
		{FiLMHead, false, 3, false, 0}, {FiLMBackbone, false, 3, false, 0}, {FiLMHead, true, 3, true, 0}, {FiLMBackbone, true, 0, true, 0},
		{FiLMHead, true, 33, true, 0}, // 33: 3 wide with a 3x3 kernel
		{FiLMHead, true, 0, false, 1}, {FiLMHead, true, 33, true, 1},
		{FiLMHead, true, 66, true, 0}, {FiLMBackbone, true, 66, false, 1}, // 66: two 3x3 stages
	} {
		film := tc.film
		name := string(film)
		if tc.keypoints {
			name += "+keypoints"
		}
		if tc.hidden > 0 {
			name += "+hidden"
		}
		if tc.hidden == 33 {
			name += "3x3"
		}
		if tc.hidden == 66 {
			name += "3x3x2"
		}
		if tc.supervise {
			name += "+supervised"
		}
		if tc.window > 0 {
			name += "+window"
		}
		t.Run(name, func(t *testing.T) {
			c := HeadConfig{FeatureChannels: 5, Dim: 6, EmbeddingDim: 3, Tokens: 2, TokenLearnerHidden: 4, FiLM: film, Hidden: tc.hidden}
			n := 4
			if tc.keypoints {
				c.Positions, c.PositionGridWidth, c.Keypoints = 4, 2, true
			}
			if tc.window > 0 {
				n = 12
				c.Positions, c.PositionGridWidth, c.KeypointWindow = 12, 4, tc.window
			}
			if tc.hidden >= 33 {
				c.Hidden, c.HiddenKernel = 3, 3
			}
			if tc.hidden == 66 {
				c.HiddenDepth = 2
			}
			h := randomHead(t, c, r)
			feat, e := randFloats(r, 5*n, 1), randFloats(r, 3, 1)
			dOut := randFloats(r, 2*6, 1)
			// Two labelled keypoints (one off the cell centres, weight 0.7)
			// and one unlabelled.
			labels := []float32{0.3, 0.6, 0.7, 0.9, 0.1, 1, 0.5, 0.5, 0}
			a := h.NewActs(n)
			out := make([]float32, 2*6)
			loss := func() float64 {
				h.Forward(out, a, feat, e)
				l := dot64(out, dOut)
				if tc.supervise {
					l += SuperviseKeypoints(a.KP, labels, 0.8, 1)
				}
				return l
			}
			loss()
			grads := make([]float32, h.NumParams())
			g := h.View(grads)
			dFeat, dEmb := make([]float32, 5*n), make([]float32, 3)
			h.Backward(&g, dEmb, dFeat, dOut, a, feat, e)
			vars := []fdcheck.Var{{Name: "feat", X: feat, Grad: dFeat}}
			if film == FiLMHead {
				vars = append(vars, fdcheck.Var{Name: "embedding", X: e, Grad: dEmb})
			} else if slices.ContainsFunc(dEmb, func(v float32) bool { return v != 0 }) {
				t.Errorf("embedding gradient %v without FiLM in the head", dEmb)
			}
			for _, s := range h.Specs {
				vars = append(vars, fdcheck.Var{Name: s.Name, X: h.Params[s.Offset : s.Offset+s.Size], Grad: grads[s.Offset : s.Offset+s.Size]})
			}
			fdcheck.Require(t, r, vars, 12, loss)
		})
	}
}

// TestSuperviseKeypointsByHand: on a 2x2 map a flat channel puts 1/4 on
// every cell; a label at cell (1, 0)'s centre with a narrow Gaussian is
// one-hot there, so the loss is ln 4 (times the weight) and the logits'
// gradient scale·weight·(1/4 - onehot). An unlabelled channel (weight 0)
// adds nothing.
func TestSuperviseKeypointsByHand(t *testing.T) {
	const n, d = 4, 2
	a := NewKeypointActs(n, d, 2, 0)
	x := make([]float32, n*d) // every logit 0
	p := &KeypointParams{LogScale: []float32{0, 0}, Kernel: make([]float32, 2*d*d), Bias: make([]float32, d)}
	KeypointsForward(make([]float32, d), a, x, p)
	// cell (column 1, row 0) has its centre at (0.75, 0.25) of the image
	labels := []float32{0.75, 0.25, 2, 0.1, 0.9, 0}
	loss := SuperviseKeypoints(a, labels, 0.05, 0.5)
	if want := 2 * math.Log(4); math.Abs(loss-want) > 1e-6 {
		t.Errorf("loss %v, want 2 ln 4 = %v", loss, want)
	}
	want := []float32{0.25, 0.25 - 1, 0.25, 0.25, 0, 0, 0, 0} // (d, N), times scale·weight = 1
	for i, w := range want {
		if math.Abs(float64(a.dSupervised[i]-w)) > 1e-6 {
			t.Errorf("logit gradient %d = %v, want %v", i, a.dSupervised[i], w)
		}
	}
	// The gradient reaches x through KeypointsBackward (scale 1: dX = d(logits)).
	dX := make([]float32, n*d)
	g := &KeypointParams{LogScale: make([]float32, d), Kernel: make([]float32, 2*d*d), Bias: make([]float32, d)}
	KeypointsBackward(dX, g, make([]float32, d), a, x, p)
	for pos := range n {
		if math.Abs(float64(dX[pos*d]-want[pos])) > 1e-6 || dX[pos*d+1] != 0 {
			t.Errorf("dX at position %d = %v, want [%v 0]", pos, dX[pos*d:pos*d+2], want[pos])
		}
	}
	// A new forward pass forgets the supervision.
	KeypointsForward(make([]float32, d), a, x, p)
	clear(dX)
	KeypointsBackward(dX, g, make([]float32, d), a, x, p)
	if slices.ContainsFunc(dX, func(v float32) bool { return v != 0 }) {
		t.Errorf("dX %v after a forward pass without supervision, want zeros", dX)
	}
}

// TestKeypointsByHand checks the soft-argmax on a 2x2 grid: channel 0 has
// logits 0, ln 3, 0, 0, so probabilities 1/6, 3/6, 1/6, 1/6 over positions
// (x, y) = (-1, -1), (1, -1), (-1, 1), (1, 1), and its keypoint is
// (1/3, -1/3); channel 1 is flat, keypoint (0, 0). Coords holds the x of
// every channel, then the y.
func TestKeypointsByHand(t *testing.T) {
	const n, d = 4, 2
	a := NewKeypointActs(n, d, 2, 0)
	// x (N, d): channel 0 carries the logits, channel 1 is flat.
	x := []float32{0, 5, float32(math.Log(3)), 5, 0, 5, 0, 5}
	p := &KeypointParams{LogScale: []float32{0, 0}, Kernel: make([]float32, 2*d*d), Bias: make([]float32, d)}
	// Kernel (2d, d) as identity on the first d rows: the token is the x coordinates.
	p.Kernel[0*d+0], p.Kernel[1*d+1] = 1, 1
	p.Bias[1] = 0.25
	out := make([]float32, d)
	KeypointsForward(out, a, x, p)
	want := []float32{1.0 / 3, 0, -1.0 / 3, 0}
	for i, w := range want {
		if math.Abs(float64(a.Coords[i]-w)) > 1e-6 {
			t.Errorf("coordinate %d = %v, want %v", i, a.Coords[i], w)
		}
	}
	if math.Abs(float64(out[0]-1.0/3)) > 1e-6 || math.Abs(float64(out[1]-0.25)) > 1e-6 {
		t.Errorf("token %v, want [1/3 0.25]", out)
	}
	// As image fractions: the cells' centres lie at 1/4 and 3/4, so x = 1/3,
	// two thirds of the way from the first centre to the second, is 7/12,
	// and y = -1/3 is 5/12; the flat channel sits in the middle.
	for i, want := range [][2]float32{{7.0 / 12, 5.0 / 12}, {0.5, 0.5}} {
		if u, v := a.Point(i); math.Abs(float64(u-want[0])) > 1e-6 || math.Abs(float64(v-want[1])) > 1e-6 {
			t.Errorf("point %d = (%v, %v), want %v", i, u, v, want)
		}
	}
}

// TestLocalKeypointByHand: one row of 4 cells at x = -1, -1/3, 1/3, 1 with
// logits ln 8, ln 2, 0, ln 6 (probabilities 8, 2, 1, 6 over 17). The whole
// map's soft-argmax is pulled toward the second mode, (-8 - 2/3 + 1/3 + 6)/17
// = -7/51; a window of 1 around the peak (cells 0 and 1, renormalised to
// 0.8 and 0.2) reads -0.8 - 0.2/3 = -13/15. Outside the window no gradient
// flows.
func TestLocalKeypointByHand(t *testing.T) {
	const n, d = 4, 1
	x := []float32{float32(math.Log(8)), float32(math.Log(2)), 0, float32(math.Log(6))}
	p := &KeypointParams{LogScale: []float32{0}, Kernel: []float32{1, 0}, Bias: []float32{0}} // token = x
	for _, tc := range []struct {
		window int
		want   float64
	}{{0, -7.0 / 51}, {1, -13.0 / 15}, {3, -7.0 / 51}} {
		a := NewKeypointActs(n, d, 4, tc.window)
		out := make([]float32, d)
		KeypointsForward(out, a, x, p)
		if math.Abs(float64(out[0])-tc.want) > 1e-6 || a.Coords[1] != 0 {
			t.Errorf("window %d: point (%v, %v), want (%v, 0)", tc.window, a.Coords[0], a.Coords[1], tc.want)
		}
		dX := make([]float32, n)
		g := &KeypointParams{LogScale: make([]float32, 1), Kernel: make([]float32, 2), Bias: make([]float32, 1)}
		KeypointsBackward(dX, g, []float32{1}, a, x, p)
		// d(point)/d(logit i) = q_i·(x_i - point)
		for i, q := range a.Readout {
			want := float64(q) * (float64(a.GX[i]) - tc.want)
			if math.Abs(float64(dX[i])-want) > 1e-6 || tc.window == 1 && i >= 2 && dX[i] != 0 {
				t.Errorf("window %d: dX[%d] = %v, want %v", tc.window, i, dX[i], want)
			}
		}
	}
}

// TestKeypointPriorByHand: the map of TestLocalKeypointByHand (peak at
// cell 0) with a prior of ln 4 on cell 3: probabilities 8, 2, 1, 24 over
// 35, so the window of 1 moves to cells 2 and 3, renormalised to 1/25 and
// 24/25, and reads 1/75 + 24/25 = 73/75. LogitGrad is the point's
// gradient of each prior value, checked by central differences.
func TestKeypointPriorByHand(t *testing.T) {
	const n, d = 4, 1
	x := []float32{float32(math.Log(8)), float32(math.Log(2)), 0, float32(math.Log(6))}
	p := &KeypointParams{LogScale: []float32{0}, Kernel: []float32{1, 0}, Bias: []float32{0}} // token = x
	a := NewKeypointActs(n, d, 4, 1)
	a.Prior = []float32{0, 0, 0, float32(math.Log(4))}
	out := make([]float32, d)
	KeypointsForward(out, a, x, p)
	if want := 73.0 / 75; math.Abs(float64(out[0])-want) > 1e-6 {
		t.Fatalf("point %v with the prior, want %v", out[0], want)
	}
	KeypointsBackward(make([]float32, n), &KeypointParams{LogScale: make([]float32, 1), Kernel: make([]float32, 2), Bias: make([]float32, 1)},
		[]float32{1}, a, x, p)
	grad := slices.Clone(a.LogitGrad())
	const eps = 1e-3
	for i := range a.Prior {
		old := a.Prior[i]
		a.Prior[i] = old + eps
		KeypointsForward(out, a, x, p)
		up := float64(out[0])
		a.Prior[i] = old - eps
		KeypointsForward(out, a, x, p)
		down := float64(out[0])
		a.Prior[i] = old
		if numeric := (up - down) / (2 * eps); math.Abs(numeric-float64(grad[i])) > 1e-3 {
			t.Errorf("prior[%d]: LogitGrad %v, numeric %v", i, grad[i], numeric)
		}
	}
	if grad[0] != 0 || grad[1] != 0 {
		t.Errorf("LogitGrad %v: the cells outside the window get none", grad)
	}
}

func TestHeadSpecsAndInit(t *testing.T) {
	h, err := NewHead(HeadConfig{FeatureChannels: 1536})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int{
		"conv1x1/kernel": {1536, 512}, "conv1x1/bias": {512},
		"film/mult/kernel": {512, 512}, "film/mult/bias": {512}, "film/add/kernel": {512, 512}, "film/add/bias": {512},
		"TokenLearnerModuleV11_0/LayerNorm_0/scale": {512}, "TokenLearnerModuleV11_0/LayerNorm_0/bias": {512},
		"TokenLearnerModuleV11_0/token_masking/Dense_0/kernel": {512, 64}, "TokenLearnerModuleV11_0/token_masking/Dense_0/bias": {64},
		"TokenLearnerModuleV11_0/token_masking/Dense_1/kernel": {64, 8}, "TokenLearnerModuleV11_0/token_masking/Dense_1/bias": {8},
	}
	if len(h.Specs) != len(want) {
		t.Fatalf("%d tensors, want %d", len(h.Specs), len(want))
	}
	total := 0
	for _, s := range h.Specs {
		if !slices.Equal(s.Shape, want[s.Name]) {
			t.Errorf("%s: shape %v, want %v", s.Name, s.Shape, want[s.Name])
		}
		if s.Offset != total {
			t.Errorf("%s at offset %d, want %d", s.Name, s.Offset, total)
		}
		total += s.Size
	}
	if h.NumParams() != total || total != 1536*512+512+2*(512*512+512)+2*512+512*64+64+64*8+8 {
		t.Errorf("%d parameters", h.NumParams())
	}
	h.Init(1)
	first := slices.Clone(h.Params)
	h.Init(1)
	if !slices.Equal(first, h.Params) {
		t.Error("Init is not deterministic")
	}
	h.Init(2)
	if slices.Equal(first, h.Params) {
		t.Error("Init ignores the seed")
	}
	for _, v := range [][]float32{h.P.FiLM.MultKernel, h.P.FiLM.MultBias, h.P.FiLM.AddKernel, h.P.FiLM.AddBias} {
		if slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
			t.Error("FiLM is not zero after Init")
		}
	}
	if slices.ContainsFunc(h.P.TokenLearner.LN.Scale, func(x float32) bool { return x != 1 }) {
		t.Error("LayerNorm scale is not one after Init")
	}
	// Xavier uniform: |w| <= sqrt(6 / (fan_in + fan_out)), and not all tiny.
	limit := float32(math.Sqrt(6.0 / (1536 + 512)))
	var big int
	for _, w := range h.P.ProjKernel {
		if w > limit || w < -limit {
			t.Fatalf("projection weight %v outside the xavier limit", w)
		}
		if w > limit/2 || w < -limit/2 {
			big++
		}
	}
	if big < len(h.P.ProjKernel)/3 {
		t.Errorf("only %d of %d projection weights above half the limit: not uniform", big, len(h.P.ProjKernel))
	}
}

func TestHeadDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 38))
	for _, c := range []HeadConfig{
		{FeatureChannels: 64, Dim: 32, EmbeddingDim: 16, Positions: 25, PositionGridWidth: 5, Keypoints: true},
		{FeatureChannels: 64, Dim: 32, EmbeddingDim: 16, Positions: 25, PositionGridWidth: 5, Keypoints: true, Hidden: 16, HiddenKernel: 3},
		{FeatureChannels: 64, Dim: 32, EmbeddingDim: 16, Positions: 25, PositionGridWidth: 5, Keypoints: true, Hidden: 16, HiddenKernel: 3, HiddenDepth: 2},
		{FeatureChannels: 64, Dim: 32, EmbeddingDim: 16, Positions: 25, PositionGridWidth: 5, Keypoints: true, KeypointWindow: 1},
	} {
		h := randomHead(t, c, r)
		const n = 25
		feat, e := randFloats(r, 64*n, 1), randFloats(r, 16, 1)
		a := h.NewActs(n)
		out := make([]float32, h.Config.Tokens*32)
		grads := make([]float32, h.NumParams())
		g := h.View(grads)
		labels := []float32{0.5, 0.5, 1}
		if allocs := testing.AllocsPerRun(20, func() { h.Forward(out, a, feat, e) }); allocs != 0 {
			t.Errorf("hidden %d, depth %d: Forward: %v allocations", c.Hidden, c.HiddenDepth, allocs)
		}
		if allocs := testing.AllocsPerRun(20, func() {
			SuperviseKeypoints(a.KP, labels, 1, 1)
			h.Backward(&g, nil, nil, out, a, feat, e)
		}); allocs != 0 {
			t.Errorf("hidden %d, depth %d: supervised Backward: %v allocations", c.Hidden, c.HiddenDepth, allocs)
		}
	}
}

func TestHeadConfigRejects(t *testing.T) {
	for _, c := range []HeadConfig{
		{},
		{FeatureChannels: -1},
		{FeatureChannels: 8, Dim: 1 << 20},
		{FeatureChannels: 8, FiLM: "everywhere"},
		{FeatureChannels: 8, LayerNormEps: -1},
		{FeatureChannels: 8, Positions: 10, PositionGridWidth: 3},
		{FeatureChannels: 8, PositionGridWidth: 2},
		{FeatureChannels: 8, Keypoints: true},
		{FeatureChannels: 8, Positions: 4, PositionGridWidth: 2, Keypoints: true, Tokens: 1},
		{FeatureChannels: 8, Hidden: -1},
		{FeatureChannels: 8, Hidden: 1 << 20},
		{FeatureChannels: 8, Hidden: 4, HiddenKernel: 2},
		{FeatureChannels: 8, Hidden: 4, HiddenKernel: 3},                                                     // no grid
		{FeatureChannels: 8, Positions: 4, PositionGridWidth: 2, HiddenKernel: 3},                            // no hidden stage
		{FeatureChannels: 8, Positions: 4, PositionGridWidth: 2, Hidden: 4, HiddenDepth: 2},                  // a second stage after a 1x1 one
		{FeatureChannels: 8, Positions: 4, PositionGridWidth: 2, Hidden: 4, HiddenKernel: 3, HiddenDepth: 3}, // at most two stages
		{FeatureChannels: 8, Positions: 4, PositionGridWidth: 2, KeypointWindow: 1},                          // no keypoints
		{FeatureChannels: 8, Positions: 4, PositionGridWidth: 2, Keypoints: true, KeypointWindow: -1},
	} {
		if _, err := NewHead(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestKeypointReadoutOfItsTarget: a channel whose distribution is exactly
// the supervision's target (the minimiser of SuperviseKeypoints' loss)
// should read out, through the 3x3 window, the point it was labelled with.
// A Gaussian target truncated to the window is pulled toward the peak
// cell's centre: at sigma 1 cell by up to 0.23 cells (1.9 px at the
// presets' stride of 8), at DefaultKeypointSigma by under 0.03.
func TestKeypointReadoutOfItsTarget(t *testing.T) {
	const gw, rows = 20, 16
	for _, tc := range []struct {
		sigma  float64
		lo, hi float64 // the largest readout error over the cell lies within, in cells
	}{
		{DefaultKeypointSigma, 0, 0.03},
		{1, 0.2, 0.25},
	} {
		a := NewKeypointActs(gw*rows, 1, gw, 1)
		p := &KeypointParams{LogScale: []float32{0}, Kernel: make([]float32, 2), Bias: make([]float32, 1)}
		x := make([]float32, gw*rows)
		var worst float64
		for step := range 21 { // the label crosses a cell, in twentieths
			off := -0.5 + float64(step)/20
			col, row := 9+off, 7-0.6*off // cell coordinates of the label
			for pos := range x {
				dx, dy := float64(pos%gw)-col, float64(pos/gw)-row
				x[pos] = float32(-(dx*dx + dy*dy) / (2 * tc.sigma * tc.sigma))
			}
			KeypointsForward(make([]float32, 1), a, x, p)
			labels := []float32{float32((col + 0.5) / gw), float32((row + 0.5) / rows), 1}
			SuperviseKeypoints(a, labels, tc.sigma, 1)
			if g := slices.MaxFunc(a.dSupervised, func(u, v float32) int { return cmp.Compare(math.Abs(float64(u)), math.Abs(float64(v))) }); math.Abs(float64(g)) > 1e-5 {
				t.Fatalf("sigma %v: the supervision's gradient %v at its own target, want 0", tc.sigma, g)
			}
			u, v := a.Point(0)
			ex, ey := (float64(u)-float64(labels[0]))*gw, (float64(v)-float64(labels[1]))*rows
			worst = max(worst, math.Abs(ex), math.Abs(ey))
		}
		t.Logf("sigma %v: read up to %.4f cells off", tc.sigma, worst)
		if worst < tc.lo || worst > tc.hi {
			t.Errorf("sigma %v: the window reads its target up to %.3f cells off, want within [%v, %v]", tc.sigma, worst, tc.lo, tc.hi)
		}
	}
}

// TestUnfold3x3MatchesDefinition: column (k·C + ch) of the unfolded map at
// (y, x) is channel ch at (y + k/3 - 1, x + k%3 - 1), zero outside the map,
// for maps down to one row or one column; the backward pass is its
// adjoint.
func TestUnfold3x3MatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, sz := range []struct{ c, rows, width int }{{1, 1, 1}, {2, 1, 4}, {3, 4, 1}, {2, 3, 2}, {4, 16, 20}} {
		n := sz.rows * sz.width
		feat := make([]float32, sz.c*n)
		for i := range feat {
			feat[i] = float32(r.NormFloat64())
		}
		out := make([]float32, 9*sz.c*n)
		for i := range out {
			out[i] = float32(math.NaN()) // every value must be written
		}
		Unfold3x3Forward(out, feat, sz.c, n, sz.width)
		for k := range 9 {
			for ch := range sz.c {
				for y := range sz.rows {
					for x := range sz.width {
						sy, sx := y+k/3-1, x+k%3-1
						want := float32(0)
						if sy >= 0 && sy < sz.rows && sx >= 0 && sx < sz.width {
							want = feat[ch*n+sy*sz.width+sx]
						}
						if got := out[(k*sz.c+ch)*n+y*sz.width+x]; got != want {
							t.Fatalf("%+v: tap %d channel %d at (%d, %d) = %v, want %v", sz, k, ch, y, x, got, want)
						}
					}
				}
			}
		}
		// The backward pass is the adjoint, <dOut, unfold(feat)> =
		// <unfold^T(dOut), feat>, and the C kernel adds what the Go loop
		// adds, bit for bit, onto a gradient that is not zero.
		dOut := randFloats(r, 9*sz.c*n, 1)
		start := randFloats(r, sz.c*n, 1)
		dFeat, want := slices.Clone(start), slices.Clone(start)
		Unfold3x3Backward(dFeat, dOut, sz.c, n, sz.width)
		unfold3x3BackwardGo(want, dOut, sz.c, n, sz.width)
		for i := range want {
			if math.Float32bits(dFeat[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%+v: Unfold3x3Backward[%d] = %v, the Go loop %v", sz, i, dFeat[i], want[i])
			}
		}
		var lhs, rhs float64
		for i, v := range out {
			lhs += float64(v) * float64(dOut[i])
		}
		for i, v := range feat {
			rhs += float64(v) * float64(dFeat[i]-start[i])
		}
		if math.Abs(lhs-rhs) > 1e-4*(1+math.Abs(lhs)) {
			t.Errorf("%+v: <dOut, unfold(feat)> = %v, <unfold^T(dOut), feat> = %v", sz, lhs, rhs)
		}
	}
}

// TestSuperviseLying: with the keypoint softmax flattened (log scale -20),
// channel 1's readout is 1/4 on each of the 2x2 map's cells, so the probe
// reads the map's mean: z = mean(x)·w + b, loss softplus(z) - y·z. Its
// gradients of x, the kernel and the bias match finite differences, and a
// new forward pass forgets them.
func TestSuperviseLying(t *testing.T) {
	const n, d = 4, 3
	r := rand.New(rand.NewPCG(37, 38))
	a := NewKeypointActs(n, d, 2, 0)
	a.dLying = make([]float32, n*d)
	x := randFloats(r, n*d, 1)
	p := &KeypointParams{LogScale: []float32{-20, -20, -20}, Kernel: make([]float32, 2*d*d), Bias: make([]float32, d),
		LyingKernel: randFloats(r, d, 1), LyingBias: []float32{0.3}}
	for _, label := range []float32{0, 1} {
		KeypointsForward(make([]float32, d), a, x, p)
		g := &KeypointParams{LogScale: make([]float32, d), Kernel: make([]float32, 2*d*d), Bias: make([]float32, d),
			LyingKernel: make([]float32, d), LyingBias: make([]float32, 1)}
		loss, prob := SuperviseLying(a, p, g, label, 1)
		z := float64(p.LyingBias[0])
		for j := range d {
			var mean float64
			for i := range n {
				mean += float64(x[i*d+j]) / n
			}
			z += mean * float64(p.LyingKernel[j])
		}
		if want := math.Log(1+math.Exp(z)) - float64(label)*z; math.Abs(loss-want) > 1e-6 {
			t.Errorf("label %v: loss %v, want %v", label, loss, want)
		}
		if want := 1 / (1 + math.Exp(-z)); math.Abs(float64(prob)-want) > 1e-6 {
			t.Errorf("label %v: probability %v, want %v", label, prob, want)
		}
		dX := make([]float32, n*d)
		KeypointsBackward(dX, g, make([]float32, d), a, x, p)
		fdcheck.Require(t, r, []fdcheck.Var{{Name: "x", X: x, Grad: dX}, {Name: "kernel", X: p.LyingKernel, Grad: g.LyingKernel},
			{Name: "bias", X: p.LyingBias, Grad: g.LyingBias}}, 6, func() float64 {
			KeypointsForward(make([]float32, d), a, x, p)
			l, _ := SuperviseLying(a, p, &KeypointParams{LyingKernel: make([]float32, d), LyingBias: make([]float32, 1)}, label, 1)
			return l
		})
	}
	KeypointsForward(make([]float32, d), a, x, p)
	dX := make([]float32, n*d)
	KeypointsBackward(dX, &KeypointParams{LogScale: make([]float32, d), Kernel: make([]float32, 2*d*d), Bias: make([]float32, d)}, make([]float32, d), a, x, p)
	if slices.ContainsFunc(dX, func(v float32) bool { return math.Abs(float64(v)) > 1e-6 }) {
		t.Errorf("dX %v after a forward pass without the probe, want zeros", dX)
	}
}
