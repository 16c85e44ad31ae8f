package policy

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"
)

// mixtureOf returns a mixture of k components of sd sigma whose block
// starts at offset 0.
func mixtureOf(k int, sigma float64) armMixture {
	return armMixture{k: k, sigma: sigma, dims: [armDims]int{action.DimWorldX, action.DimWorldY, action.DimWorldZ}}
}

// TestArmMixtureLoss checks the loss against values computed by hand.
func TestArmMixtureLoss(t *testing.T) {
	a := []float32{0.5, -0.25, 1}
	for _, tc := range []struct {
		name  string
		sigma float64
		block []float32 // logits, then means
		want  float64
	}{
		// One component: σ²·|a − μ|²/2σ² = ½|a − μ|² = ½(0.25 + 0.0625 + 1).
		{"one component", 0.3, []float32{1.7, 0, 0, 0}, 0.5 * (0.25 + 0.0625 + 1)},
		// Two equally probable components, one at a, the other so far that
		// its density vanishes: σ²·(−log ½).
		{"one of two at the label", 0.2, []float32{0, 0, 0.5, -0.25, 1, 50, 50, 50}, 0.04 * math.Ln2},
		// Both at the label, logits (0, log 3): −log(¼ + ¾) = 0.
		{"both at the label", 0.5, []float32{0, float32(math.Log(3)), 0.5, -0.25, 1, 0.5, -0.25, 1}, 0},
		// Two components at squared distances 1 and 4, π = (¼, ¾), σ = 1:
		// −log(¼e^−½ + ¾e^−2).
		{"hand-computed", 1, []float32{0, float32(math.Log(3)), 1.5, -0.25, 1, 0.5, 1.75, 1},
			-math.Log(0.25*math.Exp(-0.5) + 0.75*math.Exp(-2))},
	} {
		k := len(tc.block) / (1 + armDims)
		d := make([]float32, len(tc.block))
		got := mixtureOf(k, tc.sigma).loss(d, tc.block, a, 1)
		if math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%s: loss %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestArmMixtureOfOneIsTheSquaredError: with one component the mixture is
// the regressed arm, loss and gradient, whatever its sd.
func TestArmMixtureOfOneIsTheSquaredError(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 10 {
		block := []float32{float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())}
		a := []float32{float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())}
		d := make([]float32, 4)
		loss := mixtureOf(1, 0.1+r.Float64()).loss(d, block, a, 2)
		var want float64
		for j := range a {
			diff := block[1+j] - a[j]
			want += 0.5 * float64(diff*diff)
			if math.Abs(float64(d[1+j]-2*diff)) > 1e-6 {
				t.Fatalf("gradient of mean %d: %v, want %v", j, d[1+j], 2*diff)
			}
		}
		if math.Abs(loss-want) > 1e-5 || d[0] != 0 {
			t.Fatalf("loss %v (want %v), mixing logit's gradient %v (want 0)", loss, want, d[0])
		}
	}
}

// TestArmMixtureGradients checks the loss's gradient against central
// finite differences, with components near and far from the label.
func TestArmMixtureGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 20 {
		k := 1 + trial%5
		m := mixtureOf(k, 0.15+0.5*r.Float64())
		block := make([]float64, m.width())
		for i := range block {
			block[i] = r.NormFloat64()
		}
		a := []float32{float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())}
		lossAt := func(b []float64) float64 {
			b32 := make([]float32, len(b))
			for i, v := range b {
				b32[i] = float32(v)
			}
			return m.loss(make([]float32, len(b)), b32, a, 1)
		}
		b32 := make([]float32, len(block))
		for i, v := range block {
			b32[i] = float32(v)
		}
		grad := make([]float32, len(block))
		m.loss(grad, b32, a, 1)
		const eps = 1e-3
		for i := range block {
			plus, minus := slices.Clone(block), slices.Clone(block)
			plus[i] += eps
			minus[i] -= eps
			fd := (lossAt(plus) - lossAt(minus)) / (2 * eps)
			if math.Abs(fd-float64(grad[i])) > 2e-3*max(1, math.Abs(fd)) {
				t.Errorf("k %d, sd %.2f: d loss / d block[%d] = %v, finite differences %v", k, m.sigma, i, grad[i], fd)
			}
		}
	}
}

// TestArmMixtureDecode: the action is the mean of the most probable
// component, and the other dimensions decode as before.
func TestArmMixtureDecode(t *testing.T) {
	c := Config{ActionSpace: action.RT1ContinuousArm(), ArmMixture: 3, ArmMixtureSigma: 0.25}
	h := newActionHead(c, 2, 0, 0)
	if want := 3 + 256*3 + 256 + 3*256 + 3*4; h.width != want { // mode, rotations, gripper, base, mixture
		t.Fatalf("head width %d, want %d", h.width, want)
	}
	logits := make([]float32, h.width)
	block := logits[h.mix.off:]
	copy(block, []float32{0.1, 2, -1, 0.9, 0.9, 0.9, 0.3, -0.4, -1, -0.9, -0.9, -0.9})
	logits[h.offsets[action.DimMode]+action.ModeArm] = 1
	logits[h.offsets[action.DimGripper]+255] = 1
	// decode recomputes the logits from the TTM output: a head whose
	// kernel is zero and whose bias holds them.
	h.kernel, h.bias = make([]float32, 2*h.width), logits
	a := make([]float32, c.ActionSpace.Len())
	h.decode(a, make([]float32, h.width), make([]float32, 2), make([]float32, 2), 1)
	want := []float32{action.ModeArm, 0.3, -0.4, -1}
	if !slices.Equal(a[:4], want) || a[action.DimGripper] != 1 {
		t.Errorf("decoded %v, want mode and arm %v and gripper 1", a, want)
	}
}

func TestArmMixtureValidate(t *testing.T) {
	spec, err := Preset("small-mixture")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"binned arm", func(c *Config) { c.ActionSpace = action.RT1() }, "want it regressed"},
		{"no sd", func(c *Config) { c.ArmMixtureSigma = 0 }, "positive sd"},
		{"NaN sd", func(c *Config) { c.ArmMixtureSigma = math.NaN() }, "positive sd"},
		{"negative sd", func(c *Config) { c.ArmMixtureSigma = -0.25 }, "positive sd"},
		{"negative components", func(c *Config) { c.ArmMixture = -2 }, "components"},
		{"sd without components", func(c *Config) { c.ArmMixture = 0 }, "components"},
		{"another layout", func(c *Config) { c.ActionSpace.Dims[action.DimMode].Name = "phase" }, "RT-1 action layout"},
	} {
		bad := spec
		bad.Policy.ActionSpace.Dims = slices.Clone(spec.Policy.ActionSpace.Dims)
		tc.edit(&bad.Policy)
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate: %v, want an error with %q", tc.name, err, tc.want)
		}
		if math.IsNaN(bad.Policy.ArmMixtureSigma) {
			continue // JSON has no NaN
		}
		if _, err := ParseConfig([]byte(bad.Policy.JSON())); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ParseConfig: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
