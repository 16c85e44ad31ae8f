package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/damage"
	"github.com/ttmrobot/ttm/internal/robot"
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/internal/tf"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/vision"
)

// recordSink keeps every output and status the loop gives it.
type recordSink struct {
	mu       sync.Mutex // mu guards outs, statuses
	outs     []Output
	statuses []string
}

func (s *recordSink) Action(o *Output) {
	c := *o
	c.Action = slices.Clone(o.Action)
	s.mu.Lock()
	s.outs = append(s.outs, c)
	s.mu.Unlock()
}

func (s *recordSink) Status(text string, _ Reason) {
	s.mu.Lock()
	s.statuses = append(s.statuses, text)
	s.mu.Unlock()
}

func (s *recordSink) outputs() []Output {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.outs)
}

func (s *recordSink) last(t *testing.T) Output {
	t.Helper()
	o := s.outputs()
	if len(o) == 0 {
		t.Fatal("nothing published")
	}
	return o[len(o)-1]
}

func (s *recordSink) lastStatus() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.statuses) == 0 {
		return ""
	}
	return s.statuses[len(s.statuses)-1]
}

// harness runs a loop on a manual clock and steps it tick by tick.
type harness struct {
	t      *testing.T
	clock  *ros.ManualClock
	in     *Inputs
	loop   *Loop
	sink   *recordSink
	cancel context.CancelFunc
	done   chan struct{}
	ticks  uint64
	phase  int
}

// newHarness starts a loop of p with cfg on a manual clock; setup, if
// any, configures its inputs before it starts.
func newHarness(t *testing.T, p Stepper, cfg LoopConfig, setup ...func(*Inputs)) *harness {
	t.Helper()
	h := &harness{t: t, clock: ros.NewManualClock(time.Unix(1000, 0)), sink: &recordSink{}, done: make(chan struct{})}
	h.in = NewInputs(h.clock)
	for _, f := range setup {
		f(h.in)
	}
	l, err := NewLoop(p, cfg, h.clock, h.in, h.sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.loop = l
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		defer close(h.done)
		l.Run(ctx)
	}()
	t.Cleanup(h.stop)
	h.waitTicks(1) // the first tick runs at once
	return h
}

func (h *harness) stop() {
	h.cancel()
	<-h.done
}

// waitUntil polls cond (the loop runs on its own goroutine) and fails the
// test with failure's message if it does not hold within 20 s.
func (h *harness) waitUntil(cond func() bool, failure func() string) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatal(failure())
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// waitIdle waits until the loop waits on the clock for the tick at next:
// until the clock moves, nothing more runs.
func (h *harness) waitIdle(next time.Time) {
	h.t.Helper()
	h.waitUntil(func() bool { t, ok := h.clock.Waiting(); return ok && t.Equal(next) }, func() string {
		t, ok := h.clock.Waiting()
		return fmt.Sprintf("the loop does not wait for %v (waits for %v: %v); stats %+v", next, t, ok, h.loop.Stats().Counters)
	})
}

// waitTicks waits until n ticks have completed.
func (h *harness) waitTicks(n uint64) {
	h.t.Helper()
	h.waitUntil(func() bool { return h.loop.Stats().Ticks >= n }, func() string {
		return fmt.Sprintf("tick %d did not complete; stats %+v", n, h.loop.Stats().Counters)
	})
	h.ticks = n
}

// waitPosted waits until the inference goroutine has posted its result.
// A stepper returning is not enough: the next tick would find the
// inference still running if it came before the post.
func (h *harness) waitPosted() {
	h.t.Helper()
	h.waitUntil(func() bool { return len(h.loop.w.done) > 0 }, func() string { return "the inference did not post its result" })
}

// next moves the clock to the next tick and waits for it.
func (h *harness) next() {
	h.t.Helper()
	h.clock.Advance(h.loop.Period())
	h.waitTicks(h.ticks + 1)
}

// frame offers a new 128x160 frame stamped at the clock's time plus age
// offset (negative: older).
func (h *harness) frame(offset time.Duration) {
	h.t.Helper()
	h.phase++
	if err := h.in.PutImage(SyntheticImage(128, 160, h.phase), h.clock.Now().Add(offset)); err != nil {
		h.t.Fatal(err)
	}
}

// actNow offers a fresh frame and runs a tick.
func (h *harness) actNow() Output {
	h.t.Helper()
	h.frame(0)
	h.next()
	return h.sink.last(h.t)
}

func checkFinite(t *testing.T, outs []Output) {
	t.Helper()
	for i, o := range outs {
		for j, v := range o.Action {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("output %d dimension %d is %v", i, j, v)
			}
		}
	}
}

func TestLoopFailsClosedUntilFirstAction(t *testing.T) {
	h := newHarness(t, loadPolicy(t, actingPath(t)), LoopConfig{})
	h.next()
	if n := len(h.sink.outputs()); n != 0 {
		t.Fatalf("%d outputs with no frame and no instruction", n)
	}
	if s := h.sink.lastStatus(); s != "waiting: no camera frame yet" {
		t.Errorf("status %q", s)
	}
	h.frame(0)
	h.next()
	if n := len(h.sink.outputs()); n != 0 {
		t.Fatalf("%d outputs with no instruction", n)
	}
	if s := h.sink.lastStatus(); s != "waiting: no instruction yet" {
		t.Errorf("status %q", s)
	}
	if _, err := h.in.SetInstruction("pick up the coke can"); err != nil {
		t.Fatal(err)
	}
	stamp := h.clock.Now()
	h.frame(0)
	o := h.actNow()
	if !o.Acting || o.Reason != ReasonNone || o.Step != 1 || o.Episode != 1 || o.Done {
		t.Fatalf("first action %+v", o)
	}
	if o.ImageStamp.Sub(stamp) != 0 {
		t.Errorf("acted on the frame stamped %v, want the newest (%v)", o.ImageStamp, stamp)
	}
	checkFinite(t, h.sink.outputs())
	if s := h.sink.lastStatus(); s != "acting" {
		t.Errorf("status %q", s)
	}
	st := h.loop.Stats()
	if st.Silent != 3 || st.Acted != 1 || st.Stopped != 0 {
		t.Errorf("counters %+v: want 3 silent ticks, then one action", st.Counters)
	}
	// Two frames offered before a tick: the older is dropped, the newer used.
	if st.FramesDropped != 1 || st.FramesIn != 3 {
		t.Errorf("frames in %d, dropped %d; want 3 and 1", st.FramesIn, st.FramesDropped)
	}
}

func TestLoopStaleFrames(t *testing.T) {
	h := newHarness(t, loadPolicy(t, modeCheckpoint(t, action.ModeBase)), LoopConfig{MaxImageAge: 300 * time.Millisecond})
	h.in.SetInstruction("move to the table")
	acted := h.actNow()
	if !acted.Acting || acted.Action[action.DimBaseX] == 0 {
		t.Fatalf("want a base action, got %+v", acted)
	}
	h.next() // the frame is 200 ms old (it acted at 100 ms)
	h.next() // 300 ms: still acceptable
	for _, o := range h.sink.outputs() {
		if !o.Acting {
			t.Fatalf("stopped on a frame at most 300 ms old: %+v", o)
		}
	}
	if st := h.loop.Stats(); st.RepeatedFrames != 2 {
		t.Errorf("repeated frames %d, want 2", st.RepeatedFrames)
	}
	last := h.sink.last(t)
	h.next() // 400 ms
	o := h.sink.last(t)
	if o.Acting || o.Reason != ReasonStaleFrame {
		t.Fatalf("a 400 ms old frame: %+v, want the stop action for a stale frame", o)
	}
	// The stop action holds the mode and the gripper and zeroes the rest
	// (no rate limit configured).
	for i, d := range action.RT1().Dims {
		want := float32(0)
		if d.Stop == action.StopHold {
			want = last.Action[i]
		}
		if o.Action[i] != want {
			t.Errorf("stop action %s = %v, want %v", d.Name, o.Action[i], want)
		}
	}
	if s := h.sink.lastStatus(); s != "stopped: camera frame too old" {
		t.Errorf("status %q", s)
	}
	if h.loop.Stats().StaleFrames != 1 {
		t.Errorf("stale frame ticks %d", h.loop.Stats().StaleFrames)
	}

	// An unstamped frame counts from its arrival.
	h.in.PutImage(SyntheticImage(128, 160, 99), time.Time{})
	h.next()
	if o := h.sink.last(t); !o.Acting {
		t.Errorf("unstamped frame that just arrived: %+v", o)
	}
	// A frame stamped in the future beyond the limit is not trusted either.
	h.frame(time.Second)
	h.next()
	if o := h.sink.last(t); o.Acting || o.Reason != ReasonFutureFrame {
		t.Errorf("frame stamped 1 s ahead: %+v, want the stop action for a frame from the future", o)
	}
	if s := h.sink.lastStatus(); !strings.HasPrefix(s, "stopped: camera frame stamped in the future") {
		t.Errorf("status %q for a frame stamped 1 s ahead", s)
	}
	checkFinite(t, h.sink.outputs())
}

func TestLoopRateLimitedStop(t *testing.T) {
	rates := make([]float64, 11)
	for i := range rates {
		rates[i] = 1 // per second: 0.1 per tick at 10 Hz
	}
	h := newHarness(t, loadPolicy(t, modeCheckpoint(t, action.ModeBase)), LoopConfig{Safety: policy.SafetyConfig{MaxRate: rates}})
	h.in.SetInstruction("move to the table")
	for range 3 {
		h.actNow()
	}
	h.in.EStop()
	for range 12 {
		h.frame(0)
		h.next()
	}
	outs := h.sink.outputs()
	for k := 1; k < len(outs); k++ {
		for i, d := range action.RT1().Dims {
			if len(d.Categories) > 0 || i == action.DimGripper && k == 1 {
				continue // categorical; the gripper's first command has no previous one
			}
			if diff := math.Abs(float64(outs[k].Action[i] - outs[k-1].Action[i])); diff > 0.1+1e-6 {
				t.Errorf("output %d: %s moved %.4f in one tick, the limit is 0.1", k, d.Name, diff)
			}
		}
	}
	final := outs[len(outs)-1]
	if final.Acting || final.Reason != ReasonEStop {
		t.Fatalf("last output %+v", final)
	}
	for _, i := range []int{action.DimBaseX, action.DimBaseY, action.DimBaseYaw} {
		if final.Action[i] != 0 {
			t.Errorf("after 1.2 s of stopping at 1/s, %s is still %v", action.RT1().Dims[i].Name, final.Action[i])
		}
	}
}

func TestLoopEStopLatches(t *testing.T) {
	h := newHarness(t, loadPolicy(t, actingPath(t)), LoopConfig{})
	h.in.SetInstruction("pick up the coke can")
	h.actNow()
	h.in.EStop()
	for range 5 {
		if o := h.actNow(); o.Acting || o.Reason != ReasonEStop {
			t.Fatalf("with the e-stop latched and fresh frames: %+v", o)
		}
	}
	if s := h.sink.lastStatus(); !strings.HasPrefix(s, "stopped: e-stop latched") {
		t.Errorf("status %q", s)
	}
	h.in.EStopReset()
	if o := h.actNow(); !o.Acting {
		t.Fatalf("after e_stop_reset: %+v", o)
	}
}

// TestLoopWrongTypeSafetyPublisher: while a safety topic has a publisher
// of another type the loop stops, ahead of every other reason; another
// input's does not stop it.
func TestLoopWrongTypeSafetyPublisher(t *testing.T) {
	h := newHarness(t, loadPolicy(t, actingPath(t)), LoopConfig{})
	h.in.SetInstruction("pick up the coke can")
	h.actNow()
	h.in.SetWrongTypes("/instruction: /x publishes std_msgs/Int32, the node reads std_msgs/String", "")
	if o := h.actNow(); !o.Acting {
		t.Fatalf("a wrong-type instruction publisher stopped the loop: %+v", o)
	}
	h.in.SetWrongTypes("/e_stop: /x publishes std_msgs/Bool, the node reads std_msgs/Empty", "/e_stop: /x publishes std_msgs/Bool, the node reads std_msgs/Empty")
	h.in.EStop()
	for range 3 {
		if o := h.actNow(); o.Acting || o.Reason != ReasonUnreadableSafety {
			t.Fatalf("with a wrong-type e_stop publisher: %+v", o)
		}
	}
	if got := h.in.wrongTypeText(); !strings.Contains(got, "std_msgs/Bool") {
		t.Errorf("wrongTypeText = %q", got)
	}
	h.in.SetWrongTypes("", "")
	if o := h.actNow(); o.Acting || o.Reason != ReasonEStop {
		t.Fatalf("the publisher gone, the e-stop latched: %+v", o)
	}
	if got := h.in.wrongTypeText(); got != "none" {
		t.Errorf("wrongTypeText = %q, want none", got)
	}
	h.in.EStopReset()
	if o := h.actNow(); !o.Acting {
		t.Fatalf("after e_stop_reset: %+v", o)
	}
}

func TestLoopHeartbeatAndEnable(t *testing.T) {
	h := newHarness(t, loadPolicy(t, actingPath(t)), LoopConfig{HeartbeatTimeout: 250 * time.Millisecond})
	h.in.SetInstruction("pick up the coke can")
	h.frame(0)
	h.next()
	if n := len(h.sink.outputs()); n != 0 || h.sink.lastStatus() != "waiting: no heartbeat yet" {
		t.Fatalf("%d outputs and status %q before any heartbeat", n, h.sink.lastStatus())
	}
	h.in.Heartbeat()
	if o := h.actNow(); !o.Acting {
		t.Fatalf("heartbeat 100 ms old: %+v", o)
	}
	h.actNow() // 200 ms
	if o := h.actNow(); o.Acting || o.Reason != ReasonHeartbeat {
		t.Fatalf("heartbeat 300 ms old: %+v", o)
	}
	h.in.Heartbeat()
	h.in.SetEnabled(false)
	if o := h.actNow(); o.Acting || o.Reason != ReasonDisabled {
		t.Fatalf("disabled: %+v", o)
	}
	h.in.Heartbeat()
	h.in.SetEnabled(true)
	if o := h.actNow(); !o.Acting {
		t.Fatalf("enabled again: %+v", o)
	}
}

// gatedStepper is a real policy whose steps can be held at a gate, as a
// loaded CPU would hold them, to make inferences overrun their deadline.
type gatedStepper struct {
	*policy.Policy
	block   atomic.Bool
	entered chan struct{} // a held step reached the gate
	gate    chan struct{} // lets a held step go on
	left    chan struct{} // a held step has finished
}

func newGated(p *policy.Policy) *gatedStepper {
	return &gatedStepper{Policy: p, entered: make(chan struct{}, 1), gate: make(chan struct{}), left: make(chan struct{}, 1)}
}

func (g *gatedStepper) Step(obs *policy.Observation, st *policy.State, a []float32) error {
	if !g.block.Load() {
		return g.Policy.Step(obs, st, a)
	}
	g.entered <- struct{}{}
	<-g.gate
	defer func() { g.left <- struct{}{} }()
	return g.Policy.Step(obs, st, a)
}

// release lets the held step finish and waits until it has.
func (g *gatedStepper) release() {
	g.block.Store(false)
	g.gate <- struct{}{}
	<-g.left
}

func TestLoopDeadlineMiss(t *testing.T) {
	p := loadPolicy(t, actingPath(t))
	g := newGated(p)
	period := 100 * time.Millisecond
	h := newHarness(t, g, LoopConfig{Deadline: period / 2})
	h.in.SetInstruction("pick up the coke can")
	h.actNow() // phase 1
	h.actNow() // phase 2

	g.block.Store(true)
	h.frame(0) // phase 3: its inference will overrun
	h.clock.Advance(period)
	<-g.entered
	sched := h.clock.Now()
	h.clock.Advance(period / 2) // the deadline
	h.waitTicks(h.ticks + 1)
	o := h.sink.last(t)
	if o.Acting || o.Reason != ReasonDeadline || !o.Time.Equal(sched.Add(period/2)) {
		t.Fatalf("missed deadline: %+v, want the stop action at the deadline %v", o, sched.Add(period/2))
	}
	g.release() // the late inference finishes; its result must be thrown away
	h.waitPosted()

	h.frame(0) // phase 4
	h.clock.Advance(period / 2)
	h.waitTicks(h.ticks + 1)
	if o := h.sink.last(t); !o.Acting || o.Step != 3 {
		t.Fatalf("tick after the late result: %+v, want the third action", o)
	}
	h.stop()
	st := h.loop.Stats()
	if st.DeadlineMisses != 1 || st.LateDiscarded != 1 || st.Acted != 3 || st.Stopped != 1 {
		t.Errorf("counters %+v", st.Counters)
	}
	if n := st.Stages[StageInference].Count; n != 4 {
		t.Errorf("%d inference times recorded, want 4 (the late one too)", n)
	}
	// The memory holds exactly the steps whose actions were published:
	// frames 1, 2 and 4, not 3.
	ref := p.NewState()
	act := make([]float32, 11)
	for _, phase := range []int{1, 2, 4} {
		f, _ := vision.DecodeImage(SyntheticImage(128, 160, phase))
		if err := p.Step(&policy.Observation{Frame: f, Instruction: "pick up the coke can"}, ref, act); err != nil {
			t.Fatal(err)
		}
	}
	if h.loop.state.Steps != 3 || h.loop.state.Hash() != ref.Hash() {
		t.Errorf("loop memory after the late result: %d steps, hash %x; want 3 steps, hash %x", h.loop.state.Steps, h.loop.state.Hash(), ref.Hash())
	}
	checkFinite(t, h.sink.outputs())
}

// With the deadline at the period, a missed deadline coincides with the
// next tick, which finds the inference still running: both publish the
// stop action, one per tick.
func TestLoopBusyAfterMiss(t *testing.T) {
	p := loadPolicy(t, actingPath(t))
	g := newGated(p)
	h := newHarness(t, g, LoopConfig{})
	h.in.SetInstruction("pick up the coke can")
	h.actNow()
	g.block.Store(true)
	h.frame(0)
	h.clock.Advance(h.loop.Period())
	<-g.entered
	h.frame(0)
	h.clock.Advance(h.loop.Period())
	h.waitTicks(h.ticks + 2)
	outs := h.sink.outputs()
	if len(outs) != 3 || outs[1].Reason != ReasonDeadline || outs[2].Reason != ReasonBusy {
		t.Fatalf("outputs %+v: want the action, then a deadline stop and a busy stop", outs)
	}
	g.release()
	h.waitPosted()
	if o := h.actNow(); !o.Acting || o.Step != 2 {
		t.Fatalf("after the overrun: %+v", o)
	}
	if st := h.loop.Stats(); st.DeadlineMisses != 1 || st.Busy != 1 || st.LateDiscarded != 1 {
		t.Errorf("counters %+v", st.Counters)
	}
}

func TestLoopSkipsLateTicks(t *testing.T) {
	h := newHarness(t, loadPolicy(t, actingPath(t)), LoopConfig{})
	first, period := h.clock.Now(), h.loop.Period()
	h.clock.Advance(5*period + period/2)
	h.waitTicks(2)
	h.waitIdle(first.Add(6 * period)) // nothing else runs: the clock stands still
	if st := h.loop.Stats(); st.Ticks != 2 || st.SkippedTicks != 4 {
		t.Fatalf("after waking 5.5 periods late: %d ticks, %d skipped; want 2 and 4", st.Ticks, st.SkippedTicks)
	}
	// The schedule keeps its phase: the next tick is 6 periods after the first.
	h.clock.Advance(h.loop.Period() / 2)
	h.waitTicks(3)
}

// A clock that goes backwards (ROS time restarting, a looping bag) restarts
// the schedule from its new reading instead of waiting for the old one.
func TestLoopClockJumpsBack(t *testing.T) {
	h := newHarness(t, loadPolicy(t, actingPath(t)), LoopConfig{})
	h.in.SetInstruction("pick up the coke can")
	h.actNow()
	h.clock.Advance(-time.Hour)
	h.waitTicks(h.ticks + 1)
	if o := h.actNow(); !o.Acting || o.Step != 2 || !o.Time.Equal(h.clock.Now()) {
		t.Fatalf("after the jump: %+v at %v", o, h.clock.Now())
	}
	if st := h.loop.Stats(); st.SkippedTicks != 0 || st.Ticks != h.ticks {
		t.Errorf("counters %+v", st.Counters)
	}
}

func TestLoopEpisodes(t *testing.T) {
	h := newHarness(t, loadPolicy(t, actingPath(t)), LoopConfig{MaxSteps: 3})
	h.in.SetInstruction("pick up the coke can")
	for want := 1; want <= 2; want++ {
		if o := h.actNow(); o.Step != want || o.Episode != 1 || o.Done {
			t.Fatalf("step %d: %+v", want, o)
		}
	}
	h.in.SetInstruction("pick up the coke can") // repeated: same episode
	if o := h.actNow(); o.Step != 3 || o.Episode != 1 || !o.Done || !o.Acting {
		t.Fatalf("step 3 of at most 3: %+v", o)
	}
	if o := h.actNow(); o.Acting || o.Reason != ReasonEpisodeDone || !o.Done {
		t.Fatalf("after max_steps: %+v", o)
	}
	h.in.SetInstruction("open the drawer")
	if o := h.actNow(); !o.Acting || o.Episode != 2 || o.Step != 1 || o.Done {
		t.Fatalf("new instruction: %+v", o)
	}
	if h.loop.state.Steps != 1 {
		t.Errorf("policy state has %d steps after a new instruction, want 1", h.loop.state.Steps)
	}
	n := h.in.RequestReset()
	h.frame(0)
	h.next()
	if !h.in.ResetApplied(n) {
		t.Fatal("reset not applied")
	}
	if o := h.sink.last(t); o.Episode != 3 || o.Step != 1 {
		t.Fatalf("after reset_memory: %+v", o)
	}
	if text, named := h.in.EpisodeInstruction(); !named || text != "open the drawer" {
		t.Errorf("episode 3 started with instruction %q (named %v), want %q", text, named, "open the drawer")
	}
	// An upstream embedding is a new instruction too.
	h.in.SetEmbedding(make([]float32, 64))
	if o := h.actNow(); o.Episode != 4 || o.Step != 1 || !o.Acting {
		t.Fatalf("after an embedding: %+v", o)
	}
	if text, named := h.in.EpisodeInstruction(); named {
		t.Errorf("episode 4 started with an embedding, but EpisodeInstruction names %q", text)
	}
	if st := h.loop.Stats(); st.Episodes != 4 || st.EpisodesDone != 1 {
		t.Errorf("episodes %d, done %d", st.Episodes, st.EpisodesDone)
	}
}

func TestLoopKeepsMemoryOnInstruction(t *testing.T) {
	h := newHarness(t, loadPolicy(t, actingPath(t)), LoopConfig{KeepMemoryOnInstruction: true})
	h.in.SetInstruction("pick up the coke can")
	h.actNow()
	h.in.SetInstruction("open the drawer")
	if o := h.actNow(); o.Episode != 1 || o.Step != 2 {
		t.Fatalf("with reset_on_instruction false: %+v", o)
	}
}

func TestLoopModes(t *testing.T) {
	arm := []int{action.DimWorldX, action.DimWorldY, action.DimWorldZ, action.DimRoll, action.DimPitch, action.DimYaw}
	base := []int{action.DimBaseYaw, action.DimBaseX, action.DimBaseY}
	for _, tc := range []struct {
		mode       int
		zero, live []int
		done       bool
	}{
		{action.ModeTerminate, append(slices.Clone(arm), base...), nil, true},
		{action.ModeArm, base, arm, false},
		{action.ModeBase, arm, base, false},
	} {
		t.Run(action.RT1().Dims[action.DimMode].Categories[tc.mode], func(t *testing.T) {
			h := newHarness(t, loadPolicy(t, modeCheckpoint(t, tc.mode)), LoopConfig{})
			h.in.SetInstruction("pick up the coke can")
			o := h.actNow()
			if !o.Acting || int(o.Action[action.DimMode]) != tc.mode || o.Done != tc.done {
				t.Fatalf("output %+v", o)
			}
			for _, i := range tc.zero {
				if o.Action[i] != 0 {
					t.Errorf("%s = %v, want 0 in this mode", action.RT1().Dims[i].Name, o.Action[i])
				}
			}
			for _, i := range tc.live {
				if o.Action[i] == 0 { // 0 is not a bin value of [-1, 1] or [-π, π] in 256 bins
					t.Errorf("%s = 0, want the policy's value", action.RT1().Dims[i].Name)
				}
			}
			if tc.done {
				if o := h.actNow(); o.Acting || o.Reason != ReasonEpisodeDone || !o.Done {
					t.Errorf("after terminate: %+v", o)
				}
			}
		})
	}
}

// switchStepper runs one of two real policies of the same architecture.
type switchStepper struct {
	good, bad *policy.Policy
	useBad    atomic.Bool
}

func (s *switchStepper) Step(obs *policy.Observation, st *policy.State, a []float32) error {
	if s.useBad.Load() {
		return s.bad.Step(obs, st, a)
	}
	return s.good.Step(obs, st, a)
}
func (s *switchStepper) NewState() *policy.State   { return s.good.NewState() }
func (s *switchStepper) ActionSpace() action.Space { return s.good.ActionSpace() }
func (s *switchStepper) Proprio() []string         { return s.good.Proprio() }

func TestLoopNonFiniteModelOutput(t *testing.T) {
	s := &switchStepper{good: loadPolicy(t, actingPath(t)), bad: overflowPolicy(t)}
	f, _ := vision.DecodeImage(SyntheticImage(128, 160, 1))
	if err := s.bad.Step(&policy.Observation{Frame: f, Instruction: "x"}, s.bad.NewState(), make([]float32, 11)); !errors.Is(err, policy.ErrNonFinite) {
		t.Fatalf("the overflowing policy's Step = %v, want ErrNonFinite", err)
	}
	h := newHarness(t, s, LoopConfig{})
	h.in.SetInstruction("pick up the coke can")
	h.actNow()
	h.actNow()
	s.useBad.Store(true)
	for range 3 {
		if o := h.actNow(); o.Acting || o.Reason != ReasonPolicyError {
			t.Fatalf("non-finite model output: %+v", o)
		}
	}
	s.useBad.Store(false)
	if o := h.actNow(); !o.Acting || o.Step != 3 {
		t.Fatalf("recovered: %+v, want step 3 (failed steps do not count)", o)
	}
	checkFinite(t, h.sink.outputs())
	if st := h.loop.Stats(); st.PolicyErrors != 3 {
		t.Errorf("policy errors %d", st.PolicyErrors)
	}
}

func TestLoopCompressedFrames(t *testing.T) {
	h := newHarness(t, loadPolicy(t, actingPath(t)), LoopConfig{})
	h.in.SetInstruction("pick up the coke can")
	img := image.NewRGBA(image.Rect(0, 0, 160, 128))
	for y := range 128 {
		for x := range 160 {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 90, 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	if err := h.in.PutCompressed(&vision.CompressedImage{Format: "jpeg", Data: buf.Bytes()}, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	h.next()
	if o := h.sink.last(t); !o.Acting {
		t.Fatalf("JPEG frame: %+v", o)
	}
	if q := h.loop.Stats().Stages[StageDecode]; q.Count != 1 || q.Max <= 0 {
		t.Errorf("decode stage %+v, want one timed decode", q)
	}
	truncated := buf.Bytes()[:buf.Len()/2]
	if err := h.in.PutCompressed(&vision.CompressedImage{Format: "jpeg", Data: truncated}, h.clock.Now()); err == nil {
		t.Error("a truncated JPEG was accepted")
	}
	if err := h.in.PutImage(&vision.Image{Height: 2, Width: 2, Encoding: "16UC1", Step: 4, Data: make([]byte, 8)}, time.Time{}); !errors.Is(err, vision.ErrDepthImage) {
		t.Errorf("depth image: %v", err)
	}
	if st := h.loop.Stats(); st.FramesBad != 2 {
		t.Errorf("refused frames %d, want 2", st.FramesBad)
	}

	// Scan data cut to a tenth, the end marker kept: the header passes,
	// libjpeg warns while decoding. Refused once, not decoded again.
	cut := damage.CutScan(buf.Bytes(), 10)
	if err := h.in.PutCompressed(&vision.CompressedImage{Format: "jpeg", Data: cut}, h.clock.Now()); err != nil {
		t.Fatalf("the cut JPEG's header: %v", err)
	}
	for range 3 {
		h.next()
		if o := h.sink.last(t); o.Acting || o.Reason != ReasonBadFrame {
			t.Fatalf("a JPEG cut short: %+v", o)
		}
	}
	if st := h.loop.Stats(); st.FramesBad != 3 || st.Stages[StageDecode].Count != 2 {
		t.Errorf("refused frames %d, decodes %d; want 3 and 2", st.FramesBad, st.Stages[StageDecode].Count)
	}
	h.frame(0)
	h.next()
	if o := h.sink.last(t); !o.Acting {
		t.Fatalf("a good raw frame after the bad one: %+v", o)
	}
}

// TestLoopConvertedFrames: yuv422 and Bayer frames are checked on arrival
// and converted on the inference goroutine (a decode stage each), and the
// policy sees the pixels vision.DecodeImage gives: the loop's memory is the
// reference's, stepped on those frames.
func TestLoopConvertedFrames(t *testing.T) {
	p := loadPolicy(t, actingPath(t))
	h := newHarness(t, p, LoopConfig{})
	h.in.SetInstruction("pick up the coke can")
	const w, ht = 160, 128
	pattern := func(n, seed int) []byte {
		d := make([]byte, n)
		for i := range d {
			d[i] = byte(i*seed + i/w)
		}
		return d
	}
	msgs := []*vision.Image{
		{Width: w, Height: ht, Encoding: "yuv422", Step: 2 * w, Data: pattern(2*w*ht, 7)},
		{Width: w, Height: ht, Encoding: "bayer_grbg8", Step: w + 4, Data: pattern((w+4)*ht, 13)},
	}
	ref := p.NewState()
	act := make([]float32, 11)
	for i, m := range msgs {
		if err := h.in.PutImage(m, h.clock.Now()); err != nil {
			t.Fatalf("%s: %v", m.Encoding, err)
		}
		h.next()
		if o := h.sink.last(t); !o.Acting {
			t.Fatalf("%s frame: %+v", m.Encoding, o)
		}
		if n := h.loop.Stats().Stages[StageDecode].Count; n != uint64(i+1) {
			t.Errorf("after the %s frame, %d timed decodes; want %d", m.Encoding, n, i+1)
		}
		f, err := vision.DecodeImage(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Step(&policy.Observation{Frame: f, Instruction: "pick up the coke can"}, ref, act); err != nil {
			t.Fatal(err)
		}
	}
	if h.loop.state.Hash() != ref.Hash() {
		t.Errorf("loop memory %x after a yuv422 and a Bayer frame, want %x", h.loop.state.Hash(), ref.Hash())
	}
	odd := &vision.Image{Width: 5, Height: 2, Encoding: "yuv422", Step: 10, Data: make([]byte, 20)}
	if err := h.in.PutImage(odd, time.Time{}); !errors.Is(err, vision.ErrBadSize) {
		t.Errorf("odd-width yuv422 frame: %v", err)
	}
	if st := h.loop.Stats(); st.FramesBad != 1 {
		t.Errorf("refused frames %d, want 1", st.FramesBad)
	}
}

// TestInputsMaxFramePixels: frames over ~max_frame_pixels are refused from
// their header, raw or compressed, and counted; a frame at the bound is
// taken. The PNG is 8192x2048 zeros: a few KB that would take tens of
// milliseconds to decode.
func TestInputsMaxFramePixels(t *testing.T) {
	var bomb bytes.Buffer
	if err := png.Encode(&bomb, image.NewGray(image.Rect(0, 0, 8192, 2048))); err != nil {
		t.Fatal(err)
	}
	raw := func(w, h int) *vision.Image {
		return &vision.Image{Width: uint32(w), Height: uint32(h), Encoding: "mono8", Step: uint32(w), Data: make([]byte, w*h)}
	}
	yuv := func(w, h int) *vision.Image {
		return &vision.Image{Width: uint32(w), Height: uint32(h), Encoding: "yuv422", Step: uint32(2 * w), Data: make([]byte, 2*w*h)}
	}
	bayer := func(w, h int) *vision.Image {
		return &vision.Image{Width: uint32(w), Height: uint32(h), Encoding: "bayer_rggb8", Step: uint32(w), Data: make([]byte, w*h)}
	}
	in := NewInputs(&ros.WallClock{})
	in.SetMaxFramePixels(1 << 20)
	for _, c := range []struct {
		name string
		put  func() error
		ok   bool
	}{
		{"raw at the bound", func() error { return in.PutImage(raw(1024, 1024), time.Time{}) }, true},
		{"raw one row over", func() error { return in.PutImage(raw(1024, 1025), time.Time{}) }, false},
		{"yuv422 at the bound", func() error { return in.PutImage(yuv(1024, 1024), time.Time{}) }, true},
		{"yuv422 one row over", func() error { return in.PutImage(yuv(1024, 1025), time.Time{}) }, false},
		{"bayer one row over", func() error { return in.PutImage(bayer(1024, 1025), time.Time{}) }, false},
		{"png bomb", func() error {
			return in.PutCompressed(&vision.CompressedImage{Format: "png", Data: bomb.Bytes()}, time.Time{})
		}, false},
	} {
		err := c.put()
		if c.ok != (err == nil) {
			t.Errorf("%s: %v", c.name, err)
		}
		if !c.ok && (!errors.Is(err, vision.ErrBadSize) || !strings.Contains(err.Error(), "~max_frame_pixels 1048576")) {
			t.Errorf("%s: %v, want the bound named", c.name, err)
		}
	}
	if got := in.framesBad.Load(); got != 4 {
		t.Errorf("%d frames refused, want 4", got)
	}
	if bomb.Len() > 64<<10 {
		t.Errorf("the bomb is %d bytes", bomb.Len())
	}
}

// allocSink publishes nothing and allocates nothing.
type allocSink struct{ n int }

func (s *allocSink) Action(*Output)        { s.n++ }
func (s *allocSink) Status(string, Reason) {}

// The control step allocates nothing in steady state: the tick, the
// inference goroutine (policy step), the filter and the statistics; also
// for a policy that reads proprioception, and for one that also places its
// target and regresses its arm (RT-1's layout, another head).
func TestLoopTickAllocatesNothing(t *testing.T) {
	rgb := SyntheticImage(128, 160, 1)
	yuv := &vision.Image{Height: 128, Width: 160, Encoding: "yuv422", Step: 320, Data: rgb.Data[:320*128]} // UYVY, converted by the worker
	for _, tc := range []struct {
		name  string
		path  string
		robot bool // proprioception and camera from the robot's tree, joints and camera_info
		frame *vision.Image
	}{
		{"plain", actingPath(t), false, rgb},
		{"proprio topic", proprioPath(t), false, rgb},
		{"target geometry", targetPath(t), false, rgb},
		{"robot's tree and camera", targetPath(t), true, rgb},
		{"yuv422 frames", actingPath(t), false, yuv},
	} {
		t.Run(tc.name, func(t *testing.T) { testLoopTickAllocatesNothing(t, tc.path, tc.robot, tc.frame) })
	}
}

func testLoopTickAllocatesNothing(t *testing.T, path string, fromRobot bool, frame *vision.Image) {
	p := loadPolicy(t, path)
	clock := &ros.WallClock{} // a manual clock allocates a channel per move
	in := NewInputs(clock)
	sink := &allocSink{}
	l, err := NewLoop(p, LoopConfig{Rate: 1, MaxImageAge: time.Hour, MaxProprioAge: time.Hour}, clock, in, sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Now()
	switch names := p.Proprio(); {
	case fromRobot:
		if err := in.SetRobot(RobotConfig{}, names, p.Spec().Policy.TargetGeometry); err != nil {
			t.Fatal(err)
		}
		g := p.Spec().Policy.TargetGeometry
		for _, e := range []struct {
			parent, child string
			at            time.Time
			t             tf.Transform
		}{
			{robot.FrameBase, robot.FrameArmMount, time.Time{}, tf.Transform{Translation: [3]float64{0, -0.25, 1.15}, Rotation: tf.Identity().Rotation}},
			{robot.FrameArmMount, robot.FrameHand, now, tf.Transform{Translation: [3]float64{0.5, 0.2, -0.3}, Rotation: tf.Identity().Rotation}},
			{robot.FrameBase, robot.FrameCamera, time.Time{}, tf.Transform{Translation: g.Mount, Rotation: tf.FromRPY(0, g.Pitch, 0)}},
			{robot.FrameCamera, robot.FrameCameraOptical, time.Time{}, tf.Transform{Rotation: tf.FromRPY(-math.Pi/2, 0, -math.Pi/2)}},
		} {
			if _, err := in.PutTransform(e.parent, e.child, e.at, e.t, e.at.IsZero()); err != nil {
				t.Fatal(err)
			}
		}
		f := float64(g.Height) / 2 / math.Tan(g.VFOV/2)
		k := [9]float64{f, 0, float64(g.Width-1) / 2, 0, f, float64(g.Height-1) / 2, 0, 0, 1}
		if err := in.PutCameraInfo(robot.FrameCameraOptical, uint32(g.Height), uint32(g.Width), k, nil, now); err != nil {
			t.Fatal(err)
		}
		if err := in.PutJointState([]string{robot.JointGripper}, []float64{0.02}, now); err != nil {
			t.Fatal(err)
		}
	case names != nil:
		if err := in.PutProprio([]float32{0.3, 0, 1, 0}, "", names); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.w.run(ctx)
	defer func() { cancel(); <-l.w.exited }()
	in.SetInstruction("pick up the coke can")
	if err := in.PutImage(frame, now); err != nil {
		t.Fatal(err)
	}
	tick := func() { l.tick(ctx, clock.Now()) }
	for range 3 {
		tick() // first steps: the language cache, the filter's first action
	}
	allocs := testing.AllocsPerRun(20, tick)
	if allocs != 0 {
		t.Errorf("a tick allocates %v times", allocs)
	}
	if sink.n != 24 || l.cnt.Acted != 24 {
		t.Errorf("published %d, acted %d; want 24 (reason %v, %v)", sink.n, l.cnt.Acted, l.reason, l.detail)
	}
	if allocs := testing.AllocsPerRun(10, func() { _ = l.Stats() }); allocs != 0 {
		t.Errorf("Stats allocates %v times", allocs)
	}
}

func TestNewLoopRejects(t *testing.T) {
	p := loadPolicy(t, actingPath(t))
	clock := ros.NewManualClock(time.Unix(0, 0))
	for _, tc := range []struct {
		cfg     LoopConfig
		wantErr string
	}{
		{LoopConfig{Rate: -1}, "rate -1 Hz"},
		{LoopConfig{Rate: math.Inf(1)}, "rate +Inf Hz"},
		{LoopConfig{MaxImageAge: -time.Second}, "max_image_age"},
		{LoopConfig{MaxProprioAge: -time.Second}, "max_proprio_age"},
		{LoopConfig{HeartbeatTimeout: -1}, "heartbeat_timeout"},
		{LoopConfig{MaxSteps: -3}, "max_steps -3"},
		{LoopConfig{Safety: policy.SafetyConfig{MaxRate: []float64{1, 2}}}, "max_rate has 2 entries"},
	} {
		if _, err := NewLoop(p, tc.cfg, clock, NewInputs(clock), &allocSink{}, nil); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("NewLoop(%+v) = %v, want %q", tc.cfg, err, tc.wantErr)
		}
	}
	l, err := NewLoop(p, LoopConfig{Rate: 20, Deadline: time.Second}, clock, NewInputs(clock), &allocSink{}, nil)
	if err != nil || l.Config().Deadline != 50*time.Millisecond || l.Config().MaxImageAge != DefaultMaxImageAge {
		t.Errorf("defaults: %+v, %v; want the deadline cut to the 50 ms period", l.Config(), err)
	}
}

func TestWarmup(t *testing.T) {
	p := loadPolicy(t, actingPath(t))
	r, err := Warmup(p, MinWarmupSteps, 128, 160, time.Hour)
	if err != nil || r.Steps != MinWarmupSteps || r.P50 <= 0 || r.P99 < r.P50 || r.Max < r.P99 {
		t.Fatalf("Warmup = %+v, %v", r, err)
	}
	_, err = Warmup(p, MinWarmupSteps, 128, 160, time.Microsecond)
	if err == nil || !strings.Contains(err.Error(), "p99 step latency") || !strings.Contains(err.Error(), "1µs deadline") {
		t.Fatalf("a warm-up slower than its budget: %v", err)
	}
	// With fewer steps the nearest-rank p99 is the slowest step: one slow
	// step of a busy machine would refuse the start.
	for _, steps := range []int{0, 20, MinWarmupSteps - 1} {
		if _, err := Warmup(p, steps, 128, 160, time.Hour); err == nil || !strings.Contains(err.Error(), "a p99 needs at least 100") {
			t.Errorf("%d warm-up steps: %v, want them refused", steps, err)
		}
	}
	// And with MinWarmupSteps it is not: 1..100 ms gives 99 ms.
	times := make([]time.Duration, MinWarmupSteps)
	for i := range times {
		times[i] = time.Duration(i+1) * time.Millisecond
	}
	if got := nearestRank(times, 0.99); got != 99*time.Millisecond {
		t.Errorf("p99 of 1..%d ms is %v, want 99ms", MinWarmupSteps, got)
	}
}

// TestLoopProprio: a policy that reads proprioception does not act before a
// reading has come, nor on one older than max_proprio_age; bad readings
// are refused, counted, and leave the last good one in place.
func TestLoopProprio(t *testing.T) {
	p := loadPolicy(t, proprioPath(t))
	names := p.Proprio()
	h := newHarness(t, p, LoopConfig{MaxProprioAge: 300 * time.Millisecond, MaxImageAge: time.Hour})
	h.in.SetInstruction("pick up the coke can")
	h.frame(0)
	h.next()
	if n := len(h.sink.outputs()); n != 0 {
		t.Fatalf("%d outputs without proprioception", n)
	}
	if s := h.sink.lastStatus(); s != "waiting: no proprioception yet" {
		t.Errorf("status %q", s)
	}
	for _, tc := range []struct {
		name   string
		values []float32
		label  string
		want   string
	}{
		{"short", []float32{0.3, 0, 1}, "", "3 values, the policy reads 4"},
		{"label", []float32{0.3, 0, 1, 0}, "x;y;z;g", `labelled "x;y;z;g"`},
		{"NaN", []float32{0.3, float32(math.NaN()), 1, 0}, "hand_x;hand_y;hand_z;gripper", "hand_y is NaN"},
		{"Inf", []float32{0.3, 0, 1, float32(math.Inf(1))}, "", "gripper is +Inf"},
		{"absurd hand", []float32{1e30, 0, 1, 0}, "", "hand_x is 1e+30, outside its range -2..2"},
		{"gripper over closed", []float32{0.3, 0, 1, 5}, "", "gripper is 5, outside its range -0.1..1.1"},
	} {
		if err := h.in.PutProprio(tc.values, tc.label, names); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s reading: %v, want %q", tc.name, err, tc.want)
		}
	}
	h.frame(0)
	h.next()
	if n := len(h.sink.outputs()); n != 0 || h.loop.Stats().ProprioBad != 6 {
		t.Fatalf("%d outputs after bad readings only, %d refused", n, h.loop.Stats().ProprioBad)
	}
	good := []float32{0.3, -0.1, 1.0, 0}
	if err := h.in.PutProprio(good, "hand_x;hand_y;hand_z;gripper", names); err != nil {
		t.Fatal(err)
	}
	if o := h.actNow(); !o.Acting || o.Reason != ReasonNone {
		t.Fatalf("with a reading: %+v", o)
	}
	// A bad reading does not replace the good one.
	h.in.PutProprio([]float32{1, 2}, "", names)
	got := make([]float32, 4)
	h.in.copyProprio(got)
	if !slices.Equal(got, good) {
		t.Errorf("reading %v after a refused one, want %v", got, good)
	}
	// Fresh frames, no new reading: it acts until the reading is 300 ms
	// old (the tick above acted on it at 100 ms), then stops.
	h.actNow()                      // 200 ms
	if o := h.actNow(); !o.Acting { // 300 ms
		t.Fatalf("a reading 300 ms old: %+v", o)
	}
	if o := h.actNow(); o.Acting || o.Reason != ReasonStaleProprio { // 400 ms
		t.Fatalf("a reading 400 ms old: %+v, want the stop action for stale proprioception", o)
	}
	if s := h.sink.lastStatus(); s != "stopped: proprioception too old" {
		t.Errorf("status %q", s)
	}
	if err := h.in.PutProprio(good, "", names); err != nil {
		t.Fatal(err)
	}
	if o := h.actNow(); !o.Acting {
		t.Fatalf("a fresh reading again: %+v", o)
	}
	st := h.loop.Stats()
	if st.StaleProprio != 1 || st.ProprioIn != 2 || st.ProprioBad != 7 {
		t.Errorf("stale proprioception ticks %d, readings in %d, refused %d; want 1, 2, 7", st.StaleProprio, st.ProprioIn, st.ProprioBad)
	}
	checkFinite(t, h.sink.outputs())
}

// FuzzCheckProprio: any reading is either refused with an error or has
// one finite value per name within its range and, if labelled, the
// policy's label.
func FuzzCheckProprio(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0}, "hand_x;hand_y;hand_z;gripper")
	f.Add([]byte{1, 2, 3}, "")
	f.Fuzz(func(t *testing.T, raw []byte, label string) {
		values := make([]float32, len(raw)/4)
		for i := range values {
			values[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		err := CheckProprio(values, label, action.ArmProprio)
		ok := len(values) == 4 && (label == "" || label == "hand_x;hand_y;hand_z;gripper")
		for i, v := range values {
			lo, hi, _ := action.ProprioRange(action.ArmProprio[min(i, 3)])
			ok = ok && v >= lo && v <= hi // false for NaN and the infinities too
		}
		if (err == nil) != ok {
			t.Fatalf("CheckProprio(%v, %q) = %v", values, label, err)
		}
	})
}
