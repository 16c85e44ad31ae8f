package vision

import "fmt"

// Window keeps the tokens of the last H frames, K tokens of width d each,
// in a ring buffer: each tick encodes only the new frame into Next, Commit
// makes it the newest, and the oldest frame drops out (token reuse, as
// RT-1 does over its 6-frame history). Until H frames have been committed
// the older slots hold zeros, RT-1's padding at the start of an episode.
//
// The tokens of a frame are those computed when it arrived: after the
// instruction changes, the older frames still carry the old instruction's
// FiLM until they leave the window; call Reset to start afresh.
type Window struct {
	h, k, d int
	buf     []float32 // (H, K, d) ring of frames
	next    int       // slot the next frame goes into
	count   int       // frames committed since the last Reset, up to H
}

// NewWindow returns an empty window of h frames of k tokens of width d.
func NewWindow(h, k, d int) *Window {
	if h <= 0 || k <= 0 || d <= 0 {
		panic(fmt.Sprintf("vision: NewWindow(%d, %d, %d): sizes must be positive", h, k, d))
	}
	return &Window{h: h, k: k, d: d, buf: make([]float32, h*k*d)}
}

// Frames is H, the number of frames the window holds.
func (w *Window) Frames() int { return w.h }

// TokenCount is the number of tokens in the window, H·K.
func (w *Window) TokenCount() int { return w.h * w.k }

// Len is the number of frames committed since the last Reset, at most H.
func (w *Window) Len() int { return w.count }

// Next returns the slot, (K, d), that the next frame's tokens are written
// into; it holds the oldest frame until Commit.
func (w *Window) Next() []float32 {
	f := w.k * w.d
	return w.buf[w.next*f : w.next*f+f : w.next*f+f]
}

// Commit makes the slot returned by Next the newest frame.
func (w *Window) Commit() {
	w.next = (w.next + 1) % w.h
	w.count = min(w.count+1, w.h)
}

// Push copies one frame's tokens (K, d) in as the newest frame.
func (w *Window) Push(tokens []float32) {
	mustHave("Window.Push tokens", tokens, w.k*w.d)
	copy(w.Next(), tokens[:w.k*w.d])
	w.Commit()
}

// Tokens writes the window into dst (H·K, d), oldest frame first, newest
// last; frames not yet seen are zeros at the front.
func (w *Window) Tokens(dst []float32) {
	f := w.k * w.d
	mustHave("Window.Tokens dst", dst, w.h*f)
	// The oldest slot is next (once the ring is full, and then it holds
	// zeros while count < H, since Reset cleared it).
	n := copy(dst, w.buf[w.next*f:])
	copy(dst[n:w.h*f], w.buf[:w.next*f])
}

// Frame returns the tokens of the frame age ticks ago (0 = newest) as a
// view, or nil if no such frame has been committed.
func (w *Window) Frame(age int) []float32 {
	if age < 0 || age >= w.count {
		return nil
	}
	f := w.k * w.d
	s := ((w.next-1-age)%w.h + w.h) % w.h
	return w.buf[s*f : s*f+f : s*f+f]
}

// Reset empties the window.
func (w *Window) Reset() {
	clear(w.buf)
	w.next, w.count = 0, 0
}

// CopyFrom makes w a copy of o, which must have the same shape; it does not
// allocate (restoring a snapshot on the control path).
func (w *Window) CopyFrom(o *Window) {
	if w.h != o.h || w.k != o.k || w.d != o.d {
		panic(fmt.Sprintf("vision: Window.CopyFrom: %dx%dx%d into %dx%dx%d", o.h, o.k, o.d, w.h, w.k, w.d))
	}
	copy(w.buf, o.buf)
	w.next, w.count = o.next, o.count
}

// Clone returns an independent copy of w (a snapshot).
func (w *Window) Clone() *Window {
	c := *w
	c.buf = append([]float32(nil), w.buf...)
	return &c
}
