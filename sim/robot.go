package sim

import "time"

// The robot: a round mobile base with an arm and a parallel gripper, and a
// camera on its head. Its action is an RT-1 action vector
// (action.RT1()); one Step lasts StepSeconds.
const (
	// StepSeconds is the duration of one step (RT-1 ran at 3 Hz).
	StepSeconds = 1.0 / 3
	// StepPeriod is StepSeconds as a duration, to the nanosecond: the
	// time between the frames of recorded episodes.
	StepPeriod = time.Second / 3
	// ArmScale is the end-effector displacement in metres per unit of
	// world_vector in one step: a full-scale action moves it 5 cm along each
	// axis of the base frame.
	ArmScale = 0.05
	// GripRate is the largest change of the gripper's closedness in one step.
	GripRate = 0.5

	graspClosed   = 0.75 // closedness at which a closing gripper grasps
	releaseClosed = 0.5  // below this a held object is let go
	gripperWidth  = 0.10 // finger gap when fully open
	eeRadius      = 0.015

	baseRadius = 0.30
	baseMinX   = -1.0
	baseMaxX   = 0.25
	baseMaxY   = 1.0
)

// The arm's workspace: the end-effector stays in this box of the base frame.
var (
	armMin  = Vec3{0.15, -0.55, 0.30}
	armMax  = Vec3{0.95, 0.55, 1.30}
	armHome = Vec3{0.28, -0.24, 0.95}
	// shoulder is where the forearm is drawn from, in the base frame.
	shoulder = Vec3{0.0, -0.25, 1.15}
)

// The head camera, fixed to the base: its position in the base frame, the
// downward pitch of its optical axis and its vertical field of view.
var (
	cameraMount = Vec3{-0.05, 0, 1.40}
)

const (
	cameraPitch = 0.72 // radians below the horizon (41°)
	cameraVFOV  = 0.96 // radians (55°)
	cameraNear  = 0.05 // metres
)
