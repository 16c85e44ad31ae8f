// Package dataset turns recorded episode bags into the trainer's
// episodes: it reads a dataset folder's index (sim.ReadIndex) and bags,
// keeps the episodes a run trains on, encodes their frames through the
// policy's frozen front end (train.Encode) and keeps the features in a
// cache beside the dataset, so that a second run reads them back.
package dataset

import (
	"crypto/sha256"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/policy/train"
	"github.com/ttmrobot/ttm/sim"
)

// Use is what a training run took from one dataset folder.
type Use struct {
	Dir      string `json:"dir"`
	Indexed  int    `json:"indexed"`  // episodes in its index
	Episodes int    `json:"episodes"` // episodes trained on
	Steps    int    `json:"steps"`
	// ExpertLabelled counts the episodes trained on whose actions are the
	// expert's labels (DAgger rollouts), FailedKept those of them whose
	// rollout failed, Skipped the failed episodes left out.
	ExpertLabelled int `json:"expert_labelled"`
	FailedKept     int `json:"failed_kept"`
	Skipped        int `json:"skipped"`
	// OtherTasks counts the episodes of tasks --tasks left out.
	OtherTasks int `json:"other_tasks,omitempty"`
	// Rate is the rate, Hz, the episodes were recorded at: the inverse of
	// the median of their periods (the time between frames), which must
	// agree within RateTolerance.
	Rate float64 `json:"rate_hz"`
}

// RateTolerance is how far, relatively, an episode's period may be from
// the others' for them to count as recorded at one rate.
const RateTolerance = 0.02

// Load reads the datasets' episodes as cached features,
// encoding (and caching) those not cached yet. Episodes that failed are
// skipped unless all, except expert-labelled ones (DAgger rollouts: their
// actions are the expert's, whatever the rollout did). Each dataset has its
// own feature cache: DIR/.features, or with cacheDir and several datasets
// a subfolder of cacheDir per dataset. With several datasets, episodes are
// named by their folder's absolute path and bag, so the trainer's record of
// its episodes (which resuming checks) tells the datasets apart.
// It returns the episodes, their steps in all and what each dataset gave;
// tasks nil takes every task's episodes. log may be nil.
func Load(log hclog.Logger, p *policy.Policy, dirs []string, cacheDir string, tasks []string, all bool) ([]*train.Episode, int, []Use, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	var eps []*train.Episode
	var uses []Use
	total := 0
	for _, dir := range dirs {
		cache := cacheDir
		switch {
		case cache == "":
			cache = filepath.Join(dir, ".features")
		case len(dirs) > 1:
			cache = filepath.Join(cache, CacheName(dir))
		}
		qualify := ""
		if len(dirs) > 1 {
			qualify = mustAbs(dir)
		}
		got, use, err := loadDir(log, p, dir, cache, qualify, tasks, all)
		if err != nil {
			return nil, 0, nil, err
		}
		eps = append(eps, got...)
		total += use.Steps
		uses = append(uses, use)
	}
	if len(eps) == 0 {
		what := "dataset " + dirs[0]
		if len(dirs) > 1 {
			what = "datasets " + strings.Join(dirs, ", ")
		}
		return nil, 0, nil, fmt.Errorf("%s: no successful or expert-labelled episodes (all takes the others) of the tasks asked for", what)
	}
	for _, u := range uses[1:] {
		if u.Episodes > 0 && !sameRate(u.Rate, uses[0].Rate) {
			return nil, 0, nil, fmt.Errorf("datasets %s and %s were recorded at %.4g and %.4g Hz: a policy learns its per-step actions at one rate",
				uses[0].Dir, u.Dir, uses[0].Rate, u.Rate)
		}
	}
	return eps, total, uses, nil
}

func sameRate(a, b float64) bool { return math.Abs(a-b) <= RateTolerance*max(a, b) }

// CacheName is a dataset's subfolder in a shared cache folder:
// its base name and a digest of its absolute path, so two datasets'
// episodes of the same name never share a cache file.
func CacheName(dir string) string {
	sum := sha256.Sum256([]byte(mustAbs(dir)))
	return fmt.Sprintf("%s-%x", filepath.Base(mustAbs(dir)), sum[:6])
}

// loadDir reads one dataset's episodes (see Load); their
// names are prefixed with qualify and "/" when qualify is not empty, and
// only the episodes of tasks are kept (nil: all).
func loadDir(log hclog.Logger, p *policy.Policy, dir, cacheDir, qualify string, tasks []string, all bool) ([]*train.Episode, Use, error) {
	use := Use{Dir: dir}
	ix, err := sim.ReadIndex(dir)
	if err != nil {
		return nil, use, err
	}
	use.Indexed = len(ix.Episodes)
	cache, err := train.NewCache(cacheDir, p.Spec())
	if err != nil {
		return nil, use, err
	}
	c, n, err := p.FeatureShape()
	if err != nil {
		return nil, use, err
	}
	na := p.ActionSpace().Len()
	var eps []*train.Episode
	var periods []float64
	encoded, began := 0, time.Now()
	last := began
	for i, e := range ix.Episodes {
		if tasks != nil && !slices.Contains(tasks, e.Task) {
			use.OtherTasks++
			continue
		}
		expert := e.Label == sim.LabelExpert
		if !e.Success && !expert && !all {
			use.Skipped++
			continue
		}
		name := strings.TrimSuffix(e.File, filepath.Ext(e.File))
		ep, err := cache.Load(name, c*n, na)
		if err != nil {
			return nil, use, err
		}
		period := e.Period
		if ep == nil || period == 0 { // an index written before it kept the period: the bag's info has it
			rec, err := sim.ReadEpisode(filepath.Join(dir, e.File), sim.ReadOptions{})
			if err != nil {
				return nil, use, err
			}
			period = rec.Info.Period
			if ep == nil {
				if ep, err = encode(p, rec, e, name); err != nil {
					return nil, use, fmt.Errorf("dataset %s: %w", dir, err)
				}
				if err := cache.Store(ep, na); err != nil {
					return nil, use, err
				}
				encoded++
			}
		}
		if !(period > 0) {
			return nil, use, fmt.Errorf("dataset %s: episode %s has no time between its frames (one frame?): its rate is unknown", dir, e.File)
		}
		periods = append(periods, period)
		if qualify != "" {
			ep.Name = qualify + "/" + ep.Name
		}
		if p.Spec().Policy.GoalProbe {
			if ep.Goal, err = startGoal(e); err != nil {
				return nil, use, fmt.Errorf("dataset %s: %w", dir, err)
			}
		}
		eps = append(eps, ep)
		use.Episodes++
		use.Steps += ep.Steps
		if expert {
			use.ExpertLabelled++
			if !e.Success {
				use.FailedKept++
			}
		}
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			log.Info("loading episodes", "dir", dir, "done", fmt.Sprintf("%d/%d", i+1, len(ix.Episodes)), "encoded", encoded,
				"frames/s", fmt.Sprintf("%.0f", float64(use.Steps)/time.Since(began).Seconds()))
		}
	}
	if len(periods) > 0 {
		slices.Sort(periods)
		mid := periods[len(periods)/2]
		if lo, hi := periods[0], periods[len(periods)-1]; !sameRate(1/lo, 1/mid) || !sameRate(1/hi, 1/mid) {
			return nil, use, fmt.Errorf("dataset %s: episodes recorded at %.4g to %.4g Hz: a policy learns its per-step actions at one rate", dir, 1/hi, 1/lo)
		}
		use.Rate = 1 / mid
	}
	log.Info("episodes ready", "dir", dir, "rate_hz", use.Rate, "episodes", use.Episodes, "steps", use.Steps, "expert_labelled", use.ExpertLabelled,
		"failed_kept", use.FailedKept, "skipped", use.Skipped, "other_tasks", use.OtherTasks, "encoded", encoded, "cache", cache.Dir,
		"took", time.Since(began).Round(time.Millisecond))
	return eps, use, nil
}

// encode runs a recorded episode's frames through p's front end.
func encode(p *policy.Policy, rec *sim.RecordedEpisode, e sim.IndexEntry, name string) (*train.Episode, error) {
	if rec.Info.Label != e.Label {
		return nil, fmt.Errorf("the index labels %s %q, the bag %q", e.File, e.Label, rec.Info.Label)
	}
	fr := &train.Frames{Name: name, Task: e.Task, Instruction: rec.Info.Instruction, Height: rec.Info.Height, Width: rec.Info.Width}
	labelled := true // the simulator's bags: keypoint labels for every frame
	sensed := true   // and proprioception
	lying := false   // target-lying labels: some frame has one
	for _, s := range rec.Steps {
		if s.Action == nil {
			return nil, fmt.Errorf("episode %s: a frame without an action", e.File)
		}
		fr.Images = append(fr.Images, s.Image)
		fr.Actions = append(fr.Actions, s.Action)
		fr.Keypoints = append(fr.Keypoints, s.Keypoints)
		fr.Lying = append(fr.Lying, s.TargetLying)
		lying = lying || s.TargetLying >= 0
		labelled = labelled && s.Keypoints != nil
		fr.Proprio = append(fr.Proprio, s.Proprio)
		sensed = sensed && s.Proprio != nil
	}
	if !labelled {
		fr.Keypoints = nil
	}
	if !sensed {
		fr.Proprio = nil
	}
	if !lying {
		fr.Lying = nil
	}
	return train.Encode(p, fr)
}

// probedFamilies are the families whose episodes label the goal probe
// besides the memory tasks: a drawer episode teaches the probe where a
// drawer handle is, which pointed_drawer must then keep. On the other
// families the probe cost knock its success (docs/results.md).
var probedFamilies = map[string]bool{"drawer": true}

// startGoal is the goal probe's label of a simulated episode,
// sim.StartGoal in policy.GoalUnit, or nil for a family the probe does not
// learn from.
func startGoal(e sim.IndexEntry) ([]float32, error) {
	task, err := sim.TaskByName(e.Task)
	if err != nil {
		return nil, fmt.Errorf("episode %s: the goal probe's label: %w", e.File, err)
	}
	if !task.Memory && !probedFamilies[task.Name] {
		return nil, nil
	}
	g, err := sim.StartGoal(task, e.Seed)
	if err != nil {
		return nil, fmt.Errorf("episode %s: the goal probe's label: %w", e.File, err)
	}
	goal := make([]float32, policy.GoalLen)
	for i := range goal {
		goal[i] = float32(g[i] / policy.GoalUnit)
	}
	return goal, nil
}

func mustAbs(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	return abs
}
