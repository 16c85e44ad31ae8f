package ros

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the time the control loop runs on: the wall clock, ROS time
// (which follows /clock when /use_sim_time is set), or a manual clock that
// tests step forward.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// WaitUntil blocks until the clock reads t or later (Reached), until
	// wake receives (Woken), until the clock moves backwards (Jumped: ROS
	// time restarting, a looping bag) or until ctx ends (Cancelled). wake
	// may be nil. Only one goroutine may wait on a clock at a time.
	WaitUntil(ctx context.Context, t time.Time, wake <-chan struct{}) WaitResult
}

// WaitResult says why Clock.WaitUntil returned.
type WaitResult int

// The outcomes of Clock.WaitUntil.
const (
	Reached WaitResult = iota
	Woken
	Jumped
	Cancelled
)

// WallClock is the system clock. Its WaitUntil reuses one timer and
// allocates nothing; it is for one waiting goroutine.
type WallClock struct {
	timer *time.Timer
}

// Now returns time.Now().
func (c *WallClock) Now() time.Time { return time.Now() }

// WaitUntil implements Clock.
func (c *WallClock) WaitUntil(ctx context.Context, t time.Time, wake <-chan struct{}) WaitResult {
	d := time.Until(t)
	if d <= 0 {
		return Reached
	}
	if c.timer == nil {
		c.timer = time.NewTimer(d)
	} else {
		c.timer.Reset(d) // Go 1.23+: Reset drains a stopped or fired timer
	}
	defer c.timer.Stop()
	select {
	case <-c.timer.C:
		return Reached
	case <-wake:
		return Woken
	case <-ctx.Done():
		return Cancelled
	}
}

// ManualClock is a clock that only moves when told to (Set, Advance): tests
// step the control loop tick by tick with it, faster than real time and
// without sleeping.
type ManualClock struct {
	mu      sync.Mutex // mu guards now, changed and waitFor
	now     time.Time
	changed chan struct{} // closed and replaced whenever now moves
	waitFor time.Time     // what a blocked WaitUntil waits for; zero: none
}

// NewManualClock returns a clock reading start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start, changed: make(chan struct{})}
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t (backwards too) and wakes waiters.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Waiting returns the time a WaitUntil blocked on the clock waits for, or
// false when none is blocked: a test learns that the loop has finished its
// tick and stays idle until the clock reaches that time.
func (c *ManualClock) Waiting() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waitFor, !c.waitFor.IsZero()
}

// WaitUntil implements Clock.
func (c *ManualClock) WaitUntil(ctx context.Context, t time.Time, wake <-chan struct{}) WaitResult {
	start := c.Now()
	defer func() {
		c.mu.Lock()
		c.waitFor = time.Time{}
		c.mu.Unlock()
	}()
	for {
		c.mu.Lock()
		now, changed := c.now, c.changed
		blocked := !now.Before(start) && now.Before(t)
		if blocked {
			c.waitFor = t
		}
		c.mu.Unlock()
		if now.Before(start) {
			return Jumped
		}
		if !now.Before(t) {
			return Reached
		}
		select {
		case <-changed:
		case <-wake:
			return Woken
		case <-ctx.Done():
			return Cancelled
		}
	}
}

// simClockPoll is how often SimClock looks at ROS time while waiting.
const simClockPoll = time.Millisecond

// SimClock is ROS time with /use_sim_time set: the time of the last /clock
// message, as the current goroslib node received it. goroslib subscribes
// /clock itself (a node may subscribe a topic once), so the clock reads the
// node's TimeNow; the supervisor swaps the node when it re-creates it.
// While there is no node, or the new node has not received /clock yet
// (goroslib then reads the Unix epoch), the last time seen is kept: ROS
// time does not jump back to zero across a master restart.
type SimClock struct {
	node atomic.Pointer[Node]
	last atomic.Int64 // Unix nanoseconds of the last valid reading
	tick *time.Ticker
}

// NewSimClock returns ROS time with no node yet: it reads the Unix epoch
// until SetNode gives it one that has received /clock.
func NewSimClock() *SimClock { return &SimClock{} }

// SetNode makes the clock read n's ROS time; nil while there is no node.
// Call it from Setup and Teardown.
func (c *SimClock) SetNode(n *Node) { c.node.Store(n) }

// Now returns the current ROS time.
func (c *SimClock) Now() time.Time {
	if n := c.node.Load(); n != nil {
		if t := n.TimeNow(); t.UnixNano() > 0 {
			c.last.Store(t.UnixNano())
			return t
		}
	}
	return time.Unix(0, c.last.Load())
}

// WaitUntil polls ROS time every millisecond of wall time: /clock messages
// arrive on goroslib's goroutines, and a node swap would orphan a sleep
// registered with the old node.
func (c *SimClock) WaitUntil(ctx context.Context, t time.Time, wake <-chan struct{}) WaitResult {
	if c.tick == nil {
		c.tick = time.NewTicker(simClockPoll)
	} else {
		c.tick.Reset(simClockPoll)
	}
	defer c.tick.Stop()
	start := c.Now()
	for {
		now := c.Now()
		if now.Before(start) {
			return Jumped
		}
		if !now.Before(t) {
			return Reached
		}
		select {
		case <-c.tick.C:
		case <-wake:
			return Woken
		case <-ctx.Done():
			return Cancelled
		}
	}
}
