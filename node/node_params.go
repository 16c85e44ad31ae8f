package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/robot"
	"github.com/ttmrobot/ttm/internal/ros"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/vision"
)

// DefaultMaxFramePixels bounds a camera frame's pixels (2560x1600 fits).
// Decoding costs time in proportion to the pixels, and a PNG of 8192x2048
// zeros is 49 KB on the wire and tens of milliseconds to decode; the
// policy's input is a few hundred pixels a side.
const DefaultMaxFramePixels = 1 << 22

// NodeParams is the node's configuration from its private ROS parameters
// (command line _name:=value first, then the parameter server, then the
// default):
//
//	~rate                    float  0      control rate, Hz; 0: the rate the policy learnt at (policy.Config.Rate; 10 when it records none)
//	~rate_mismatch           string refuse ~rate other than the trained rate: refuse, rescale or lockstep (RateMismatch)
//	~follow_camera           bool   true   move each tick by at most a 50th of the period so that it comes just after a frame arrives (false: a fixed phase, for a camera triggered by the actions, as the simulator's)
//	~deadline                float  0      seconds after a tick by which its action is out; 0 or more than the period: the period
//	~max_image_age           float  0.5    seconds; older frames are not acted on (header stamp, or arrival when the stamp is zero)
//	~max_frame_pixels        int    4194304  larger camera frames are refused before decoding (at most vision.MaxPixels)
//	~max_proprio_age         float  0.5    seconds; a policy that reads proprioception does not act on an older reading (from the topic: by arrival; from the robot's tree: its transforms and joint state at most this far from the frame's stamp)
//	~proprio_source          string tf     tf: the hand from /tf and /tf_static, the gripper from joint_states; topic: the proprio topic
//	~base_frame              string base_link  the robot's base frame (the hand's and the camera's poses are in it)
//	~hand_frame              string hand   the frame whose origin is the hand
//	~gripper_joint           string gripper_finger_joint  the joint in joint_states whose position is the gripper's
//	~gripper_open            float  0.04   its position when open (closedness 0)
//	~gripper_closed          float  0      its position when closed (closedness 1)
//	~camera_geometry         string robot  robot: a policy that back-projects through the camera reads camera_info and /tf; checkpoint: the calibration it was trained with
//	~camera_tolerance        float  0.05   largest relative difference of the robot's focal lengths and principal point from the policy's, and largest distortion coefficient
//	~camera_mount_tolerance  float  0.05   metres between the robot's camera and the policy's
//	~camera_angle_tolerance  float  0.05   radians of pitch difference, and of roll and yaw
//	~accept_camera_mismatch  bool   false  act on the robot's camera calibration beyond the tolerances
//	~heartbeat_timeout       float  0      seconds; 0 turns the heartbeat deadman off
//	~max_steps               int    0      actions per episode; 0: unlimited
//	~reset_on_instruction    bool   true   a new instruction starts a new episode
//	~enabled                 bool   true   act from the start (else wait for the enable service)
//	~max_rate                [float] none  per action dimension, largest change per second (0: unlimited)
//	~workspace/min, ~workspace/max  [x, y, z]  metres; both or neither
//	~workspace/scale         float  0.01   metres per unit of world_vector
//	~workspace/start         [x, y, z]  the end-effector position at start (default: the box's centre)
//	~expect_image_height     int    0      refuse a checkpoint with another network input size (0: any)
//	~expect_image_width      int    0
//	~expect_backbone_sha256  string ""     refuse a checkpoint made with another backbone ("": any)
//	~expect_policy_sha256    string ""     refuse a checkpoint whose tensors' SHA-256 differs ("": any)
//	~warmup_steps            int    100    timed warm-up steps before going live (at least MinWarmupSteps)
//	~warmup_image_height     int    0      warm-up frame size (0: the network's input size)
//	~warmup_image_width      int    0
//	~diagnostics_period      float  1.0    seconds between /diagnostics messages
//	/use_sim_time            bool   false  node time follows /clock
type NodeParams struct {
	Loop              LoopConfig
	Expect            policy.Expect // ActionSpace is always RT-1's
	RateMismatch      RateMismatch
	Robot             RobotConfig
	MaxFramePixels    int
	WarmupSteps       int
	WarmupHeight      int
	WarmupWidth       int
	DiagnosticsPeriod time.Duration
	UseSimTime        bool
	StartDisabled     bool
}

// paramError marks a parameter that has an unusable value: retrying cannot
// help.
type paramError struct{ err error }

func (e *paramError) Error() string { return e.err.Error() }
func (e *paramError) Unwrap() error { return e.err }

func badParam(format string, a ...any) error { return &paramError{fmt.Errorf(format, a...)} }

// permanentParamError reports whether err is a bad value (not a master that
// cannot be reached).
func permanentParamError(err error) bool {
	var pe *paramError
	var te *ros.ParamTypeError
	return errors.As(err, &pe) || errors.As(err, &te)
}

// ReadNodeParams reads and checks the node's parameters.
func ReadNodeParams(ctx context.Context, p *ros.Params) (NodeParams, error) {
	var np NodeParams
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	flt := func(name string, def float64) float64 {
		v, err := p.Float64(ctx, name, def)
		keep(err)
		if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			keep(badParam("parameter %s is %g", name, v))
		}
		return v
	}
	secs := func(name string, def float64) time.Duration {
		v := flt(name, def)
		if v < 0 {
			keep(badParam("parameter %s is %g s; want >= 0", name, v))
			return 0
		}
		return time.Duration(v * float64(time.Second))
	}
	integer := func(name string, def int) int {
		v, err := p.Int(ctx, name, def)
		keep(err)
		if err == nil && v < 0 {
			keep(badParam("parameter %s is %d; want >= 0", name, v))
		}
		return v
	}
	boolean := func(name string, def bool) bool {
		v, err := p.Bool(ctx, name, def)
		keep(err)
		return v
	}

	c := &np.Loop
	c.Rate = flt("~rate", 0)
	mismatch, err := p.String(ctx, "~rate_mismatch", string(RateRefuse))
	keep(err)
	c.FollowCamera = boolean("~follow_camera", true)
	c.Deadline = secs("~deadline", 0)
	c.MaxImageAge = secs("~max_image_age", DefaultMaxImageAge.Seconds())
	c.MaxProprioAge = secs("~max_proprio_age", DefaultMaxProprioAge.Seconds())
	np.MaxFramePixels = integer("~max_frame_pixels", DefaultMaxFramePixels)
	c.HeartbeatTimeout = secs("~heartbeat_timeout", 0)
	c.MaxSteps = integer("~max_steps", 0)
	c.KeepMemoryOnInstruction = !boolean("~reset_on_instruction", true)
	np.StartDisabled = !boolean("~enabled", true)
	str := func(name, def string) string {
		v, err := p.String(ctx, name, def)
		keep(err)
		return v
	}
	rc := &np.Robot
	rc.Proprio = ProprioSource(str("~proprio_source", string(ProprioTF)))
	rc.BaseFrame = str("~base_frame", robot.FrameBase)
	rc.HandFrame = str("~hand_frame", robot.FrameHand)
	rc.GripperJoint = str("~gripper_joint", robot.JointGripper)
	rc.GripperOpen = flt("~gripper_open", robot.GripperOpenPosition)
	rc.GripperClosed = flt("~gripper_closed", robot.GripperClosedPosition)
	rc.Camera = CameraSource(str("~camera_geometry", string(CameraRobot)))
	rc.CameraTolerance = flt("~camera_tolerance", DefaultCameraTolerance)
	rc.CameraMountTolerance = flt("~camera_mount_tolerance", DefaultCameraMountTolerance)
	rc.CameraAngleTolerance = flt("~camera_angle_tolerance", DefaultCameraAngleTolerance)
	rc.AcceptCameraMismatch = boolean("~accept_camera_mismatch", false)
	maxRate, err := p.Float64s(ctx, "~max_rate", nil)
	keep(err)
	c.Safety.MaxRate = maxRate

	wmin, err := p.Float64s(ctx, "~workspace/min", nil)
	keep(err)
	wmax, err := p.Float64s(ctx, "~workspace/max", nil)
	keep(err)
	scale := flt("~workspace/scale", 0.01)
	start, err := p.Float64s(ctx, "~workspace/start", nil)
	keep(err)
	switch {
	case wmin == nil && wmax == nil:
		if start != nil {
			keep(badParam("parameter ~workspace/start is set without ~workspace/min and ~workspace/max"))
		}
	case len(wmin) != 3 || len(wmax) != 3:
		keep(badParam("parameters ~workspace/min and ~workspace/max must both be [x, y, z] (got %v and %v)", wmin, wmax))
	default:
		w := &policy.Workspace{Scale: scale}
		copy(w.Min[:], wmin)
		copy(w.Max[:], wmax)
		c.Safety.Workspace = w
		for k := range 3 {
			c.WorkspaceStart[k] = (w.Min[k] + w.Max[k]) / 2
		}
		if start != nil {
			if len(start) != 3 {
				keep(badParam("parameter ~workspace/start must be [x, y, z] (got %v)", start))
			} else {
				copy(c.WorkspaceStart[:], start)
			}
		}
	}

	np.Expect.ImageHeight = integer("~expect_image_height", 0)
	np.Expect.ImageWidth = integer("~expect_image_width", 0)
	np.Expect.BackboneSHA256, err = p.String(ctx, "~expect_backbone_sha256", "")
	keep(err)
	np.Expect.TensorsSHA256, err = p.String(ctx, "~expect_policy_sha256", "")
	keep(err)
	rt1 := action.RT1()
	np.Expect.ActionSpace = &rt1
	np.WarmupSteps = integer("~warmup_steps", MinWarmupSteps)
	np.WarmupHeight = integer("~warmup_image_height", 0)
	np.WarmupWidth = integer("~warmup_image_width", 0)
	np.DiagnosticsPeriod = secs("~diagnostics_period", DefaultDiagnosticsPeriod.Seconds())
	np.UseSimTime, err = p.UseSimTime(ctx)
	keep(err)
	if firstErr != nil {
		return NodeParams{}, firstErr
	}
	if err := np.Robot.defaults(); err != nil {
		return NodeParams{}, &paramError{err}
	}
	if np.RateMismatch, err = ParseRateMismatch(mismatch); err != nil {
		return NodeParams{}, &paramError{err}
	}
	if np.MaxFramePixels < 1 || np.MaxFramePixels > vision.MaxPixels {
		return NodeParams{}, badParam("parameter ~max_frame_pixels is %d; want 1 to %d", np.MaxFramePixels, vision.MaxPixels)
	}
	if np.DiagnosticsPeriod < 10*time.Millisecond {
		return NodeParams{}, badParam("parameter ~diagnostics_period is %v; want at least 0.01 s", np.DiagnosticsPeriod)
	}
	check := *c // the rate and the deadline depend on the policy's rate: Start applies the defaults
	if check.Rate == 0 {
		check.Rate = DefaultRate
	}
	if err := check.defaults(); err != nil {
		return NodeParams{}, &paramError{err}
	}
	if _, err := policy.NewFilter(rt1, c.Safety); err != nil {
		return NodeParams{}, &paramError{err}
	}
	return np, nil
}
