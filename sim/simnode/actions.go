package simnode

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/ros"
)

// simQueueLen bounds the simulator's queue of received actions. In lockstep
// the queue holds at most one or two actions (the answer to the current
// frame, perhaps a stop action of the next tick); a fuller queue means the
// simulator stopped taking actions, and then the oldest are dropped.
const simQueueLen = 16

// simAction is one action message as the simulator received it.
type simAction struct {
	at   time.Time // arrival
	data []float32 // a copy of the message's values; nil when err is set
	err  error     // why the message cannot be applied
}

// actionQueue carries action messages from the subscriber callback to the
// stepping goroutine, in arrival order.
//
// Drop policy: when the queue is full, the oldest action is dropped and
// counted (dropped): the newest ones are the answers to the latest frame.
// The stepping goroutine clears the queue whenever it publishes a frame, so
// that an action computed before that frame arrived is never applied to it
// (counted as ignored).
type actionQueue struct {
	mu      sync.Mutex // mu guards q, dropped, ignored
	q       []simAction
	dropped uint64
	ignored uint64
	notify  chan struct{} // capacity 1: something was pushed
}

func newActionQueue() *actionQueue {
	return &actionQueue{q: make([]simAction, 0, simQueueLen), notify: make(chan struct{}, 1)}
}

// push appends a; it never blocks.
func (q *actionQueue) push(a simAction) {
	q.mu.Lock()
	if len(q.q) == simQueueLen {
		copy(q.q, q.q[1:])
		q.q = q.q[:len(q.q)-1]
		q.dropped++
	}
	q.q = append(q.q, a)
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// pop removes and returns the oldest action.
func (q *actionQueue) pop() (simAction, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.q) == 0 {
		return simAction{}, false
	}
	a := q.q[0]
	copy(q.q, q.q[1:])
	q.q[len(q.q)-1] = simAction{}
	q.q = q.q[:len(q.q)-1]
	return a, true
}

// len returns how many actions are queued.
func (q *actionQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.q)
}

// clear drops every queued action (they answer an earlier frame) and
// counts them as ignored.
func (q *actionQueue) clear() {
	q.mu.Lock()
	q.ignored += uint64(len(q.q))
	clear(q.q)
	q.q = q.q[:0]
	q.mu.Unlock()
}

// counts returns how many actions were dropped and ignored so far.
func (q *actionQueue) counts() (dropped, ignored uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped, q.ignored
}

// simSpace is the action layout the simulator executes.
var simSpace = action.RT1()

// checkAction checks an action message before the simulator applies it:
// exactly 11 values (action.RT1) at offset 0, all finite, and a layout (if any)
// whose first dimension agrees with the data. sizes are the layout's
// dimension sizes.
func checkAction(data []float32, sizes []uint32, offset uint32) error {
	if offset != 0 {
		return fmt.Errorf("layout.data_offset is %d, want 0", offset)
	}
	if len(data) != simSpace.Len() {
		return fmt.Errorf("action has %d values, want %d (RT-1 layout: %s)", len(data), simSpace.Len(), ros.ActionLabel(simSpace))
	}
	if len(sizes) > 0 && sizes[0] != uint32(len(data)) {
		return fmt.Errorf("layout.dim[0].size is %d but the action has %d values", sizes[0], len(data))
	}
	for i, v := range data {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("action value %d (%s) is %v", i, simSpace.Dims[i].Name, v)
		}
	}
	return nil
}
