package tf

import (
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// BufferConf configures a Buffer. Zero or negative fields take their
// defaults.
type BufferConf struct {
	// History is how long dynamic transforms are kept behind the newest of
	// each edge. It defaults to 10 s (tf2's default).
	History time.Duration
	// MaxFrames bounds the number of frames (a flood of new frame names is
	// refused with an error). It defaults to 1024.
	MaxFrames int
	// MaxSamples bounds the samples kept per dynamic edge, whatever History
	// says: beyond it the oldest is dropped. It defaults to 4096.
	MaxSamples int
}

// FrameInfo describes one frame of a Buffer.
type FrameInfo struct {
	Name   string
	Parent string // "" for a root
	Static bool
	Newest time.Time // the newest stamp of a dynamic edge; zero if static or a root
}

// Buffer is a tree of frames, each with the transform to its parent: a
// constant for a static edge, a time series for a dynamic one. It is safe
// for concurrent use; Add and Clear exclude each other and Lookup, lookups
// run in parallel.
//
// Invariants: the parent links form a forest (Add refuses loops); each
// dynamic edge holds between 1 and MaxSamples samples of one parent, sorted
// by stamp, spanning at most History.
type Buffer struct {
	history    int64 // ns
	maxFrames  int
	maxSamples int

	mu sync.RWMutex
	// mu guards index and frames.
	index  map[string]int32 // name → position in frames
	frames []frame
}

type frame struct {
	name   string
	parent int32 // position in Buffer.frames; -1 for a root
	static bool
	fixed  Transform // the transform of a static edge
	// samples[start:] are a dynamic edge's samples, sorted by stamp; the
	// dead prefix is reused when the slice fills.
	samples []sample
	start   int
}

type sample struct {
	stamp int64 // ns since the Unix epoch
	t     Transform
}

// NewBuffer returns an empty Buffer.
func NewBuffer(conf BufferConf) *Buffer {
	if conf.History <= 0 {
		conf.History = 10 * time.Second
	}
	if conf.MaxFrames <= 0 {
		conf.MaxFrames = 1024
	}
	if conf.MaxSamples <= 0 {
		conf.MaxSamples = 4096
	}
	return &Buffer{
		history:    int64(conf.History),
		maxFrames:  conf.MaxFrames,
		maxSamples: conf.MaxSamples,
		index:      map[string]int32{},
	}
}

// rosTime reports whether t is a ROS time: seconds since the Unix epoch in
// [0, 2³²). Their nanoseconds fit an int64 with room for differences.
func rosTime(t time.Time) bool {
	s := t.Unix()
	return s >= 0 && s < 1<<32
}

func trimSlash(name string) string {
	return strings.TrimPrefix(name, "/")
}

// Add stores the transform from parent to child (child's pose in parent:
// p_parent = T·p_child), valid at stamp, or at all times if static.
// Names lose one leading '/' (tf2 does the same).
//
// It refuses (an error, nothing stored) empty names, parent == child,
// non-finite values, a quaternion whose norm is outside [0.9, 1.1] (others
// are normalised, as tf2 does), a dynamic stamp that is zero or outside ROS
// time, a dynamic stamp older than History behind that edge's newest, an
// edge that would close a loop (ErrLoop) and new frames beyond MaxFrames
// (ErrTooManyFrames).
//
// Out-of-order stamps within History are inserted in order; a stamp equal
// to a stored one replaces it (tf2 ignores it instead). A child that gets
// a new parent, or switches between static and dynamic, drops its old edge
// (reparenting, as tf2). A static transform replaces any previous static
// transform of that child.
func (b *Buffer) Add(parent, child string, stamp time.Time, t Transform, static bool) error {
	parent, child = trimSlash(parent), trimSlash(child)
	if parent == "" || child == "" {
		return errorf(ErrInvalid, "transform %q -> %q: empty frame name", parent, child)
	}
	if parent == child {
		return errorf(ErrInvalid, "transform %s -> %s: a frame cannot be its own parent", parent, child)
	}
	if !t.finite() {
		return errorf(ErrInvalid, "transform %s -> %s: not finite: %v", parent, child, t)
	}
	n := math.Sqrt(dot(t.Rotation, t.Rotation))
	if !(n >= 0.9 && n <= 1.1) {
		return errorf(ErrInvalid, "transform %s -> %s: quaternion norm %g outside [0.9, 1.1]", parent, child, n)
	}
	for i := range t.Rotation {
		t.Rotation[i] /= n
	}
	var ns int64
	if !static {
		if stamp.IsZero() || !rosTime(stamp) {
			return errorf(ErrInvalid, "transform %s -> %s: stamp %v is not a ROS time (a dynamic transform needs one)", parent, child, stamp)
		}
		ns = stamp.UnixNano()
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	pi, pok := b.index[parent]
	ci, cok := b.index[child]
	fresh := 0
	if !pok {
		fresh++
	}
	if !cok {
		fresh++
	}
	if len(b.frames)+fresh > b.maxFrames {
		return errorf(ErrTooManyFrames, "transform %s -> %s: more than %d frames", parent, child, b.maxFrames)
	}
	if pok && cok {
		if err := b.checkLoop(pi, ci); err != nil {
			return err
		}
		c := &b.frames[ci]
		if !static && !c.static && c.parent == pi && len(c.samples) > c.start {
			newest := c.samples[len(c.samples)-1].stamp
			if ns < newest-b.history {
				return errorf(ErrTooOld, "transform %s -> %s: stamp %s s older than the newest, beyond the history of %s s (has time jumped back?)",
					parent, child, seconds(time.Duration(newest-ns)), seconds(time.Duration(b.history)))
			}
		}
	}
	if !pok {
		pi = b.newFrame(parent)
	}
	if !cok {
		ci = b.newFrame(child)
	}
	c := &b.frames[ci]
	if static {
		c.parent, c.static, c.fixed = pi, true, t
		c.samples, c.start = c.samples[:0], 0
		return nil
	}
	if c.parent != pi || c.static {
		c.parent, c.static = pi, false
		c.samples, c.start = c.samples[:0], 0
	}
	return b.insert(c, sample{ns, t})
}

func (b *Buffer) newFrame(name string) int32 {
	i := int32(len(b.frames))
	b.frames = append(b.frames, frame{name: name, parent: -1})
	b.index[name] = i
	return i
}

// checkLoop refuses the edge parent → child when child is an ancestor of
// parent (or parent itself). The walk is bounded by the number of frames.
func (b *Buffer) checkLoop(parent, child int32) error {
	for i, n := parent, 0; i >= 0; i, n = b.frames[i].parent, n+1 {
		if i == child {
			return errorf(ErrLoop, "transform %s -> %s: %s is already an ancestor of %s",
				b.frames[parent].name, b.frames[child].name, b.frames[child].name, b.frames[parent].name)
		}
		if n > len(b.frames) {
			return errorf(ErrLoop, "a walk up from %s found a loop", b.frames[parent].name)
		}
	}
	return nil
}

// insert puts s in order into c's samples, then drops samples older than
// History behind the newest and beyond MaxSamples.
func (b *Buffer) insert(c *frame, s sample) error {
	live := c.samples[c.start:]
	k := search(live, s.stamp)
	if k < len(live) && live[k].stamp == s.stamp {
		live[k] = s
		return nil
	}
	if len(live) >= b.maxSamples {
		if k == 0 {
			return errorf(ErrInvalid, "transform %s -> %s: stamp older than all %d samples kept",
				b.frames[c.parent].name, c.name, len(live))
		}
		c.start++
		k--
	}
	if len(c.samples) == cap(c.samples) && c.start > 0 {
		n := copy(c.samples, c.samples[c.start:])
		c.samples, c.start = c.samples[:n], 0
	}
	c.samples = append(c.samples, sample{})
	i := c.start + k
	copy(c.samples[i+1:], c.samples[i:len(c.samples)-1])
	c.samples[i] = s
	live = c.samples[c.start:]
	c.start += search(live, live[len(live)-1].stamp-b.history)
	return nil
}

// search returns the first index of s whose stamp is ≥ ns, or len(s).
func search(s []sample, ns int64) int {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m].stamp < ns {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Lookup returns the transform that takes points in frame source into frame
// target at time at (tf2's lookupTransform(target, source, at)): the pose
// of source in target,
//
//	T_target_source = T_A_target⁻¹ · T_A_source,
//
// where A is the frames' common ancestor and T_A_x the product of the
// edges from A down to x. Each dynamic edge is interpolated at at between
// the samples around it (Interpolate); within tolerance before its oldest
// or after its newest sample it takes that sample; further away it is an
// ErrExtrapolation error naming the edge, the distance and the tolerance.
// The zero time means "latest": each edge's newest sample (tf2 instead
// takes the newest time common to the whole chain).
//
// Names lose one leading '/'. Unknown frames (ErrUnknownFrame, listing some
// known ones), frames in different trees (ErrNotConnected), a time outside
// ROS time and a non-finite result (ErrInvalid) are errors. Lookup does not
// allocate unless it returns an error.
func (b *Buffer) Lookup(target, source string, at time.Time, tolerance time.Duration) (Transform, error) {
	target, source = trimSlash(target), trimSlash(source)
	latest := at.IsZero()
	var ns int64
	if !latest {
		if !rosTime(at) {
			return Transform{}, errorf(ErrInvalid, "lookup of %s in %s: time %v is not a ROS time", source, target, at)
		}
		ns = at.UnixNano()
	}
	tol := max(int64(tolerance), 0)

	b.mu.RLock()
	defer b.mu.RUnlock()
	ti, ok := b.index[target]
	if !ok {
		return Transform{}, b.unknown(target)
	}
	si, ok := b.index[source]
	if !ok {
		return Transform{}, b.unknown(source)
	}
	ds, err := b.depth(si)
	if err != nil {
		return Transform{}, err
	}
	dt, err := b.depth(ti)
	if err != nil {
		return Transform{}, err
	}
	// accS = T_s_source, accT = T_t_target while s and t climb to A.
	accS, accT := Identity(), Identity()
	s, t := si, ti
	for ; ds > dt; ds-- {
		if accS, err = b.up(s, accS, ns, latest, tol); err != nil {
			return Transform{}, err
		}
		s = b.frames[s].parent
	}
	for ; dt > ds; dt-- {
		if accT, err = b.up(t, accT, ns, latest, tol); err != nil {
			return Transform{}, err
		}
		t = b.frames[t].parent
	}
	for s != t {
		if b.frames[s].parent < 0 {
			return Transform{}, errorf(ErrNotConnected, "%s and %s are not connected: their trees have roots %s and %s",
				target, source, b.frames[t].name, b.frames[s].name)
		}
		if accS, err = b.up(s, accS, ns, latest, tol); err != nil {
			return Transform{}, err
		}
		if accT, err = b.up(t, accT, ns, latest, tol); err != nil {
			return Transform{}, err
		}
		s, t = b.frames[s].parent, b.frames[t].parent
	}
	r := accT.Inverse().Mul(accS)
	if !r.finite() {
		return Transform{}, errorf(ErrInvalid, "lookup of %s in %s: the result is not finite: %v", source, target, r)
	}
	return r, nil
}

// depth returns the number of edges from frame i up to its root.
func (b *Buffer) depth(i int32) (int, error) {
	d := 0
	for j := b.frames[i].parent; j >= 0; j = b.frames[j].parent {
		d++
		if d > len(b.frames) {
			return 0, errorf(ErrLoop, "a walk up from %s found a loop", b.frames[i].name)
		}
	}
	return d, nil
}

// up returns E·acc, where E is the edge from frame i to its parent at ns.
func (b *Buffer) up(i int32, acc Transform, ns int64, latest bool, tol int64) (Transform, error) {
	f := &b.frames[i]
	if f.static {
		return f.fixed.Mul(acc), nil
	}
	live := f.samples[f.start:]
	if len(live) == 0 { // cleared (ClearDynamic)
		return Transform{}, errorf(ErrExtrapolation, "%s -> %s: no transform since ROS time jumped back", b.frames[f.parent].name, f.name)
	}
	if latest {
		return live[len(live)-1].t.Mul(acc), nil
	}
	k := search(live, ns)
	switch {
	case k < len(live) && live[k].stamp == ns:
		return live[k].t.Mul(acc), nil
	case k == 0:
		if gap := live[0].stamp - ns; gap > tol {
			return Transform{}, errorf(ErrExtrapolation, "%s -> %s: the oldest transform is %s s newer than the requested time (tolerance %s s)",
				b.frames[f.parent].name, f.name, seconds(time.Duration(gap)), seconds(time.Duration(tol)))
		}
		return live[0].t.Mul(acc), nil
	case k == len(live):
		if gap := ns - live[k-1].stamp; gap > tol {
			return Transform{}, errorf(ErrExtrapolation, "%s -> %s: the newest transform is %s s older than the requested time (tolerance %s s)",
				b.frames[f.parent].name, f.name, seconds(time.Duration(gap)), seconds(time.Duration(tol)))
		}
		return live[k-1].t.Mul(acc), nil
	}
	a, c := &live[k-1], &live[k]
	frac := float64(ns-a.stamp) / float64(c.stamp-a.stamp)
	return Interpolate(a.t, c.t, frac).Mul(acc), nil
}

// unknown is the error for a frame that does not exist; it lists up to
// five known frames.
func (b *Buffer) unknown(name string) error {
	if len(b.frames) == 0 {
		return errorf(ErrUnknownFrame, "frame %q does not exist: no frames are known yet", name)
	}
	names := make([]string, len(b.frames))
	for i := range b.frames {
		names[i] = b.frames[i].name
	}
	slices.Sort(names)
	list := strings.Join(names[:min(5, len(names))], ", ")
	if len(names) > 5 {
		list += ", …"
	}
	return errorf(ErrUnknownFrame, "frame %q does not exist; %d known frames: %s", name, len(names), list)
}

// Frames lists the known frames and their parents, sorted by name.
func (b *Buffer) Frames() []FrameInfo {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]FrameInfo, len(b.frames))
	for i := range b.frames {
		f := &b.frames[i]
		out[i] = FrameInfo{Name: f.name, Static: f.static}
		if f.parent >= 0 {
			out[i].Parent = b.frames[f.parent].name
			if !f.static && len(f.samples) > f.start {
				out[i].Newest = time.Unix(0, f.samples[len(f.samples)-1].stamp)
			}
		}
	}
	slices.SortFunc(out, func(x, y FrameInfo) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// ClearDynamic forgets every dynamic edge's transforms and keeps the
// frames and the static transforms (/tf_static is latched: published
// once). For ROS time that jumps backwards, as when a bag loops.
func (b *Buffer) ClearDynamic() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.frames {
		b.frames[i].samples, b.frames[i].start = b.frames[i].samples[:0], 0
	}
}

// Clear forgets all frames and transforms.
func (b *Buffer) Clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.frames = nil
	clear(b.index)
}
