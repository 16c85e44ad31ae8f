package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/internal/nn"
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/policy"
)

// Config configures a Node.
type Config struct {
	// Args is the node's ROS command line and environment (ros.ParseArgs).
	// Required.
	Args *ros.Args
	// Policy is the checkpoint file. Required.
	Policy string
	// Backbone overrides the backbone file the checkpoint names (its
	// SHA-256 is still checked).
	Backbone string
	// Threads is the number of threads for OpenCV's backbone and for the
	// TTM's matrix products (a process-wide setting). It defaults to
	// runtime.NumCPU().
	Threads int
	// Log defaults to a logger that discards everything.
	Log hclog.Logger
	// Clock overrides the node's time (tests). By default it is the wall
	// clock, or ROS time when /use_sim_time is set.
	Clock ros.Clock
	// PollInterval is how often the supervisor checks the master
	// (ros.DefaultPollInterval when zero).
	PollInterval time.Duration
}

// Node is the running ROS node: parameters, policy, control loop, ROS
// topics and services, diagnostics, and the supervisor that re-registers
// everything when roscore restarts.
type Node struct {
	conf   Config
	params NodeParams
	pol    *policy.Policy
	loop   *Loop
	io     *rosIO
	sup    *ros.Supervisor
	warm   WarmupResult
	log    hclog.Logger

	cancel   context.CancelFunc
	loopDone chan struct{}
	diagDone chan struct{}
	done     chan struct{} // closed when the node stops on its own or ctx ends
	stopOnce sync.Once
	close    sync.Once
	closeErr error
}

// Start loads the policy (a missing or damaged checkpoint or backbone
// fails here, master or no master), reads the node's parameters (waiting
// for the master, as rospy and roscpp do) and checks the policy against
// what they expect, warms it up and refuses to start if it is too slow for
// the configured rate, then registers with ROS and starts the control
// loop. It returns once the loop runs; the node keeps running until ctx
// ends, the ROS graph shuts it down (Done), or Close.
func Start(ctx context.Context, conf Config) (*Node, error) {
	if conf.Args == nil {
		return nil, errors.New("node: Args is nil")
	}
	if conf.Policy == "" {
		return nil, errors.New("node: no policy checkpoint given")
	}
	if conf.Threads < 0 {
		return nil, fmt.Errorf("node: threads %d is negative", conf.Threads)
	}
	if conf.Threads == 0 {
		conf.Threads = runtime.NumCPU()
	}
	if conf.Log == nil {
		conf.Log = hclog.NewNullLogger()
	}
	a := conf.Args
	log := conf.Log.With("node", a.NodeName())
	names, err := a.ResolveNames(allNames)
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}

	nn.SetThreads(1) // our own workers share the TTM's products; OpenBLAS threads would compete with them
	if nn.Parallelism() != conf.Threads {
		nn.SetParallelism(conf.Threads) // process-wide; unchanged if another node in this process set it
	}
	pol, err := policy.Load(conf.Policy, policy.Options{Backbone: conf.Backbone, Threads: conf.Threads, Log: log.Named("policy")})
	if err != nil {
		return nil, err
	}
	n := &Node{conf: conf, pol: pol, log: log}
	ok := false
	defer func() {
		if !ok {
			pol.Close()
		}
	}()

	np, err := waitParams(ctx, ros.NewParams(a, 0), a, log)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", a.NodeName(), err)
	}
	if err := pol.Check(np.Expect); err != nil {
		return nil, fmt.Errorf("load policy %s: %w", conf.Policy, err)
	}
	n.params = np
	clock := conf.Clock
	var sim *ros.SimClock
	if clock == nil {
		if np.UseSimTime {
			sim = ros.NewSimClock()
			clock = sim
		} else {
			clock = &ros.WallClock{}
		}
	}

	cfg := np.Loop
	cfg.TrainedRate = pol.Rate()
	if cfg.Rate, cfg.StepScale, err = ChooseRate(np.Loop.Rate, cfg.TrainedRate, np.RateMismatch); err != nil {
		return nil, fmt.Errorf("node %s refuses to start: %w", a.NodeName(), err)
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	switch {
	case cfg.TrainedRate == 0:
		log.Warn("the checkpoint does not record the rate it learnt at; running at ~rate", "rate_hz", cfg.Rate)
	case cfg.StepScale != 1:
		log.Warn("running at another rate than the policy learnt at: per-step actions rescaled", "rate_hz", cfg.Rate,
			"trained_rate_hz", cfg.TrainedRate, "per_step_scale", cfg.StepScale)
	case math.Abs(cfg.Rate-cfg.TrainedRate) > rateMatch*cfg.TrainedRate:
		log.Warn("running at another rate than the policy learnt at, one action per trained step (~rate_mismatch lockstep)",
			"rate_hz", cfg.Rate, "trained_rate_hz", cfg.TrainedRate)
	}
	pre := pol.Spec().Vision.Preprocess
	wh, ww := np.WarmupHeight, np.WarmupWidth
	if wh == 0 || ww == 0 {
		wh, ww = pre.Height, pre.Width
	}
	log.Info("warming up the policy", "policy_sha256", pol.Digest(), "steps", np.WarmupSteps, "frame", fmt.Sprintf("%dx%d", wh, ww), "threads", conf.Threads)
	n.warm, err = Warmup(pol, np.WarmupSteps, wh, ww, cfg.Deadline)
	if err != nil {
		return nil, fmt.Errorf("node %s refuses to start at %g Hz: %w", a.NodeName(), cfg.Rate, err)
	}
	log.Info("warm-up done", "steps", n.warm.Steps, "p50", n.warm.P50.Round(10*time.Microsecond), "p99", n.warm.P99.Round(10*time.Microsecond),
		"max", n.warm.Max.Round(10*time.Microsecond), "deadline", cfg.Deadline)

	in := NewInputs(clock)
	in.SetEnabled(!np.StartDisabled)
	in.SetMaxFramePixels(np.MaxFramePixels)
	if err := in.SetRobot(np.Robot, pol.Proprio(), pol.Spec().Policy.TargetGeometry); err != nil {
		return nil, fmt.Errorf("node %s: %w", a.NodeName(), err)
	}
	proprioTopic := pol.Proprio()
	if fromTree, _ := in.ReadsRobot(); fromTree {
		proprioTopic = nil
	}
	resetWait := max(time.Second, 3*cfg.Period())
	n.io = newROSIO(names, in, pol.ActionSpace(), pol.Spec().Language.Width, proprioTopic, sim, resetWait, log.Named("ros"))
	n.loop, err = NewLoop(pol, cfg, clock, in, n.io, log.Named("loop"))
	if err != nil {
		return nil, err
	}
	inputTypes, err := n.io.inputTypes()
	if err != nil {
		return nil, err
	}
	n.sup, err = ros.NewSupervisor(ctx, ros.SupervisorConf{Args: a, Setup: n.io.setup, Teardown: n.io.teardown,
		Logger: log.Named("supervisor"), PollInterval: conf.PollInterval, Inputs: inputTypes, OnWrongType: n.io.onWrongType})
	if err != nil {
		return nil, err
	}
	ok = true

	lctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.loopDone, n.diagDone, n.done = make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(n.loopDone)
		n.loop.Run(lctx)
	}()
	diag := &diagState{name: a.NodeName() + ": control loop", target: cfg.Rate, trained: cfg.TrainedRate, stepScale: cfg.StepScale, deadline: cfg.Deadline}
	go func() {
		defer close(n.diagDone)
		runDiagnostics(lctx, np.DiagnosticsPeriod, diag, n.loop, n.io)
	}()
	go func() {
		select {
		case <-ctx.Done():
		case <-n.sup.Done():
		}
		n.stopOnce.Do(func() { close(n.done) })
	}()
	readsTree, readsCamera := in.ReadsRobot()
	log.Info("node started", "rate_hz", cfg.Rate, "proprio_from_tf", readsTree, "camera_from_robot", readsCamera, "deadline", cfg.Deadline, "max_image_age", cfg.MaxImageAge,
		"heartbeat_timeout", cfg.HeartbeatTimeout, "max_steps", cfg.MaxSteps, "reset_on_instruction", !cfg.KeepMemoryOnInstruction,
		"use_sim_time", np.UseSimTime, "action", names[ros.TopicAction], "image", names[ros.TopicImage])
	return n, nil
}

// Run starts the node and runs it until ctx ends or the ROS graph shuts it
// down; see Start and Close.
func Run(ctx context.Context, conf Config) error {
	n, err := Start(ctx, conf)
	if err != nil {
		return err
	}
	<-n.Done()
	return n.Close()
}

// waitParams reads the parameters, retrying while the master cannot be
// reached.
func waitParams(ctx context.Context, p *ros.Params, a *ros.Args, log hclog.Logger) (NodeParams, error) {
	delay := ros.DefaultRetryMin
	for attempt := 1; ; attempt++ {
		np, err := ReadNodeParams(ctx, p)
		if err == nil || permanentParamError(err) {
			return np, err
		}
		if ctx.Err() != nil {
			return NodeParams{}, err
		}
		if attempt == 1 {
			log.Warn("waiting for the ROS master to read the parameters", "master", a.MasterURI, "error", err)
		}
		select {
		case <-ctx.Done():
			return NodeParams{}, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, ros.DefaultRetryMax)
	}
}

// Done is closed when the node should stop: the context given to Start
// ended, or the ROS graph shut the node down (rosnode kill, or another node
// took its name).
func (n *Node) Done() <-chan struct{} { return n.done }

// Stats returns the control loop's statistics.
func (n *Node) Stats() Stats { return n.loop.Stats() }

// Loop returns the control loop.
func (n *Node) Loop() *Loop { return n.loop }

// Status returns the supervisor's status (registration, generation).
func (n *Node) Status() ros.SupervisorStatus { return n.sup.Status() }

// Warmup returns what the warm-up measured.
func (n *Node) Warmup() WarmupResult { return n.warm }

// Params returns the parameters the node runs with.
func (n *Node) Params() NodeParams { return n.params }

// Unpublished counts outputs not sent because no ROS node was registered.
func (n *Node) Unpublished() uint64 { return n.io.unpublished.Load() }

// Close stops the loop (publishing one last stop action), the
// diagnostics, the ROS node and the policy. It returns why the supervisor
// stopped if that was an error other than a shutdown by the ROS graph
// (which a ROS node obeys by exiting normally).
func (n *Node) Close() error {
	n.close.Do(func() {
		n.cancel()
		<-n.loopDone
		<-n.diagDone
		n.sup.Close()
		n.stopOnce.Do(func() { close(n.done) })
		if err := n.pol.Close(); err != nil {
			n.closeErr = err
		}
		s := n.loop.Stats()
		n.log.Info("node stopped", "ticks", s.Ticks, "acted", s.Acted, "stopped", s.Stopped,
			"deadline_misses", s.DeadlineMisses, "busy", s.Busy, "skipped_ticks", s.SkippedTicks, "frames_dropped", s.FramesDropped)
		if err := n.sup.Err(); err != nil {
			if errors.Is(err, ros.ErrNodeShutdown) {
				n.log.Info("the ROS graph shut the node down", "reason", err)
			} else {
				n.closeErr = err
			}
		}
	})
	return n.closeErr
}
