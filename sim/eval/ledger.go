package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/ttmrobot/ttm/sim"
)

// LedgerVersion is the version of the ledger's JSON layout.
const LedgerVersion = 1

// Ledger is the deterministic record of a closed-loop evaluation, written
// as ledger.json: the same checkpoints, tasks, episodes, seed, image size
// and a fixed latency give the same bytes, whatever the number of workers
// or shards. Nothing measured with a clock is in it (see Timing).
//
// Runs holds every column of the evaluation (a checkpoint, an ablation of
// it, or the expert) with its episodes; Overall, PerFamily and Groups at
// the top are copies of the first run's, the primary one, so
// overall.success_rate and per_family.<family>.success_rate read as the
// result of the evaluated checkpoint.
type Ledger struct {
	Version   int              `json:"version"`
	Setup     Setup            `json:"setup"`
	Primary   string           `json:"primary"`
	Overall   Stats            `json:"overall"`
	PerFamily map[string]Stats `json:"per_family"`
	Groups    map[string]Stats `json:"groups"`
	Runs      []RunLedger      `json:"runs"`
}

// Setup is what was evaluated, apart from the agents.
type Setup struct {
	Tasks    []string `json:"tasks"`    // in evaluation order
	Episodes int      `json:"episodes"` // per task; episode i uses seed+i
	Seed     uint64   `json:"seed"`
	Height   int      `json:"height"` // rendered frames
	Width    int      `json:"width"`
	Latency  string   `json:"latency"` // "0", "measured" or a duration (see Latency)
	Shard    *Shard   `json:"shard,omitempty"`
}

// RunLedger is one column: an agent (a checkpoint with or without an
// ablation, or the scripted expert) over every episode.
type RunLedger struct {
	Name             string   `json:"name"`
	Agent            string   `json:"agent"` // "policy", "expert", or a custom agent's kind
	Checkpoint       string   `json:"checkpoint,omitempty"`
	CheckpointSHA256 string   `json:"checkpoint_sha256,omitempty"`
	Ablation         Ablation `json:"ablation"`
	// Memory is MemoryCheckpoint when the checkpoint was trained without
	// memory; absent, it runs with its memory unless Ablation is nomem.
	Memory    string           `json:"memory,omitempty"`
	Overall   Stats            `json:"overall"`
	PerFamily map[string]Stats `json:"per_family"`
	Groups    map[string]Stats `json:"groups"`
	Episodes  []EpisodeResult  `json:"episodes"`
}

// Stats summarises a set of episodes.
type Stats struct {
	Episodes    int     `json:"episodes"`
	Successes   int     `json:"successes"`
	SuccessRate float64 `json:"success_rate"`
	// CILow and CIHigh bound the 95 % Wilson score interval of SuccessRate.
	CILow  float64 `json:"ci_low"`
	CIHigh float64 `json:"ci_high"`
	// Steps to success over the successful episodes (see
	// EpisodeResult.StepsToSuccess); null when none succeeded.
	MeanStepsToSuccess   *float64 `json:"mean_steps_to_success"`
	MedianStepsToSuccess *float64 `json:"median_steps_to_success"`
	MeanSteps            float64  `json:"mean_steps"`
	// Terminated counts the episodes the agent ended itself.
	Terminated int `json:"terminated"`
	// KeypointError is the agent's image-point error over these episodes'
	// frames; absent for agents without keypoints. In a memory task that
	// cues its target (cue_pick's object, pointed_drawer's handle) a
	// fourth entry, RememberedTarget, is the target keypoint's error in
	// the frames after the cue, which no longer show which one it marked.
	KeypointError []PointError `json:"keypoint_error,omitempty"`
	// GoalProbe pools the episodes' goal probe errors (frame-weighted);
	// absent for agents without a probe.
	GoalProbe *GoalProbeError `json:"goal_probe,omitempty"`
	// ExpertAgreement pools the episodes' agreement with the expert;
	// absent for the expert itself.
	ExpertAgreement *ExpertAgreement `json:"expert_agreement,omitempty"`
	// Failures counts the failed episodes by cause (FailureCauses);
	// absent where none was compared with the expert or none failed.
	Failures map[string]int `json:"failures,omitempty"`
}

// PointError is how far an agent's keypoint lay from a labelled image
// point (sim.KeypointLabels) over the frames that showed the point.
type PointError struct {
	Point  string  `json:"point"`   // sim.KeypointNames
	Frames int     `json:"frames"`  // frames with the point in view
	MeanPx float64 `json:"mean_px"` // mean distance in pixels; 0 without frames
	// OnOther counts the frames in which the target or destination point
	// marked the other of the two objects: further than 8 px from its own
	// label and within 8 px of the other's. An instruction encoder that
	// cannot tell "move the X near the Y" from "move the Y near the X"
	// makes the two trade places.
	OnOther int `json:"on_other,omitempty"`
	// Near counts the frames with the point within 8 px of its label, and
	// NearMeanPx is the mean distance over those: how precisely the point
	// is found where it marks the right thing. MeanPx mixes that with the
	// frames in which it marks something else.
	Near       int     `json:"near"`
	NearMeanPx float64 `json:"near_mean_px"`
}

// GoalProbeError is how far a policy's goal probe (policy.Config.GoalProbe)
// lay from where the goal stood at the episode's start (sim.StartGoal):
// in the frames after a memory task's cue, which no longer show it (every
// frame of a task without a cue), and in the frames with the cue.
type GoalProbeError struct {
	Frames    int     `json:"frames"`
	MeanCm    float64 `json:"mean_cm"`
	CueFrames int     `json:"cue_frames,omitempty"`
	CueMeanCm float64 `json:"cue_mean_cm,omitempty"`
}

// EpisodeResult is one episode.
type EpisodeResult struct {
	Task        string `json:"task"` // the task family
	Index       int    `json:"index"`
	Seed        uint64 `json:"seed"`
	Instruction string `json:"instruction"`
	Success     bool   `json:"success"`
	Steps       int    `json:"steps"` // simulator steps taken
	// StepsToSuccess is the number of steps after which the goal first
	// held, for episodes that end in success; null otherwise.
	StepsToSuccess *int `json:"steps_to_success"`
	Terminated     bool `json:"terminated"`
	// Decisions counts the agent's actions: Steps without latency, fewer
	// when latency holds actions over several steps.
	Decisions int `json:"decisions"`
	// CueSteps is the number of first frames that show a memory task's
	// cue; KnockoutStep the step of the frame before which the knock-out
	// ablation reset the memory (absent when it did not happen).
	CueSteps     int  `json:"cue_steps,omitempty"`
	KnockoutStep *int `json:"knockout_step,omitempty"`
	// KeypointError is the agent's keypoint error in this episode, for
	// agents with keypoints (a policy with a keypoint token).
	KeypointError []PointError `json:"keypoint_error,omitempty"`
	// GoalProbe is the policy's goal probe error in this episode, for
	// policies with a probe.
	GoalProbe *GoalProbeError `json:"goal_probe,omitempty"`
	// ExpertAgreement compares the agent's decisions with the expert's
	// on the same states; absent for the expert (a privileged agent).
	ExpertAgreement *ExpertAgreement `json:"expert_agreement,omitempty"`
	// Failure is why the episode failed (one of FailureCauses), for a
	// failed episode compared with the expert.
	Failure string `json:"failure,omitempty"`
}

// Group names in Ledger.Groups.
const (
	GroupFamilies = "families" // the five RT-1 task families
	GroupMemory   = "memory"   // the memory tasks
)

// Family returns the name the ledger files task's episodes under. Every
// simulator task is its own family: pick, knock, upright, move, drawer,
// and one per memory task (cue_pick, put_back, pointed_drawer).
func Family(t *sim.Task) string { return t.Name }

// summarize fills r's statistics from its episodes.
func (r *RunLedger) summarize() error {
	r.PerFamily = map[string]Stats{}
	r.Groups = map[string]Stats{}
	byFamily := map[string][]EpisodeResult{}
	byGroup := map[string][]EpisodeResult{}
	for _, e := range r.Episodes {
		t, err := sim.TaskByName(e.Task)
		if err != nil {
			return fmt.Errorf("run %s: %w", r.Name, err)
		}
		f := Family(t)
		byFamily[f] = append(byFamily[f], e)
		g := GroupFamilies
		if t.Memory {
			g = GroupMemory
		}
		byGroup[g] = append(byGroup[g], e)
	}
	for f, es := range byFamily {
		r.PerFamily[f] = stats(es)
	}
	for g, es := range byGroup {
		r.Groups[g] = stats(es)
	}
	r.Overall = stats(r.Episodes)
	return nil
}

// stats summarises es, which must not be empty.
func stats(es []EpisodeResult) Stats {
	s := Stats{Episodes: len(es)}
	var toSuccess []int
	steps := 0
	for _, e := range es {
		steps += e.Steps
		if e.Terminated {
			s.Terminated++
		}
		if e.Success {
			s.Successes++
			if e.StepsToSuccess != nil {
				toSuccess = append(toSuccess, *e.StepsToSuccess)
			}
		}
	}
	s.KeypointError = poolPointErrors(es)
	s.GoalProbe = poolGoalProbe(es)
	s.ExpertAgreement = poolAgreement(es)
	s.Failures = countFailures(es)
	s.SuccessRate = float64(s.Successes) / float64(s.Episodes)
	s.CILow, s.CIHigh = Wilson(s.Successes, s.Episodes)
	s.MeanSteps = float64(steps) / float64(s.Episodes)
	if len(toSuccess) > 0 {
		sum := 0
		for _, v := range toSuccess {
			sum += v
		}
		mean := float64(sum) / float64(len(toSuccess))
		med := median(toSuccess)
		s.MeanStepsToSuccess, s.MedianStepsToSuccess = &mean, &med
	}
	return s
}

// poolPointErrors is the frame-weighted mean of the episodes' keypoint
// errors, point by point; nil when no episode has any.
func poolPointErrors(es []EpisodeResult) []PointError {
	var pooled []PointError
	var sums []pointSum
	for _, e := range es {
		for i, pe := range e.KeypointError {
			if i == len(pooled) {
				pooled = append(pooled, PointError{Point: pe.Point})
				sums = append(sums, pointSum{})
			}
			pooled[i].OnOther += pe.OnOther
			sums[i].addError(pe)
		}
	}
	for i, p := range pooled {
		pooled[i] = sums[i].result(p.Point)
		pooled[i].OnOther = p.OnOther
	}
	return pooled
}

// poolGoalProbe is the frame-weighted mean of the episodes' goal probe
// errors; nil when no episode has one.
func poolGoalProbe(es []EpisodeResult) *GoalProbeError {
	var g *GoalProbeError
	var sum, cueSum float64
	for _, e := range es {
		if e.GoalProbe == nil {
			continue
		}
		if g == nil {
			g = &GoalProbeError{}
		}
		g.Frames += e.GoalProbe.Frames
		g.CueFrames += e.GoalProbe.CueFrames
		sum += e.GoalProbe.MeanCm * float64(e.GoalProbe.Frames)
		cueSum += e.GoalProbe.CueMeanCm * float64(e.GoalProbe.CueFrames)
	}
	if g != nil && g.Frames > 0 {
		g.MeanCm = sum / float64(g.Frames)
	}
	if g != nil && g.CueFrames > 0 {
		g.CueMeanCm = cueSum / float64(g.CueFrames)
	}
	return g
}

// median of xs (the mean of the middle two for an even count).
func median(xs []int) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return float64(s[n/2])
	}
	return float64(s[n/2-1]+s[n/2]) / 2
}

// finish sorts every run's episodes into (task, index) order, computes the
// statistics and copies the primary run's to the top.
func (l *Ledger) finish() error {
	order := map[string]int{}
	for i, t := range l.Setup.Tasks {
		order[t] = i
	}
	for i := range l.Runs {
		r := &l.Runs[i]
		slices.SortFunc(r.Episodes, func(a, b EpisodeResult) int {
			if c := order[a.Task] - order[b.Task]; c != 0 {
				return c
			}
			return a.Index - b.Index
		})
		if len(r.Episodes) == 0 {
			return fmt.Errorf("run %s has no episodes", r.Name)
		}
		if err := r.summarize(); err != nil {
			return err
		}
	}
	if len(l.Runs) == 0 {
		return fmt.Errorf("ledger has no runs")
	}
	p := &l.Runs[0]
	l.Version, l.Primary, l.Overall, l.PerFamily, l.Groups = LedgerVersion, p.Name, p.Overall, p.PerFamily, p.Groups
	return nil
}

// Run returns the run called name, or nil.
func (l *Ledger) Run(name string) *RunLedger {
	for i := range l.Runs {
		if l.Runs[i].Name == name {
			return &l.Runs[i]
		}
	}
	return nil
}

// Marshal returns the ledger as indented JSON (maps in key order, so the
// bytes depend only on the contents).
func (l *Ledger) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode ledger: %w", err)
	}
	return append(b, '\n'), nil
}

// WriteFile writes the ledger to path.
func (l *Ledger) WriteFile(path string) error {
	b, err := l.Marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write ledger: %w", err)
	}
	return nil
}

// ParseLedger reads a ledger; unknown fields and other versions are errors.
func ParseLedger(b []byte) (*Ledger, error) {
	var l Ledger
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if l.Version != LedgerVersion {
		return nil, fmt.Errorf("ledger: version %d, want %d", l.Version, LedgerVersion)
	}
	return &l, nil
}

// ReadLedger reads a ledger file.
func ReadLedger(path string) (*Ledger, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	l, err := ParseLedger(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}
