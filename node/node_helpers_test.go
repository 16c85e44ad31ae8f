package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/internal/safetensors"
	"github.com/ttmrobot/ttm/policy"
)

// testDir holds the checkpoints the tests share; TestMain removes it.
var testDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "node-test")
	if err != nil {
		panic(err)
	}
	testDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// smallCheckpoint writes one small policy (B0 at 128x160) and its seeded
// backbone per test binary.
var smallCheckpoint = sync.OnceValues(func() (string, error) {
	spec, err := policy.Preset("small")
	if err != nil {
		return "", err
	}
	out := filepath.Join(testDir, "small.safetensors")
	return out, policy.Create(spec, 7, "", out, nil)
})

func smallPath(t testing.TB) string {
	t.Helper()
	p, err := smallCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// derivedCheckpoint writes a copy of the small checkpoint (beside it, so it
// finds the same backbone) with its tensors changed by edit.
func derivedCheckpoint(t testing.TB, name string, edit func(tensor string, v []float32)) string {
	t.Helper()
	f, err := safetensors.ReadFile(smallPath(t))
	if err != nil {
		t.Fatal(err)
	}
	for tn, tensor := range f.Tensors {
		v, err := tensor.Floats()
		if err != nil {
			t.Fatal(err)
		}
		edit(tn, v)
		f.Tensors[tn] = safetensors.FromFloat32(v, tensor.Shape...)
	}
	out := filepath.Join(testDir, name+".safetensors")
	if err := safetensors.WriteFile(out, f); err != nil {
		t.Fatal(err)
	}
	return out
}

// ratedCheckpoint writes a copy of the checkpoint at path that records it
// learnt at hz (policy.Config.Rate), as ttm train writes it.
func ratedCheckpoint(t testing.TB, path string, hz float64) string {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := policy.ParseConfig([]byte(f.Metadata[policy.ConfigKey]))
	if err != nil {
		t.Fatal(err)
	}
	c.Rate = hz
	f.Metadata[policy.ConfigKey] = c.JSON()
	out := strings.TrimSuffix(path, ".safetensors") + fmt.Sprintf("-%ghz.safetensors", hz)
	if err := safetensors.WriteFile(out, f); err != nil {
		t.Fatal(err)
	}
	return out
}

// editTensor rewrites one F32 tensor of the safetensors file at path in
// place, through edit.
func editTensor(t testing.TB, path, name string, edit func(v []float32)) {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := f.Tensors[name].Floats()
	if err != nil {
		t.Fatal(err)
	}
	edit(v)
	f.Tensors[name] = safetensors.FromFloat32(v, f.Tensors[name].Shape...)
	if err := safetensors.WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
}

// modeCheckpoint is the small policy with its head biased so that it always
// picks mode (action.ModeTerminate, ModeArm or ModeBase): the mode logits
// come first in the head's output.
func modeCheckpoint(t testing.TB, mode int) string {
	return derivedCheckpoint(t, "mode"+string(rune('0'+mode)), func(name string, v []float32) {
		if name == policy.Prefix+"head/bias" {
			v[mode] = 1e3
		}
	})
}

// overflowPolicy is the small policy with a head kernel and bias set, in
// memory, at float32's largest values: its logits overflow, so Step fails
// with policy.ErrNonFinite. No file may hold such weights (Load refuses
// any beyond safetensors.MaxWeight), but a model can still overflow.
func overflowPolicy(t testing.TB) *policy.Policy {
	p := loadPolicy(t, actingPath(t))
	for _, g := range p.Groups() {
		if g.Name != "policy" {
			continue
		}
		for _, s := range p.ParamSpecs(g.Name) {
			if s.Name == policy.Prefix+"head/kernel" || s.Name == policy.Prefix+"head/bias" {
				for i := range g.Params[s.Offset : s.Offset+s.Size] {
					g.Params[s.Offset+i] = 3.4e38
				}
			}
		}
	}
	p.ParamsChanged()
	return p
}

func loadPolicy(t testing.TB, path string) *policy.Policy {
	t.Helper()
	p, err := policy.Load(path, policy.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// actingPath is the small policy biased to arm mode: a seeded policy's
// mode is arbitrary, and one that terminates its episode at the first step
// would end the loop tests' episodes before they look at them.
func actingPath(t testing.TB) string { return modeCheckpoint(t, action.ModeArm) }

// proprioCheckpoint writes the small-proprio policy (it reads
// action.ArmProprio) with its head biased to arm mode, like actingPath;
// targetCheckpoint the same for small-geometry (proprioception, target
// geometry, and an arm regressed instead of binned).
var (
	proprioCheckpoint = sync.OnceValues(func() (string, error) { return armBiasedCheckpoint("small-proprio") })
	targetCheckpoint  = sync.OnceValues(func() (string, error) { return armBiasedCheckpoint("small-geometry") })
)

func armBiasedCheckpoint(preset string) (string, error) {
	spec, err := policy.Preset(preset)
	if err != nil {
		return "", err
	}
	out := filepath.Join(testDir, preset+".safetensors")
	if err := policy.Create(spec, 7, "", out, nil); err != nil {
		return "", err
	}
	f, err := safetensors.ReadFile(out)
	if err != nil {
		return "", err
	}
	name := policy.Prefix + "head/bias"
	v, err := f.Tensors[name].Floats()
	if err != nil {
		return "", err
	}
	v[action.ModeArm] = 1e3
	f.Tensors[name] = safetensors.FromFloat32(v, f.Tensors[name].Shape...)
	return out, safetensors.WriteFile(out, f)
}

func proprioPath(t testing.TB) string { return onceCheckpoint(t, proprioCheckpoint) }

func targetPath(t testing.TB) string { return onceCheckpoint(t, targetCheckpoint) }

func onceCheckpoint(t testing.TB, write func() (string, error)) string {
	t.Helper()
	p, err := write()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
