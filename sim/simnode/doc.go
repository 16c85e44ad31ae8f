// Package simnode is the simulator as a ROS 1 node, the counterpart of the
// policy node (package node) over the topics both use (internal/ros): for
// each episode it publishes the instruction, the headcam frames with their
// camera_info, and what the robot senses of itself (proprioception, tf and
// joint_states, as a ROS robot publishes them), and steps the simulator
// with the actions the policy node publishes (Run, Start). ReplayFrames
// and ReplayRobot turn a recorded episode into what ros.Replay
// republishes to a live node.
//
// It knows the action layout (internal/action), not the policy stack.
package simnode
