package simnode

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/ros"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/sim"
)

// Defaults of Config.
const (
	DefaultActionTimeout  = 2 * time.Second
	DefaultEpisodeTimeout = 30 * time.Second
	DefaultStartTimeout   = 2 * time.Minute
	DefaultResetTimeout   = 5 * time.Second
	DefaultProgressEvery  = 10
)

// ErrNoActions is returned by Node.Wait when an episode got no action
// at all from the policy node within its timeout: nothing drives the
// simulator.
var ErrNoActions = errors.New("no action from the policy node")

// Config configures a Node.
type Config struct {
	// Args is the node's ROS command line and environment (ros.ParseArgs).
	// Required.
	Args *ros.Args
	// Tasks are run one after another, Episodes episodes each. Required.
	Tasks []*sim.Task
	// Episodes per task. It defaults to 1.
	Episodes int
	// Seed of the first episode: episode i of every task uses Seed+i, as
	// `ttm sim` does.
	Seed uint64
	// Height and Width of the headcam frames. They default to
	// sim.DefaultHeight and sim.DefaultWidth.
	Height, Width int
	// MaxSteps, if positive, ends an episode after that many steps when
	// the task's own cap is larger.
	MaxSteps int
	// ActionTimeout: when no action came this long after a frame was
	// published, the frame is published again with a fresh stamp (the
	// policy node fails closed on stale frames). It defaults to
	// DefaultActionTimeout.
	ActionTimeout time.Duration
	// EpisodeTimeout: when no action came this long, the episode is given
	// up (Stalled). It defaults to DefaultEpisodeTimeout.
	EpisodeTimeout time.Duration
	// StartTimeout replaces EpisodeTimeout until the first action of the
	// run arrives (the policy node may still be loading and warming up). It
	// defaults to DefaultStartTimeout.
	StartTimeout time.Duration
	// NoReset turns off the call to the policy node's reset_memory service
	// at every episode start; the new instruction alone then starts the
	// policy's new episode (not when two episodes in a row share it).
	NoReset bool
	// ResetTimeout bounds each reset_memory call, and the time spent
	// calling again while the policy node answers that its new episode
	// started with the previous instruction (the new one still on its
	// way). It defaults to DefaultResetTimeout.
	ResetTimeout time.Duration
	// ProgressEvery: log the episode's progress every that many steps. It
	// defaults to DefaultProgressEvery; negative turns it off.
	ProgressEvery int
	// Frame, if not nil, sees every frame of every episode: the frame
	// before each step (step = 0, 1, ...) and, last, the final frame. img is
	// reused after the call. It runs on the stepping goroutine.
	Frame func(ep Episode, step int, img []byte)
	// EpisodeDone, if not nil, is called with each episode's result.
	EpisodeDone func(r Result)
	// Log defaults to a logger that discards everything.
	Log hclog.Logger
	// PollInterval is how often the supervisor checks the master
	// (ros.DefaultPollInterval when zero).
	PollInterval time.Duration
}

// Episode identifies an episode of a run.
type Episode struct {
	Task        *sim.Task
	Seed        uint64
	Index       int // in the run, from 0
	Instruction string
}

// Result is the outcome of one episode driven over ROS.
type Result struct {
	sim.Result
	Index int
	// Stalled: no action came within the episode timeout; the episode was
	// given up where it stood.
	Stalled bool
	// Capped: the episode ended at Config.MaxSteps.
	Capped      bool
	Rejected    int // malformed actions refused in this episode
	Republished int // frames published again after ActionTimeout
	Elapsed     time.Duration
}

// Stats counts what a Node did so far.
type Stats struct {
	Episodes        int    // episodes started
	EpisodesDone    int    // episodes finished (ended, capped or stalled)
	Stalled         int    // episodes given up
	Steps           uint64 // steps applied, all episodes
	Step            int    // steps of the current episode
	FramesPublished uint64 // frames sent (republished ones included)
	Republished     uint64 // frames sent again after ActionTimeout
	ActionsIn       uint64 // action messages received
	Rejected        uint64 // malformed actions refused (never applied)
	Ignored         uint64 // actions that came before the frame they would answer (never applied)
	Dropped         uint64 // actions dropped from a full queue
	Resets          uint64 // reset_memory calls the policy node answered with success
	ResetRetries    uint64 // reset_memory calls made again: the answer named the previous instruction
	HeldTerminate   uint64 // stop actions holding a terminate mode the policy did not choose (never applied)
}

// Node is the simulator as a ROS node: for each episode it publishes the
// instruction (latched) and the headcam frames, and steps the simulator
// with the actions the policy node publishes.
//
// Stepping is lockstep: publish a frame, wait for the first well-formed
// action that arrives after it, apply it (sim.Episode.Step), render and
// publish the next frame. A policy node at a fixed rate acts on each new
// frame at its next tick, so every tick answers one frame. Actions that
// arrived before the frame are dropped (Stats.Ignored); malformed ones
// (wrong length, NaN or Inf) are logged and not applied (Rejected); a stop
// action that merely holds an earlier terminate mode is not applied either
// (HeldTerminate, see terminateConfirmed). Other stop actions of the policy
// node (a missed deadline) are applied: a step in which the robot is told
// not to move, as a real robot would be. When no
// action comes within ActionTimeout the frame is published again with a
// fresh stamp (the policy node refuses stale frames); after EpisodeTimeout
// the episode is given up. At an episode start the node publishes the first
// frame and the instruction, then calls the policy node's reset_memory
// service (answered once the policy's memory is reset), so the first step
// of the new episode sees the new frame on a fresh memory; only actions
// that arrive after that answer are applied.
//
// A frame goes out right after the action it follows, so the policy node's
// next tick sees it almost a period old: the policy node's ~max_image_age
// must be longer than its period, or it refuses every frame as stale.
type Node struct {
	conf  Config
	log   hclog.Logger
	io    *simIO
	queue *actionQueue
	sup   *ros.Supervisor

	cancel context.CancelFunc
	done   chan struct{} // closed when the run ends
	close  sync.Once

	// Set by the run goroutine before done is closed.
	results []Result
	err     error

	statsMu sync.Mutex // statsMu guards stats
	stats   Stats
	frames  atomic.Uint64
	gotAny  atomic.Bool // an action arrived during this run

	warnedNoDone bool // owned by the run goroutine
}

// Start checks conf, registers the node with ROS (waiting for the
// master in the background) and starts the episodes; it returns at once.
// The run ends when every episode is done, on a fatal error (Wait), or
// when ctx ends or Close is called.
func Start(ctx context.Context, conf Config) (*Node, error) {
	if conf.Args == nil {
		return nil, errors.New("sim node: Args is nil")
	}
	if len(conf.Tasks) == 0 {
		return nil, errors.New("sim node: no tasks")
	}
	for i, t := range conf.Tasks {
		if t == nil {
			return nil, fmt.Errorf("sim node: task %d is nil", i)
		}
	}
	if conf.Episodes == 0 {
		conf.Episodes = 1
	}
	if conf.Height == 0 {
		conf.Height = sim.DefaultHeight
	}
	if conf.Width == 0 {
		conf.Width = sim.DefaultWidth
	}
	if conf.ActionTimeout == 0 {
		conf.ActionTimeout = DefaultActionTimeout
	}
	if conf.EpisodeTimeout == 0 {
		conf.EpisodeTimeout = DefaultEpisodeTimeout
	}
	if conf.StartTimeout == 0 {
		conf.StartTimeout = DefaultStartTimeout
	}
	if conf.ResetTimeout == 0 {
		conf.ResetTimeout = DefaultResetTimeout
	}
	if conf.ProgressEvery == 0 {
		conf.ProgressEvery = DefaultProgressEvery
	}
	switch {
	case conf.Episodes < 0:
		return nil, fmt.Errorf("sim node: episodes %d is negative", conf.Episodes)
	case conf.MaxSteps < 0:
		return nil, fmt.Errorf("sim node: max steps %d is negative", conf.MaxSteps)
	case conf.Height < 8 || conf.Width < 8 || conf.Height > sim.MaxImageSide || conf.Width > sim.MaxImageSide:
		return nil, fmt.Errorf("sim node: image size %dx%d: each side must be in [8, %d]", conf.Height, conf.Width, sim.MaxImageSide)
	case conf.ActionTimeout < 0 || conf.EpisodeTimeout < 0 || conf.StartTimeout < 0 || conf.ResetTimeout < 0:
		return nil, errors.New("sim node: a timeout is negative")
	case conf.EpisodeTimeout < conf.ActionTimeout:
		return nil, fmt.Errorf("sim node: episode timeout %v is shorter than the action timeout %v", conf.EpisodeTimeout, conf.ActionTimeout)
	}
	if conf.Log == nil {
		conf.Log = hclog.NewNullLogger()
	}
	a := conf.Args
	names, err := a.ResolveNames(simNames)
	if err != nil {
		return nil, fmt.Errorf("sim node: %w", err)
	}
	log := conf.Log.With("node", a.NodeName())
	q := newActionQueue()
	s := &Node{conf: conf, log: log, queue: q, done: make(chan struct{}),
		io: &simIO{names: names, reset: !conf.NoReset, queue: q, log: log.Named("ros"), doneIn: make(chan struct{}, 1), camInfo: cameraInfo(conf.Height, conf.Width)}}
	s.sup, err = ros.NewSupervisor(ctx, ros.SupervisorConf{Args: a, Setup: s.io.setup, Teardown: s.io.teardown,
		Logger: log.Named("supervisor"), PollInterval: conf.PollInterval})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	log.Info("simulator node started", "tasks", len(conf.Tasks), "episodes_per_task", conf.Episodes, "seed", conf.Seed,
		"size", fmt.Sprintf("%dx%d", conf.Height, conf.Width), "image", names[ros.TopicImage], "instruction", names[ros.TopicInstruction],
		"action", names[ros.TopicAction], "reset_service", map[bool]string{true: names[ros.ServiceResetMemory], false: "(off)"}[!conf.NoReset])
	go s.run(rctx)
	return s, nil
}

// Run starts a simulator node and runs it until its episodes are done
// or ctx ends; see Start and Wait.
func Run(ctx context.Context, conf Config) ([]Result, error) {
	s, err := Start(ctx, conf)
	if err != nil {
		return nil, err
	}
	res, err := s.Wait()
	s.Close()
	return res, err
}

// Done is closed when the run has ended.
func (s *Node) Done() <-chan struct{} { return s.done }

// Wait waits for the run to end and returns the finished episodes' results
// and why it stopped early: the context's error, or an error wrapping
// ErrNoActions; nil when every episode ran.
func (s *Node) Wait() ([]Result, error) {
	<-s.done
	return s.results, s.err
}

// Close stops the run (an episode in progress is not reported) and
// unregisters the node.
func (s *Node) Close() {
	s.close.Do(func() {
		s.cancel()
		<-s.done
		s.sup.Close()
	})
}

// Status returns the supervisor's status (registration, generation).
func (s *Node) Status() ros.SupervisorStatus { return s.sup.Status() }

// Stats returns what the node did so far.
func (s *Node) Stats() Stats {
	s.statsMu.Lock()
	st := s.stats
	s.statsMu.Unlock()
	st.FramesPublished = s.frames.Load()
	st.ActionsIn = s.io.received.Load()
	st.Dropped, st.Ignored = s.queue.counts()
	return st
}

func (s *Node) update(f func(st *Stats)) {
	s.statsMu.Lock()
	f(&s.stats)
	s.statsMu.Unlock()
}

func (s *Node) run(ctx context.Context) {
	defer close(s.done)
	c := &s.conf
	if err := s.waitRegistered(ctx); err != nil {
		s.err = err
		return
	}
	index := 0
	var total, ok int
	for _, task := range c.Tasks {
		for i := range c.Episodes {
			r, err := s.episode(ctx, Episode{Task: task, Seed: c.Seed + uint64(i), Index: index})
			if err != nil {
				s.err = err
				if ctx.Err() == nil {
					s.log.Error("simulator run stopped", "error", err)
				}
				return
			}
			index++
			s.results = append(s.results, r)
			total++
			if r.Success {
				ok++
			}
			if c.EpisodeDone != nil {
				c.EpisodeDone(r)
			}
		}
	}
	s.log.Info("all episodes done", "episodes", total, "success", ok)
}

// waitRegistered waits until the supervisor has registered the node (it
// waits for the master as roscpp does), so the first episode's frame,
// instruction and reset call go out on a registered node.
func (s *Node) waitRegistered(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !s.sup.Status().Connected {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.sup.Done():
			if err := s.sup.Err(); err != nil {
				return err
			}
			return errors.New("sim node: the ROS node stopped before registering")
		case <-t.C:
		}
	}
	return nil
}

// episode runs one episode in lockstep with the policy node.
func (s *Node) episode(ctx context.Context, info Episode) (Result, error) {
	c := &s.conf
	ep, err := sim.NewEpisode(info.Task, info.Seed, sim.Options{Height: c.Height, Width: c.Width})
	if err != nil {
		return Result{}, err
	}
	defer ep.Close()
	info.Instruction = ep.Instruction()
	start := time.Now()
	res := Result{Result: sim.Result{Task: info.Task.Name, Seed: info.Seed, Instruction: info.Instruction}, Index: info.Index}
	limit := info.Task.MaxSteps
	if c.MaxSteps > 0 {
		limit = min(limit, c.MaxSteps)
	}
	s.update(func(st *Stats) { st.Episodes++; st.Step = 0 })
	log := s.log.With("task", info.Task.Name, "seed", info.Seed)
	log.Info("episode started", "episode", info.Index+1, "instruction", info.Instruction, "max_steps", limit)

	img := make([]byte, c.Height*c.Width*3)
	if err := ep.Render(img); err != nil {
		return res, err
	}
	var seq uint32
	proprio := make([]float32, sim.ProprioLen)
	publish := func() {
		seq++
		s.queue.clear() // anything queued answers an earlier frame
		ep.State().Proprio(proprio)
		if s.io.publishFrame(img, ep.State(), proprio, c.Height, c.Width, seq) {
			s.frames.Add(1)
		}
	}
	// The first frame and the instruction go out before the reset, so the
	// tick that applies the reset acts on this episode's first frame.
	publish()
	s.io.setInstruction(info.Instruction)
	if !c.NoReset {
		s.resetPolicy(ctx, info.Instruction, log)
		s.queue.clear() // only actions after the reset answer belong to this episode
	}
	if c.Frame != nil {
		c.Frame(info, 0, img)
	}

	capped := false
	for !ep.Done() {
		if ep.Steps() >= limit {
			capped = true
			break
		}
		act, stalled, err := s.waitAction(ctx, ep.Steps(), &res, publish, log)
		if err != nil {
			return res, err
		}
		if stalled {
			res.Stalled = true
			break
		}
		if _, err := ep.Step(act); err != nil { // checkAction let it through; the simulator did not
			res.Rejected++
			s.update(func(st *Stats) { st.Rejected++ })
			log.Warn("action refused by the simulator; not applied", "error", err)
			continue
		}
		if err := ep.Render(img); err != nil {
			return res, err
		}
		n := ep.Steps()
		s.update(func(st *Stats) { st.Steps++; st.Step = n })
		if c.Frame != nil {
			c.Frame(info, n, img)
		}
		if c.ProgressEvery > 0 && n%c.ProgressEvery == 0 && !ep.Done() && n < limit {
			log.Info("episode progress", "step", n, "max_steps", limit, "success_so_far", ep.Success())
		}
		if !ep.Done() && n < limit {
			publish()
		}
	}
	res.Steps, res.Success, res.Terminated = ep.Steps(), ep.Success(), ep.State().Terminated
	res.Capped, res.Elapsed = capped, time.Since(start)
	s.update(func(st *Stats) {
		st.EpisodesDone++
		if res.Stalled {
			st.Stalled++
		}
	})
	end := "terminated"
	switch {
	case res.Stalled:
		end = "stalled"
	case capped:
		end = "step cap"
	case !res.Terminated:
		end = "task step cap"
	}
	rate := 0.0
	if res.Steps > 0 {
		rate = float64(res.Steps) / res.Elapsed.Seconds()
	}
	log.Info("episode done", "episode", info.Index+1, "instruction", info.Instruction, "steps", res.Steps, "success", res.Success,
		"end", end, "rejected", res.Rejected, "republished", res.Republished, "elapsed", res.Elapsed.Round(time.Millisecond),
		"steps_per_s", fmt.Sprintf("%.2f", rate))
	return res, nil
}

// resetPolicy asks the policy node to start a new episode with
// instruction. Failure is not fatal: the new instruction resets the policy
// node too, unless it repeats the last one. The answer names the
// instruction the policy node's episode started with; while that is not
// this one (the instruction message has not arrived yet: the topic and the
// service are separate connections), the episode would act on the
// previous task, so the call is made again, for up to ResetTimeout.
func (s *Node) resetPolicy(ctx context.Context, instruction string, log hclog.Logger) {
	deadline := time.Now().Add(s.conf.ResetTimeout)
	for {
		ok, msg, err := s.io.callReset(ctx, s.conf.ResetTimeout)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("reset_memory call failed; relying on the new instruction to reset the policy's memory",
				"service", s.io.names[ros.ServiceResetMemory], "error", err)
			return
		case err != nil:
			return
		case !ok:
			log.Warn("the policy node did not apply the reset in time", "message", msg)
			return
		}
		got, named := ros.ParseResetAnswer(msg)
		if !named || got == instruction {
			s.update(func(st *Stats) { st.Resets++ })
			log.Debug("policy memory reset", "message", msg)
			return
		}
		if time.Now().After(deadline) {
			log.Warn("the policy node's new episode started with another instruction; relying on the new instruction to reset it",
				"instruction", instruction, "policy_instruction", got, "waited", s.conf.ResetTimeout)
			return
		}
		s.update(func(st *Stats) { st.ResetRetries++ })
		log.Debug("the policy node has not received the instruction yet; resetting again", "policy_instruction", got)
		select {
		case <-ctx.Done():
			return
		case <-time.After(simResetRetry):
		}
	}
}

// simResetRetry is the pause before calling reset_memory again.
const simResetRetry = 20 * time.Millisecond

// The action and the episode_done message of one tick of the policy node
// arrive at most simDoneWindow apart (they go out together on two
// connections); simDoneWait bounds the wait for the episode_done message.
const (
	simDoneWindow = 25 * time.Millisecond
	simDoneWait   = 250 * time.Millisecond
)

// terminateConfirmed tells whether an action in terminate mode that arrived
// at "at" is the policy's terminate. The policy node's stop action (sent on
// a missed deadline, a busy tick, a stale frame) holds the last commanded
// mode, so after an episode that ended in terminate the stop actions at the
// start of the next one carry terminate too, while the policy has not
// chosen it: that tick's episode_done is false. Such an action is not
// applied (apply false); the node acts on the same frame at a later tick.
// Without an episode_done message near the action (known false: a policy
// node that does not publish it), the terminate is applied.
func (s *Node) terminateConfirmed(ctx context.Context, at time.Time) (apply, known bool) {
	wait := time.NewTimer(simDoneWait)
	defer wait.Stop()
	for {
		if d, ok := s.io.doneNear(at, simDoneWindow); ok {
			return d.done, true
		}
		select {
		case <-ctx.Done():
			return true, false
		case <-wait.C:
			return true, false
		case <-s.io.doneIn:
		}
	}
}

// waitAction waits for the first well-formed action after the current
// frame. It republishes the frame every ActionTimeout and gives up after
// the episode (or start) timeout: stalled. err is set when ctx ends, and
// when the episode stalls before its first step (steps taken so far is 0):
// then nothing drives the simulator and the run stops.
func (s *Node) waitAction(ctx context.Context, steps int, res *Result, republish func(), log hclog.Logger) (act []float32, stalled bool, err error) {
	c := &s.conf
	giveUp := c.EpisodeTimeout
	if !s.gotAny.Load() {
		giveUp = c.StartTimeout
	}
	start := time.Now()
	retry := time.NewTimer(c.ActionTimeout)
	defer retry.Stop()
	stall := time.NewTimer(giveUp)
	defer stall.Stop()
	for {
		for {
			a, ok := s.queue.pop()
			if !ok {
				break
			}
			if a.err != nil {
				res.Rejected++
				s.update(func(st *Stats) { st.Rejected++ })
				log.Warn("malformed action refused; not applied", "topic", s.io.names[ros.TopicAction], "error", a.err)
				continue
			}
			s.gotAny.Store(true)
			if simSpace.Dims[action.DimMode].Bin(a.data[action.DimMode]) == action.ModeTerminate {
				apply, known := s.terminateConfirmed(ctx, a.at)
				if !known && !s.warnedNoDone {
					s.warnedNoDone = true
					log.Warn("no episode_done message came with a terminate action; applying terminate actions as they come",
						"topic", s.io.names[ros.TopicEpisodeDone])
				}
				if !apply {
					s.update(func(st *Stats) { st.HeldTerminate++ })
					log.Debug("stop action holding an earlier terminate mode; not applied", "topic", s.io.names[ros.TopicAction])
					continue
				}
			}
			return a.data, false, nil
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-s.queue.notify:
		case <-retry.C:
			if s.queue.len() > 0 { // an action came as the timer fired: take it
				retry.Reset(c.ActionTimeout)
				continue
			}
			res.Republished++
			s.update(func(st *Stats) { st.Republished++ })
			log.Debug("no action yet; publishing the frame again", "waited", time.Since(start).Round(time.Millisecond))
			republish()
			retry.Reset(c.ActionTimeout)
		case <-stall.C:
			if steps == 0 {
				return nil, true, fmt.Errorf("%w on %s within %v (is `ttm node` running against the same master and namespace?)",
					ErrNoActions, s.io.names[ros.TopicAction], giveUp)
			}
			log.Error("giving up on the episode: no action from the policy node", "topic", s.io.names[ros.TopicAction], "waited", giveUp)
			return nil, true, nil
		}
	}
}
