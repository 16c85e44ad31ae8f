package tf

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The kinds of failure of Add and Lookup. Returned errors wrap one of them
// (test with errors.Is) and name the frames involved.
var (
	// ErrUnknownFrame: a frame that no transform has named.
	ErrUnknownFrame = errors.New("tf: unknown frame")
	// ErrNotConnected: two frames in different trees.
	ErrNotConnected = errors.New("tf: frames not connected")
	// ErrExtrapolation: a dynamic edge has no data within the tolerance of
	// the requested time.
	ErrExtrapolation = errors.New("tf: extrapolation")
	// ErrLoop: an Add that would close a loop in the tree, or a walk up the
	// tree longer than the number of frames.
	ErrLoop = errors.New("tf: loop in the frame tree")
	// ErrInvalid: an Add with bad names, values or stamp, or a Lookup at a
	// time outside ROS time or whose result is not finite.
	ErrInvalid = errors.New("tf: invalid transform")
	// ErrTooOld: an Add of a dynamic transform stamped further behind its
	// edge's newest than the history: ROS time jumped back (a bag loops),
	// or a publisher is far behind. ClearDynamic starts the edges afresh.
	ErrTooOld = errors.New("tf: transform older than the history")
	// ErrTooManyFrames: an Add that would exceed BufferConf.MaxFrames.
	ErrTooManyFrames = errors.New("tf: too many frames")
)

// tfError is a message that wraps one of the kinds above without repeating
// its text.
type tfError struct {
	kind error
	msg  string
}

func (e *tfError) Error() string { return e.msg }
func (e *tfError) Unwrap() error { return e.kind }

func errorf(kind error, format string, args ...any) error {
	return &tfError{kind: kind, msg: "tf: " + fmt.Sprintf(format, args...)}
}

// seconds formats d in seconds, rounded to the microsecond: "0.32".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Round(time.Microsecond).Seconds(), 'f', -1, 64)
}
