// Package sim is the built-in simulator: a deterministic kitchen counter
// with a mobile manipulator, a head camera renderer, the task families of
// RT-1 and the Token Turing Machine paper plus memory tasks, success
// detectors and scripted experts.
//
// # Using it
//
//	task, _ := sim.TaskByName("pick")
//	ep, _ := sim.NewEpisode(task, seed, sim.Options{})    // 256x320 frames
//	defer ep.Close()
//	img := make([]byte, 256*320*3)
//	expert := ep.Expert(sim.ExpertOptions{})
//	for !ep.Done() {
//		instruction, _ := ep.Observe(img)                  // what a policy sees
//		_ = instruction
//		ep.Step(expert.Act(ep.State()))                    // an RT-1 action
//	}
//	fmt.Println(ep.Success())
//
// Run does the same loop for any Agent (a policy, or ExpertAgent) and hands
// every frame to a callback. Tasks lists the tasks; SelectTasks parses
// "all", "families", "memory" or a list of names.
//
// # The world
//
// Units are metres, radians and steps; one step is StepSeconds (1/3 s,
// RT-1's 3 Hz). The world frame has x pointing from the robot's start
// towards the counter, y to the left, z up from the floor. A counter's
// front face is at x = CounterFront; its worktop, where objects stand, is
// at z = TableHeight; two drawers (DrawerTop, DrawerBottom) slide out of
// its front towards -x by up to MaxDrawerOpen. Objects come from a
// catalogue of kinds (cans, bottles, a sponge, an apple, a chip bag; see
// Kinds), each with a shape, size and colour; cans and bottles stand
// upright or lie fallen.
//
// The robot's base has a pose (x, y, yaw) on the floor. The end-effector
// (State.EE, the point between the fingertips) is kept in the base frame,
// so it moves with the base; State.EEWorld converts it. The gripper's
// closedness runs from 0 (open) to 1 (closed).
//
// # Actions
//
// Step takes an action in the RT-1 layout of action.RT1 (11 values; out of
// range values are clamped, NaN is an error). The mode selects what acts:
//
//   - terminate: the episode ends; nothing moves.
//   - arm: the end-effector moves by world_vector·ArmScale (5 cm per unit)
//     along the base frame's axes, clamped to the arm's workspace; the
//     rotation deltas (radians) add to the gripper's orientation, which is
//     drawn but does not affect grasping; gripper ∈ [-1, 1] is the
//     closedness target (-1 open, 1 closed), approached by at most
//     GripRate per step. The base dimensions are ignored.
//   - base: base x, y are velocities in m/s in the base frame and base yaw
//     a yaw rate in rad/s, applied for StepSeconds. The arm dimensions are
//     ignored.
//
// The rules are kinematic (see world.go): a gripper closing past 3/4 grasps
// the nearest object within 3 cm of its axis, or a drawer handle; a held
// object follows the hand; one opening below 1/2 lets go, and the object
// drops onto the surface under it, tipping over when a can or bottle falls
// more than 5 cm. A fallen can or bottle lifted high enough hangs upright,
// so placing it stands it up. A hand sweeping at least 3 cm sideways in a
// step through an upright can or bottle knocks it over along the sweep;
// other objects are pushed aside. The hand cannot enter the counter or a
// drawer; coming at an open drawer's front it pushes the drawer in; a held
// handle drags the drawer along x. The base (round) drives until it
// touches the counter, an open drawer or the edge of its floor area, and
// stops there, still turning as commanded; a step that would push the hand
// into the counter is refused whole.
//
// # Tasks
//
// The families (Task.Memory false) are pick, knock, upright, move and
// drawer; the memory tasks, whose goal is shown only in the first frames,
// are cue_pick (a magenta ring marks the object to pick for 3 frames),
// put_back (an object slides away, seen in the frames of steps 1–3, and
// must be returned to its unmarked starting spot) and pointed_drawer (a
// magenta arrow on the counter points at the drawer to open for 3 frames).
// Each task draws its scene, target and phrasing from the seed, caps the
// episode at Task.MaxSteps, and is scored by Success on the privileged
// state (Goal and the thresholds LiftHeight, NearDistance,
// DrawerOpenDistance, DrawerClosedDistance, PutBackDistance).
//
// # Experts
//
// NewExpert (or Episode.Expert) returns a closed-loop scripted expert that
// reads the privileged state, including the cues a policy must remember.
// It moves the base to a working pose first, then the arm through the air
// at a safe height, descending onto objects from above. ExpertOptions adds
// seeded Gaussian action noise and random pauses.
//
// # Rendering
//
// Renderer draws a pinhole view from the head camera (fixed to the base,
// pitched down 41°, vertical field of view 55°) of any size, back to front
// with flat-shaded convex polygons and discs. Drawing goes through OpenCV's
// own cv::fillPoly, cv::circle and cv::line on a gocv.Mat, one cgo call per
// frame (draw_cv.cpp): gocv v0.31's FillPoly needs a newly allocated
// PointsVector per polygon. The tests check that the frames are
// byte-identical to drawing the same list with gocv.FillPolyWithParams,
// gocv.CircleWithParams and gocv.Line. Frames are RGB, (H, W, 3), in a
// buffer the caller owns; rendering allocates nothing in steady state.
//
// # Determinism
//
// Every random choice comes from math/rand/v2 PCG generators seeded from
// the episode's seed and the task's name; nothing depends on map order or
// time. The same task, seed and actions give the same states and frames
// bit for bit on the same platform (float64 arithmetic; a platform that
// fuses multiply-adds may differ in the last bits).
package sim
