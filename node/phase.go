package node

import "time"

// A free-running camera and a fixed-rate loop drift in and out of phase: a
// tick that comes just before a frame arrives acts on the previous one, a
// whole camera period old. With LoopConfig.FollowCamera the loop locks its
// phase to the camera's instead: each tick moves by at most
// phaseStepShare of the period towards phaseMargin after a frame's
// arrival. The rate stays the configured one within that share at every
// tick, and on average follows the camera's clock (a 30 Hz camera and a
// 10 Hz loop: every third frame).
const (
	phaseStepShare = 50 // the most a tick moves: a 50th of the period
	phaseMargin    = 3 * time.Millisecond
)

// phaseLock estimates the camera's frame interval from the frames the
// ticks take and says how far to move the next tick.
type phaseLock struct {
	arrival time.Time // of the last frame taken
	seq     uint64
}

// shift returns how far to move the tick after the one scheduled at sched,
// which took frame f (nil: none new), in a loop of the given period. It
// moves nothing until two frames have been taken, nor when f is more than
// two camera intervals old (a stalled camera says nothing about its phase).
func (p *phaseLock) shift(sched time.Time, f *frameIn, period time.Duration) time.Duration {
	if f == nil || f.seq <= p.seq {
		return 0
	}
	prevArrival, prevSeq := p.arrival, p.seq
	p.arrival, p.seq = f.arrival, f.seq
	if prevSeq == 0 {
		return 0
	}
	interval := f.arrival.Sub(prevArrival) / time.Duration(f.seq-prevSeq)
	age := sched.Sub(f.arrival)
	if interval <= 0 || age > 2*interval {
		return 0
	}
	return phaseShift(age, interval, period/phaseStepShare)
}

// phaseShift is the move towards a tick margin after a frame's arrival for
// a tick whose newest frame is age old, frames coming every interval: half
// the way to the nearer such time, at most maxStep either way.
func phaseShift(age, interval, maxStep time.Duration) time.Duration {
	margin := min(phaseMargin, interval/4)
	e := (age - margin) % interval // how late the tick is; % keeps the sign
	if e < 0 {
		e += interval
	}
	if e >= interval/2 {
		e -= interval // early for the next frame rather than late for this one
	}
	return max(-maxStep, min(maxStep, -e/2))
}
