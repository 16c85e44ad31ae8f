package fdcheck

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"
)

func randFloats(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

// hashFloats is FNV-1a over x's bits: noise that changes with every bit.
func hashFloats(x []float32) uint64 {
	h := fnv.New64a()
	var b [4]byte
	for _, v := range x {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
		h.Write(b[:])
	}
	return h.Sum64()
}

func TestFiniteDiffCatchesWrongGradients(t *testing.T) {
	// L = Σ g·x³ has dL/dx = 3 g x². The checker must accept that, and
	// reject a gradient 5 % off in one entry and a gradient of zero.
	r := rand.New(rand.NewPCG(1, 2))
	x, g := randFloats(r, 20, 1), randFloats(r, 20, 1)
	loss := func() float64 {
		var s float64
		for i, v := range x {
			s += float64(g[i]) * float64(v) * float64(v) * float64(v)
		}
		return s
	}
	right := make([]float32, len(x))
	for i := range x {
		right[i] = 3 * g[i] * x[i] * x[i]
	}
	if rep := Check(r, []Var{{"x", x, right}}, 100, loss); len(rep.Fails) != 0 || rep.Checked != 20 {
		t.Errorf("right gradient: %d entries checked, mismatches %v", rep.Checked, rep.Fails)
	}
	off := append([]float32(nil), right...)
	i := Indices(r, right, 0)[0] // the largest entry is always checked
	off[i] *= 1.05
	if rep := Check(r, []Var{{"x", x, off}}, 3, loss); len(rep.Fails) != 1 {
		t.Errorf("gradient 5%% off at entry %d: mismatches %v, want exactly that one", i, rep.Fails)
	}
	if rep := Check(r, []Var{{"x", x, make([]float32, len(x))}}, 3, loss); len(rep.Fails) == 0 {
		t.Error("a zero gradient passed")
	}
}

func TestLossNoiseEstimate(t *testing.T) {
	// A smooth loss plus uniform noise of standard deviation sigma that
	// changes with every bit of x: the estimate must come out near sigma,
	// and near zero without the noise.
	r := rand.New(rand.NewPCG(3, 4))
	x, g := randFloats(r, 10, 1), randFloats(r, 10, 1)
	const sigma = 1e-5
	var noisy bool
	loss := func() float64 {
		var s float64
		for i, v := range x {
			s += float64(g[i]) * math.Sin(float64(v))
		}
		if noisy {
			u := float64(hashFloats(x)%1_000_003) / 1_000_003 // uniform in [0, 1)
			s += sigma * math.Sqrt(12) * (u - 0.5)
		}
		return s
	}
	vars := []Var{{"x", x, make([]float32, len(x))}}
	if est := LossNoise(r, vars, 12, loss); est > 1e-9 {
		t.Errorf("smooth loss: noise estimate %.3g, want about 0", est)
	}
	noisy = true
	if est := LossNoise(r, vars, 12, loss); est < sigma/1.5 || est > 1.5*sigma {
		t.Errorf("noise estimate %.3g, want about %.3g", est, sigma)
	}
}
