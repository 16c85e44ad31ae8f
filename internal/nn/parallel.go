package nn

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// The worker team behind MatMulPacked. A product's panels are split between
// the calling goroutine and up to n-1 long-lived workers. A product on the
// TTM's control path takes 100-300 µs, so waking a parked goroutine through
// a channel (tens of µs) would eat the gain: a worker spins on its slot for
// a while after each task and parks only when work stops coming. A call
// starts no goroutine and allocates nothing. Products smaller than
// minParallelWork multiply-adds run on the caller alone.

const (
	minParallelWork = 1 << 17
	spinIterations  = 1 << 22 // about a millisecond of polling before parking
	yieldEvery      = 1 << 12 // let the scheduler in now and then while polling
)

// A Task is work over an index range that can be split: Run(lo, hi) does
// the part [lo, hi). Parts run concurrently and must not overlap in what
// they write.
type Task interface {
	Run(lo, hi int)
}

// panelJob is the Task of one packed product: panels [lo, hi) of w.
type panelJob struct {
	out, xp []float32
	w       *Packed
	nr      int
	act     bool
}

func (j *panelJob) Run(lo, hi int) { panelsRange(j.out, j.xp, j.w, j.nr, lo, hi, j.act) }

// slot is one worker's mailbox. The caller writes task, lo and hi, then
// increments seq; the worker runs the task and stores seq into done.
type slot struct {
	task   Task
	lo, hi int
	seq    atomic.Uint64
	done   atomic.Uint64
	parked atomic.Bool
	stop   atomic.Bool
	wake   chan struct{} // buffered(1): a token for a parked worker
	_      [64]byte      // keep slots on separate cache lines
}

var team struct {
	mu    sync.Mutex // mu guards slots and panel, and serialises parallel work
	slots []*slot
	panel panelJob
}

// SetParallelism sets how many goroutines share one packed product (1, the
// default, turns the team off). Call it at start-up, not during products.
func SetParallelism(n int) {
	team.mu.Lock()
	defer team.mu.Unlock()
	n = max(n, 1)
	for len(team.slots) < n-1 {
		s := &slot{wake: make(chan struct{}, 1)}
		team.slots = append(team.slots, s)
		go s.run()
	}
	for len(team.slots) > n-1 {
		s := team.slots[len(team.slots)-1]
		team.slots = team.slots[:len(team.slots)-1]
		s.stop.Store(true)
		s.seq.Add(1)
		s.signal()
	}
}

// Parallelism reports the number of goroutines sharing one packed product.
func Parallelism() int {
	team.mu.Lock()
	defer team.mu.Unlock()
	return len(team.slots) + 1
}

func (s *slot) signal() {
	if s.parked.Load() {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

func (s *slot) run() {
	var seen uint64
	for {
		spins := 0
		for s.seq.Load() == seen {
			spins++
			if spins < spinIterations {
				if spins%yieldEvery == 0 {
					runtime.Gosched()
				}
				continue
			}
			s.parked.Store(true)
			if s.seq.Load() == seen {
				<-s.wake
			}
			s.parked.Store(false)
			spins = 0
		}
		seen = s.seq.Load()
		if s.stop.Load() {
			return
		}
		s.task.Run(s.lo, s.hi)
		s.done.Store(seen)
	}
}

func parallelPanels(out, xp []float32, w *Packed, nr int, act bool) {
	panels := w.N / PanelWidth
	if w.K*w.N*nr < minParallelWork || !team.mu.TryLock() {
		panelsRange(out, xp, w, nr, 0, panels, act)
		return
	}
	defer team.mu.Unlock()
	team.panel = panelJob{out: out, xp: xp, w: w, nr: nr, act: act}
	split(&team.panel, panels)
	team.panel = panelJob{}
}

// ParallelFor runs task over [0, n), split into contiguous parts shared by
// the calling goroutine and the worker team. Ranges shorter than 2·grain
// run on the caller alone, as does a call made while the team is busy (for
// example from inside another ParallelFor), so nesting cannot deadlock.
func ParallelFor(n, grain int, task Task) {
	if n < 2*grain || !team.mu.TryLock() {
		task.Run(0, n)
		return
	}
	defer team.mu.Unlock()
	split(task, n)
}

// split runs task over [0, n) on the caller and the team; team.mu is held.
func split(task Task, n int) {
	parts := len(team.slots) + 1
	if parts == 1 || n < parts {
		task.Run(0, n)
		return
	}
	// The range is split evenly; the caller takes the first share.
	per := (n + parts - 1) / parts
	busy := team.slots[:0:0]
	for i, s := range team.slots {
		lo, hi := (i+1)*per, min((i+2)*per, n)
		if lo >= hi {
			break
		}
		s.task, s.lo, s.hi = task, lo, hi
		s.seq.Add(1)
		s.signal()
		busy = team.slots[:i+1]
	}
	task.Run(0, min(per, n))
	for _, s := range busy {
		want := s.seq.Load()
		for spins := 1; s.done.Load() != want; spins++ {
			if spins%yieldEvery == 0 {
				runtime.Gosched()
			}
		}
		s.task = nil
	}
}
