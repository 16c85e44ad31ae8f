package node

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/ros"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/vision"
)

// The control loop runs at a fixed rate on a Clock (with FollowCamera, in
// phase with the camera's frames). At each tick it
//
//  1. throws away the result of an inference that overran an earlier
//     deadline, if one has come in since (never acted on, never committed);
//  2. applies pending episode changes (reset_memory, a new instruction);
//  3. takes the newest frame from the keep-latest slot;
//  4. checks, in order, the e-stop, enable, the heartbeat, that a frame and
//     an instruction have arrived, the frame's age, the episode's end, and
//     that no overrunning inference is still running (see Reason);
//  5. if all pass, hands the frame to the inference goroutine and waits for
//     it until the tick's deadline;
//  6. publishes exactly one action: the policy's (mode-gated, then through
//     the safety filter) when the inference finished in time, else the
//     filter's stop action, which holds absolute targets (mode, gripper)
//     and ramps velocities and deltas to zero within the rate limits.
//
// Missed deadlines: an inference still running at its deadline is counted
// (Counters.DeadlineMisses) and the stop action is published for that tick
// at the deadline. The late result is discarded when it arrives and the
// policy's memory is not advanced by it: the memory only ever holds steps
// whose actions were published. Ticks that come while it is still running
// publish the stop action too (Counters.Busy). Work is never queued, and a
// loop that wakes more than a period late skips the ticks it missed
// (Counters.SkippedTicks) instead of running them back to back.
//
// Fail closed: nothing is published until the policy has acted once (before
// that the filter has no action to hold); from then on every tick publishes.

// Defaults of LoopConfig.
const (
	DefaultRate          = 10.0
	DefaultMaxImageAge   = 500 * time.Millisecond
	DefaultMaxProprioAge = 500 * time.Millisecond
)

// LoopConfig configures the control loop.
type LoopConfig struct {
	// Rate is the control rate in Hz. It defaults to DefaultRate.
	Rate float64
	// Deadline is how long after its scheduled time a tick's action must be
	// published; it is at most, and defaults to, the period 1/Rate.
	Deadline time.Duration
	// MaxImageAge is the oldest frame the policy acts on, by its header
	// stamp (its arrival time when unstamped). It defaults to
	// DefaultMaxImageAge.
	MaxImageAge time.Duration
	// MaxProprioAge is the oldest proprioception a policy that reads it
	// acts on, by its arrival time (std_msgs/Float32MultiArray has no
	// stamp). It defaults to DefaultMaxProprioAge.
	MaxProprioAge time.Duration
	// HeartbeatTimeout, if positive, stops acting when no heartbeat came
	// within it (and until the first one).
	HeartbeatTimeout time.Duration
	// MaxSteps, if positive, ends an episode after that many actions.
	MaxSteps int
	// FollowCamera locks the ticks' phase to the camera's (see phaseLock):
	// each tick moves by at most a 50th of the period so that it comes just
	// after a frame arrives. Leave it off when the camera is triggered by
	// the actions, as the simulator's is: the frames would follow the ticks.
	FollowCamera bool
	// KeepMemoryOnInstruction keeps the policy's memory when the
	// instruction changes; by default a new instruction starts a new
	// episode.
	KeepMemoryOnInstruction bool
	// Safety is the safety filter's configuration.
	Safety policy.SafetyConfig
	// WorkspaceStart is the end-effector position the filter's workspace
	// integration starts from (metres; used only with Safety.Workspace).
	WorkspaceStart [3]float64
	// TrainedRate is the rate, Hz, the policy learnt its per-step actions
	// at (policy.Config.Rate; 0 unknown), and StepScale what the per-step
	// action dimensions (action.PerStep) are multiplied by before the
	// safety filter: TrainedRate/Rate under RateRescale, else 1 (0 means
	// 1). See ChooseRate.
	TrainedRate float64
	StepScale   float64
}

// Period is 1/Rate.
func (c LoopConfig) Period() time.Duration {
	return time.Duration(float64(time.Second) / c.Rate)
}

func (c *LoopConfig) defaults() error {
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	switch {
	case !(c.Rate > 0) || math.IsInf(c.Rate, 0) || c.Rate > 1000:
		return fmt.Errorf("rate %g Hz: want a rate in (0, 1000]", c.Rate)
	case c.Deadline < 0:
		return fmt.Errorf("deadline %v is negative", c.Deadline)
	case c.MaxImageAge < 0:
		return fmt.Errorf("max_image_age %v is negative", c.MaxImageAge)
	case c.MaxProprioAge < 0:
		return fmt.Errorf("max_proprio_age %v is negative", c.MaxProprioAge)
	case c.HeartbeatTimeout < 0:
		return fmt.Errorf("heartbeat_timeout %v is negative", c.HeartbeatTimeout)
	case c.MaxSteps < 0:
		return fmt.Errorf("max_steps %d is negative", c.MaxSteps)
	case !(c.StepScale >= 0 && c.StepScale <= 1000):
		return fmt.Errorf("step scale %g: want (0, 1000]", c.StepScale)
	}
	if c.StepScale == 0 {
		c.StepScale = 1
	}
	if c.Deadline == 0 || c.Deadline > c.Period() {
		c.Deadline = c.Period()
	}
	if c.MaxImageAge == 0 {
		c.MaxImageAge = DefaultMaxImageAge
	}
	if c.MaxProprioAge == 0 {
		c.MaxProprioAge = DefaultMaxProprioAge
	}
	return nil
}

// Stepper runs one policy step; *policy.Policy is one.
type Stepper interface {
	Step(obs *policy.Observation, st *policy.State, action []float32) error
	NewState() *policy.State
	ActionSpace() action.Space
	// Proprio names the proprioception the policy reads (policy.Config.Proprio); nil for none.
	Proprio() []string
}

// Output is what one tick publishes.
type Output struct {
	Time       time.Time // the loop clock when publishing
	Action     []float32 // in the action space's layout; valid during the call only
	Acting     bool      // the policy's action (else the stop action)
	Reason     Reason    // why not acting
	Done       bool      // episode_done
	Episode    uint64
	Step       int       // actions in the current episode
	ImageStamp time.Time // stamp of the frame acted on; zero when stopping
}

// Sink receives the loop's outputs (the ROS publishers, or a test).
// Its methods are called from the loop goroutine; they must not block.
type Sink interface {
	// Action publishes one tick's output.
	Action(o *Output)
	// Status publishes a change of the loop's state, in words.
	Status(text string, reason Reason)
}

// Loop is the fixed-rate control loop. Build it with NewLoop, run it with
// Run.
type Loop struct {
	cfg    LoopConfig
	period time.Duration
	pol    Stepper
	filter *policy.Filter
	clock  ros.Clock
	in     *Inputs
	sink   Sink
	log    hclog.Logger
	w      *worker
	// perStep are the action dimensions cfg.StepScale multiplies (none
	// when it is 1).
	perStep []int
	// robotProprio and camera are what the gate read from the robot's
	// tree at the frame's stamp (Inputs.SetRobot), for act to hand to the
	// worker; detail says why the gate found none.
	robotProprio []float32
	camera       vision.CameraGeometry
	detail       error

	// Owned by the loop goroutine.
	state     *policy.State // the committed state: steps whose actions were published
	cur       *frameIn      // the newest frame taken from the slot
	usedSeq   uint64        // the frame the last inference used
	badSeq    uint64        // the last frame that did not decode
	instrSeq  uint64        // the instruction the current episode runs on
	inflight  bool          // the inference goroutine has a job
	hasActed  bool
	done      bool
	episode   uint64
	steps     int
	lastSched time.Time
	phase     phaseLock
	shift     time.Duration // how far the next tick moves (FollowCamera)
	reason    Reason
	statusSet bool
	proposed  []float32
	out       []float32
	output    Output
	cnt       Counters
	tickAt    [recentLen]time.Time // loop clock at the start of the last ticks
	pending   [numStages]time.Duration
	has       [numStages]bool

	mu      sync.Mutex // mu guards shared, stages, scratch
	shared  Stats
	stages  [numStages]durationStat
	scratch [recentLen]time.Duration
}

// NewLoop checks cfg and builds a loop around p, which must use RT-1's
// action layout (action.RT1): the node maps its dimensions onto cmd_vel,
// arm/command and gripper/command. log may be nil.
func NewLoop(p Stepper, cfg LoopConfig, clock ros.Clock, in *Inputs, sink Sink, log hclog.Logger) (*Loop, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if err := cfg.defaults(); err != nil {
		return nil, fmt.Errorf("control loop: %w", err)
	}
	space := p.ActionSpace()
	if err := action.RT1().CompareLayout(space); err != nil {
		return nil, fmt.Errorf("control loop: the node publishes RT-1's action layout: %w", err)
	}
	filter, err := policy.NewFilter(space, cfg.Safety)
	if err != nil {
		return nil, fmt.Errorf("control loop: %w", err)
	}
	filter.Reset(cfg.WorkspaceStart)
	n := space.Len()
	var perStep []int
	if cfg.StepScale != 1 {
		for i, d := range space.Dims {
			if d.PerStep() {
				perStep = append(perStep, i)
			}
		}
	}
	l := &Loop{
		perStep: perStep, robotProprio: make([]float32, len(p.Proprio())),
		cfg: cfg, period: cfg.Period(), pol: p, filter: filter, clock: clock, in: in, sink: sink, log: log,
		state: p.NewState(), proposed: make([]float32, n), out: make([]float32, n),
		reason: ReasonNoFrame,
		w: &worker{
			pol: p, scratch: p.NewState(), action: make([]float32, n), proprio: make([]float32, len(p.Proprio())),
			start: make(chan struct{}, 1), done: make(chan struct{}, 1), exited: make(chan struct{}),
		},
	}
	return l, nil
}

// Config returns the loop's configuration with defaults applied.
func (l *Loop) Config() LoopConfig { return l.cfg }

// Run runs the loop until ctx ends. Ticks are at fixed times, the first at
// once (with FollowCamera, each moved by at most a 50th of the period
// towards the camera's phase). On the way out it publishes one last stop
// action (if it ever acted) and waits for a running inference to finish.
func (l *Loop) Run(ctx context.Context) {
	wctx, cancel := context.WithCancel(context.Background())
	go l.w.run(wctx)
	defer func() {
		if l.inflight {
			<-l.w.done
		}
		cancel()
		<-l.w.exited
	}()
	l.setStatus(ReasonNoFrame)
	// ROS time reads zero until the first /clock message: start from there.
	if l.clock.Now().UnixNano() <= 0 {
		l.log.Info("waiting for /clock (use_sim_time is set)")
		if l.clock.WaitUntil(ctx, time.Unix(0, 1), nil) == ros.Cancelled {
			return
		}
	}
	next := l.clock.Now()
ticks:
	for {
		switch l.clock.WaitUntil(ctx, next, nil) {
		case ros.Cancelled:
			break ticks
		case ros.Jumped:
			l.log.Warn("the clock went backwards; the schedule restarts from now", "was_waiting_for", next, "now", l.clock.Now())
			next = l.clock.Now()
		}
		if late := l.clock.Now().Sub(next); late >= l.period {
			n := late / l.period
			next = next.Add(n * l.period)
			l.cnt.SkippedTicks += uint64(n)
		}
		l.tick(ctx, next)
		if ctx.Err() != nil {
			break ticks
		}
		next = next.Add(l.period + l.shift)
	}
	if l.hasActed {
		l.filter.Stop(l.out, l.period.Seconds())
		l.publish(l.clock.Now(), false, ReasonShutdown, time.Time{})
	}
	l.setStatus(ReasonShutdown)
	l.flush()
}

// tick runs one control step scheduled at sched.
func (l *Loop) tick(ctx context.Context, sched time.Time) {
	now := l.clock.Now()
	l.rec(StageJitter, now.Sub(sched))
	l.tickAt[l.cnt.Ticks%recentLen] = now
	l.cnt.Ticks++
	dt := l.period.Seconds()
	if d := sched.Sub(l.lastSched); !l.lastSched.IsZero() && d > 0 && d < 100*l.period {
		dt = d.Seconds() // more than a period after skipped ticks
	}
	l.lastSched = sched

	if l.inflight {
		select {
		case <-l.w.done:
			l.inflight = false
			l.cnt.LateDiscarded++
			l.addSample(StageInference, l.w.infer) // late, but its time counts
		default:
		}
	}
	instr := l.in.currentInstruction()
	if !l.inflight {
		l.episodeChanges(instr)
	}
	f := l.in.takeFrame()
	if f != nil {
		l.cur = f
	}
	if l.cfg.FollowCamera {
		l.shift = l.phase.shift(sched, f, l.period)
	}

	reason := l.gate(now, instr)
	var stamp time.Time
	if reason == ReasonNone {
		reason, stamp = l.act(ctx, sched, instr, dt)
		if ctx.Err() != nil {
			return
		}
	}
	switch {
	case reason == ReasonNone:
		l.publish(sched, true, reason, stamp)
	case !l.hasActed:
		l.cnt.Silent++ // fail closed: nothing to hold yet
	case reason == ReasonRejected:
		l.publish(sched, false, reason, time.Time{}) // Apply wrote the stop action
	default:
		l.filter.Stop(l.out, dt)
		l.publish(sched, false, reason, time.Time{})
	}
	if reason != ReasonNone {
		l.cnt.Stopped += b2u(l.hasActed)
	}
	l.setStatus(reason)
	l.flush()
}

// episodeChanges starts a new episode on a reset_memory request or, unless
// configured otherwise, on a new instruction (the first instruction always
// starts episode 1). The inference goroutine is idle.
func (l *Loop) episodeChanges(instr instruction) {
	req := l.in.resetRequested.Load()
	newInstr := instr.seq != l.instrSeq
	l.instrSeq = instr.seq
	if req > l.in.resetApplied.Load() || newInstr && (!l.cfg.KeepMemoryOnInstruction || l.episode == 0) {
		l.state.Reset()
		l.done, l.steps = false, 0
		l.episode++
		l.cnt.Episodes++
		l.log.Info("new episode", "episode", l.episode, "reset_memory", req > l.in.resetApplied.Load(), "new_instruction", newInstr)
		l.in.startEpisode(req, instr)
	}
}

// gate returns the first reason not to act, or ReasonNone.
func (l *Loop) gate(now time.Time, instr instruction) Reason {
	l.detail = nil
	if l.cur != nil {
		l.rec(StageImageAge, now.Sub(l.cur.stamp))
	}
	switch {
	case l.in.UnreadableSafety() != "":
		return ReasonUnreadableSafety
	case l.in.EStopped():
		return ReasonEStop
	case !l.in.Enabled():
		return ReasonDisabled
	case l.cfg.HeartbeatTimeout > 0 && l.in.heartbeat.Load() == 0:
		return ReasonNoHeartbeat
	case l.cfg.HeartbeatTimeout > 0 && now.Sub(time.Unix(0, l.in.heartbeat.Load())) > l.cfg.HeartbeatTimeout:
		return ReasonHeartbeat
	case l.cur == nil:
		return ReasonNoFrame
	case instr.seq == 0:
		return ReasonNoInstruction
	}
	rs := l.in.robot
	readsProprio := len(l.w.proprio) > 0
	fromTopic := readsProprio && (rs == nil || rs.names == nil)
	at, haveProprio := l.in.proprioTime()
	if fromTopic && !haveProprio {
		return ReasonNoProprio
	}
	switch age := now.Sub(l.cur.stamp); {
	case age > l.cfg.MaxImageAge:
		l.cnt.StaleFrames++
		return ReasonStaleFrame
	case age < -l.cfg.MaxImageAge:
		l.cnt.StaleFrames++
		return ReasonFutureFrame
	}
	if l.cur.seq == l.badSeq {
		return ReasonBadFrame
	}
	if age := now.Sub(at); fromTopic && (age > l.cfg.MaxProprioAge || age < -l.cfg.MaxProprioAge) {
		l.cnt.StaleProprio++
		return ReasonStaleProprio
	}
	if readsProprio && !fromTopic {
		if r, err := rs.proprio(l.robotProprio, l.cur.stamp, l.cfg.MaxProprioAge); r != ReasonNone {
			l.cnt.StaleProprio += b2u(r == ReasonStaleProprio)
			l.detail = err
			return r
		}
	}
	if rs != nil && rs.trained != nil {
		if r, err := rs.camera(&l.camera, l.cur.stamp, l.cfg.MaxProprioAge); r != ReasonNone {
			l.detail = err
			return r
		}
	}
	switch {
	case l.done:
		return ReasonEpisodeDone
	case l.inflight:
		l.cnt.Busy++
		return ReasonBusy
	}
	return ReasonNone
}

// act runs the policy on the current frame and, if it finishes by the
// deadline, commits its state and filters its action into l.out.
func (l *Loop) act(ctx context.Context, sched time.Time, instr instruction, dt float64) (Reason, time.Time) {
	w := l.w
	w.frame, w.base = l.cur, l.state
	w.obs.Instruction, w.obs.Embedding = instr.text, instr.embedding
	if instr.useText {
		w.obs.Embedding = nil
	}
	w.obs.Proprio, w.obs.Camera = nil, nil
	rs := l.in.robot
	switch {
	case len(w.proprio) > 0 && rs != nil && rs.names != nil:
		copy(w.proprio, l.robotProprio) // read by the gate at the frame's stamp
		w.obs.Proprio = w.proprio
	case len(w.proprio) > 0:
		l.in.copyProprio(w.proprio) // gate saw a fresh reading; a newer one may have come since
		w.obs.Proprio = w.proprio
	}
	if rs != nil && rs.trained != nil {
		w.camera = l.camera
		w.obs.Camera = &w.camera
	}
	repeated := l.cur.seq == l.usedSeq
	l.usedSeq = l.cur.seq
	l.inflight = true
	w.start <- struct{}{}
	r := l.clock.WaitUntil(ctx, sched.Add(l.cfg.Deadline), w.done)
	for r == ros.Jumped { // the deadline is later now: keep waiting for the result
		r = l.clock.WaitUntil(ctx, sched.Add(l.cfg.Deadline), w.done)
	}
	switch r {
	case ros.Cancelled:
		return ReasonShutdown, time.Time{}
	case ros.Reached:
		l.cnt.DeadlineMisses++
		return ReasonDeadline, time.Time{}
	}
	l.inflight = false
	if w.decoded {
		l.rec(StageDecode, w.decode)
	}
	l.rec(StageInference, w.infer)
	if w.decodeFailed {
		// A bad frame, refused like one refused on arrival, and not
		// decoded again at the next ticks.
		l.in.framesBad.Add(1)
		l.badSeq = l.cur.seq
		if l.reason != ReasonBadFrame {
			l.log.Warn("camera frame refused", "error", w.err)
		}
		return ReasonBadFrame, time.Time{}
	}
	if w.err != nil {
		l.cnt.PolicyErrors++
		if l.reason != ReasonPolicyError {
			l.log.Warn("inference failed; publishing the stop action", "error", w.err)
		}
		return ReasonPolicyError, time.Time{}
	}
	l.state, w.scratch = w.scratch, l.state // commit
	l.steps++
	l.cnt.RepeatedFrames += b2u(repeated)

	t0 := time.Now()
	copy(l.proposed, w.action)
	mode := action.GateMode(l.proposed)
	for _, i := range l.perStep {
		l.proposed[i] *= float32(l.cfg.StepScale)
	}
	v := l.filter.Apply(l.out, l.proposed, dt)
	l.rec(StageFilter, time.Since(t0))
	if v.Rejected {
		l.cnt.Rejected++
		return ReasonRejected, time.Time{}
	}
	l.cnt.Modified += b2u(v.Modified())
	if mode == action.ModeTerminate || l.cfg.MaxSteps > 0 && l.steps >= l.cfg.MaxSteps {
		l.done = true
		l.cnt.EpisodesDone++
		l.log.Info("episode done", "episode", l.episode, "steps", l.steps, "terminated", mode == action.ModeTerminate)
	}
	return ReasonNone, l.cur.stamp
}

// publish sends l.out; acting says whether it is the policy's action.
func (l *Loop) publish(sched time.Time, acting bool, reason Reason, stamp time.Time) {
	if !finite32(l.out) { // unreachable: the filter lets nothing non-finite out
		l.cnt.Rejected++
		clear(l.out)
		acting, reason = false, ReasonRejected
	}
	now := l.clock.Now()
	l.output = Output{Time: now, Action: l.out, Acting: acting, Reason: reason, Done: l.done,
		Episode: l.episode, Step: l.steps, ImageStamp: stamp}
	t0 := time.Now()
	l.sink.Action(&l.output)
	l.rec(StagePublish, time.Since(t0))
	end := l.clock.Now()
	l.rec(StageTickLatency, end.Sub(sched))
	if acting {
		l.hasActed = true
		l.cnt.Acted++
		l.rec(StageEndToEnd, end.Sub(stamp))
	}
}

// setStatus tells the sink when the reason changes.
func (l *Loop) setStatus(r Reason) {
	if l.statusSet && r == l.reason {
		return
	}
	prev := l.reason
	l.reason, l.statusSet = r, true
	text := statusText(r, l.hasActed)
	if r.fromRobot() && l.detail != nil {
		text += ": " + l.detail.Error()
	}
	if r == ReasonNone && l.cfg.StepScale != 1 {
		text += fmt.Sprintf(" (rescaled: trained at %.3g Hz, running at %.3g Hz, per-step actions x%.3g)", l.cfg.TrainedRate, l.cfg.Rate, l.cfg.StepScale)
	}
	l.sink.Status(text, r)
	switch {
	case r == ReasonNone:
		l.log.Info("acting", "episode", l.episode, "previous", prev.Key())
	case r.waiting() || r == ReasonShutdown || r == ReasonEpisodeDone:
		l.log.Info(text)
	case r == ReasonStaleProprio && l.detail == nil:
		at, _ := l.in.proprioTime()
		l.log.Warn(text, "age", l.clock.Now().Sub(at).Round(time.Millisecond), "max_proprio_age", l.cfg.MaxProprioAge)
	case r == ReasonStaleFrame && l.cur != nil:
		l.log.Warn(text, "age", l.clock.Now().Sub(l.cur.stamp).Round(time.Millisecond), "max_image_age", l.cfg.MaxImageAge,
			"stamp_from_header", l.cur.stamped)
	case r == ReasonFutureFrame && l.cur != nil:
		l.log.Warn(text, "ahead", l.cur.stamp.Sub(l.clock.Now()).Round(time.Millisecond), "max_image_age", l.cfg.MaxImageAge)
	default:
		l.log.Warn(text)
	}
}

func statusText(r Reason, acted bool) string {
	switch {
	case r == ReasonNone:
		return "acting"
	case !acted:
		return "waiting: " + r.String()
	}
	return "stopped: " + r.String()
}

// rec notes a stage's duration for this tick.
func (l *Loop) rec(s Stage, d time.Duration) { l.pending[s], l.has[s] = d, true }

// addSample records a sample at once (for a second sample of a stage in
// one tick).
func (l *Loop) addSample(s Stage, d time.Duration) {
	l.mu.Lock()
	l.stages[s].add(d)
	l.mu.Unlock()
}

// flush moves this tick's samples and counters into the shared statistics.
func (l *Loop) flush() {
	l.mu.Lock()
	for s := range numStages {
		if l.has[s] {
			l.stages[s].add(l.pending[s])
			l.has[s] = false
		}
	}
	l.shared.Counters = l.cnt
	if n := min(l.cnt.Ticks, recentLen); n >= 2 {
		first, last := l.tickAt[(l.cnt.Ticks-n)%recentLen], l.tickAt[(l.cnt.Ticks-1)%recentLen]
		if span := last.Sub(first).Seconds(); span > 0 {
			l.shared.Rate = float64(n-1) / span
		}
	}
	l.shared.Reason, l.shared.Episode, l.shared.Step, l.shared.Done = l.reason, l.episode, l.steps, l.done
	l.mu.Unlock()
}

// Stats returns a snapshot of the loop's statistics; it may be called from
// any goroutine.
func (l *Loop) Stats() Stats {
	l.mu.Lock()
	s := l.shared
	for i := range numStages {
		s.Stages[i] = l.stages[i].summary(l.scratch[:])
	}
	l.mu.Unlock()
	s.FramesIn = l.in.framesIn.Load()
	s.FramesDropped = l.in.framesDropped.Load()
	s.FramesBad = l.in.framesBad.Load()
	s.EmbeddingsBad = l.in.embeddingsBad.Load()
	s.ProprioIn = l.in.proprioIn.Load()
	s.ProprioBad = l.in.proprioBad.Load()
	if r := l.in.robot; r != nil {
		s.TransformsIn, s.TransformsBad = r.tfIn.Load(), r.tfBad.Load()
		s.JointStatesIn, s.JointStatesBad = r.jointIn.Load(), r.jointBad.Load()
		s.CameraInfoIn, s.CameraInfoBad = r.infoIn.Load(), r.infoBad.Load()
	}
	s.InstructionsBad = l.in.instructionsBad.Load()
	return s
}

// resetTotals clears the stages' whole-run statistics (the soak harness
// measures from a point after start-up).
func (l *Loop) resetTotals() {
	l.mu.Lock()
	for i := range l.stages {
		l.stages[i] = durationStat{}
	}
	l.mu.Unlock()
}

// Period is the control period.
func (l *Loop) Period() time.Duration { return l.period }

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func finite32(x []float32) bool {
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return false
		}
	}
	return true
}

// worker runs inferences on its own goroutine, one at a time. The loop
// writes the job fields only while the worker is idle (no job sent, or its
// done signal received) and reads the results only after done.
type worker struct {
	pol    Stepper
	start  chan struct{} // a job is ready (buffered 1)
	done   chan struct{} // the job is finished (buffered 1)
	exited chan struct{}

	// job
	frame   *frameIn
	base    *policy.State // the committed state; read only during the job
	obs     policy.Observation
	proprio []float32             // the reading the job acts on; empty for a policy without proprioception
	camera  vision.CameraGeometry // the robot's camera calibration the job acts on (obs.Camera)

	// result
	scratch       *policy.State // base advanced by one step (on success)
	action        []float32
	err           error
	decodeFailed  bool // err is the frame's: it did not decode
	decoded       bool // the frame was decoded here: compressed, or raw to convert
	decode, infer time.Duration

	dec vision.Decoder
}

func (w *worker) run(ctx context.Context) {
	defer close(w.exited)
	for {
		select {
		case <-w.start:
		case <-ctx.Done():
			return
		}
		w.step()
		w.done <- struct{}{}
	}
}

func (w *worker) step() {
	t0 := time.Now()
	w.decoded = w.frame.compressed != nil || w.frame.raw != nil
	w.decodeFailed = false
	w.obs.Frame = w.frame.frame
	if w.decoded {
		var f vision.Frame
		var err error
		if w.frame.compressed != nil {
			f, err = w.dec.DecodeCompressed(w.frame.compressed)
		} else {
			f, err = w.dec.DecodeImage(w.frame.raw)
		}
		w.decode = time.Since(t0)
		if err != nil {
			w.decodeFailed = true
			w.err, w.infer = fmt.Errorf("decode frame: %w", err), 0
			return
		}
		w.obs.Frame = f
	}
	t1 := time.Now()
	w.scratch.CopyFrom(w.base)
	w.err = w.pol.Step(&w.obs, w.scratch, w.action)
	w.infer = time.Since(t1)
	w.obs.Frame = vision.Frame{} // do not keep the message alive
}
