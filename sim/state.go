package sim

import "math"

// Pose is the base's pose on the floor: position in metres and heading Yaw
// in radians, counter-clockwise from the world's +x axis.
type Pose struct{ X, Y, Yaw float64 }

// Object is one object in the scene.
type Object struct {
	Kind Kind
	// Pos is the centre of the object's body in the world frame. An object
	// that is not held rests on the surface under it.
	Pos Vec3
	// Yaw is the direction (radians) of a fallen object's axis, from its
	// bottom to its top, or of a box's long side.
	Yaw float64
	// Fallen: a can or bottle lying on its side.
	Fallen bool
}

// Bottom returns the height of the object's lowest point.
func (o *Object) Bottom() float64 { return o.Pos[2] - halfHeight(o.Kind, o.Fallen) }

// Top returns the height of the object's highest point.
func (o *Object) Top() float64 { return o.Pos[2] + halfHeight(o.Kind, o.Fallen) }

// Drawer is one of the counter's drawers.
type Drawer struct {
	// Open is how far the drawer is pulled out, in metres, 0..MaxDrawerOpen.
	Open float64
}

// GraspKind says what the gripper holds.
type GraspKind uint8

const (
	GraspNone GraspKind = iota
	GraspObject
	GraspDrawer
)

// Grasp is what the gripper holds.
type Grasp struct {
	Kind GraspKind
	// Index is the object's index in State.Objects or the drawer's index.
	Index int
	// Offset is the held object's centre minus the end-effector, world frame.
	Offset Vec3
}

// Holds reports whether the gripper holds object i.
func (g Grasp) Holds(i int) bool { return g.Kind == GraspObject && g.Index == i }

// CueKind is the kind of memory cue a task shows at the start.
type CueKind uint8

const (
	CueNone CueKind = iota
	// CueRing: a magenta ring on the worktop around the target object.
	CueRing
	// CueArrow: a magenta arrow on the counter's front pointing at the
	// target drawer.
	CueArrow
)

// Goal is the privileged description of what the episode's task wants.
// Experts and success detectors read it; a policy must not.
type Goal struct {
	Kind   GoalKind
	Object int // target object: picked, knocked, uprighted, moved, put back
	Other  int // move: the object to move Object near
	Drawer int // drawer tasks: DrawerTop or DrawerBottom
	Open   bool
	// Exclusive: the drawer other than Drawer must stay closed.
	Exclusive bool

	Cue      CueKind
	CueSteps int // the cue is visible in the frames of steps 0 .. CueSteps-1

	// put_back: Spot is the object's starting centre. It slides to
	// SlideTo: the frame of step SlideStart-1+k shows it k/SlideSteps of
	// the way (k = 1..SlideSteps); Moved is set when it has arrived.
	Spot       Vec3
	SlideTo    Vec3
	SlideStart int
	SlideSteps int
	Moved      bool
}

// State is the whole simulator state. Everything is privileged: the
// policy sees only rendered frames and the instruction.
type State struct {
	// Step counts the steps taken.
	Step int
	Base Pose
	// EE is the end-effector, the point between the fingertips, in the base
	// frame: x forward, y left, z up from the floor (metres). It moves with
	// the base.
	EE Vec3
	// Rot is the gripper's roll, pitch and yaw relative to the base, each in
	// [-π/2, π/2] (integrated from the rotation deltas). Only the yaw is
	// drawn; grasping ignores the orientation.
	Rot Vec3
	// Grip is the gripper's closedness, 0 open .. 1 closed.
	Grip    float64
	Grasp   Grasp
	Objects []Object
	Drawers [NumDrawers]Drawer
	Goal    Goal
	// Terminated is set by a terminate action.
	Terminated bool
}

// ToWorld converts a point from the base frame to the world frame.
func (s *State) ToWorld(p Vec3) Vec3 {
	w := rotZ(p, s.Base.Yaw)
	return Vec3{w[0] + s.Base.X, w[1] + s.Base.Y, w[2]}
}

// ToBase converts a point from the world frame to the base frame.
func (s *State) ToBase(p Vec3) Vec3 {
	return rotZ(Vec3{p[0] - s.Base.X, p[1] - s.Base.Y, p[2]}, -s.Base.Yaw)
}

// EEWorld returns the end-effector in the world frame.
func (s *State) EEWorld() Vec3 { return s.ToWorld(s.EE) }

// Resting reports whether object i lies on the surface under it (not held).
func (s *State) Resting(i int) bool {
	if s.Grasp.Holds(i) {
		return false
	}
	o := &s.Objects[i]
	return math.Abs(o.Bottom()-surfaceZ(o.Pos[0], o.Pos[1])) < 1e-6
}

// OnTable reports whether object i rests on the worktop.
func (s *State) OnTable(i int) bool {
	o := &s.Objects[i]
	return s.Resting(i) && onCounter(o.Pos[0], o.Pos[1])
}

// Lift returns how far object i's lowest point is above the surface under it.
func (s *State) Lift(i int) float64 {
	o := &s.Objects[i]
	return o.Bottom() - surfaceZ(o.Pos[0], o.Pos[1])
}

// Clone returns a deep copy of s.
func (s *State) Clone() *State {
	c := *s
	c.Objects = append([]Object(nil), s.Objects...)
	return &c
}
