package robot

import (
	"math"
	"strings"
	"testing"
)

func TestArm(t *testing.T) {
	var a Arm
	if err := a.Defaults(); err != nil {
		t.Fatal(err)
	}
	if a != (Arm{FrameBase, FrameHand, JointGripper, GripperOpenPosition, GripperClosedPosition}) {
		t.Errorf("defaults %+v", a)
	}
	for _, tc := range []struct{ pos, want float64 }{{0.04, 0}, {0, 1}, {0.01, 0.75}, {0.05, -0.25}} {
		if got := a.Closedness(tc.pos); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("closedness at %v = %v, want %v", tc.pos, got, tc.want)
		}
	}
	// A joint of its own keeps its positions, even zero and one.
	b := Arm{GripperJoint: "finger", GripperOpen: 0, GripperClosed: 1}
	if err := b.Defaults(); err != nil || b.GripperOpen != 0 || b.GripperClosed != 1 || b.Closedness(0.25) != 0.25 {
		t.Errorf("own joint: %+v, %v", b, err)
	}
	for _, tc := range []struct {
		arm  Arm
		want string
	}{
		{Arm{BaseFrame: "/hand"}, `both "/hand"`},
		{Arm{GripperJoint: "finger"}, "two different finite positions"},
		{Arm{GripperJoint: "finger", GripperOpen: math.NaN(), GripperClosed: 1}, "two different finite positions"},
		{Arm{GripperOpen: math.Inf(1)}, "two different finite positions"},
	} {
		if err := tc.arm.Defaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.arm, err, tc.want)
		}
	}
}
