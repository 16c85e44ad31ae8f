package node

import (
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/robot"
	"github.com/ttmrobot/ttm/internal/tf"
	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/vision"
)

var t0 = time.Unix(1000, 0)

// armTree is a robot whose hand hangs from a shoulder 1 m above the base
// (static) and moves from 0.4 to 0.6 m ahead of it between t0 and t0 +
// 100 ms; its gripper joint is at 0.01 (closedness 0.75) at t0 + 50 ms.
func armTree(t *testing.T) *robotState {
	t.Helper()
	r, err := newRobotState(RobotConfig{}, action.ArmProprio, nil)
	if err != nil {
		t.Fatal(err)
	}
	put := func(parent, child string, at time.Time, x, y, z float64, static bool) {
		if _, err := r.putTransform(parent, child, at, tf.Transform{Translation: [3]float64{x, y, z}, Rotation: tf.Identity().Rotation}, static); err != nil {
			t.Fatal(err)
		}
	}
	put(robot.FrameBase, robot.FrameArmMount, time.Time{}, 0, 0.1, 1, true)
	put(robot.FrameArmMount, robot.FrameHand, t0, 0.4, 0, -0.2, false)
	put(robot.FrameArmMount, robot.FrameHand, t0.Add(100*time.Millisecond), 0.6, 0, -0.2, false)
	if err := r.putJointState([]string{"wheel", robot.JointGripper}, []float64{3, 0.01}, t0.Add(50*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRobotStateProprio(t *testing.T) {
	r := armTree(t)
	q := make([]float32, 4)
	// Halfway: the hand interpolated to 0.5 m ahead of the shoulder.
	if reason, err := r.proprio(q, t0.Add(50*time.Millisecond), 100*time.Millisecond); reason != ReasonNone || err != nil {
		t.Fatalf("proprio: %v, %v", reason, err)
	}
	want := []float32{0.5, 0.1, 0.8, 0.75}
	for i := range q {
		if math.Abs(float64(q[i]-want[i])) > 1e-6 {
			t.Fatalf("proprio %v, want %v", q, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { r.proprio(q, t0.Add(50*time.Millisecond), 100*time.Millisecond) }); n != 0 {
		t.Errorf("proprio allocates %v times", n)
	}

	for _, tc := range []struct {
		name   string
		edit   func(r *robotState)
		at     time.Duration // after t0
		reason Reason
		err    string
	}{
		{"transform too old", nil, 300 * time.Millisecond, ReasonStaleProprio, "newest transform is 0.2 s older than the requested time"},
		{"joint too old", func(r *robotState) { r.jointAt = t0.Add(-time.Second) }, 50 * time.Millisecond, ReasonStaleProprio, "gripper_finger_joint is stamped 1.050 s from the frame"},
		{"no hand frame", func(r *robotState) { r.cfg.HandFrame = "tool0" }, 50 * time.Millisecond, ReasonNoProprio, `frame "tool0" does not exist`},
		{"no joint state", func(r *robotState) { r.haveJoint = false }, 50 * time.Millisecond, ReasonNoProprio, "no joint_states with gripper_finger_joint yet"},
		{"gripper beyond its range", func(r *robotState) { r.joint = -0.04 }, 50 * time.Millisecond, ReasonBadProprio, "gripper is 2, outside its range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := armTree(t)
			if tc.edit != nil {
				tc.edit(r)
			}
			reason, err := r.proprio(q, t0.Add(tc.at), 50*time.Millisecond)
			if reason != tc.reason || err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("proprio = %v, %v; want %v, an error with %q", reason, err, tc.reason, tc.err)
			}
		})
	}

	// Refused on arrival: a NaN joint, a NaN transform; other joints'
	// messages are ignored.
	if err := r.putJointState([]string{robot.JointGripper}, []float64{math.NaN()}, t0); err == nil || r.jointBad.Load() != 1 {
		t.Errorf("NaN joint: %v, %d refused", err, r.jointBad.Load())
	}
	if err := r.putJointState([]string{"elbow"}, []float64{math.NaN()}, t0); err != nil {
		t.Errorf("another joint's message: %v", err)
	}
	nan := tf.Transform{Translation: [3]float64{math.NaN(), 0, 0}, Rotation: tf.Identity().Rotation}
	if _, err := r.putTransform(robot.FrameArmMount, robot.FrameHand, t0, nan, false); !errors.Is(err, tf.ErrInvalid) || r.tfBad.Load() != 1 {
		t.Errorf("NaN transform: %v, %d refused", err, r.tfBad.Load())
	}
	// ROS time jumps back a minute: the hand starts afresh, the shoulder stays.
	back := t0.Add(-time.Minute)
	jumped, err := r.putTransform(robot.FrameArmMount, robot.FrameHand, back, tf.Transform{Translation: [3]float64{0.3, 0, 0}, Rotation: tf.Identity().Rotation}, false)
	if !jumped || err != nil {
		t.Fatalf("a transform a minute back: jumped %v, %v", jumped, err)
	}
	r.putJointState([]string{robot.JointGripper}, []float64{0.04}, back)
	if reason, err := r.proprio(q, back, 50*time.Millisecond); reason != ReasonNone || q[0] != 0.3 || q[2] != 1 || q[3] != 0 {
		t.Errorf("after the jump: %v %v, proprio %v", reason, err, q)
	}
}

func TestRobotStateRefusesNames(t *testing.T) {
	if _, err := newRobotState(RobotConfig{}, []string{"hand_x", "wrist_torque"}, nil); err == nil || !strings.Contains(err.Error(), `"wrist_torque"`) {
		t.Errorf("a name the tree does not give: %v", err)
	}
	if r, err := newRobotState(RobotConfig{Proprio: ProprioTopic, Camera: CameraCheckpoint}, action.ArmProprio, &vision.CameraGeometry{}); r != nil || err != nil {
		t.Errorf("nothing read from the robot: %v, %v", r, err)
	}
	for _, c := range []RobotConfig{
		{Proprio: "joints"}, {Camera: "calibrated"}, {Arm: robot.Arm{HandFrame: "/base_link"}}, {Arm: robot.Arm{GripperJoint: "g", GripperOpen: 1, GripperClosed: 1}},
		{CameraTolerance: -1}, {CameraMountTolerance: math.NaN()},
	} {
		if _, err := newRobotState(c, action.ArmProprio, nil); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}

// headcam is the simulator's camera, as policy presets calibrate it.
var headcam = vision.CameraGeometry{Mount: [3]float64{-0.05, 0, 1.40}, Pitch: 0.72, VFOV: 0.96, Height: 128, Width: 160, SurfaceZ: 0.80}

// cameraRobot is a robot whose head camera is the trained one (g) on a
// W x H image, its optical frame under a camera link as the simulator
// publishes it, edited by edit (nil: none) before the messages go in.
func cameraRobot(t *testing.T, g vision.CameraGeometry, h, w uint32, edit func(mount *[3]float64, rpy *[3]float64, k *[9]float64, d []float64)) *robotState {
	t.Helper()
	r, err := newRobotState(RobotConfig{}, nil, &g)
	if err != nil {
		t.Fatal(err)
	}
	f := float64(h) / 2 / math.Tan(g.VFOV/2)
	k := [9]float64{f, 0, float64(w-1) / 2, 0, f, float64(h-1) / 2, 0, 0, 1}
	d := make([]float64, 5)
	mount, rpy := g.Mount, [3]float64{0, g.Pitch, 0}
	if edit != nil {
		edit(&mount, &rpy, &k, d)
	}
	for _, e := range []struct {
		parent, child string
		t             tf.Transform
	}{
		{robot.FrameBase, robot.FrameCamera, tf.Transform{Translation: mount, Rotation: tf.FromRPY(rpy[0], rpy[1], rpy[2])}},
		{robot.FrameCamera, robot.FrameCameraOptical, tf.Transform{Rotation: tf.FromRPY(-math.Pi/2, 0, -math.Pi/2)}},
	} {
		if _, err := r.putTransform(e.parent, e.child, time.Time{}, e.t, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.putCameraInfo(robot.FrameCameraOptical, h, w, k, d, t0); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRobotStateCamera(t *testing.T) {
	var got vision.CameraGeometry
	// The simulator's camera at twice the network's size reads as the trained calibration.
	r := cameraRobot(t, headcam, 256, 320, nil)
	if reason, err := r.camera(&got, t0, 0); reason != ReasonNone || err != nil {
		t.Fatalf("the trained camera: %v, %v", reason, err)
	}
	for i, v := range []float64{got.Mount[0] - headcam.Mount[0], got.Mount[1] - headcam.Mount[1], got.Mount[2] - headcam.Mount[2],
		got.Pitch - headcam.Pitch, got.VFOV - headcam.VFOV} {
		if math.Abs(v) > 1e-9 {
			t.Errorf("value %d differs by %v: read %+v, trained %+v", i, v, got, headcam)
		}
	}
	if got.Height != headcam.Height || got.Width != headcam.Width || got.SurfaceZ != headcam.SurfaceZ {
		t.Errorf("read %+v, trained %+v", got, headcam)
	}
	if n := testing.AllocsPerRun(100, func() { r.camera(&got, t0, 0) }); n != 0 {
		t.Errorf("camera allocates %v times", n)
	}

	for _, tc := range []struct {
		name   string
		edit   func(mount, rpy *[3]float64, k *[9]float64, d []float64)
		reason Reason
		err    string
	}{
		{"pitched 0.1 rad more", func(_, rpy *[3]float64, _ *[9]float64, _ []float64) { rpy[1] += 0.1 }, ReasonCameraMismatch, "pitch 0.820 rad against 0.720"},
		{"within the tolerances", func(m, rpy *[3]float64, k *[9]float64, _ []float64) { rpy[1] += 0.03; m[2] += 0.03; k[0] *= 1.03 }, ReasonNone, ""},
		{"rolled", func(_, rpy *[3]float64, _ *[9]float64, _ []float64) { rpy[0] = 0.2 }, ReasonCameraMismatch, "roll 0.200 rad"},
		{"turned", func(_, rpy *[3]float64, _ *[9]float64, _ []float64) { rpy[2] = -0.3 }, ReasonCameraMismatch, "yaw 0.300 rad"},
		{"mounted 10 cm higher", func(m, _ *[3]float64, _ *[9]float64, _ []float64) { m[2] += 0.1 }, ReasonCameraMismatch, "mounted 0.100 m from the trained mount"},
		{"a wider lens", func(_, _ *[3]float64, k *[9]float64, _ []float64) { k[0] *= 0.8; k[4] *= 0.8 }, ReasonCameraMismatch, "(20.0 %, tolerance 5.0 %)"},
		{"off-centre", func(_, _ *[3]float64, k *[9]float64, _ []float64) { k[2] += 40 }, ReasonCameraMismatch, "principal point off the centre by 12.5 %"},
		{"distorted", func(_, _ *[3]float64, _ *[9]float64, d []float64) { d[0] = -0.3 }, ReasonCameraMismatch, "distortion coefficient 0.300"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, err := cameraRobot(t, headcam, 256, 320, tc.edit).camera(&got, t0, 0)
			if reason != tc.reason || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("camera = %v, %v; want %v, %q", reason, err, tc.reason, tc.err)
			}
		})
	}

	// Accepted, the mismatched camera is read as it is.
	r = cameraRobot(t, headcam, 256, 320, func(m, rpy *[3]float64, _ *[9]float64, _ []float64) { rpy[1] += 0.1; m[0] += 0.2 })
	r.cfg.AcceptCameraMismatch = true
	if reason, err := r.camera(&got, t0, 0); reason != ReasonNone || err != nil || math.Abs(got.Pitch-0.82) > 1e-9 || math.Abs(got.Mount[0]-0.15) > 1e-9 {
		t.Errorf("accepted: %v, %v, read %+v", reason, err, got)
	}

	// Nothing yet: no camera_info, or no transform to its frame.
	r, _ = newRobotState(RobotConfig{}, nil, &headcam)
	if reason, err := r.camera(&got, t0, 0); reason != ReasonNoCamera || err == nil || err.Error() != "no camera_info yet" {
		t.Errorf("no camera_info: %v, %v", reason, err)
	}
	r.putCameraInfo("usb_cam", 480, 640, [9]float64{500, 0, 320, 0, 500, 240, 0, 0, 1}, nil, t0)
	if reason, err := r.camera(&got, t0, 0); reason != ReasonNoCamera || !errors.Is(err, tf.ErrUnknownFrame) {
		t.Errorf("no transform to the camera: %v, %v", reason, err)
	}
	for _, k := range [][9]float64{{0, 0, 320, 0, 500, 240, 0, 0, 1}, {500, 0, 320, 0, 500, 240, 0, 0, 0}, {math.NaN()}} {
		if err := r.putCameraInfo("usb_cam", 480, 640, k, nil, t0); err == nil {
			t.Errorf("K %v accepted", k)
		}
	}
}

// observingStepper runs a policy and keeps what its last step read of the
// robot.
type observingStepper struct {
	Stepper
	mu      sync.Mutex
	proprio []float32
	camera  vision.CameraGeometry
	calib   bool // the step had a camera calibration
}

func (s *observingStepper) Step(obs *policy.Observation, st *policy.State, a []float32) error {
	s.mu.Lock()
	s.proprio = slices.Clone(obs.Proprio)
	if s.calib = obs.Camera != nil; s.calib {
		s.camera = *obs.Camera
	}
	s.mu.Unlock()
	return s.Stepper.Step(obs, st, a)
}

// TestLoopReadsTheRobot: a policy with proprioception and a camera
// calibration, its node reading the robot's tree, joints and camera_info:
// it waits for each, saying which is missing, acts on the hand and
// gripper at the frame's stamp and on the robot's camera, and stops when
// the tree falls behind the frames.
func TestLoopReadsTheRobot(t *testing.T) {
	p := loadPolicy(t, targetPath(t))
	trained := *p.Spec().Policy.TargetGeometry
	obs := &observingStepper{Stepper: p}
	h := newHarness(t, obs, LoopConfig{MaxProprioAge: 100 * time.Millisecond, MaxImageAge: time.Hour}, func(in *Inputs) {
		if err := in.SetRobot(RobotConfig{}, p.Proprio(), &trained); err != nil {
			t.Fatal(err)
		}
	})
	h.in.SetInstruction("pick up the coke can")
	h.frame(0)
	h.next()
	if n := len(h.sink.outputs()); n != 0 || h.sink.lastStatus() != `waiting: no proprioception yet: tf: frame "base_link" does not exist: no frames are known yet` {
		t.Fatalf("no tree: %d outputs, status %q", n, h.sink.lastStatus())
	}
	static := func(parent, child string, x tf.Transform) {
		if _, err := h.in.PutTransform(parent, child, time.Time{}, x, true); err != nil {
			t.Fatal(err)
		}
	}
	static(robot.FrameBase, robot.FrameArmMount, tf.Transform{Translation: [3]float64{0, -0.25, 1.15}, Rotation: tf.Identity().Rotation})
	static(robot.FrameBase, robot.FrameCamera, tf.Transform{Translation: trained.Mount, Rotation: tf.FromRPY(0, trained.Pitch+0.02, 0)})
	static(robot.FrameCamera, robot.FrameCameraOptical, tf.Transform{Rotation: tf.FromRPY(-math.Pi/2, 0, -math.Pi/2)})
	hand := func(at time.Time) {
		if _, err := h.in.PutTransform(robot.FrameArmMount, robot.FrameHand, at, tf.Transform{Translation: [3]float64{0.5, 0.2, -0.3}, Rotation: tf.Identity().Rotation}, false); err != nil {
			t.Fatal(err)
		}
		if err := h.in.PutJointState([]string{robot.JointGripper}, []float64{0.03}, at); err != nil {
			t.Fatal(err)
		}
	}
	// The hand and gripper come with each frame, stamped like it.
	step := func() Output {
		hand(h.clock.Now())
		return h.actNow()
	}
	hand(h.clock.Now())
	h.frame(0)
	h.next()
	if n := len(h.sink.outputs()); n != 0 || h.sink.lastStatus() != "waiting: no camera calibration yet (camera_info and its transform): no camera_info yet" {
		t.Fatalf("no camera_info: %d outputs, status %q", n, h.sink.lastStatus())
	}
	f := 256 / 2 / math.Tan(trained.VFOV/2)
	if err := h.in.PutCameraInfo(robot.FrameCameraOptical, 256, 320, [9]float64{f, 0, 159.5, 0, f, 127.5, 0, 0, 1}, nil, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if o := step(); !o.Acting {
		t.Fatalf("everything read: %+v, status %q", o, h.sink.lastStatus())
	}
	obs.mu.Lock()
	gotQ, gotCam, calib := obs.proprio, obs.camera, obs.calib
	obs.mu.Unlock()
	if want := []float32{0.5, -0.05, 0.85, 0.25}; len(gotQ) != 4 || math.Abs(float64(gotQ[0]-want[0])) > 1e-6 || math.Abs(float64(gotQ[1]-want[1])) > 1e-6 ||
		math.Abs(float64(gotQ[2]-want[2])) > 1e-6 || math.Abs(float64(gotQ[3]-want[3])) > 1e-6 {
		t.Errorf("the step read proprioception %v, want %v", gotQ, want)
	}
	if !calib || math.Abs(gotCam.Pitch-(trained.Pitch+0.02)) > 1e-9 || math.Abs(gotCam.VFOV-trained.VFOV) > 1e-9 || gotCam.Mount != trained.Mount {
		t.Errorf("the step read the camera %+v (calibration %v), want the trained one pitched 0.02 rad more", gotCam, calib)
	}
	// The tree stops: the frames go on, the hand's transform ages.
	h.actNow()
	if o := h.actNow(); o.Acting || o.Reason != ReasonStaleProprio ||
		!strings.Contains(h.sink.lastStatus(), "stopped: proprioception too old: tf: arm_mount -> hand: the newest transform is 0.2 s older") {
		t.Errorf("the tree behind the frames: %+v, status %q", o, h.sink.lastStatus())
	}
	if o := step(); !o.Acting {
		t.Errorf("the tree back: %+v, status %q", o, h.sink.lastStatus())
	}
	checkFinite(t, h.sink.outputs())
}
