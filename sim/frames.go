package sim

import "math"

// The robot's tf frames and its gripper joint, as a ROS robot publishes
// them (internal/ros's FrameOdom ... GripperClosedPosition, repeated here
// because sim imports no ROS library; simnode's tests check they agree).
const (
	FrameOdom          = "odom"
	FrameBase          = "base_link"
	FrameArmMount      = "arm_mount"
	FrameHand          = "hand"
	FrameCamera        = "head_camera_link"
	FrameCameraOptical = "head_camera_optical_frame"

	// JointGripper is the gripper's prismatic finger joint: its position
	// runs from GripperOpenPosition (open) to GripperClosedPosition
	// (closed), metres.
	JointGripper          = "gripper_finger_joint"
	GripperOpenPosition   = 0.04
	GripperClosedPosition = 0.0
)

// ArmMount is the origin of the arm_mount frame in the base frame: the
// arm's shoulder. Its axes are the base's.
var ArmMount = shoulder

// Quat is a rotation as a unit quaternion (x, y, z, w), ROS's order.
type Quat [4]float64

// QuatRPY returns the rotation by roll about x, then pitch about y, then
// yaw about z, all about the fixed axes (tf2's setRPY).
func QuatRPY(roll, pitch, yaw float64) Quat {
	sr, cr := math.Sincos(roll / 2)
	sp, cp := math.Sincos(pitch / 2)
	sy, cy := math.Sincos(yaw / 2)
	return Quat{
		sr*cp*cy - cr*sp*sy,
		cr*sp*cy + sr*cp*sy,
		cr*cp*sy - sr*sp*cy,
		cr*cp*cy + sr*sp*sy,
	}
}

// Transform is the pose of frame Child in frame Parent: a point p in
// Child is Rotation·p + Translation in Parent.
type Transform struct {
	Parent, Child string
	Translation   Vec3
	Rotation      Quat
}

// StaticTransforms returns the robot's fixed frames:
//
//	base_link -> arm_mount                         ArmMount, no rotation
//	base_link -> head_camera_link                  the camera's mount, pitched down by its pitch: RPY(0, pitch, 0), x along the optical axis
//	head_camera_link -> head_camera_optical_frame  RPY(-π/2, 0, -π/2): z forward, x right, y down
func StaticTransforms() [3]Transform {
	return [3]Transform{
		{Parent: FrameBase, Child: FrameArmMount, Translation: ArmMount, Rotation: Quat{0, 0, 0, 1}},
		{Parent: FrameBase, Child: FrameCamera, Translation: cameraMount, Rotation: QuatRPY(0, cameraPitch, 0)},
		{Parent: FrameCamera, Child: FrameCameraOptical, Rotation: QuatRPY(-math.Pi/2, 0, -math.Pi/2)},
	}
}

// Transforms returns the robot's moving frames in state s: odom ->
// base_link (the base's pose; odom is the world frame) and arm_mount ->
// hand (the end effector, EE - ArmMount, with no rotation).
func (s *State) Transforms() [2]Transform {
	return [2]Transform{
		{Parent: FrameOdom, Child: FrameBase, Translation: Vec3{s.Base.X, s.Base.Y, 0}, Rotation: QuatRPY(0, 0, s.Base.Yaw)},
		{Parent: FrameArmMount, Child: FrameHand, Translation: s.EE.Sub(ArmMount), Rotation: Quat{0, 0, 0, 1}},
	}
}

// GripperPosition is the position of the finger joint JointGripper for
// the gripper's closedness s.Grip (0 open .. 1 closed).
func (s *State) GripperPosition() float64 {
	return GripperOpenPosition + s.Grip*(GripperClosedPosition-GripperOpenPosition)
}

// CameraIntrinsics returns the head camera's focal length and principal
// point, in pixels, for images of h rows and w columns: K = [f 0 cx; 0 f
// cy; 0 0 1] in the optical frame.
func CameraIntrinsics(h, w int) (f, cx, cy float64) {
	return float64(h) / 2 / math.Tan(cameraVFOV/2), (float64(w) - 1) / 2, (float64(h) - 1) / 2
}
