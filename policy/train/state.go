package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ttmrobot/ttm/internal/safetensors"
)

// The trainer's state file holds everything a resumed run needs besides
// the policy checkpoint: the optimiser's moments and step, every stream's
// episode, position and carried state (memory, previous action, the
// feedback memory FiLM reads, frame window), and the learning curve. Written
// atomically after the checkpoint, it always matches a checkpoint on disk.
// For a policy on another sequence model than the TTM the streams' carried
// sequence states are not saved: a resumed run restarts each stream's
// episode from its first step.

const (
	stateConfigKey   = "train.config"
	stateProgressKey = "train.progress"
)

type progress struct {
	Updates  int      `json:"updates"`
	Samples  int64    `json:"samples"`
	Episodes string   `json:"episodes"` // SHA-256 of the episode names in order
	Streams  []cursor `json:"streams"`
	History  []Record `json:"history"`
}

type cursor struct {
	Episode, Step int
	Visits        uint64
	Steps         int // the state's step count
	Frames        int // frames in the carried window
}

// episodesDigest identifies the training set and its order.
func episodesDigest(eps []*Episode) string {
	h := sha256.New()
	for _, e := range eps {
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name, e.Steps)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// SaveState writes the trainer's state to path.
func (tr *Trainer) SaveState(path string) error {
	f := safetensors.New()
	cfg, _ := json.Marshal(tr.cfg)
	f.Metadata[stateConfigKey] = string(cfg)
	pr := progress{Updates: tr.opt.Step, Samples: tr.samples, Episodes: episodesDigest(tr.eps), History: tr.history}
	for i, g := range tr.opt.M {
		f.Tensors["adam/m/"+g.Name] = safetensors.FromFloat32(g.Params, len(g.Params))
		f.Tensors["adam/v/"+g.Name] = safetensors.FromFloat32(tr.opt.V[i].Params, len(g.Params))
	}
	k, d := tr.p.Spec().Vision.Head.Tokens, tr.p.Spec().TTM.Dim
	for i, s := range tr.streams {
		n := s.st.Window.Len()
		pr.Streams = append(pr.Streams, cursor{Episode: s.ep, Step: s.t, Visits: s.visits, Steps: s.st.Steps, Frames: n})
		p := "stream/" + strconv.Itoa(i) + "/"
		if s.st.Memory() != nil {
			f.Tensors[p+"memory"] = safetensors.FromFloat32(s.st.Memory().Tokens, len(s.st.Memory().Tokens))
		}
		for _, v := range s.st.Vectors() {
			if *v.V != nil {
				f.Tensors[p+v.Name] = safetensors.FromFloat32(*v.V, len(*v.V))
			}
		}
		if n > 0 {
			frames := make([]float32, 0, n*k*d)
			for age := n - 1; age >= 0; age-- {
				frames = append(frames, s.st.Window.Frame(age)...)
			}
			f.Tensors[p+"window"] = safetensors.FromFloat32(frames, n, k*d)
		}
	}
	js, err := json.Marshal(pr)
	if err != nil {
		return err
	}
	f.Metadata[stateProgressKey] = string(js)
	return safetensors.WriteFile(path, f)
}

// LoadState restores a state written by SaveState for the same
// configuration and episodes; the policy must be the checkpoint saved with
// it.
func (tr *Trainer) LoadState(path string) error {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return fmt.Errorf("train state: %w", err)
	}
	var cfg Config
	if err := json.Unmarshal([]byte(f.Metadata[stateConfigKey]), &cfg); err != nil {
		return fmt.Errorf("train state %s: config: %w", path, err)
	}
	want := tr.cfg
	cfg.Steps, want.Steps = 0, 0 // a resumed run may be extended
	if cfg != want {
		return fmt.Errorf("train state %s: made with %+v, this run has %+v", path, cfg, want)
	}
	var pr progress
	if err := json.Unmarshal([]byte(f.Metadata[stateProgressKey]), &pr); err != nil {
		return fmt.Errorf("train state %s: progress: %w", path, err)
	}
	if pr.Episodes != episodesDigest(tr.eps) {
		return fmt.Errorf("train state %s: made on other episodes (the dataset changed)", path)
	}
	if len(pr.Streams) != len(tr.streams) {
		return fmt.Errorf("train state %s: %d streams, this run has %d", path, len(pr.Streams), len(tr.streams))
	}
	load := func(name string, dst []float32) error {
		t, ok := f.Tensors[name]
		if !ok {
			return fmt.Errorf("train state %s: no %s", path, name)
		}
		if safetensors.NumElements(t.Shape) != len(dst) {
			return fmt.Errorf("train state %s: %s has %d values, want %d", path, name, safetensors.NumElements(t.Shape), len(dst))
		}
		return t.Float32(dst)
	}
	for i, g := range tr.opt.M {
		if err := load("adam/m/"+g.Name, g.Params); err != nil {
			return err
		}
		if err := load("adam/v/"+g.Name, tr.opt.V[i].Params); err != nil {
			return err
		}
	}
	k, d := tr.p.Spec().Vision.Head.Tokens, tr.p.Spec().TTM.Dim
	for i, c := range pr.Streams {
		s := tr.streams[i]
		if c.Episode < 0 || c.Episode >= len(tr.eps) || c.Step < 0 || c.Step >= tr.eps[c.Episode].Steps || c.Frames > s.st.Window.Frames() {
			return fmt.Errorf("train state %s: stream %d is at episode %d step %d", path, i, c.Episode, c.Step)
		}
		s.ep, s.t, s.visits = c.Episode, c.Step, c.Visits
		s.st.Reset()
		if s.st.Memory() == nil {
			// Another sequence model than the TTM: its state (a seq.State)
			// is not saved, so the stream restarts its episode from the
			// first step with a fresh state.
			s.t = 0
			continue
		}
		s.st.Steps = c.Steps
		p := "stream/" + strconv.Itoa(i) + "/"
		if err := load(p+"memory", s.st.Memory().Tokens); err != nil {
			return err
		}
		for _, v := range s.st.Vectors() {
			if *v.V == nil {
				continue
			}
			if err := load(p+v.Name, *v.V); err != nil {
				return err
			}
		}
		if c.Frames > 0 {
			frames := make([]float32, c.Frames*k*d)
			if err := load(p+"window", frames); err != nil {
				return err
			}
			for j := range c.Frames {
				s.st.Window.Push(frames[j*k*d : (j+1)*k*d])
			}
		}
	}
	tr.opt.Step, tr.samples, tr.history = pr.Updates, pr.Samples, pr.History
	return nil
}
