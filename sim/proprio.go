package sim

import (
	"strings"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/internal/rosbag"
)

// ProprioLen is the length of the robot's proprioception (action.ArmProprio).
var ProprioLen = len(action.ArmProprio)

// Proprio writes what the robot senses of itself into dst (ProprioLen), in
// action.ArmProprio's layout: the end-effector in the base frame (what a
// robot's forward kinematics gives from its joint states) and the
// gripper's closedness. Unlike the rest of the state it is not privileged:
// a robot knows it without looking.
func (s *State) Proprio(dst []float32) {
	dst[0], dst[1], dst[2] = float32(s.EE[0]), float32(s.EE[1]), float32(s.EE[2])
	dst[3] = float32(s.Grip)
}

// proprioLayout labels the proprio topic's values, as the node checks them.
var proprioLayout = rosbag.MultiArrayLayout{Dim: []rosbag.MultiArrayDimension{
	{Label: strings.Join(action.ArmProprio, ";"), Size: uint32(len(action.ArmProprio)), Stride: uint32(len(action.ArmProprio))}}}
