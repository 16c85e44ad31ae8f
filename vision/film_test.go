package vision

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/fdcheck"
)

func TestFiLMHandComputed(t *testing.T) {
	// E = 1, d = 2: gamma = e·W_m + b_m = 2·[0.5, -1] + [0.1, 0] = [1.1, -2],
	// beta = 2·[1, 1] + [0, 0.5] = [2, 2.5];
	// out = x·(1 + gamma) + beta for x = [1, 2], [-3, 0].
	p := &FiLMParams{
		MultKernel: []float32{0.5, -1}, MultBias: []float32{0.1, 0},
		AddKernel: []float32{1, 1}, AddBias: []float32{0, 0.5},
	}
	gamma, beta := make([]float32, 2), make([]float32, 2)
	FiLMCoefficients(gamma, beta, []float32{2}, p, 1, 2)
	x := []float32{1, 2, -3, 0}
	out := make([]float32, 4)
	FiLMForward(out, x, gamma, beta, 2, 2)
	want := []float64{1*2.1 + 2, 2*-1 + 2.5, -3*2.1 + 2, 0*-1 + 2.5}
	for i, w := range want {
		if math.Abs(float64(out[i])-w) > 1e-6 {
			t.Errorf("out[%d] = %v, want %v", i, out[i], w)
		}
	}
}

// TestFiLMAtZeroIsIdentity: a freshly initialised FiLM returns its input
// exactly, for any embedding.
func TestFiLMAtZeroIsIdentity(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	h, err := NewHead(HeadConfig{FeatureChannels: 8, Dim: 32, EmbeddingDim: 16})
	if err != nil {
		t.Fatal(err)
	}
	h.Init(7)
	const n, d = 10, 32
	gamma, beta := make([]float32, d), make([]float32, d)
	x := randFloats(r, n*d, 3)
	x[0], x[1], x[2] = float32(math.Inf(1)), 1e-38, float32(math.Copysign(0, -1))
	out := make([]float32, n*d)
	for range 5 {
		e := randFloats(r, 16, 10)
		FiLMCoefficients(gamma, beta, e, &h.P.FiLM, 16, d)
		FiLMForward(out, x, gamma, beta, n, d)
		for i := range x {
			if out[i] != x[i] { // -0 comes out as +0, equal in value
				t.Fatalf("FiLM at init changed x[%d] from %v to %v", i, x[i], out[i])
			}
		}
	}
}

func TestFiLMGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	const n, d, E = 5, 4, 3
	p := &FiLMParams{MultKernel: randFloats(r, E*d, 1), MultBias: randFloats(r, d, 1), AddKernel: randFloats(r, E*d, 1), AddBias: randFloats(r, d, 1)}
	e, x, dOut := randFloats(r, E, 1), randFloats(r, n*d, 1), randFloats(r, n*d, 1)
	gamma, beta, out := make([]float32, d), make([]float32, d), make([]float32, n*d)
	loss := func() float64 {
		FiLMCoefficients(gamma, beta, e, p, E, d)
		FiLMForward(out, x, gamma, beta, n, d)
		return dot64(out, dOut)
	}
	loss()
	g := &FiLMParams{MultKernel: make([]float32, E*d), MultBias: make([]float32, d), AddKernel: make([]float32, E*d), AddBias: make([]float32, d)}
	dX, dE, dGamma, dBeta := make([]float32, n*d), make([]float32, E), make([]float32, d), make([]float32, d)
	FiLMBackward(dX, dGamma, dBeta, dOut, x, gamma, n, d)
	FiLMCoefficientsBackward(dE, g, dGamma, dBeta, e, p, E, d)
	fdcheck.Require(t, r, []fdcheck.Var{{Name: "x", X: x, Grad: dX}, {Name: "e", X: e, Grad: dE},
		{Name: "MultKernel", X: p.MultKernel, Grad: g.MultKernel}, {Name: "MultBias", X: p.MultBias, Grad: g.MultBias},
		{Name: "AddKernel", X: p.AddKernel, Grad: g.AddKernel}, {Name: "AddBias", X: p.AddBias, Grad: g.AddBias}}, n*d, loss)
}
