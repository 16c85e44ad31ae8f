package action

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestRT1Layout(t *testing.T) {
	s := RT1()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 11 {
		t.Fatalf("%d dimensions, want 11", s.Len())
	}
	for _, tc := range []struct {
		dim      int
		name     string
		lo, hi   float64
		bins     int
		stopMode StopMode
	}{
		{DimMode, "mode", 0, 2, 3, StopHold},
		{DimWorldZ, "world_vector/z", -1, 1, 256, StopZero},
		{DimPitch, "rotation_delta/pitch", -math.Pi / 2, math.Pi / 2, 256, StopZero},
		{DimGripper, "gripper", -1, 1, 256, StopHold},
		{DimBaseYaw, "base/yaw", -math.Pi, math.Pi, 256, StopZero},
		{DimBaseY, "base/y", -1, 1, 256, StopZero},
	} {
		d := s.Dims[tc.dim]
		if d.Name != tc.name || d.Low != tc.lo || d.High != tc.hi || d.Bins != tc.bins || d.Stop != tc.stopMode {
			t.Errorf("dimension %d is %+v", tc.dim, d)
		}
	}
}

func TestBinning(t *testing.T) {
	d := RT1().Dims[DimWorldX] // [-1, 1], 256 bins
	for _, tc := range []struct {
		a    float32
		bin  int
		back float32
	}{
		{-1, 0, -1},
		{1, 255, 1},
		{0, 127, -1 + 127.0/255*2}, // int(0.5·255) = 127
		{-5, 0, -1},                // clipped
		{7, 255, 1},
		{0.5, 191, -1 + 191.0/255*2}, // int(0.75·255) = 191
	} {
		if b := d.Bin(tc.a); b != tc.bin {
			t.Errorf("Bin(%g) = %d, want %d", tc.a, b, tc.bin)
		}
		if v := d.Value(tc.bin); math.Abs(float64(v-tc.back)) > 1e-6 {
			t.Errorf("Value(%d) = %g, want %g", tc.bin, v, tc.back)
		}
	}
	// Decoding a bin and binning the result gives the bin back, for every bin.
	for b := 0; b < 256; b++ {
		if got := d.Bin(d.Value(b)); got != b && got != b-1 {
			t.Fatalf("Bin(Value(%d)) = %d", b, got)
		}
	}
	mode := RT1().Dims[DimMode]
	if mode.Bin(1.2) != ModeArm || mode.Value(ModeBase) != 2 || mode.Bin(-3) != ModeTerminate {
		t.Error("categorical mode dimension misbinned")
	}
}

func TestActionSpaceValidateAndCompare(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Space)
		want string
	}{
		{"empty", func(s *Space) { s.Dims = nil }, "no dimensions"},
		{"no name", func(s *Space) { s.Dims[1].Name = "" }, "has no name"},
		{"twice", func(s *Space) { s.Dims[2].Name = s.Dims[1].Name }, "used twice"},
		{"bounds", func(s *Space) { s.Dims[3].Low = 2 }, "not a finite interval"},
		{"one bin", func(s *Space) { s.Dims[3].Bins = 1 }, "1 bins"},
		{"categories", func(s *Space) { s.Dims[0].Bins = 4 }, "3 categories need 3 bins"},
		{"stop", func(s *Space) { s.Dims[4].Stop = "brake" }, `stop mode "brake"`},
		{"zero outside", func(s *Space) { s.Dims[4].Low, s.Dims[4].High = 1, 2 }, "0 is outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := RT1()
			tc.edit(&s)
			if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	a, b := RT1(), RT1()
	if err := a.Compare(b); err != nil {
		t.Errorf("identical spaces differ: %v", err)
	}
	b.Dims[DimGripper].High = 2
	if err := a.Compare(b); err == nil || !strings.Contains(err.Error(), "action dimension 7 is gripper [-1, 2]") {
		t.Errorf("Compare: %v", err)
	}
	b.Dims = b.Dims[:10]
	if err := a.Compare(b); err == nil || !strings.Contains(err.Error(), "10 dimensions, expected 11") {
		t.Errorf("Compare: %v", err)
	}
}

func TestGateMode(t *testing.T) {
	full := []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		mode float32
		want []float32
	}{
		{0, []float32{0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0}},
		{1, []float32{1, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0}},
		{2, []float32{2, 0, 0, 0, 0, 0, 0, 7, 8, 9, 10}},
		{1.4, []float32{1.4, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0}},
	} {
		a := append([]float32(nil), full...)
		a[0] = tc.mode
		if m := GateMode(a); m != int(math.Round(float64(tc.mode))) || !slices.Equal(a, tc.want) {
			t.Errorf("mode %v: GateMode = %d, %v; want %v", tc.mode, m, a, tc.want)
		}
	}
}

// TestRT1ContinuousArm: RT1 with the arm's x, y, z regressed: valid, the
// same names and ranges, only those three without bins; a regressed value
// decodes as itself, clamped to its range.
func TestRT1ContinuousArm(t *testing.T) {
	c, b := RT1ContinuousArm(), RT1()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for i, d := range c.Dims {
		want := b.Dims[i]
		if i == DimWorldX || i == DimWorldY || i == DimWorldZ {
			want.Bins = 0
		}
		if d.Name != want.Name || d.Low != want.Low || d.High != want.High || d.Bins != want.Bins || d.Stop != want.Stop {
			t.Errorf("dimension %d: %+v, want %+v", i, d, want)
		}
	}
	if err := c.Compare(b); err == nil {
		t.Error("a binned and a regressed arm compare equal")
	}
	if err := b.CompareLayout(c); err != nil {
		t.Errorf("a binned and a regressed arm publish different layouts: %v", err)
	}
	moreBins := RT1()
	moreBins.Dims[DimMode].Bins, moreBins.Dims[DimMode].High = 4, 3
	moreBins.Dims[DimMode].Categories = append(moreBins.Dims[DimMode].Categories, "fourth")
	for _, o := range []Space{moreBins, func() Space { s := RT1ContinuousArm(); s.Dims[DimWorldZ].High = 2; return s }()} {
		if err := b.CompareLayout(o); err == nil {
			t.Errorf("CompareLayout accepts %v", o.Dims)
		}
	}
	for _, tc := range []struct{ in, want float32 }{{0.23, 0.23}, {-0.07, -0.07}, {1.7, 1}, {-3, -1}} {
		if got := c.Dims[DimWorldY].Clamp(tc.in); got != tc.want {
			t.Errorf("Clamp(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestPerStep(t *testing.T) {
	want := map[string]bool{
		"mode": false, "world_vector/x": true, "world_vector/y": true, "world_vector/z": true,
		"rotation_delta/roll": true, "rotation_delta/pitch": true, "rotation_delta/yaw": true,
		"gripper": false, "base/yaw": false, "base/x": false, "base/y": false,
	}
	for _, d := range RT1().Dims {
		w, ok := want[d.Name]
		if !ok {
			t.Fatalf("dimension %q not in the test's table", d.Name)
		}
		if got := d.PerStep(); got != w {
			t.Errorf("%s: PerStep %v, want %v", d.Name, got, w)
		}
	}
}
