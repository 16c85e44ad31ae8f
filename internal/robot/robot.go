// Package robot names the simulated robot's parts as a ROS robot publishes
// them: its tf frames and its gripper joint. The simulator publishes them
// (package sim), and they are the policy node's defaults for where to find
// the hand, the gripper and the camera on a robot's /tf and /joint_states.
package robot

// The simulated robot's description: its tf frames and joints, as the
// simulator publishes them (parent -> child):
//
//	odom -> base_link                              /tf, the base's pose on the floor (x, y, yaw)
//	base_link -> arm_mount                         /tf_static, the arm's shoulder
//	arm_mount -> hand                              /tf, the end effector (identity rotation)
//	base_link -> head_camera_link                  /tf_static, x forward along the optical axis, pitched down
//	head_camera_link -> head_camera_optical_frame  /tf_static, z forward, x right, y down
//
// The camera's image and camera_info carry FrameCameraOptical. Frame ids
// are not remapped.
const (
	FrameOdom          = "odom"
	FrameBase          = "base_link"
	FrameArmMount      = "arm_mount"
	FrameHand          = "hand"
	FrameCamera        = "head_camera_link"
	FrameCameraOptical = "head_camera_optical_frame"
	// JointGripper is the gripper's prismatic finger joint on
	// joint_states (sensor_msgs/JointState): its position in metres runs from
	// GripperOpenPosition (open) to GripperClosedPosition (closed).
	JointGripper          = "gripper_finger_joint"
	GripperOpenPosition   = 0.04
	GripperClosedPosition = 0.0
)
