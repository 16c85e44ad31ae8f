package eval

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
)

// testDir holds the checkpoints the tests share; TestMain removes it.
var testDir string

func TestMain(m *testing.M) {
	var err error
	if testDir, err = os.MkdirTemp("", "eval-test"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(testDir)
	os.Exit(code)
}

// tinySpec is the small preset on 64x80 frames with a window of two
// frames, so a step is cheap and the window holds a past frame.
func tinySpec(t testing.TB) policy.Spec {
	t.Helper()
	spec, err := policy.Preset("small")
	if err != nil {
		t.Fatal(err)
	}
	spec.Vision.Preprocess.Height, spec.Vision.Preprocess.Width = 64, 80
	spec.Backbone.Height, spec.Backbone.Width = 64, 80
	if spec.Vision.Head.Positions > 0 { // a positional embedding per map position: stride 16 at block 7
		spec.Vision.Head.Positions = (64 / 16) * (80 / 16)
	}
	spec.Vision.History = 2
	spec.TTM.InputTokens = 2*spec.Vision.Head.Tokens + spec.Policy.ActionSpace.Len() + spec.Policy.Padding
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return spec
}

var (
	ckptMu    sync.Mutex
	ckptPaths = map[uint64]string{}
)

// tinyCheckpoint writes (once per seed) a fresh tiny policy checkpoint
// with its seeded backbone and returns its path.
func tinyCheckpoint(t testing.TB, seed uint64) string {
	t.Helper()
	ckptMu.Lock()
	defer ckptMu.Unlock()
	if p, ok := ckptPaths[seed]; ok {
		return p
	}
	dir := filepath.Join(testDir, "ckpt", string(rune('a'+seed)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tiny.safetensors")
	if err := policy.Create(tinySpec(t), seed, "", path, nil); err != nil {
		t.Fatal(err)
	}
	ckptPaths[seed] = path
	return path
}

func loadTiny(t testing.TB, seed uint64) *policy.Policy {
	t.Helper()
	p, err := policy.Load(tinyCheckpoint(t, seed), policy.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func tasks(t testing.TB, spec string) []*sim.Task {
	t.Helper()
	ts, err := sim.SelectTasks(spec)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// agentPlayer gives every episode a fresh agent from newAgent.
type agentPlayer struct {
	newAgent   func() sim.Agent
	privileged bool
}

func (p agentPlayer) Begin(*sim.Episode) (sim.Agent, bool, error) {
	return p.newAgent(), p.privileged, nil
}
func (agentPlayer) Close() error { return nil }

func customRun(name string, newAgent func() sim.Agent) RunSpec {
	return RunSpec{Name: name, Agent: "test", Ablation: AblationNone,
		NewPlayer: func() (Player, error) { return agentPlayer{newAgent: newAgent}, nil }}
}

// terminator ends every episode at once: an honest agent that can never
// succeed, since no task starts solved.
type terminator struct{ act [11]float32 }

func (*terminator) Reset(string) {}
func (a *terminator) Act(*sim.Observation) ([]float32, error) {
	a.act = [11]float32{}
	a.act[action.DimMode] = action.ModeTerminate
	return a.act[:], nil
}
