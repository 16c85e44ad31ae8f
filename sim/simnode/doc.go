// Package simnode is the simulator as a ROS 1 node, the counterpart of the
// policy node (package node) over the topics both use (internal/ros): for
// each episode it publishes the instruction, the headcam frames and the
// robot's proprioception, and steps the simulator with the actions the
// policy node publishes (Run, Start). ReplayFrames turns a recorded episode
// into the frames ros.Replay republishes to a live node.
//
// It knows the action layout (internal/action), not the policy stack.
package simnode
