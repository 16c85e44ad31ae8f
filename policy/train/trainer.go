// Package train fits a policy to demonstrations by behavioural cloning:
// truncated backpropagation through time over windows of consecutive
// steps, AdamW with warm-up and cosine decay, global-norm clipping,
// data-parallel over the batch on every core. The backbone is frozen and
// its features come from a cache (see Cache).
//
// The batch is B streams. Each stream walks through one episode at a time
// in windows of Window steps, carrying the policy state (TTM memory, frame
// window, previous action) from one window into the next, as truncated
// BPTT does for language models; at an episode's end it starts the next
// episode its seeded sampler picks, from a fresh state. A run is a pure
// function of the data, the initial checkpoint, Config and the worker
// count: the same inputs give the same loss curve, bit for bit, and a
// resumed run continues exactly where the interrupted one stopped.
package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/language"
	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/vision"
)

// Config is a training run's settings.
type Config struct {
	Steps       int     `json:"steps"`        // optimiser updates
	Batch       int     `json:"batch"`        // windows (streams) per update
	Window      int     `json:"window"`       // steps per window (the paper: 8)
	LR          float64 `json:"lr"`           // peak learning rate
	Warmup      int     `json:"warmup"`       // warm-up updates
	LRFloor     float64 `json:"lr_floor"`     // final learning rate as a fraction of LR
	WeightDecay float64 `json:"weight_decay"` // AdamW λ, on matrices only
	ClipNorm    float64 `json:"clip_norm"`    // global gradient norm bound; 0: none
	Seed        uint64  `json:"seed"`
	Workers     int     `json:"workers"` // goroutines; results depend on it
	// NoMemory trains the paper's ablation, the memory zeroed before every
	// step: the policy's checkpoint must say so (ttm.config no_memory, set
	// when it is created), so that it runs the way it was trained.
	NoMemory bool `json:"no_memory"`
	// ModeGated, LabelSigma and CensorBounds shape the loss
	// (policy.Learner).
	ModeGated    bool    `json:"mode_gated"`
	LabelSigma   float64 `json:"label_sigma"`
	CensorBounds bool    `json:"censor_bounds,omitempty"`
	// KeypointWeight, when positive, trains the keypoint token's first
	// channels on the episodes' keypoint labels (Episode.Keypoints) as an
	// auxiliary loss of this weight, with Gaussian targets KeypointSigma
	// map cells wide (policy.Learner).
	KeypointWeight float64 `json:"keypoint_weight,omitempty"`
	KeypointSigma  float64 `json:"keypoint_sigma,omitempty"`
	// GeometryLabels trains a policy with target geometry on the labelled
	// target points' back-projection (policy.Learner.GeometryFromLabels).
	GeometryLabels bool `json:"geometry_labels,omitempty"`
	// GeometryOwn, with GeometryLabels, exposes the policy to its own
	// keypoints' errors before it acts on them: over the second half of
	// the updates (geometryOwnFrom), each window reads its geometry from the policy's
	// keypoints (policy.StepData.OwnGeometry) with this probability. The
	// updates before train on labels alone: a keypoint that is still
	// learning would teach the policy to distrust the geometry.
	GeometryOwn float64 `json:"geometry_own,omitempty"`
	// GoalWeight, when positive, trains a policy's goal probe on the
	// episodes' start goals (Episode.Goal) as an auxiliary loss of this
	// weight (policy.Learner.GoalWeight).
	GoalWeight float64 `json:"goal_weight,omitempty"`
	// LyingWeight, when positive, trains the vision head's lying probe on
	// the episodes' target-lying labels (Episode.Lying) as an auxiliary
	// loss of this weight (policy.Learner.LyingWeight).
	LyingWeight float64 `json:"lying_weight,omitempty"`
}

// DefaultConfig is the recipe every policy trains with: 16 windows of 16
// steps per update, the mode-gated loss with binned labels spread over 2
// bins, and regressed labels at a bound of their range censored.
func DefaultConfig() Config {
	return Config{Steps: 3000, Batch: 16, Window: 16, LR: 1e-3, Warmup: 100, LRFloor: 0.05,
		WeightDecay: 0.01, ClipNorm: 1, Seed: 1, Workers: 2, ModeGated: true, LabelSigma: 2, CensorBounds: true}
}

// Auxiliary losses' weights, the defaults of a policy that has their part
// (ConfigFor).
const (
	DefaultKeypointWeight = 1   // a vision head with a keypoint token
	DefaultGeometryOwn    = 0.5 // target geometry
	DefaultGoalWeight     = 0.2 // a goal probe
	DefaultLyingWeight    = 1   // a vision head with a lying probe
)

// ConfigFor is DefaultConfig with the auxiliary losses of the parts spec's
// policy has: the keypoint supervision (DefaultKeypointWeight, Gaussian
// targets vision.DefaultKeypointSigma cells wide) for a head with a
// keypoint token; for target geometry, geometry labels of which
// DefaultGeometryOwn of the windows read the policy's own keypoints
// instead; the goal probe's loss (DefaultGoalWeight) for a policy with one.
func ConfigFor(spec policy.Spec) Config {
	c := DefaultConfig()
	if spec.Vision.Head.Keypoints {
		c.KeypointWeight, c.KeypointSigma = DefaultKeypointWeight, vision.DefaultKeypointSigma
	}
	if spec.Policy.TargetGeometry != nil {
		c.GeometryLabels, c.GeometryOwn = true, DefaultGeometryOwn
	}
	if spec.Policy.GoalProbe {
		c.GoalWeight = DefaultGoalWeight
	}
	if spec.Vision.Head.LyingProbe {
		c.LyingWeight = DefaultLyingWeight
	}
	return c
}

// Validate reports the first unusable field.
func (c Config) Validate() error {
	switch {
	case c.Steps < 1:
		return fmt.Errorf("train: steps %d: want at least 1", c.Steps)
	case c.Batch < 1:
		return fmt.Errorf("train: batch %d: want at least 1", c.Batch)
	case c.Window < 1 || c.Window > 64:
		return fmt.Errorf("train: window %d: want 1..64", c.Window)
	case !(c.LR > 0 && c.LR < 1):
		return fmt.Errorf("train: lr %v: want (0, 1)", c.LR)
	case c.LabelSigma < 0 || c.LabelSigma > 64:
		return fmt.Errorf("train: label_sigma %v: want 0..64 bins", c.LabelSigma)
	case c.Warmup < 0 || c.LRFloor < 0 || c.LRFloor > 1 || c.WeightDecay < 0 || c.ClipNorm < 0:
		return errors.New("train: warmup, lr_floor (<= 1), weight_decay and clip_norm must not be negative")
	case c.KeypointWeight < 0 || c.KeypointWeight > 0 && !(c.KeypointSigma > 0 && c.KeypointSigma < 64):
		return fmt.Errorf("train: keypoint_weight %v, keypoint_sigma %v: want a weight >= 0 and, with a weight, sigma in (0, 64) cells", c.KeypointWeight, c.KeypointSigma)
	case !(c.GoalWeight >= 0 && c.GoalWeight < 1e6):
		return fmt.Errorf("train: goal_weight %v: want a weight >= 0", c.GoalWeight)
	case !(c.LyingWeight >= 0 && c.LyingWeight < 1e6):
		return fmt.Errorf("train: lying_weight %v: want a weight >= 0", c.LyingWeight)
	case c.Workers < 1 || c.Workers > 64:
		return fmt.Errorf("train: workers %d: want 1..64", c.Workers)
	case !(c.GeometryOwn >= 0 && c.GeometryOwn <= 1) || c.GeometryOwn > 0 && !c.GeometryLabels:
		return fmt.Errorf("train: geometry_own %v: want a probability in [0, 1], and geometry labels to mix with", c.GeometryOwn)
	}
	return nil
}

// Record is one logged point of the learning curve.
type Record struct {
	Step      int     `json:"step"` // updates done
	Loss      float64 `json:"loss"` // mean per step over the logged updates (Σ over action dimensions)
	BinAcc    float64 `json:"bin_accuracy"`
	LR        float64 `json:"lr"`
	GradNorm  float64 `json:"grad_norm"` // before clipping, last update
	Samples   int64   `json:"samples"`   // steps trained on so far
	Seconds   float64 `json:"seconds"`   // wall time of this run segment so far
	SamplesPS float64 `json:"samples_per_second"`
	// KeypointLoss is the keypoint supervision's mean loss per step
	// (times its weight), when the run has one.
	KeypointLoss float64 `json:"keypoint_loss,omitempty"`
	// GoalLoss is the goal probe's mean loss per step (times its weight),
	// when the run has one.
	GoalLoss float64 `json:"goal_loss,omitempty"`
	// LyingLoss is the lying probe's mean loss per labelled step (times
	// its weight) and LyingAcc the share of those steps it got right,
	// when the run has one.
	LyingLoss float64 `json:"lying_loss,omitempty"`
	LyingAcc  float64 `json:"lying_accuracy,omitempty"`
}

// stream is one batch row: an episode in progress and the state carried
// into its next window.
type stream struct {
	st     *policy.State
	ep, t  int // episode index and next step
	visits uint64
}

// Trainer runs a training job over episodes.
type Trainer struct {
	cfg      Config
	p        *policy.Policy
	eps      []*Episode
	toks     []language.Tokens
	learners []*policy.Learner
	opt      *AdamW
	sched    Schedule
	streams  []*stream
	data     [][]policy.StepData // per stream, the window's steps
	zeros    []float32
	// readsProprio: the policy reads proprioception, the episodes hold it.
	readsProprio bool
	samples      int64
	history      []Record
	log          hclog.Logger
}

// New prepares training of p on eps. p must have been loaded without
// NoBackbone only if the caller encodes frames; the trainer itself needs
// the features only.
func New(cfg Config, p *policy.Policy, eps []*Episode, log hclog.Logger) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(eps) == 0 {
		return nil, errors.New("train: no episodes")
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	spec := p.Spec()
	if cfg.NoMemory != spec.TTM.NoMemory {
		return nil, fmt.Errorf("train: no_memory %v, but the policy's ttm.config has no_memory %v: a policy trains the way its checkpoint runs (create it with ttm.Config.NoMemory for the no-memory ablation)", cfg.NoMemory, spec.TTM.NoMemory)
	}
	featLen := eps[0].FeatureLen
	c := spec.Vision.Head.FeatureChannels
	if featLen%c != 0 {
		return nil, fmt.Errorf("train: episodes hold %d feature values per step, not a multiple of the policy's %d channels", featLen, c)
	}
	if pos := spec.Vision.Head.Positions; pos > 0 && pos*c != featLen {
		return nil, fmt.Errorf("train: episodes hold %d feature positions, the policy's positional embedding has %d", featLen/c, pos)
	}
	tr := &Trainer{cfg: cfg, p: p, eps: eps, log: log, zeros: make([]float32, p.ActionSpace().Len()), readsProprio: len(spec.Policy.Proprio) > 0,
		sched: Schedule{Peak: cfg.LR, Warmup: cfg.Warmup, Total: cfg.Steps, Floor: cfg.LRFloor}}
	labelled := 0
	for _, e := range eps {
		if e.FeatureLen != featLen {
			return nil, fmt.Errorf("train: episode %s has %d feature values per step, %s has %d", e.Name, e.FeatureLen, eps[0].Name, featLen)
		}
		if e.KeypointLen < 0 || len(e.Keypoints) != e.Steps*e.KeypointLen || e.KeypointLen%vision.KeypointLabelLen != 0 {
			return nil, fmt.Errorf("train: episode %s has %d keypoint label values for %d steps of %d", e.Name, len(e.Keypoints), e.Steps, e.KeypointLen)
		}
		labelled += min(e.KeypointLen, 1)
		if nq := len(spec.Policy.Proprio); nq > 0 && (e.ProprioLen != nq || len(e.Proprio) != e.Steps*nq) {
			return nil, fmt.Errorf("train: episode %s has %d proprioception values per step, the policy reads %d (%s): record it (ttm record --experts in the simulator, or ttm record --ros with the robot's proprio topic), or train a policy without proprioception",
				e.Name, e.ProprioLen, nq, strings.Join(spec.Policy.Proprio, ", "))
		}
		tok, err := p.Tokenize(e.Instruction)
		if err != nil {
			return nil, fmt.Errorf("train: episode %s: instruction: %w", e.Name, err)
		}
		tr.toks = append(tr.toks, tok)
	}
	if cfg.KeypointWeight > 0 {
		if !spec.Vision.Head.Keypoints {
			return nil, errors.New("train: keypoint supervision needs a vision head with a keypoint token")
		}
		if labelled == 0 {
			return nil, errors.New("train: keypoint supervision, but no episode has keypoint labels (record them with the simulator)")
		}
		log.Info("keypoint supervision", "weight", cfg.KeypointWeight, "sigma_cells", cfg.KeypointSigma, "labelled_episodes", labelled, "episodes", len(eps))
	}
	if cfg.GoalWeight > 0 {
		if !spec.Policy.GoalProbe {
			return nil, errors.New("train: goal_weight needs a policy with a goal probe (the small-goal-probe preset)")
		}
		goals := countEpisodes(eps, func(e *Episode) bool { return e.Goal != nil })
		if goals == 0 {
			return nil, errors.New("train: goal probe, but no episode has a start goal (the simulator's memory tasks have them)")
		}
		log.Info("goal probe", "weight", cfg.GoalWeight, "episodes_with_goal", goals, "episodes", len(eps))
	}
	if cfg.LyingWeight > 0 {
		if !spec.Vision.Head.LyingProbe {
			return nil, errors.New("train: lying_weight needs a vision head with a lying probe")
		}
		lying := countEpisodes(eps, func(e *Episode) bool { return e.Lying != nil })
		if lying == 0 {
			return nil, errors.New("train: lying probe, but no episode has target-lying labels (record them with the simulator)")
		}
		log.Info("lying probe", "weight", cfg.LyingWeight, "labelled_episodes", lying, "episodes", len(eps))
	}
	if cfg.GeometryLabels && (spec.Policy.TargetGeometry == nil || labelled == 0) {
		return nil, errors.New("train: geometry labels need a policy with target geometry (the small-geometry preset) and episodes with keypoint labels")
	}
	for range cfg.Workers {
		l := policy.NewLearner(p, cfg.Window, featLen/c)
		if err := l.SetNoMemory(cfg.NoMemory); err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
		l.ModeGated, l.LabelSigma, l.CensorBounds = cfg.ModeGated, cfg.LabelSigma, cfg.CensorBounds
		l.KeypointWeight, l.KeypointSigma = float32(cfg.KeypointWeight), cfg.KeypointSigma
		l.GeometryFromLabels = cfg.GeometryLabels
		l.GoalWeight = float32(cfg.GoalWeight)
		l.LyingWeight = float32(cfg.LyingWeight)
		tr.learners = append(tr.learners, l)
	}
	groups := p.Groups()
	tr.opt = NewAdamW(groups, decayMasks(p), cfg.WeightDecay)
	for i := range cfg.Batch {
		s := &stream{st: p.NewState()}
		tr.streams = append(tr.streams, s)
		tr.startEpisode(i)
		tr.data = append(tr.data, make([]policy.StepData, cfg.Window))
	}
	return tr, nil
}

// decayMasks applies weight decay to the kernels of dense layers only, not
// to biases, LayerNorm parameters, embeddings or query tokens.
func decayMasks(p *policy.Policy) [][]bool {
	var masks [][]bool
	for _, g := range p.Groups() {
		m := make([]bool, len(g.Params))
		for _, s := range p.ParamSpecs(g.Name) {
			if len(s.Shape) >= 2 && strings.HasSuffix(s.Name, "kernel") {
				for j := s.Offset; j < s.Offset+s.Size; j++ {
					m[j] = true
				}
			}
		}
		masks = append(masks, m)
	}
	return masks
}

// startEpisode gives stream i its next episode from its seeded sampler.
func (tr *Trainer) startEpisode(i int) {
	s := tr.streams[i]
	r := rand.New(rand.NewPCG(tr.cfg.Seed^0x7472_6169_6e00_0000^uint64(i)<<32, s.visits))
	s.ep, s.t = r.IntN(len(tr.eps)), 0
	s.visits++
	s.st.Reset()
}

// geometryOwnFrom is the share of the updates that read labels only
// before Config.GeometryOwn's own keypoints come in: a keypoint that is
// still learning would teach the policy to distrust the geometry.
const geometryOwnFrom = 0.5

// ownGeometry draws whether stream i's window of the coming update reads
// the policy's own keypoints (Config.GeometryOwn), from a generator seeded
// by the update and the stream, so the draw does not depend on the workers.
func (tr *Trainer) ownGeometry(i int) bool {
	if tr.cfg.GeometryOwn <= 0 || float64(tr.opt.Step) < geometryOwnFrom*float64(tr.cfg.Steps) {
		return false
	}
	r := rand.New(rand.NewPCG(tr.cfg.Seed^0x6765_6f6d_6f77_6e00, uint64(tr.opt.Step)<<16|uint64(i)))
	return r.Float64() < tr.cfg.GeometryOwn
}

// Step runs one update and returns its mean loss per step and bin
// accuracy.
func (tr *Trainer) Step() (loss, acc, gradNorm float64, err error) {
	u, err := tr.step()
	return u.loss, u.acc, u.gradNorm, err
}

// update is what one update measured: means per step of the loss, the
// keypoint supervision's and the goal probe's losses, the bin accuracy
// and the gradient norm before clipping.
type update struct {
	loss, acc, keypointLoss, goalLoss, gradNorm float64
	lyingLoss                                   float64 // summed over lyingLabels steps
	lyingCorrect, lyingLabels                   int
}

// step is Step, also returning the auxiliary losses.
func (tr *Trainer) step() (update, error) {
	cfg := tr.cfg
	na := tr.p.ActionSpace().Len()
	total := 0
	lens := make([]int, len(tr.streams))
	for i, s := range tr.streams {
		ep := tr.eps[s.ep]
		n := min(cfg.Window, ep.Steps-s.t)
		lens[i] = n
		total += n
		own := tr.ownGeometry(i)
		for k := range n {
			t := s.t + k
			f, a := ep.Step(t, na)
			prev := tr.zeros
			if t > 0 {
				_, prev = ep.Step(t-1, na)
			}
			var q []float32
			if tr.readsProprio {
				q = ep.ProprioAt(t)
			}
			tr.data[i][k] = policy.StepData{Features: f, Prev: prev, Action: a, Keypoints: ep.KeypointLabels(t), Proprio: q, OwnGeometry: own, Goal: ep.Goal, Lying: ep.LyingLabel(t)}
		}
	}
	scale := float32(1 / float64(total))
	stats := make([]policy.WindowStats, len(tr.streams))
	errs := make([]error, len(tr.learners))
	var wg sync.WaitGroup
	share := balanceWindows(lens, len(tr.learners))
	for w, l := range tr.learners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.ZeroGrads()
			for _, i := range share[w] {
				s := tr.streams[i]
				st, err := l.Window(s.st, tr.toks[s.ep], tr.data[i][:lens[i]], scale)
				if err != nil {
					errs[w] = fmt.Errorf("train: update %d, episode %s step %d: %w", tr.opt.Step+1, tr.eps[s.ep].Name, s.t, err)
					return
				}
				stats[i] = st
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return update{}, err
	}
	grads := tr.learners[0].Grads
	for _, l := range tr.learners[1:] {
		for gi, g := range l.Grads {
			dst := grads[gi].Params
			for j, v := range g.Params {
				dst[j] += v
			}
		}
	}
	gradNorm := ClipGlobalNorm(grads, cfg.ClipNorm)
	if math.IsNaN(gradNorm) || math.IsInf(gradNorm, 0) {
		return update{gradNorm: gradNorm}, fmt.Errorf("train: update %d: gradient norm %v", tr.opt.Step+1, gradNorm)
	}
	tr.opt.Update(tr.p.Groups(), grads, tr.sched.At(tr.opt.Step))
	tr.p.ParamsChanged()

	var sumLoss, sumKeypoint, sumGoal, sumLying float64
	correct, labels, lyingCorrect, lyingLabels := 0, 0, 0, 0
	for i, s := range tr.streams {
		sumLoss += stats[i].Loss
		sumKeypoint += stats[i].KeypointLoss
		sumGoal += stats[i].GoalLoss
		sumLying += stats[i].LyingLoss
		lyingCorrect += stats[i].LyingCorrect
		lyingLabels += stats[i].LyingLabels
		correct += stats[i].Correct
		labels += stats[i].Labels
		s.t += lens[i]
		if s.t >= tr.eps[s.ep].Steps {
			tr.startEpisode(i)
		}
	}
	tr.samples += int64(total)
	n := float64(total)
	return update{loss: sumLoss / n, acc: float64(correct) / float64(max(labels, 1)), keypointLoss: sumKeypoint / n, goalLoss: sumGoal / n,
		lyingLoss: sumLying, lyingCorrect: lyingCorrect, lyingLabels: lyingLabels, gradNorm: gradNorm}, nil
}

// countEpisodes is the number of episodes of eps that has reports.
func countEpisodes(eps []*Episode, has func(*Episode) bool) int {
	n := 0
	for _, e := range eps {
		if has(e) {
			n++
		}
	}
	return n
}

// balanceWindows shares the windows of an update among the workers so
// that each gets about the same number of steps (a window's cost is about
// its length, and windows at an episode's end are short): longest first,
// each to the worker with the fewest steps so far, ties to the lower
// index, streams in increasing order within a worker. The shares depend
// on the lengths alone, so the gradient sums, and the run, stay
// reproducible.
func balanceWindows(lens []int, workers int) [][]int {
	order := make([]int, len(lens))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return lens[b] - lens[a] })
	share, load := make([][]int, workers), make([]int, workers)
	for _, i := range order {
		w := 0
		for v := 1; v < workers; v++ {
			if load[v] < load[w] {
				w = v
			}
		}
		share[w] = append(share[w], i)
		load[w] += lens[i]
	}
	for _, s := range share {
		slices.Sort(s)
	}
	return share
}

// Updates is the number of updates done.
func (tr *Trainer) Updates() int { return tr.opt.Step }

// History is the learning curve logged so far.
func (tr *Trainer) History() []Record { return tr.history }

// Run trains until cfg.Steps updates are done, logging every logEvery
// updates and calling checkpoint (if not nil) every checkpointEvery
// updates and at the end. stop, if not nil, is polled between updates: a
// stop request ends the run after a checkpoint.
func (tr *Trainer) Run(logEvery, checkpointEvery int, checkpoint func(*Trainer) error, stop <-chan struct{}) error {
	start := time.Now()
	startSamples, startStep := tr.samples, tr.opt.Step
	var lossSum, accSum, keypointSum, goalSum, lyingSum float64
	var n, lyingCorrect, lyingLabels int
	for tr.opt.Step < tr.cfg.Steps {
		u, err := tr.step()
		if err != nil {
			return err
		}
		gn := u.gradNorm
		lossSum, accSum, keypointSum, goalSum, n = lossSum+u.loss, accSum+u.acc, keypointSum+u.keypointLoss, goalSum+u.goalLoss, n+1
		lyingSum, lyingCorrect, lyingLabels = lyingSum+u.lyingLoss, lyingCorrect+u.lyingCorrect, lyingLabels+u.lyingLabels
		done := tr.opt.Step
		if done%logEvery == 0 || done == tr.cfg.Steps {
			sec := time.Since(start).Seconds()
			rec := Record{Step: done, Loss: lossSum / float64(n), BinAcc: accSum / float64(n), LR: tr.sched.At(done - 1),
				GradNorm: gn, Samples: tr.samples, Seconds: sec, SamplesPS: float64(tr.samples-startSamples) / sec,
				KeypointLoss: keypointSum / float64(n), GoalLoss: goalSum / float64(n)}
			if lyingLabels > 0 {
				rec.LyingLoss, rec.LyingAcc = lyingSum/float64(lyingLabels), float64(lyingCorrect)/float64(lyingLabels)
			}
			tr.history = append(tr.history, rec)
			lossSum, accSum, keypointSum, goalSum, n = 0, 0, 0, 0, 0
			lyingSum, lyingCorrect, lyingLabels = 0, 0, 0
			eta := time.Duration(float64(tr.cfg.Steps-done) * sec / float64(done-startStep) * float64(time.Second))
			fields := []any{"step", fmt.Sprintf("%d/%d", done, tr.cfg.Steps), "loss", fmt.Sprintf("%.4f", rec.Loss),
				"bin_acc", fmt.Sprintf("%.3f", rec.BinAcc), "lr", fmt.Sprintf("%.2e", rec.LR), "grad_norm", fmt.Sprintf("%.3f", gn),
				"samples/s", fmt.Sprintf("%.0f", rec.SamplesPS), "updates/s", fmt.Sprintf("%.2f", float64(done-startStep)/sec),
				"keypoint_loss", fmt.Sprintf("%.3f", rec.KeypointLoss), "goal_loss", fmt.Sprintf("%.3f", rec.GoalLoss)}
			if tr.cfg.LyingWeight > 0 {
				fields = append(fields, "lying_loss", fmt.Sprintf("%.3f", rec.LyingLoss), "lying_acc", fmt.Sprintf("%.3f", rec.LyingAcc))
			}
			tr.log.Info("train", append(fields, "eta", eta.Round(time.Second))...)
		}
		stopping := false
		if stop != nil {
			select {
			case <-stop:
				stopping = true
			default:
			}
		}
		if checkpoint != nil && (done%checkpointEvery == 0 || done == tr.cfg.Steps || stopping) {
			if err := checkpoint(tr); err != nil {
				return err
			}
		}
		if stopping {
			return ErrStopped
		}
	}
	return nil
}

// ErrStopped reports a run stopped on request, after its checkpoint.
var ErrStopped = errors.New("train: stopped; resume with the same command")
