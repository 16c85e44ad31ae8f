package sim

import (
	"math"

	"github.com/ttmrobot/ttm/internal/robot"
	"github.com/ttmrobot/ttm/internal/tf"
)

// ArmMount is the origin of the arm_mount frame in the base frame: the
// arm's shoulder. Its axes are the base's.
var ArmMount = shoulder

// Transform is the pose of frame Child in frame Parent: a point p in
// Child is T·p in Parent.
type Transform struct {
	Parent, Child string
	T             tf.Transform
}

// StaticTransforms returns the robot's fixed frames:
//
//	base_link -> arm_mount                         ArmMount, no rotation
//	base_link -> head_camera_link                  the camera's mount, pitched down by its pitch: RPY(0, pitch, 0), x along the optical axis
//	head_camera_link -> head_camera_optical_frame  RPY(-π/2, 0, -π/2): z forward, x right, y down
func StaticTransforms() [3]Transform {
	return [3]Transform{
		{Parent: robot.FrameBase, Child: robot.FrameArmMount, T: tf.Transform{Translation: ArmMount, Rotation: tf.Identity().Rotation}},
		{Parent: robot.FrameBase, Child: robot.FrameCamera, T: tf.Transform{Translation: cameraMount, Rotation: tf.FromRPY(0, cameraPitch, 0)}},
		{Parent: robot.FrameCamera, Child: robot.FrameCameraOptical, T: tf.Transform{Rotation: tf.FromRPY(-math.Pi/2, 0, -math.Pi/2)}},
	}
}

// Transforms returns the robot's moving frames in state s: odom ->
// base_link (the base's pose; odom is the world frame) and arm_mount ->
// hand (the end effector, EE - ArmMount, with no rotation).
func (s *State) Transforms() [2]Transform {
	return [2]Transform{
		{Parent: robot.FrameOdom, Child: robot.FrameBase, T: tf.Transform{Translation: [3]float64{s.Base.X, s.Base.Y, 0}, Rotation: tf.FromRPY(0, 0, s.Base.Yaw)}},
		{Parent: robot.FrameArmMount, Child: robot.FrameHand, T: tf.Transform{Translation: s.EE.Sub(ArmMount), Rotation: tf.Identity().Rotation}},
	}
}

// GripperPosition is the position of the finger joint JointGripper for
// the gripper's closedness s.Grip (0 open .. 1 closed).
func (s *State) GripperPosition() float64 {
	return robot.GripperOpenPosition + s.Grip*(robot.GripperClosedPosition-robot.GripperOpenPosition)
}

// CameraIntrinsics returns the head camera's focal length and principal
// point, in pixels, for images of h rows and w columns: K = [f 0 cx; 0 f
// cy; 0 0 1] in the optical frame.
func CameraIntrinsics(h, w int) (f, cx, cy float64) {
	return float64(h) / 2 / math.Tan(cameraVFOV/2), (float64(w) - 1) / 2, (float64(h) - 1) / 2
}
