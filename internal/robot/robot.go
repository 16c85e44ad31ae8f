// Package robot names the simulated robot's parts as a ROS robot publishes
// them: its tf frames and its gripper joint. The simulator publishes them
// (package sim), and they are the policy node's defaults for where to find
// the hand, the gripper and the camera on a robot's /tf and /joint_states.
package robot

import (
	"cmp"
	"fmt"
	"math"
	"strings"
)

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

// Arm says where a robot's hand and gripper are in what it publishes: the
// hand is the origin of HandFrame in BaseFrame (/tf, /tf_static), and the
// gripper's closedness is GripperJoint's position (/joint_states): 0 at
// GripperOpen, 1 at GripperClosed, linear in between.
type Arm struct {
	BaseFrame, HandFrame       string
	GripperJoint               string
	GripperOpen, GripperClosed float64
}

// Defaults fills in the simulated robot's names for the empty fields (its
// joint's positions too when GripperJoint is empty and both are zero) and
// checks a.
func (a *Arm) Defaults() error {
	a.BaseFrame = cmp.Or(a.BaseFrame, FrameBase)
	a.HandFrame = cmp.Or(a.HandFrame, FrameHand)
	if a.GripperJoint == "" {
		a.GripperJoint = JointGripper
		if a.GripperOpen == 0 && a.GripperClosed == 0 {
			a.GripperOpen, a.GripperClosed = GripperOpenPosition, GripperClosedPosition
		}
	}
	switch {
	case strings.TrimPrefix(a.BaseFrame, "/") == strings.TrimPrefix(a.HandFrame, "/"):
		return fmt.Errorf("base frame and hand frame are both %q", a.BaseFrame)
	case math.IsNaN(a.GripperOpen) || math.IsInf(a.GripperOpen, 0) || math.IsNaN(a.GripperClosed) || math.IsInf(a.GripperClosed, 0) ||
		a.GripperOpen == a.GripperClosed:
		return fmt.Errorf("gripper open %v and closed %v: want two different finite positions", a.GripperOpen, a.GripperClosed)
	}
	return nil
}

// Closedness is the gripper's closedness at joint position pos.
func (a *Arm) Closedness(pos float64) float64 {
	return (pos - a.GripperOpen) / (a.GripperClosed - a.GripperOpen)
}
