package ros

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"

	"github.com/ttmrobot/ttm/internal/action"
)

// The topics and services of the policy node, by their default names; the
// simulator's node, Record and Replay use the same. Relative names resolve
// in the node's namespace; every name can be remapped (from:=to).
const (
	TopicImage         = "headcam/image_raw"            // sensor_msgs/Image, in
	TopicCompressed    = "headcam/image_raw/compressed" // sensor_msgs/CompressedImage, in
	TopicInstruction   = "instruction"                  // std_msgs/String, in
	TopicEmbedding     = "instruction_embedding"        // std_msgs/Float32MultiArray, in
	TopicEStop         = "e_stop"                       // std_msgs/Empty, in
	TopicEStopReset    = "e_stop_reset"                 // std_msgs/Empty, in
	TopicHeartbeat     = "heartbeat"                    // std_msgs/Empty, in
	TopicProprio       = "proprio"                      // std_msgs/Float32MultiArray, in (policies that read proprioception)
	TopicTF            = "/tf"                          // tf2_msgs/TFMessage, in: odom -> base_link, arm_mount -> hand
	TopicTFStatic      = "/tf_static"                   // tf2_msgs/TFMessage, in, latched: the robot's fixed frames
	TopicJointStates   = "/joint_states"                // sensor_msgs/JointState, in: the gripper's finger joint (global, as robots publish it)
	TopicCameraInfo    = "headcam/camera_info"          // sensor_msgs/CameraInfo, in: beside the image, same stamp
	TopicAction        = "action"                       // std_msgs/Float32MultiArray, out
	TopicCmdVel        = "cmd_vel"                      // geometry_msgs/Twist, out
	TopicArm           = "arm/command"                  // geometry_msgs/Twist, out
	TopicGripper       = "gripper/command"              // std_msgs/Float64, out
	TopicEpisodeDone   = "episode_done"                 // std_msgs/Bool, out
	TopicStatus        = "status"                       // std_msgs/String, out, latched
	TopicDiagnostics   = "/diagnostics"                 // diagnostic_msgs/DiagnosticArray, out
	ServiceResetMemory = "reset_memory"                 // std_srvs/Trigger
	ServiceEnable      = "enable"                       // std_srvs/SetBool
)

// ResolveNames resolves names by ROS rules (namespace, remaps); the map
// goes from each name to its resolved form.
func (a *Args) ResolveNames(names []string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	for _, n := range names {
		r, err := a.Resolve(n)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", n, err)
		}
		out[n] = r
	}
	return out, nil
}

// ActionLabel is the label of the single dimension of the action topic's
// layout: the action space's dimension names in order, separated by
// semicolons ("mode;world_vector/x;...;base/y"), so a consumer can find
// each value. (Not commas: rostopic echo -p writes CSV.)
func ActionLabel(space action.Space) string {
	names := make([]string, len(space.Dims))
	for i, d := range space.Dims {
		names[i] = d.Name
	}
	return strings.Join(names, ";")
}

// LabelledLayout is the layout of a Float32MultiArray of n values in one
// dimension whose label names them (ActionLabel's convention).
func LabelledLayout(label string, n int) std_msgs.MultiArrayLayout {
	return std_msgs.MultiArrayLayout{Dim: []std_msgs.MultiArrayDimension{{Label: label, Size: uint32(n), Stride: uint32(n)}}}
}

// The reset_memory service's answer names the instruction the new episode
// started with, so that a caller that has just published a new one (the
// simulator node, at each episode) can tell whether the policy node had
// received it: the instruction topic and the service are separate
// connections, and the answer may overtake the message.
const resetAnswerPrefix = "memory reset: a new episode started"

// ResetAnswer is the reset_memory answer for an episode that started with
// instruction text (named false: none, or an upstream embedding).
func ResetAnswer(text string, named bool) string {
	if !named {
		return resetAnswerPrefix
	}
	return resetAnswerPrefix + " with instruction " + strconv.Quote(text)
}

// ParseResetAnswer returns the instruction a reset_memory answer names.
func ParseResetAnswer(msg string) (text string, named bool) {
	rest, ok := strings.CutPrefix(msg, resetAnswerPrefix+" with instruction ")
	if !ok {
		return "", false
	}
	text, err := strconv.Unquote(rest)
	return text, err == nil
}
