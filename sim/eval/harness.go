package eval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
)

// Config is a closed-loop evaluation.
type Config struct {
	// Tasks to evaluate, in order.
	Tasks []*sim.Task
	// Episodes per task; episode i of every task uses seed Seed+i, so every
	// run meets the same initial states.
	Episodes int
	Seed     uint64
	// Height and Width of the rendered frames. They default to
	// sim.DefaultHeight and sim.DefaultWidth.
	Height, Width int
	// Runs are the columns: checkpoints, their ablations, the expert.
	Runs []RunSpec
	// Workers play episodes in parallel, each with its own players. It
	// defaults to runtime.NumCPU().
	Workers int
	// Latency injected between an observation and its action (see
	// Latency). A measured latency makes the ledger depend on the clock.
	Latency Latency
	// Rate is the control rate in Hz that deadline misses are counted
	// against. It defaults to 3 (RT-1's rate, one simulator step).
	Rate float64
	// Shard restricts the evaluation to one shard's episodes; the zero
	// value runs everything.
	Shard Shard
	// Videos records the first Videos episodes of every task and run as
	// animated GIFs in VideoDir/<run>/<task>-<episode>.gif.
	Videos   int
	VideoDir string
	// Traces writes the first Traces episodes of every task and run as CSV
	// in TraceDir/<run>/<task>-<episode>.csv: per decision the agent's
	// action next to the expert's on the same state (see ExpertAgreement).
	Traces   int
	TraceDir string
	// Log receives progress: episodes done, success so far, time left. It
	// defaults to a logger that discards everything.
	Log hclog.Logger
	// ProgressEvery is the least time between two progress lines; it
	// defaults to 5 s. The last episode is always reported.
	ProgressEvery time.Duration
}

func (c *Config) defaults() error {
	if c.Height == 0 {
		c.Height = sim.DefaultHeight
	}
	if c.Width == 0 {
		c.Width = sim.DefaultWidth
	}
	if c.Workers == 0 {
		c.Workers = runtime.NumCPU()
	}
	if c.Rate == 0 {
		c.Rate = 3
	}
	if c.Log == nil {
		c.Log = hclog.NewNullLogger()
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = 5 * time.Second
	}
	switch {
	case len(c.Tasks) == 0:
		return errors.New("eval: no tasks")
	case c.Episodes < 1:
		return fmt.Errorf("eval: %d episodes per task: want at least 1", c.Episodes)
	case len(c.Runs) == 0:
		return errors.New("eval: no runs (give a policy or the expert)")
	case c.Workers < 1:
		return fmt.Errorf("eval: %d workers: want at least 1", c.Workers)
	case c.Rate < 0:
		return fmt.Errorf("eval: rate %g Hz: want a positive rate", c.Rate)
	case c.Videos < 0:
		return fmt.Errorf("eval: %d videos: want 0 or more", c.Videos)
	case c.Videos > 0 && c.VideoDir == "":
		return errors.New("eval: videos need a VideoDir")
	case c.Traces < 0:
		return fmt.Errorf("eval: %d traces: want 0 or more", c.Traces)
	case c.Traces > 0 && c.TraceDir == "":
		return errors.New("eval: traces need a TraceDir")
	case c.Shard.Count < 0 || (c.Shard.Count > 0 && (c.Shard.Index < 0 || c.Shard.Index >= c.Shard.Count)):
		return fmt.Errorf("eval: shard %s: want 0 <= i < N", c.Shard)
	}
	seen := map[string]bool{}
	for _, t := range c.Tasks {
		if t == nil {
			return errors.New("eval: nil task")
		}
		if seen[t.Name] {
			return fmt.Errorf("eval: task %s given twice", t.Name)
		}
		seen[t.Name] = true
	}
	names := map[string]bool{}
	for _, r := range c.Runs {
		switch {
		case r.Name == "":
			return errors.New("eval: a run has no name")
		case names[r.Name]:
			return fmt.Errorf("eval: two runs are called %s", r.Name)
		case r.NewPlayer == nil:
			return fmt.Errorf("eval: run %s has no player", r.Name)
		case filepath.Base(r.Name) != r.Name || r.Name == "." || r.Name == "..":
			return fmt.Errorf("eval: run name %q is not usable as a file name", r.Name)
		}
		names[r.Name] = true
	}
	return nil
}

// job is one episode of one run.
type job struct {
	run, task, index int
	slot             int // index of the result in its run's episodes
}

// Evaluate plays every run's episodes of the shard and returns the ledger
// (deterministic) and the timing (measured). Episodes run in parallel on
// cfg.Workers workers; results are ordered by (task, episode), so the
// ledger does not depend on scheduling. The first error stops the
// evaluation.
func Evaluate(ctx context.Context, cfg Config) (*Ledger, *Timing, error) {
	if err := cfg.defaults(); err != nil {
		return nil, nil, err
	}
	start := time.Now()
	setup := Setup{Episodes: cfg.Episodes, Seed: cfg.Seed, Height: cfg.Height, Width: cfg.Width, Latency: cfg.Latency.String()}
	for _, t := range cfg.Tasks {
		setup.Tasks = append(setup.Tasks, t.Name)
	}
	if cfg.Shard.Count > 1 {
		sh := cfg.Shard
		setup.Shard = &sh
	}
	// The shard's (task, episode) pairs, then one job per run and pair.
	type pair struct{ task, index int }
	var pairs []pair
	for ti := range cfg.Tasks {
		for i := range cfg.Episodes {
			if cfg.Shard.Has(ti*cfg.Episodes + i) {
				pairs = append(pairs, pair{ti, i})
			}
		}
	}
	if len(pairs) == 0 {
		return nil, nil, fmt.Errorf("eval: shard %s holds no episodes (%d tasks x %d episodes)", cfg.Shard, len(cfg.Tasks), cfg.Episodes)
	}
	led := &Ledger{Setup: setup, Runs: make([]RunLedger, len(cfg.Runs))}
	tim := &Timing{Workers: cfg.Workers, Rate: cfg.Rate, Runs: make([]*RunTiming, len(cfg.Runs))}
	jobs := make([]job, 0, len(cfg.Runs)*len(pairs))
	for ri, r := range cfg.Runs {
		led.Runs[ri] = RunLedger{Name: r.Name, Agent: r.Agent, Checkpoint: r.Checkpoint, CheckpointSHA256: r.CheckpointSHA256,
			Ablation: r.Ablation, Memory: r.Memory, Episodes: make([]EpisodeResult, len(pairs))}
		tim.Runs[ri] = newRunTiming(r.Name)
		for slot, p := range pairs {
			jobs = append(jobs, job{run: ri, task: p.task, index: p.index, slot: slot})
		}
	}
	cfg.Log.Info("evaluating", "runs", len(cfg.Runs), "tasks", len(cfg.Tasks), "episodes_per_task", cfg.Episodes,
		"episodes", len(jobs), "workers", cfg.Workers, "seed", cfg.Seed, "latency", cfg.Latency.String(),
		"size", fmt.Sprintf("%dx%d", cfg.Height, cfg.Width), "shard", cfg.Shard.String())

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan job)
	type done struct {
		j   job
		res EpisodeResult
		tim *RunTiming
		err error
	}
	results := make(chan done)
	var wg sync.WaitGroup
	for range min(cfg.Workers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newWorker(&cfg)
			defer w.close()
			for j := range next {
				res, rt, err := w.play(j)
				select {
				case results <- done{j, res, rt, err}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(next)
		for _, j := range jobs {
			select {
			case next <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	prog := progress{log: cfg.Log, total: len(jobs), start: start, every: cfg.ProgressEvery}
	var firstErr error
	for d := range results {
		if d.err != nil {
			if firstErr == nil {
				firstErr = d.err
				cancel()
			}
			continue
		}
		led.Runs[d.j.run].Episodes[d.j.slot] = d.res
		tim.Runs[d.j.run].merge(d.tim)
		prog.add(d.res.Success)
	}
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return nil, nil, firstErr
	}
	if err := led.finish(); err != nil {
		return nil, nil, err
	}
	for _, rt := range tim.Runs {
		rt.finish()
	}
	tim.WallSeconds = time.Since(start).Seconds()
	return led, tim, nil
}

// progress logs how far an evaluation has come.
type progress struct {
	log               hclog.Logger
	total, done, succ int
	start, last       time.Time
	every             time.Duration
	noSuccess         bool // offline: no success to report
}

func (p *progress) add(success bool) {
	p.done++
	if success {
		p.succ++
	}
	now := time.Now()
	if p.done < p.total && now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	el := now.Sub(p.start)
	eta := time.Duration(float64(el) / float64(p.done) * float64(p.total-p.done))
	args := []any{"episodes", fmt.Sprintf("%d/%d", p.done, p.total)}
	if !p.noSuccess {
		args = append(args, "success", fmt.Sprintf("%.1f%%", 100*float64(p.succ)/float64(p.done)))
	}
	p.log.Info("progress", append(args, "elapsed", el.Round(time.Second), "eta", eta.Round(time.Second))...)
}

// worker plays jobs with its own players, opened on first use.
type worker struct {
	cfg     *Config
	players map[int]Player
	img     []byte
	held    []float32
	next    []float32
}

func newWorker(cfg *Config) *worker {
	return &worker{cfg: cfg, players: map[int]Player{}, img: make([]byte, cfg.Height*cfg.Width*3),
		held: make([]float32, action.RT1().Len()), next: make([]float32, action.RT1().Len())}
}

func (w *worker) close() {
	for _, p := range w.players {
		p.Close()
	}
}

func (w *worker) player(ri int) (Player, error) {
	if p, ok := w.players[ri]; ok {
		return p, nil
	}
	p, err := w.cfg.Runs[ri].NewPlayer()
	if err != nil {
		return nil, fmt.Errorf("eval: run %s: %w", w.cfg.Runs[ri].Name, err)
	}
	w.players[ri] = p
	return p, nil
}

// play runs one episode.
func (w *worker) play(j job) (EpisodeResult, *RunTiming, error) {
	cfg := w.cfg
	run := cfg.Runs[j.run]
	task := cfg.Tasks[j.task]
	seed := cfg.Seed + uint64(j.index)
	rt := newRunTiming(run.Name)
	pl, err := w.player(j.run)
	if err != nil {
		return EpisodeResult{}, nil, err
	}
	ep, err := sim.NewEpisode(task, seed, sim.Options{Height: cfg.Height, Width: cfg.Width})
	if err != nil {
		return EpisodeResult{}, nil, err
	}
	defer ep.Close()
	agent, privileged, err := pl.Begin(ep)
	if err != nil {
		return EpisodeResult{}, nil, fmt.Errorf("eval: run %s: %s episode %d: %w", run.Name, task.Name, j.index, err)
	}
	var video *gifRecorder
	if j.index < cfg.Videos {
		video = newGIFRecorder(cfg.Height, cfg.Width)
	}
	var deadline time.Duration
	if cfg.Rate > 0 {
		deadline = time.Duration(float64(time.Second) / cfg.Rate)
	}
	var agree *agreementTally
	if !privileged {
		agree = &agreementTally{expert: ep.Expert(sim.ExpertOptions{})}
	}
	var trace *[]traceRow
	if agree != nil && j.index < cfg.Traces {
		trace = new([]traceRow)
	}
	res, err := playEpisode(ep, agent, privileged, cfg.Latency, w.img, w.held, w.next, video, agree, trace, func(d time.Duration) { rt.add(d, deadline) })
	if err != nil {
		return EpisodeResult{}, nil, fmt.Errorf("eval: run %s: %w", run.Name, err)
	}
	res.Index = j.index
	if trace != nil {
		path := filepath.Join(cfg.TraceDir, run.Name, fmt.Sprintf("%s-%03d.csv", task.Name, j.index))
		if err := writeTrace(path, *trace); err != nil {
			return EpisodeResult{}, nil, fmt.Errorf("eval: %w", err)
		}
	}
	if video != nil {
		path := filepath.Join(cfg.VideoDir, run.Name, fmt.Sprintf("%s-%03d.gif", task.Name, j.index))
		if err := video.write(path, res.Success); err != nil {
			return EpisodeResult{}, nil, fmt.Errorf("eval: video: %w", err)
		}
	}
	return res, rt, nil
}

// HoldAction writes the action applied before an agent's first action
// takes effect under latency: arm mode, no motion, the gripper open as at
// the start of an episode (action.RT1 layout).
func HoldAction(dst []float32) {
	clear(dst)
	dst[action.DimMode] = action.ModeArm
	dst[action.DimGripper] = -1
}

// playEpisode plays ep to the end with agent under latency lat (see
// Latency); img (H·W·3), held and next (11) are scratch buffers. Each
// decision's latency goes to timed. With video, every frame is recorded;
// with agree, every decision is compared with the expert's, and with
// trace also appended to it.
func playEpisode(ep *sim.Episode, agent sim.Agent, privileged bool, lat Latency, img []byte, held, next []float32,
	video *gifRecorder, agree *agreementTally, trace *[]traceRow, timed func(time.Duration)) (EpisodeResult, error) {
	h, w := ep.ImageSize()
	task := ep.Task().Name
	obs := sim.Observation{Image: img, Height: h, Width: w, Instruction: ep.Instruction(), Proprio: make([]float32, sim.ProprioLen)}
	if privileged {
		obs.State = ep.State()
	}
	res := EpisodeResult{Task: task, Seed: ep.Seed(), Instruction: ep.Instruction(), CueSteps: ep.CueSteps()}
	first := -1
	step := func(a []float32) error {
		if _, err := ep.Step(a); err != nil {
			return fmt.Errorf("%s seed %d step %d: %w", task, ep.Seed(), ep.Steps(), err)
		}
		if first < 0 && ep.Success() {
			first = ep.Steps()
		}
		return nil
	}
	render := func() error {
		if err := ep.Render(img); err != nil {
			return err
		}
		if video != nil {
			video.add(img)
		}
		return nil
	}
	agent.Reset(ep.Instruction())
	HoldAction(held)
	kp, _ := agent.(keypointer)
	var tally keypointTally
	var probe goalTally
	prober, _ := agent.(goalProber)
	if prober != nil {
		start, err := sim.StartGoal(ep.Task(), ep.Seed())
		if err != nil {
			return res, err
		}
		probe.start = start
	}
	for !ep.Done() {
		if err := render(); err != nil {
			return res, err
		}
		obs.Step = ep.Steps()
		ep.State().Proprio(obs.Proprio)
		t0 := time.Now()
		act, err := agent.Act(&obs)
		took := time.Since(t0)
		if err != nil {
			return res, fmt.Errorf("%s seed %d step %d: agent: %w", task, ep.Seed(), obs.Step, err)
		}
		if len(act) != len(next) {
			return res, fmt.Errorf("%s seed %d step %d: agent gave %d action values, want %d", task, ep.Seed(), obs.Step, len(act), len(next))
		}
		timed(took)
		if kp != nil {
			tally.add(kp, ep.State(), h, w)
		}
		if prober != nil {
			probe.add(prober.GoalEstimate(), obs.Step >= ep.CueSteps())
		}
		if agree != nil {
			s := ep.State()
			label := agree.add(s, act)
			if kp != nil {
				agree.fail.addTarget(tally.framePx[1], s)
			}
			if trace != nil {
				r := traceRow{step: obs.Step, base: s.Base, grip: s.Grip, hand: s.EE, toTarget: s.Target().Sub(s.EEWorld()), held: s.Grasp.Kind}
				copy(r.agent[:], act)
				copy(r.exp[:], label)
				tracePoints(&r, kp, &tally.labels)
				*trace = append(*trace, r)
			}
		}
		res.Decisions++
		copy(next, act)
		d := lat.Steps(took)
		// The world moves under the held action while the agent computes.
		for k := 0; k < d && !ep.Done(); k++ {
			if k > 0 && video != nil {
				if err := render(); err != nil {
					return res, err
				}
			}
			if err := step(held); err != nil {
				return res, err
			}
		}
		copy(held, next)
		if d == 0 {
			if err := step(held); err != nil {
				return res, err
			}
		}
	}
	if video != nil {
		if err := render(); err != nil {
			return res, err
		}
	}
	if k, ok := agent.(interface{ KnockedOutAt() int }); ok {
		if at := k.KnockedOutAt(); at >= 0 {
			res.KnockoutStep = &at
		}
	}
	res.KeypointError = tally.result()
	res.GoalProbe = probe.result()
	res.ExpertAgreement = agree.result()
	if agree != nil && !ep.Success() {
		res.Failure = agree.fail.cause()
	}
	res.Steps, res.Success, res.Terminated = ep.Steps(), ep.Success(), ep.State().Terminated
	if res.Success && first >= 0 {
		res.StepsToSuccess = &first
	}
	return res, nil
}

// goalProber is an agent with a goal probe (a PolicyAgent): where it
// estimates the goal stood at the episode's start, in policy.GoalUnit;
// nil when it has no probe.
type goalProber interface {
	GoalEstimate() []float32
}

// goalTally sums a goal probe's error against the episode's start goal,
// separately for the frames that show a memory task's cue and the frames
// after it (every frame of a task without a cue).
type goalTally struct {
	start                  sim.Vec3 // sim.StartGoal, metres
	cueCm, afterCm         float64
	cueFrames, afterFrames int
}

func (t *goalTally) add(est []float32, afterCue bool) {
	if len(est) != policy.GoalLen {
		return
	}
	var sq float64
	for i, v := range est {
		d := float64(v)*policy.GoalUnit - t.start[i]
		sq += d * d
	}
	cm := 100 * math.Sqrt(sq)
	if afterCue {
		t.afterCm += cm
		t.afterFrames++
		return
	}
	t.cueCm += cm
	t.cueFrames++
}

// result is the episode's GoalProbeError, nil if the agent reported none.
func (t *goalTally) result() *GoalProbeError {
	if t.cueFrames+t.afterFrames == 0 {
		return nil
	}
	g := &GoalProbeError{CueFrames: t.cueFrames, Frames: t.afterFrames}
	if t.cueFrames > 0 {
		g.CueMeanCm = t.cueCm / float64(t.cueFrames)
	}
	if t.afterFrames > 0 {
		g.MeanCm = t.afterCm / float64(t.afterFrames)
	}
	return g
}

// keypointer is an agent that reports image keypoints (a PolicyAgent).
type keypointer interface {
	Keypoint(i int) (u, v float32, ok bool)
}

// keypointTally sums an agent's keypoint errors, in pixels, against the
// labels of the frames it acted on: the agent's keypoint i against
// labelled point i (sim.KeypointLabels), as keypoint supervision pairs
// them. In a memory task that cues its target (an object, a drawer) it
// also sums the target keypoint's error in the frames after the cue,
// against where the cued target is (sim.MemoryKeypointLabels): what the
// agent remembers.
type keypointTally struct {
	labels, memory [sim.KeypointLabelLen]float32
	// framePx is the last frame's error of each point, -1 where the
	// frame did not show it or the agent did not report it.
	framePx [sim.KeypointCount]float64
	points  [sim.KeypointCount]pointSum
	onOther [sim.KeypointCount]int
	// remembered sums the target's error after the cue the way points
	// sums each point's error.
	remembered pointSum
	reported   bool
}

// RememberedTarget names the PointError of a memory task's target after
// its cue.
const RememberedTarget = "remembered_target"

func (t *keypointTally) add(k keypointer, s *sim.State, h, w int) {
	const per = sim.KeypointLabelLen / sim.KeypointCount
	sim.KeypointLabels(t.labels[:], s, h, w)
	for i := range t.framePx {
		t.framePx[i] = -1
	}
	var kp [sim.KeypointCount][2]float32
	for i := range sim.KeypointCount {
		u, v, ok := k.Keypoint(i)
		if !ok {
			return
		}
		t.reported = true
		kp[i] = [2]float32{u, v}
		l := t.labels[i*per : (i+1)*per]
		if l[2] == 0 { // out of view
			continue
		}
		t.framePx[i] = pixelsFrom(u, v, l, h, w)
		t.points[i].add(t.framePx[i])
	}
	const target, destination = 1, 2
	for _, p := range [2][2]int{{target, destination}, {destination, target}} {
		i, other := p[0], t.labels[p[1]*per:(p[1]+1)*per]
		if t.framePx[i] > targetOffPx && other[2] != 0 && pixelsFrom(kp[i][0], kp[i][1], other, h, w) <= targetOffPx {
			t.onOther[i]++
		}
	}
	if s.Goal.Cue == sim.CueNone || !t.reported {
		return
	}
	sim.MemoryKeypointLabels(t.memory[:], s, h, w)
	if l, m := t.labels[per:2*per], t.memory[per:2*per]; l[2] == 0 && m[2] > 0 {
		u, v, _ := k.Keypoint(1)
		t.remembered.add(pixelsFrom(u, v, m, h, w))
	}
}

// pointSum sums one point's errors over an episode's frames: all of
// them, and those within targetOffPx of the label.
type pointSum struct {
	px, nearPx   float64
	frames, near int
}

func (p *pointSum) add(px float64) {
	p.px += px
	p.frames++
	if px <= targetOffPx {
		p.nearPx += px
		p.near++
	}
}

// addError adds an episode's PointError e, pooled frame-weighted.
func (p *pointSum) addError(e PointError) {
	p.px += e.MeanPx * float64(e.Frames)
	p.frames += e.Frames
	p.nearPx += e.NearMeanPx * float64(e.Near)
	p.near += e.Near
}

// result is the sum's PointError for the point named name.
func (p *pointSum) result(name string) PointError {
	e := PointError{Point: name, Frames: p.frames, Near: p.near}
	if p.frames > 0 {
		e.MeanPx = p.px / float64(p.frames)
	}
	if p.near > 0 {
		e.NearMeanPx = p.nearPx / float64(p.near)
	}
	return e
}

// pixelsFrom is the distance in pixels of an h x w frame between the
// normalised image point (u, v) and a label's point (label[0], label[1]).
func pixelsFrom(u, v float32, label []float32, h, w int) float64 {
	return math.Hypot(float64(u-label[0])*float64(w), float64(v-label[1])*float64(h))
}

// result is the episode's PointErrors, nil if the agent reported none.
func (t *keypointTally) result() []PointError {
	if !t.reported {
		return nil
	}
	out := make([]PointError, sim.KeypointCount)
	for i := range out {
		out[i] = t.points[i].result(sim.KeypointNames[i])
		out[i].OnOther = t.onOther[i]
	}
	if t.remembered.frames > 0 {
		out = append(out, t.remembered.result(RememberedTarget))
	}
	return out
}
