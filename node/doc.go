// Package node is the policy's ROS 1 node: it reads its parameters, loads
// and warms up the policy, subscribes to the camera, the instruction and
// the operator's inputs, runs the fixed-rate control loop (Loop; its tick
// and the fail-closed rule are described in loop.go), and publishes the
// actions, the latched status and /diagnostics (Start, Run). The ROS
// plumbing it stands on (arguments, names, parameters, the supervisor that
// survives master restarts, the clocks, the topic names) is internal/ros.
package node
