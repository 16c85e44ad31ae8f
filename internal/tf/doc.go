// Package tf holds rigid transforms and a buffer of the transform tree, as
// ROS's tf2 keeps it from /tf and /tf_static.
//
// A Transform T of child in parent maps points in the child frame to the
// parent frame: p_parent = R(q)·p_child + t, with q a unit quaternion
// (x, y, z, w). Composition a.Mul(b) applies b first, then a, so the pose
// of c in a is T_ab.Mul(T_bc).
//
// A Buffer stores each frame's edge to its parent: one transform for a
// static edge, a time series for a dynamic one. Lookup(target, source, at)
// walks both frames up to their common ancestor A, interpolates each
// dynamic edge at the requested time (linear in translation, shortest-path
// slerp in rotation, as tf2 does) and returns
//
//	T_target_source = T_A_target⁻¹ · T_A_source,
//
// the pose of source in target: it takes points from source into target.
// Lookup does not allocate unless it fails. The package imports only the
// standard library; converting ROS messages is left to the ROS plumbing.
package tf
