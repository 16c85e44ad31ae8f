package node

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ttmrobot/ttm/internal/robot"
	"github.com/ttmrobot/ttm/internal/tf"
	"github.com/ttmrobot/ttm/vision"
)

// ProprioSource is where the node reads the robot's proprioception.
type ProprioSource string

// The ~proprio_source values.
const (
	// ProprioTF reads the hand from /tf and /tf_static (the hand frame's
	// origin in the base frame at the camera frame's stamp) and the
	// gripper from joint_states, as a ROS robot publishes them.
	ProprioTF ProprioSource = "tf"
	// ProprioTopic reads our own proprio topic (std_msgs/Float32MultiArray
	// hand_x;hand_y;hand_z;gripper).
	ProprioTopic ProprioSource = "topic"
)

// CameraSource is where the node reads the head camera's calibration, for
// a policy that back-projects its keypoints through it
// (policy.Config.TargetGeometry).
type CameraSource string

// The ~camera_geometry values.
const (
	// CameraRobot reads the intrinsics from camera_info and the camera's
	// pose in the base frame from /tf, at each frame's stamp, and refuses
	// to act when they differ from the trained calibration by more than
	// the tolerances.
	CameraRobot CameraSource = "robot"
	// CameraCheckpoint uses the calibration the policy was trained with,
	// without reading the robot's.
	CameraCheckpoint CameraSource = "checkpoint"
)

// RobotConfig is how the node reads the robot's own state from its
// kinematic tree, its joints and its camera's calibration.
type RobotConfig struct {
	// Proprio defaults to ProprioTF; Arm says where the hand and the
	// gripper are (the simulated robot's names where empty:
	// robot.Arm.Defaults).
	Proprio ProprioSource
	robot.Arm
	// Camera defaults to CameraRobot.
	Camera CameraSource
	// CameraTolerance is the largest relative difference of the focal
	// lengths, and of the principal point (in image widths and heights),
	// from the trained calibration's, and the largest distortion
	// coefficient; CameraMountTolerance (metres) and CameraAngleTolerance
	// (radians: pitch, and the roll and yaw the trained calibration does
	// not have) bound the camera's pose. They default to
	// DefaultCameraTolerance, DefaultCameraMountTolerance and
	// DefaultCameraAngleTolerance. AcceptCameraMismatch acts on the
	// robot's calibration beyond them.
	CameraTolerance      float64
	CameraMountTolerance float64
	CameraAngleTolerance float64
	AcceptCameraMismatch bool
}

// Defaults of RobotConfig's camera tolerances.
const (
	DefaultCameraTolerance      = 0.05
	DefaultCameraMountTolerance = 0.05
	DefaultCameraAngleTolerance = 0.05
)

// defaults fills in RobotConfig's defaults and checks it.
func (c *RobotConfig) defaults() error {
	c.Proprio = cmp.Or(c.Proprio, ProprioTF)
	c.Camera = cmp.Or(c.Camera, CameraRobot)
	c.CameraTolerance = cmp.Or(c.CameraTolerance, DefaultCameraTolerance)
	c.CameraMountTolerance = cmp.Or(c.CameraMountTolerance, DefaultCameraMountTolerance)
	c.CameraAngleTolerance = cmp.Or(c.CameraAngleTolerance, DefaultCameraAngleTolerance)
	switch {
	case c.Proprio != ProprioTF && c.Proprio != ProprioTopic:
		return fmt.Errorf("proprio_source %q: want %s or %s", c.Proprio, ProprioTF, ProprioTopic)
	case c.Camera != CameraRobot && c.Camera != CameraCheckpoint:
		return fmt.Errorf("camera_geometry %q: want %s or %s", c.Camera, CameraRobot, CameraCheckpoint)
	case !(c.CameraTolerance > 0 && c.CameraMountTolerance > 0 && c.CameraAngleTolerance > 0) ||
		!finiteAll(c.CameraTolerance, c.CameraMountTolerance, c.CameraAngleTolerance):
		return fmt.Errorf("camera tolerances %v, %v m, %v rad: want positive", c.CameraTolerance, c.CameraMountTolerance, c.CameraAngleTolerance)
	}
	return c.Arm.Defaults()
}

func finiteAll(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// tfProprio are the proprioception names the robot's tree and joints give.
var tfProprio = []string{"hand_x", "hand_y", "hand_z", "gripper"}

// robotState is what the robot publishes of itself: its transforms, its
// gripper joint and its camera's calibration. The subscribers' callbacks
// write it; the loop reads it at each tick, at the frame's stamp.
type robotState struct {
	cfg     RobotConfig
	names   []string               // the proprioception the policy reads; nil: none (or from the topic)
	trained *vision.CameraGeometry // the policy's calibration; nil: it reads none (or the trained one)
	tf      *tf.Buffer

	mu        sync.Mutex // mu guards joint, jointAt, haveJoint, info
	joint     float64
	jointAt   time.Time
	haveJoint bool
	info      cameraInfo

	tfIn, tfBad, jointIn, jointBad, infoIn, infoBad atomic.Uint64

	// Owned by the loop goroutine.
	infoSeen cameraInfo
}

// cameraInfo is the part of a sensor_msgs/CameraInfo the node reads.
type cameraInfo struct {
	frame         string
	height, width int
	k             [9]float64
	d             [8]float64 // the first 8 distortion coefficients
	nd            int
	stamp         time.Time
	seq           uint64 // 0: none received
}

// newRobotState returns the robot's state as a policy reads it: its
// proprioception names (nil for none) and its trained calibration (nil
// for none). It is nil when the policy reads neither from the robot.
func newRobotState(cfg RobotConfig, names []string, trained *vision.CameraGeometry) (*robotState, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	r := &robotState{cfg: cfg}
	if len(names) > 0 && cfg.Proprio == ProprioTF {
		for _, n := range names {
			if !slices.Contains(tfProprio, n) {
				return nil, fmt.Errorf("the policy reads proprioception %q, which the robot's tree does not give (it gives %s): set ~proprio_source to %s",
					n, strings.Join(tfProprio, ", "), ProprioTopic)
			}
		}
		r.names = names
	}
	if trained != nil && cfg.Camera == CameraRobot {
		r.trained = trained
	}
	if r.names == nil && r.trained == nil {
		return nil, nil
	}
	r.tf = tf.NewBuffer(tf.BufferConf{})
	return r, nil
}

// putTransform stores one transform of /tf (static false) or /tf_static.
// A transform stamped further back than the buffer's history behind its
// edge's newest means ROS time jumped back (a bag played again, a
// simulator restarted): the dynamic transforms start afresh, the static
// ones (latched, sent once) stay; jumped reports it.
func (r *robotState) putTransform(parent, child string, stamp time.Time, t tf.Transform, static bool) (jumped bool, err error) {
	err = r.tf.Add(parent, child, stamp, t, static)
	if errors.Is(err, tf.ErrTooOld) {
		r.tf.ClearDynamic()
		jumped, err = true, r.tf.Add(parent, child, stamp, t, static)
	}
	if err != nil {
		r.tfBad.Add(1)
		return jumped, err
	}
	r.tfIn.Add(1)
	return jumped, nil
}

// putJointState takes a joint_states message: its gripper joint's
// position, if it has the joint (robots often publish their joints in
// several messages). A non-finite position is refused.
func (r *robotState) putJointState(names []string, position []float64, stamp time.Time) error {
	i := slices.Index(names, r.cfg.GripperJoint)
	if i < 0 {
		return nil
	}
	if i >= len(position) || math.IsNaN(position[i]) || math.IsInf(position[i], 0) {
		r.jointBad.Add(1)
		if i >= len(position) {
			return fmt.Errorf("joint_states names %s at %d but has %d positions", r.cfg.GripperJoint, i, len(position))
		}
		return fmt.Errorf("joint_states: %s at %v", r.cfg.GripperJoint, position[i])
	}
	r.mu.Lock()
	r.joint, r.jointAt, r.haveJoint = position[i], stamp, true
	r.mu.Unlock()
	r.jointIn.Add(1)
	return nil
}

// putCameraInfo takes a camera_info message.
func (r *robotState) putCameraInfo(frame string, height, width uint32, k [9]float64, d []float64, stamp time.Time) error {
	bad := func(format string, a ...any) error {
		r.infoBad.Add(1)
		return fmt.Errorf("camera_info: "+format, a...)
	}
	switch {
	case frame == "":
		return bad("no frame_id")
	case height == 0 || width == 0 || height > vision.MaxSide || width > vision.MaxSide:
		return bad("image %dx%d", height, width)
	case !finiteAll(k[:]...) || !finiteAll(d...):
		return bad("K or D holds NaN or Inf")
	case !(k[0] > 0 && k[4] > 0) || k[8] != 1:
		return bad("K = %v is not a camera matrix (fx, fy > 0, K[8] = 1); is the camera calibrated?", k)
	}
	r.mu.Lock()
	seq := r.info.seq + 1
	r.info = cameraInfo{frame: frame, height: int(height), width: int(width), k: k, stamp: stamp, seq: seq}
	r.info.nd = copy(r.info.d[:], d)
	for _, v := range d[r.info.nd:] { // more than 8 coefficients: the rest count too
		r.info.d[7] = math.Max(math.Abs(r.info.d[7]), math.Abs(v))
	}
	r.mu.Unlock()
	r.infoIn.Add(1)
	return nil
}

// proprio writes the proprioception at time at into dst (r.names'
// layout): the hand frame's origin in the base frame, looked up within
// maxAge of at, and the gripper's closedness from a joint position
// stamped within maxAge of at. The reason is ReasonNone, or why there is
// none: ReasonNoProprio (a frame or the joint never published),
// ReasonStaleProprio (not within maxAge), ReasonBadProprio (a value
// outside its range); err says which. It does not allocate while it
// succeeds.
func (r *robotState) proprio(dst []float32, at time.Time, maxAge time.Duration) (Reason, error) {
	t, err := r.tf.Lookup(r.cfg.BaseFrame, r.cfg.HandFrame, at, maxAge)
	switch {
	case errors.Is(err, tf.ErrExtrapolation):
		return ReasonStaleProprio, err
	case err != nil:
		return ReasonNoProprio, err
	}
	r.mu.Lock()
	pos, jointAt, have := r.joint, r.jointAt, r.haveJoint
	r.mu.Unlock()
	if !have {
		return ReasonNoProprio, fmt.Errorf("no joint_states with %s yet", r.cfg.GripperJoint)
	}
	if d := at.Sub(jointAt); d > maxAge || d < -maxAge {
		return ReasonStaleProprio, fmt.Errorf("joint_states: %s is stamped %.3f s from the frame (max_proprio_age %v)", r.cfg.GripperJoint, d.Seconds(), maxAge)
	}
	grip := r.cfg.Closedness(pos)
	for i, n := range r.names {
		switch n {
		case "hand_x":
			dst[i] = float32(t.Translation[0])
		case "hand_y":
			dst[i] = float32(t.Translation[1])
		case "hand_z":
			dst[i] = float32(t.Translation[2])
		case "gripper":
			dst[i] = float32(grip)
		}
	}
	if err := CheckProprio(dst, "", r.names); err != nil {
		return ReasonBadProprio, err
	}
	return ReasonNone, nil
}

// camera writes the robot's head camera calibration at time at into dst,
// as the policy reads one (vision.CameraGeometry at the trained image
// size): the camera's pose from /tf (base frame to camera_info's frame,
// looked up within maxAge of at) and its vertical field of view from
// camera_info's fy, scaled to the network's input as the preprocessing
// stretches the frame. Where the robot's camera differs from the trained
// calibration by more than the tolerances, it returns
// ReasonCameraMismatch and says by how much, unless AcceptCameraMismatch.
// ReasonNoCamera: no camera_info yet, or no transform to its frame.
func (r *robotState) camera(dst *vision.CameraGeometry, at time.Time, maxAge time.Duration) (Reason, error) {
	r.mu.Lock()
	if r.info.seq != r.infoSeen.seq {
		r.infoSeen = r.info
	}
	r.mu.Unlock()
	info := &r.infoSeen
	if info.seq == 0 {
		return ReasonNoCamera, errors.New("no camera_info yet")
	}
	t, err := r.tf.Lookup(r.cfg.BaseFrame, info.frame, at, maxAge)
	if err != nil {
		return ReasonNoCamera, err
	}
	m := measureCamera(t, info, r.trained)
	*dst = *r.trained
	dst.Mount, dst.Pitch, dst.VFOV = t.Translation, m.pitch, m.vfov
	if r.cfg.AcceptCameraMismatch {
		return ReasonNone, nil
	}
	if err := m.check(r.cfg); err != nil {
		return ReasonCameraMismatch, err
	}
	return ReasonNone, nil
}

// cameraMeasure is how a robot's camera compares with a trained
// calibration.
type cameraMeasure struct {
	pitch, vfov             float64 // the robot's
	focalX, focalY          float64 // relative differences of the focal lengths
	centreX, centreY        float64 // principal point offsets, in image widths and heights
	distortion              float64 // largest |D|
	mount                   float64 // metres
	dPitch, roll, yaw       float64 // radians
	trainedPitch, trainedF  float64
	robotFocalX, robotFocal float64 // at the network's input size
}

// measureCamera compares the camera at pose t (its optical frame in the
// base frame: z forward, x right, y down) with calibration info against
// the trained calibration g. The preprocessing stretches a W x H frame to
// g's w x h, so pixel x maps to (x + 0.5)·w/W - 0.5.
func measureCamera(t tf.Transform, info *cameraInfo, g *vision.CameraGeometry) cameraMeasure {
	rot := tf.Transform{Rotation: t.Rotation}
	fwd, right := rot.Apply([3]float64{0, 0, 1}), rot.Apply([3]float64{1, 0, 0})
	sx, sy := float64(g.Width)/float64(info.width), float64(g.Height)/float64(info.height)
	fx, fy := info.k[0]*sx, info.k[4]*sy
	cx, cy := (info.k[2]+0.5)*sx-0.5, (info.k[5]+0.5)*sy-0.5
	f := float64(g.Height) / 2 / math.Tan(g.VFOV/2)
	var m cameraMeasure
	m.pitch = math.Asin(math.Max(-1, math.Min(1, -fwd[2])))
	m.vfov = 2 * math.Atan(float64(g.Height)/2/fy)
	m.focalX, m.focalY = math.Abs(fx-f)/f, math.Abs(fy-f)/f
	m.centreX, m.centreY = math.Abs(cx-float64(g.Width-1)/2)/float64(g.Width), math.Abs(cy-float64(g.Height-1)/2)/float64(g.Height)
	for _, d := range info.d[:info.nd] {
		m.distortion = math.Max(m.distortion, math.Abs(d))
	}
	dm := [3]float64{t.Translation[0] - g.Mount[0], t.Translation[1] - g.Mount[1], t.Translation[2] - g.Mount[2]}
	m.mount = math.Sqrt(dm[0]*dm[0] + dm[1]*dm[1] + dm[2]*dm[2])
	m.dPitch = math.Abs(m.pitch - g.Pitch)
	m.yaw = math.Abs(math.Atan2(fwd[1], fwd[0]))
	// Roll about the optical axis: right against the level right h and
	// the level image down fwd × h of an unrolled camera.
	h := [3]float64{fwd[1], -fwd[0], 0} // fwd × up
	if n := math.Hypot(h[0], h[1]); n > 1e-9 {
		h[0], h[1] = h[0]/n, h[1]/n
		down := [3]float64{fwd[1]*h[2] - fwd[2]*h[1], fwd[2]*h[0] - fwd[0]*h[2], fwd[0]*h[1] - fwd[1]*h[0]}
		m.roll = math.Abs(math.Atan2(dot3(right, down), dot3(right, h)))
	}
	m.trainedPitch, m.trainedF, m.robotFocalX, m.robotFocal = g.Pitch, f, fx, fy
	return m
}

func dot3(a, b [3]float64) float64 { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] }

// check says by how much m exceeds c's tolerances, or nil.
func (m cameraMeasure) check(c RobotConfig) error {
	tol, tm, ta := c.CameraTolerance, c.CameraMountTolerance, c.CameraAngleTolerance
	if m.focalX <= tol && m.focalY <= tol && m.centreX <= tol && m.centreY <= tol && m.distortion <= tol &&
		m.mount <= tm && m.dPitch <= ta && m.roll <= ta && m.yaw <= ta {
		return nil
	}
	var over []string
	add := func(ok bool, format string, a ...any) {
		if !ok {
			over = append(over, fmt.Sprintf(format, a...))
		}
	}
	add(m.focalX <= tol, "focal length x %.1f px against %.1f (%.1f %%, tolerance %.1f %%)", m.robotFocalX, m.trainedF, 100*m.focalX, 100*tol)
	add(m.focalY <= tol, "focal length y %.1f px against %.1f (%.1f %%, tolerance %.1f %%)", m.robotFocal, m.trainedF, 100*m.focalY, 100*tol)
	add(m.centreX <= tol && m.centreY <= tol, "principal point off the centre by %.1f %% x %.1f %% of the image (tolerance %.1f %%)", 100*m.centreX, 100*m.centreY, 100*tol)
	add(m.distortion <= tol, "distortion coefficient %.3f (tolerance %.3f; the policy assumes a pinhole)", m.distortion, tol)
	add(m.mount <= tm, "mounted %.3f m from the trained mount (tolerance %.3f m)", m.mount, tm)
	add(m.dPitch <= ta, "pitch %.3f rad against %.3f (tolerance %.3f rad)", m.pitch, m.trainedPitch, ta)
	add(m.roll <= ta, "roll %.3f rad (tolerance %.3f rad)", m.roll, ta)
	add(m.yaw <= ta, "yaw %.3f rad off the base's heading (tolerance %.3f rad)", m.yaw, ta)
	if len(over) == 0 {
		return nil
	}
	return fmt.Errorf("the robot's camera differs from the policy's calibration: %s (set ~accept_camera_mismatch to act anyway)", strings.Join(over, "; "))
}
