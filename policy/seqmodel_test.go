package policy

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ttmrobot/ttm/internal/safetensors"
	"github.com/ttmrobot/ttm/policy/seq"
)

// Tests of policies on other sequence models than the TTM (Config.Model).

// seqCheckpoints writes one small checkpoint per sequence model, on the
// small checkpoint's backbone (not regenerated).
var seqCheckpoints sync.Map // model name -> func() (string, error)

func seqCheckpoint(t testing.TB, model string) string {
	t.Helper()
	f, _ := seqCheckpoints.LoadOrStore(model, sync.OnceValues(func() (string, error) {
		small, err := smallCheckpoint()
		if err != nil {
			return "", err
		}
		spec, err := Preset("small")
		if err != nil {
			return "", err
		}
		spec.Policy.Model = model
		dir, err := os.MkdirTemp("", "policy-seq-test")
		if err != nil {
			return "", err
		}
		out := filepath.Join(dir, model+".safetensors")
		return out, Create(spec, 7, strings.TrimSuffix(small, ".safetensors")+".backbone.onnx", out, nil)
	}))
	path, err := f.(func() (string, error))()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func loadSeq(t testing.TB, model string, opts Options) *Policy {
	t.Helper()
	p, err := Load(seqCheckpoint(t, model), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestSeqCheckpointRoundTrip: a checkpoint of every non-TTM model stores
// the seq model's configuration and its tensors under seq/<name>/ (and no
// ttm/ tensors), and loads back the very parameters seq.New and Init make
// at the TTM configuration's width and token budget.
func TestSeqCheckpointRoundTrip(t *testing.T) {
	for _, name := range seq.Names() {
		if name == "ttm" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			path := seqCheckpoint(t, name)
			f, err := safetensors.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			spec, _ := Preset("small")
			want, err := seq.New(name, SeqConfig(spec.TTM))
			if err != nil {
				t.Fatal(err)
			}
			want.Init(7)
			if got := f.Metadata[SeqConfigKey]; got != want.ConfigJSON() {
				t.Errorf("seq.config %s, want %s", got, want.ConfigJSON())
			}
			if !strings.Contains(f.Metadata[ConfigKey], `"model":"`+name+`"`) {
				t.Errorf("policy.config %s does not name the model", f.Metadata[ConfigKey])
			}
			for tn := range f.Tensors {
				if strings.HasPrefix(tn, "ttm/") {
					t.Errorf("tensor %s in a %s checkpoint", tn, name)
				}
			}
			for _, s := range want.Specs() {
				if _, ok := f.Tensors["seq/"+name+"/"+s.Name]; !ok {
					t.Errorf("no tensor seq/%s/%s", name, s.Name)
				}
			}
			p, err := Load(path, Options{NoBackbone: true})
			if err != nil {
				t.Fatal(err)
			}
			if p.ModelName() != name || p.Groups()[0].Name != "seq" {
				t.Errorf("loaded model %q, first group %q", p.ModelName(), p.Groups()[0].Name)
			}
			if !equal(p.Groups()[0].Params, want.Params()) {
				t.Error("loaded parameters differ from seq.New + Init(7)")
			}
			if p.Spec().TTM != spec.TTM {
				t.Errorf("ttm.config %+v, want %+v", p.Spec().TTM, spec.TTM)
			}
			// Saving again writes the same tensors.
			again := filepath.Join(t.TempDir(), "again.safetensors")
			if err := p.Save(again); err != nil {
				t.Fatal(err)
			}
			g, err := safetensors.ReadFile(again)
			if err != nil {
				t.Fatal(err)
			}
			for tn, tt := range f.Tensors {
				if u, ok := g.Tensors[tn]; !ok || !bytes.Equal(u.Data, tt.Data) {
					t.Errorf("tensor %s differs after a second save", tn)
				}
			}
		})
	}
}

// TestTTMCheckpointUnchanged: Model "ttm" and the empty default write the
// same checkpoint bytes, with no "model" field and no seq tensors.
func TestTTMCheckpointUnchanged(t *testing.T) {
	small, err := smallCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	backbone := strings.TrimSuffix(small, ".safetensors") + ".backbone.onnx"
	dir := t.TempDir()
	var files [2][]byte
	for i, model := range []string{"", "ttm"} {
		spec, _ := Preset("small")
		spec.Policy.Model = model
		out := filepath.Join(dir, []string{"a", "b"}[i]+".safetensors")
		if err := Create(spec, 7, backbone, out, nil); err != nil {
			t.Fatal(err)
		}
		files[i], _ = os.ReadFile(out)
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error(`Model "ttm" writes another checkpoint than the default`)
	}
	f, err := safetensors.Parse(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(f.Metadata[ConfigKey], "model") || f.Metadata[SeqConfigKey] != "" {
		t.Errorf("default checkpoint metadata names a model: %q, %q", f.Metadata[ConfigKey], f.Metadata[SeqConfigKey])
	}
	for tn := range f.Tensors {
		if strings.HasPrefix(tn, SeqPrefix) {
			t.Errorf("tensor %s in a TTM checkpoint", tn)
		}
	}
	p := loadSmall(t, Options{NoBackbone: true})
	if p.ModelName() != "ttm" || p.Groups()[0].Name != "ttm" || p.NewState().Memory() == nil {
		t.Errorf("default policy: model %q, group %q", p.ModelName(), p.Groups()[0].Name)
	}
}

// TestSeqCheckpointFailsClosed: a checkpoint whose sequence model does not
// match its tensors or configuration is refused with an error naming the
// problem.
func TestSeqCheckpointFailsClosed(t *testing.T) {
	path := seqCheckpoint(t, "recurrent")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const some = "seq/recurrent/readout/tokens"
	for _, tc := range []struct {
		name   string
		change func(f *safetensors.File)
		want   string
	}{
		{"missing tensor", func(f *safetensors.File) { delete(f.Tensors, some) }, "missing tensor " + some},
		{"shape", func(f *safetensors.File) {
			f.Tensors[some] = safetensors.FromFloat32(make([]float32, 7), 7)
		}, "tensor " + some + " has shape [7]"},
		{"unexpected tensor", func(f *safetensors.File) {
			f.Tensors["seq/recurrent/extra"] = safetensors.FromFloat32([]float32{1}, 1)
		}, "unexpected tensor seq/recurrent/extra"},
		{"stray ttm tensor", func(f *safetensors.File) {
			f.Tensors["ttm/memory_init"] = safetensors.FromFloat32([]float32{1}, 1)
		}, "unexpected tensor ttm/memory_init"},
		{"no seq config", func(f *safetensors.File) { delete(f.Metadata, SeqConfigKey) }, `no "seq.config"`},
		{"bad seq config", func(f *safetensors.File) {
			f.Metadata[SeqConfigKey] = strings.Replace(f.Metadata[SeqConfigKey], `"dim":64`, `"dim":-1`, 1)
		}, "dim is -1"},
		{"unknown field", func(f *safetensors.File) { f.Metadata[SeqConfigKey] = `{"dimm":64}` }, "unknown field"},
		{"unknown model", func(f *safetensors.File) {
			f.Metadata[ConfigKey] = strings.Replace(f.Metadata[ConfigKey], `"model":"recurrent"`, `"model":"gru"`, 1)
		}, `unknown sequence model "gru"`},
		{"width mismatch", func(f *safetensors.File) {
			f.Metadata[SeqConfigKey] = strings.Replace(f.Metadata[SeqConfigKey], `"dim":64`, `"dim":32`, 1)
		}, "ttm.config has 16, 8 and 64"},
		{"non-finite", func(f *safetensors.File) {
			v := make([]float32, len(f.Tensors[some].Data)/4)
			v[3] = float32(math.Inf(1))
			f.Tensors[some] = safetensors.FromFloat32(v, f.Tensors[some].Shape...)
		}, "holds +Inf at element 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := safetensors.Parse(good)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(f)
			bad := filepath.Join(t.TempDir(), "bad.safetensors")
			if err := safetensors.WriteFile(bad, f); err != nil {
				t.Fatal(err)
			}
			p, err := Load(bad, Options{NoBackbone: true})
			if err == nil {
				t.Fatal("loaded")
			}
			_ = p
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q", err, tc.want)
			}
		})
	}
}

// TestSeqStepIsReplayable: a recurrent policy's Step is deterministic, its
// State's Hash follows the seq state, and Clone/CopyFrom replay the same
// bits; SetNoMemory is refused.
func TestSeqStepIsReplayable(t *testing.T) {
	p := loadSeq(t, "recurrent", Options{})
	st := p.NewState()
	if st.Memory() != nil || st.Seq == nil {
		t.Fatal("state of a recurrent policy holds a TTM memory or no seq state")
	}
	act := make([]float32, p.ActionSpace().Len())
	var hashes []uint64
	var actions [][]float32
	var snap *State
	h0 := st.Hash()
	for i := range 4 {
		if i == 2 {
			snap = st.Clone()
		}
		if err := p.Step(&Observation{Frame: frame(uint64(i)), Instruction: "open the drawer"}, st, act); err != nil {
			t.Fatal(err)
		}
		hashes, actions = append(hashes, st.Hash()), append(actions, append([]float32(nil), act...))
	}
	if hashes[0] == h0 || hashes[1] == hashes[0] || st.Seq.Steps() != 4 {
		t.Errorf("hashes %x from %x, %d seq steps: the seq state does not advance", hashes, h0, st.Seq.Steps())
	}
	st.CopyFrom(snap)
	for i := 2; i < 4; i++ {
		if err := p.Step(&Observation{Frame: frame(uint64(i)), Instruction: "open the drawer"}, st, act); err != nil {
			t.Fatal(err)
		}
		if st.Hash() != hashes[i] || !equal(act, actions[i]) {
			t.Errorf("replay of step %d differs", i)
		}
	}
	st.Reset()
	if st.Hash() != h0 || st.Steps != 0 {
		t.Error("Reset does not restore the episode-start state")
	}
	if err := p.SetNoMemory(true); err == nil || !strings.Contains(err.Error(), "ttm-nomem") {
		t.Errorf("SetNoMemory(true) on a recurrent policy: %v", err)
	}
	if err := p.SetNoMemory(false); err != nil {
		t.Error(err)
	}
	if err := NewLearner(p, 2, 80).SetNoMemory(true); err == nil {
		t.Error("Learner.SetNoMemory(true) on a recurrent policy: no error")
	}
}
