package node

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/internal/tf"
	"github.com/ttmrobot/ttm/language"
	"github.com/ttmrobot/ttm/vision"
)

// Inputs is where the subscribers leave what they receive for the control
// loop. Every method returns at once: callbacks never wait for inference.
//
// Frames go to a keep-latest slot of one: a frame that arrives before the
// loop took the previous one replaces it, and the replaced frame is counted
// as dropped (Counters.FramesDropped). The loop always acts on the newest
// frame and never on a queue of old ones.
type Inputs struct {
	clock     ros.Clock
	maxPixels int // frames of more pixels are refused

	mu           sync.Mutex // mu guards frame, instr, episodeInstr
	frame        *frameIn   // newest frame not yet taken by the loop
	instr        instruction
	episodeInstr instruction // the instruction the loop's current episode started with
	haveText     bool
	frameSeq     uint64

	framesIn, framesDropped, framesBad, embeddingsBad atomic.Uint64

	// robot, when set (SetRobot), reads the robot's tree, joints and
	// camera calibration; nil: proprioception from the proprio topic.
	robot *robotState

	proprioMu  sync.Mutex // proprioMu guards proprio and proprioAt
	proprio    []float32  // the latest good reading; nil before the first
	proprioAt  time.Time  // its arrival on the clock
	proprioIn  atomic.Uint64
	proprioBad atomic.Uint64
	// instructionsBad counts refused instructions (empty, too long).
	instructionsBad atomic.Uint64

	estop atomic.Bool
	// wrongTypes describes the publishers that send a type the node
	// cannot read; nil when there are none.
	wrongTypes atomic.Pointer[wrongTypes]
	enabled    atomic.Bool
	heartbeat  atomic.Int64 // clock time of the last heartbeat, Unix ns; 0: none yet

	resetRequested atomic.Uint64 // reset_memory calls so far
	resetApplied   atomic.Uint64 // the loop has applied requests up to this one
}

// frameIn is one received frame, checked on arrival. Raw frames that a
// Frame can view (rgb8 ...) are viewed then (vision.DecodeImage, no copy);
// raw frames to convert (yuv422, Bayer) and compressed frames are decoded
// by the inference goroutine into its buffer.
type frameIn struct {
	frame      vision.Frame            // raw, viewed: the decoded view of the message
	raw        *vision.Image           // raw, converted later
	compressed *vision.CompressedImage // compressed: decoded later
	stamp      time.Time               // header stamp, or arrival time when the stamp is zero
	arrival    time.Time
	stamped    bool // stamp came from the header
	seq        uint64
}

// instruction is the current task: text for the policy's language model, or
// an embedding computed upstream. Each kind is compared with the last
// message of the same kind: a message that repeats it changes nothing, one
// that differs makes its kind the one used and increments seq. So a planner
// may keep republishing both, and the one that last changed wins.
type instruction struct {
	text      string
	embedding []float32 // never modified once stored
	useText   bool      // text (else embedding) is the current instruction
	seq       uint64    // 0: nothing received yet
}

// SetRobot makes the inputs read the robot's proprioception and camera
// calibration from its tree, joints and camera_info (PutTransform,
// PutJointState, PutCameraInfo) as cfg says, for a policy that reads
// proprioception names (nil: none) and back-projects through the
// calibration trained (nil: none). Call it before the loop starts.
func (in *Inputs) SetRobot(cfg RobotConfig, names []string, trained *vision.CameraGeometry) error {
	r, err := newRobotState(cfg, names, trained)
	if err != nil {
		return err
	}
	in.robot = r
	return nil
}

// ReadsRobot reports what SetRobot made the inputs read from the robot:
// its tree and joints (proprioception), and its camera calibration.
func (in *Inputs) ReadsRobot() (proprio, camera bool) {
	if in.robot == nil {
		return false, false
	}
	return in.robot.names != nil, in.robot.trained != nil
}

// PutTransform offers one transform of /tf (static false) or /tf_static:
// the pose of child in parent at stamp. A transform the buffer refuses
// (non-finite, a loop) is counted and its error returned; one far older
// than its edge's latest, as after ROS time jumped back, makes the
// dynamic transforms start afresh (jumped).
func (in *Inputs) PutTransform(parent, child string, stamp time.Time, t tf.Transform, static bool) (jumped bool, err error) {
	if in.robot == nil {
		return false, nil
	}
	return in.robot.putTransform(parent, child, stamp, t, static)
}

// PutJointState offers a joint_states message; the zero stamp means now.
func (in *Inputs) PutJointState(names []string, position []float64, stamp time.Time) error {
	if in.robot == nil || in.robot.names == nil {
		return nil
	}
	if isZeroStamp(stamp) {
		stamp = in.clock.Now()
	}
	return in.robot.putJointState(names, position, stamp)
}

// PutCameraInfo offers a camera_info message: the frame it names, the
// image size, K (row-major) and D.
func (in *Inputs) PutCameraInfo(frame string, height, width uint32, k [9]float64, d []float64, stamp time.Time) error {
	if in.robot == nil || in.robot.trained == nil {
		return nil
	}
	return in.robot.putCameraInfo(frame, height, width, k, d, stamp)
}

// NewInputs returns empty inputs that stamp arrivals with clock; acting
// starts enabled.
func NewInputs(clock ros.Clock) *Inputs {
	in := &Inputs{clock: clock, maxPixels: DefaultMaxFramePixels}
	in.enabled.Store(true)
	return in
}

// SetMaxFramePixels sets the largest frame accepted, in pixels
// (~max_frame_pixels); call it before frames arrive.
func (in *Inputs) SetMaxFramePixels(n int) { in.maxPixels = n }

// checkPixels refuses a frame of more than in.maxPixels pixels.
func (in *Inputs) checkPixels(w, h int) error {
	if w*h > in.maxPixels {
		return fmt.Errorf("%w: %dx%d frame of %d pixels exceeds ~max_frame_pixels %d", vision.ErrBadSize, w, h, w*h, in.maxPixels)
	}
	return nil
}

// PutImage offers a raw frame. stamp is the message header's stamp; the
// zero time (or the Unix epoch, a zero ROS time) means "unstamped" and the
// arrival time is used. A frame that cannot be decoded is refused with an
// error naming the problem and counted. The pixels of yuv422 and Bayer
// frames are converted when the loop uses them, not here.
func (in *Inputs) PutImage(msg *vision.Image, stamp time.Time) error {
	info, err := vision.InspectImage(msg)
	if err == nil {
		err = in.checkPixels(info.Width, info.Height)
	}
	f := &frameIn{raw: msg}
	if err == nil && !info.Converted {
		f.raw = nil
		f.frame, err = vision.DecodeImage(msg)
	}
	if err != nil {
		in.framesBad.Add(1)
		return err
	}
	in.put(f, stamp)
	return nil
}

// PutCompressed offers a compressed frame; its header is checked now
// (vision.InspectCompressed: format, size, trailer; and the pixel bound),
// its pixels are decoded when the loop uses it.
func (in *Inputs) PutCompressed(msg *vision.CompressedImage, stamp time.Time) error {
	info, err := vision.InspectCompressed(msg)
	if err == nil {
		err = in.checkPixels(info.Width, info.Height)
	}
	if err != nil {
		in.framesBad.Add(1)
		return err
	}
	in.put(&frameIn{compressed: msg}, stamp)
	return nil
}

func (in *Inputs) put(f *frameIn, stamp time.Time) {
	f.arrival = in.clock.Now()
	f.stamp, f.stamped = stamp, !isZeroStamp(stamp)
	if !f.stamped {
		f.stamp = f.arrival
	}
	in.mu.Lock()
	if in.frame != nil {
		in.framesDropped.Add(1)
	}
	in.frameSeq++
	f.seq = in.frameSeq
	in.frame = f
	in.mu.Unlock()
	in.framesIn.Add(1)
}

func isZeroStamp(t time.Time) bool { return t.IsZero() || t.UnixNano() == 0 }

// takeFrame returns the newest frame not taken yet, or nil.
func (in *Inputs) takeFrame() *frameIn {
	in.mu.Lock()
	f := in.frame
	in.frame = nil
	in.mu.Unlock()
	return f
}

// SetInstruction sets the instruction text and reports whether it changed
// the instruction. An empty text is refused. Repeating the last text
// changes nothing (so a planner may repeat it without restarting the
// episode).
func (in *Inputs) SetInstruction(text string) (bool, error) {
	switch {
	case text == "":
		in.instructionsBad.Add(1)
		return false, errors.New("empty instruction")
	case len(text) > language.MaxInstructionBytes:
		// Refused on arrival: it would start an episode that fails every tick.
		in.instructionsBad.Add(1)
		return false, fmt.Errorf("instruction of %d bytes exceeds the limit of %d", len(text), language.MaxInstructionBytes)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.haveText && in.instr.text == text {
		return false, nil
	}
	in.haveText = true
	in.instr.text, in.instr.useText = text, true
	in.instr.seq++
	return true, nil
}

// SetEmbedding sets an instruction embedding computed upstream (checked by
// the caller: width and finite values) and reports whether it changed the
// instruction. It is copied. Repeating the last values changes nothing.
func (in *Inputs) SetEmbedding(e []float32) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.instr.embedding != nil && slices.Equal(in.instr.embedding, e) {
		return false
	}
	in.instr.embedding, in.instr.useText = slices.Clone(e), false
	in.instr.seq++
	return true
}

// badEmbedding counts a refused upstream embedding.
func (in *Inputs) badEmbedding() { in.embeddingsBad.Add(1) }

func (in *Inputs) currentInstruction() instruction {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.instr
}

// EStop latches the emergency stop: the loop publishes only the stop action
// until EStopReset.
func (in *Inputs) EStop() { in.estop.Store(true) }

// wrongTypes describes publishers of another type than the node reads:
// all of them, and those on a safety topic (e_stop, heartbeat), "; "-separated.
type wrongTypes struct{ all, safety string }

// SetWrongTypes records the publishers that send a type the node cannot
// read: all of them (for diagnostics) and those on a safety topic, which
// keep the loop from acting while there are any. "" means none.
func (in *Inputs) SetWrongTypes(all, safety string) {
	if all == "" && safety == "" {
		in.wrongTypes.Store(nil)
		return
	}
	in.wrongTypes.Store(&wrongTypes{all: all, safety: safety})
}

// UnreadableSafety describes the publishers of another type on a safety
// topic, "" when there are none.
func (in *Inputs) UnreadableSafety() string {
	if w := in.wrongTypes.Load(); w != nil {
		return w.safety
	}
	return ""
}

// wrongTypeText describes every publisher of another type, "none" when
// there is none.
func (in *Inputs) wrongTypeText() string {
	if w := in.wrongTypes.Load(); w != nil && w.all != "" {
		return w.all
	}
	return "none"
}

// EStopReset clears the emergency stop.
func (in *Inputs) EStopReset() { in.estop.Store(false) }

// EStopped reports whether the emergency stop is latched.
func (in *Inputs) EStopped() bool { return in.estop.Load() }

// SetEnabled allows (true) or forbids (false) acting.
func (in *Inputs) SetEnabled(on bool) { in.enabled.Store(on) }

// Enabled reports whether acting is allowed.
func (in *Inputs) Enabled() bool { return in.enabled.Load() }

// Heartbeat records a heartbeat at the clock's current time.
func (in *Inputs) Heartbeat() { in.heartbeat.Store(in.clock.Now().UnixNano()) }

// RequestReset asks the loop to reset the policy's memory (a new episode)
// and returns the request's number; ResetApplied tells when it is done. The
// loop applies it at its next tick at which no inference is running.
func (in *Inputs) RequestReset() uint64 { return in.resetRequested.Add(1) }

// ResetApplied reports whether reset request n has been applied.
func (in *Inputs) ResetApplied(n uint64) bool { return in.resetApplied.Load() >= n }

// startEpisode records that the loop started an episode with instruction
// instr, having applied the reset requests up to req.
func (in *Inputs) startEpisode(req uint64, instr instruction) {
	in.mu.Lock()
	in.episodeInstr = instr
	in.mu.Unlock()
	in.resetApplied.Store(req)
}

// EpisodeInstruction returns the text of the instruction the loop's current
// episode started with; ok is false before the first episode and when that
// instruction was an upstream embedding.
func (in *Inputs) EpisodeInstruction() (text string, ok bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.episodeInstr.text, in.episodeInstr.seq > 0 && in.episodeInstr.useText
}

// PutProprio offers a proprioception reading (a std_msgs/Float32MultiArray:
// its values and its layout's first dimension label, "" when it has
// none) for a policy that reads names. It must have one finite value per
// name, within the name's action.ProprioRange, and a label, if any, of the names joined by ";" (action.ArmProprio:
// "hand_x;hand_y;hand_z;gripper"). A bad reading is refused with an error
// naming the problem, counted, and leaves the last good one in place.
func (in *Inputs) PutProprio(values []float32, label string, names []string) error {
	if err := CheckProprio(values, label, names); err != nil {
		in.proprioBad.Add(1)
		return err
	}
	at := in.clock.Now()
	in.proprioMu.Lock()
	if len(in.proprio) != len(values) {
		in.proprio = make([]float32, len(values))
	}
	copy(in.proprio, values)
	in.proprioAt = at
	in.proprioMu.Unlock()
	in.proprioIn.Add(1)
	return nil
}

// CheckProprio checks a proprioception reading against the names a
// policy reads (see Inputs.PutProprio).
func CheckProprio(values []float32, label string, names []string) error {
	switch {
	case len(names) == 0:
		return errors.New("proprioception: the policy reads none")
	case label != "" && label != strings.Join(names, ";"):
		return fmt.Errorf("proprioception labelled %q, the policy reads %q", label, strings.Join(names, ";"))
	case len(values) != len(names):
		return fmt.Errorf("proprioception of %d values, the policy reads %d (%s)", len(values), len(names), strings.Join(names, ";"))
	}
	for i, v := range values {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("proprioception %s is %v", names[i], v)
		}
		if lo, hi, ok := action.ProprioRange(names[i]); ok && (v < lo || v > hi) {
			return fmt.Errorf("proprioception %s is %v, outside its range %v..%v", names[i], v, lo, hi)
		}
	}
	return nil
}

// proprioTime returns the arrival time of the latest good reading; ok is
// false before the first.
func (in *Inputs) proprioTime() (at time.Time, ok bool) {
	in.proprioMu.Lock()
	defer in.proprioMu.Unlock()
	return in.proprioAt, in.proprio != nil
}

// copyProprio copies the latest good reading into dst (its length).
func (in *Inputs) copyProprio(dst []float32) {
	in.proprioMu.Lock()
	copy(dst, in.proprio)
	in.proprioMu.Unlock()
}
