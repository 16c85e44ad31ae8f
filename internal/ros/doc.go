// Package ros is the project's ROS 1 plumbing, shared by the policy node
// (package node) and the simulator's node (package sim/simnode); it is the
// only package that uses goroslib's node API.
//
// It holds the ROS conventions goroslib leaves to the program: the command
// line and environment of a node (ParseArgs), graph name resolution and
// remapping (Resolver), typed parameters (Params) over a small XML-RPC
// client of the master, and a Supervisor that keeps a goroslib node
// registered across master restarts and hands each new node (Node) to a
// Setup function, which creates its publishers, subscribers and services
// (NewPublisher, NewSubscriber, NewServiceProvider, NewServiceClient). It
// also holds the clocks a control loop runs on (WallClock, ROS time with
// /use_sim_time: SimClock, and ManualClock for tests), the names and
// conventions of the topics the two nodes share (TopicImage, ...,
// ResetAnswer), and recording those topics to a bag (Record) and
// republishing a recorded episode to a live node (Replay).
package ros
