package action

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Dimension is one coordinate of the action vector.
//
// A discrete dimension (Bins > 0) is cut into Bins uniform bins over
// [Low, High], as RT-1 does: bin = int((clip(a) - Low) / (High - Low) * (Bins-1)),
// decoded as Low + bin/(Bins-1) * (High - Low). A categorical dimension lists
// its Categories; its value is the category's index. A continuous dimension
// (Bins == 0) is predicted directly and only clamped.
type Dimension struct {
	Name       string   `json:"name"`
	Low        float64  `json:"low"`
	High       float64  `json:"high"`
	Bins       int      `json:"bins"`
	Categories []string `json:"categories,omitempty"`
	// Stop is what the dimension does when the node stops acting: "hold"
	// keeps the last command (absolute targets such as the gripper), "zero"
	// commands zero (deltas and velocities: a zero arm delta holds the last
	// pose target), approached within the rate limit.
	Stop StopMode `json:"stop"`
}

// StopMode is a dimension's behaviour when the node stops acting.
type StopMode string

const (
	StopHold StopMode = "hold"
	StopZero StopMode = "zero"
)

// Space is the layout of the action vector, stored in the checkpoint
// so a node refuses to act with a policy trained for another layout.
type Space struct {
	Dims []Dimension `json:"dims"`
}

// Indices of the RT-1 layout.
const (
	DimMode = iota
	DimWorldX
	DimWorldY
	DimWorldZ
	DimRoll
	DimPitch
	DimYaw
	DimGripper
	DimBaseYaw
	DimBaseX
	DimBaseY
	rt1Dims
)

// Modes of the RT-1 mode dimension.
const (
	ModeTerminate = 0
	ModeArm       = 1
	ModeBase      = 2
)

// RT1 returns RT-1's action space: a 3-way mode (terminate, arm, base), the
// end-effector displacement x, y, z in [-1, 1], rotation deltas roll, pitch,
// yaw in [-π/2, π/2], the gripper in [-1, 1], the base yaw rate in [-π, π] and
// base velocity x, y in [-1, 1], each of the continuous ones in 256 bins.
func RT1() Space {
	d := func(name string, lo, hi float64, stop StopMode) Dimension {
		return Dimension{Name: name, Low: lo, High: hi, Bins: 256, Stop: stop}
	}
	s := Space{Dims: make([]Dimension, rt1Dims)}
	s.Dims[DimMode] = Dimension{Name: "mode", Low: 0, High: 2, Bins: 3,
		Categories: []string{"terminate", "arm", "base"}, Stop: StopHold}
	s.Dims[DimWorldX] = d("world_vector/x", -1, 1, StopZero)
	s.Dims[DimWorldY] = d("world_vector/y", -1, 1, StopZero)
	s.Dims[DimWorldZ] = d("world_vector/z", -1, 1, StopZero)
	s.Dims[DimRoll] = d("rotation_delta/roll", -math.Pi/2, math.Pi/2, StopZero)
	s.Dims[DimPitch] = d("rotation_delta/pitch", -math.Pi/2, math.Pi/2, StopZero)
	s.Dims[DimYaw] = d("rotation_delta/yaw", -math.Pi/2, math.Pi/2, StopZero)
	s.Dims[DimGripper] = d("gripper", -1, 1, StopHold)
	s.Dims[DimBaseYaw] = d("base/yaw", -math.Pi, math.Pi, StopZero)
	s.Dims[DimBaseX] = d("base/x", -1, 1, StopZero)
	s.Dims[DimBaseY] = d("base/y", -1, 1, StopZero)
	return s
}

// RT1ContinuousArm is RT1 with the end-effector displacement x, y, z
// regressed (Bins 0, a squared-error loss) instead of binned. A binned
// head decodes its most probable bin, and a demonstration's small
// corrections (a quarter step sideways while descending) are spread over
// many bins while "no move" is one bin: argmax snaps them to zero, and the
// hand stops a few centimetres from where the expert would have put it. A
// regressed displacement is the demonstrations' conditional mean, and
// follows the correction.
func RT1ContinuousArm() Space {
	s := RT1()
	for _, i := range []int{DimWorldX, DimWorldY, DimWorldZ} {
		s.Dims[i].Bins = 0
	}
	return s
}

// Len is the number of dimensions.
func (s Space) Len() int { return len(s.Dims) }

// Validate reports the first dimension that is unusable.
func (s Space) Validate() error {
	if len(s.Dims) == 0 {
		return errors.New("action space has no dimensions")
	}
	seen := map[string]bool{}
	for i, d := range s.Dims {
		switch {
		case d.Name == "":
			return fmt.Errorf("action dimension %d has no name", i)
		case seen[d.Name]:
			return fmt.Errorf("action dimension %d: name %q used twice", i, d.Name)
		case !(d.Low < d.High) || math.IsInf(d.Low, 0) || math.IsInf(d.High, 0):
			return fmt.Errorf("action dimension %q: bounds [%g, %g] are not a finite interval", d.Name, d.Low, d.High)
		case d.Bins < 0 || d.Bins == 1:
			return fmt.Errorf("action dimension %q: %d bins (want 0 for continuous, or at least 2)", d.Name, d.Bins)
		case len(d.Categories) > 0 && (len(d.Categories) != d.Bins || d.Low != 0 || d.High != float64(d.Bins-1)):
			return fmt.Errorf("action dimension %q: %d categories need %d bins over [0, %d]", d.Name, len(d.Categories), len(d.Categories), len(d.Categories)-1)
		case d.Stop != StopHold && d.Stop != StopZero:
			return fmt.Errorf("action dimension %q: stop mode %q (want hold or zero)", d.Name, d.Stop)
		case d.Stop == StopZero && (d.Low > 0 || d.High < 0):
			return fmt.Errorf("action dimension %q: stop mode zero, but 0 is outside [%g, %g]", d.Name, d.Low, d.High)
		}
		seen[d.Name] = true
	}
	return nil
}

// Compare returns nil if s and o are the same action space, heads
// included (a dimension's bins), else an error naming the first difference.
// A checkpoint uses it to refuse parameters of another head.
func (s Space) Compare(o Space) error { return s.compare(o, true) }

// CompareLayout returns nil if s and o publish the same values: the same
// dimensions with the same names, bounds, categories and stop modes. Whether
// a continuous dimension is predicted in bins or regressed is the policy's
// business, not its consumer's: a node, a replay and a recorded dataset
// take either. It names the first difference.
func (s Space) CompareLayout(o Space) error { return s.compare(o, false) }

func (s Space) compare(o Space, heads bool) error {
	if len(s.Dims) != len(o.Dims) {
		return fmt.Errorf("action space has %d dimensions, expected %d", len(o.Dims), len(s.Dims))
	}
	for i, a := range s.Dims {
		b := o.Dims[i]
		sameHead := a.Bins == b.Bins || !heads && len(a.Categories) == 0 && len(b.Categories) == 0
		if a.Name != b.Name || a.Low != b.Low || a.High != b.High || !sameHead || a.Stop != b.Stop || len(a.Categories) != len(b.Categories) {
			return fmt.Errorf("action dimension %d is %s, expected %s", i, b, a)
		}
		for j := range a.Categories {
			if a.Categories[j] != b.Categories[j] {
				return fmt.Errorf("action dimension %d is %s, expected %s", i, b, a)
			}
		}
	}
	return nil
}

func (d Dimension) String() string {
	if len(d.Categories) > 0 {
		return fmt.Sprintf("%s (categories %v)", d.Name, d.Categories)
	}
	if d.Bins == 0 {
		return fmt.Sprintf("%s [%g, %g] continuous", d.Name, d.Low, d.High)
	}
	return fmt.Sprintf("%s [%g, %g] in %d bins", d.Name, d.Low, d.High, d.Bins)
}

// Bin returns the bin of value a in a discrete dimension, clamping a to the
// bounds first. NaN maps to bin 0; callers reject NaN before this.
func (d Dimension) Bin(a float32) int {
	if len(d.Categories) > 0 {
		return min(max(int(math.Round(float64(a))), 0), d.Bins-1)
	}
	x := min(max(float64(a), d.Low), d.High)
	b := int((x - d.Low) / (d.High - d.Low) * float64(d.Bins-1))
	return min(max(b, 0), d.Bins-1)
}

// Value returns the action value of bin b.
func (d Dimension) Value(b int) float32 {
	if len(d.Categories) > 0 {
		return float32(b)
	}
	return float32(d.Low + float64(b)/float64(d.Bins-1)*(d.High-d.Low))
}

// Clamp returns a limited to the dimension's bounds.
func (d Dimension) Clamp(a float32) float32 {
	return float32(min(max(float64(a), d.Low), d.High))
}

// GateMode applies RT-1's mode to an action in place: in arm mode the base
// velocities are zero, in base mode the arm deltas are, and terminate
// zeroes both (the gripper keeps its target). The node runs it before its
// safety filter, so switching modes is rate limited like any other change;
// replay compares actions after it. It returns the mode.
func GateMode(a []float32) int {
	mode := int(math.Round(float64(a[DimMode])))
	if mode != ModeArm {
		clear(a[DimWorldX : DimYaw+1])
	}
	if mode != ModeBase {
		clear(a[DimBaseYaw : DimBaseY+1])
	}
	return mode
}

// Gated reports whether dimension i is one that mode gates out (see
// GateMode) in an RT-1 layout: the arm's deltas outside arm mode, the
// base's velocities outside base mode. Other layouts gate nothing.
func (s Space) Gated(i, mode int) bool {
	if len(s.Dims) != rt1Dims || s.Dims[DimMode].Name != "mode" {
		return false
	}
	switch {
	case i >= DimWorldX && i <= DimYaw:
		return mode != ModeArm
	case i >= DimBaseYaw && i <= DimBaseY:
		return mode != ModeBase
	}
	return false
}

// PerStep reports whether dimension d is a displacement per control step
// (RT-1's world_vector and rotation_delta), which moves the robot as far
// each step whatever the rate: run at another rate than its policy learnt
// at, it must be scaled by their ratio to move as fast. The other
// dimensions are rates per second (the base's velocities), absolute
// targets (the gripper) or categories (the mode): the same at any rate.
func (d Dimension) PerStep() bool {
	return strings.HasPrefix(d.Name, "world_vector/") || strings.HasPrefix(d.Name, "rotation_delta/")
}

// ArmProprio is the proprioception layout of the arm: the end-effector's
// position in the base frame (metres: forward, left, up) and the gripper's
// closedness (0 open, 1 closed). On a robot it is the forward kinematics of
// the joint states and the gripper's position.
var ArmProprio = []string{"hand_x", "hand_y", "hand_z", "gripper"}

// proprioRanges are the readings a robot can report for the ArmProprio
// names: the hand within 2 m of the base across and ahead, -1 to 3 m up;
// the gripper's closedness 0 to 1 with a margin for a noisy sensor. A
// reading outside them is a fault upstream, not a pose.
var proprioRanges = map[string][2]float32{
	"hand_x":  {-2, 2},
	"hand_y":  {-2, 2},
	"hand_z":  {-1, 3},
	"gripper": {-0.1, 1.1},
}

// ProprioRange is the range a proprioception reading of name may take; ok
// is false for a name without one.
func ProprioRange(name string) (lo, hi float32, ok bool) {
	r, ok := proprioRanges[name]
	return r[0], r[1], ok
}
