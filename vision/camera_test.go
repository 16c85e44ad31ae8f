package vision

import (
	"math"
	"strings"
	"testing"
)

// TestBackprojectByHand: the ray through the image centre of a camera
// pitched down by p at height h above the surface meets it (h / tan p)
// ahead; a point left of centre lands left (y > 0), one above the horizon
// misses.
func TestBackprojectByHand(t *testing.T) {
	g := CameraGeometry{Mount: [3]float64{0.1, -0.2, 1.5}, Pitch: math.Pi / 4, VFOV: math.Pi / 2, Height: 101, Width: 201, SurfaceZ: 0.5}
	// Pixel centres at integer coordinates: the centre pixel is (100, 50),
	// a fraction of (100/201, 50/101).
	x, y, ok := g.Backproject(100.0/201, 50.0/101)
	if !ok || math.Abs(float64(x)-1.1) > 1e-6 || math.Abs(float64(y)+0.2) > 1e-6 {
		t.Errorf("centre: (%v, %v, %v), want (1.1, -0.2, true): 1 m below at 45 degrees is 1 m ahead", x, y, ok)
	}
	// The bottom row's centre, 50 pixels below the axis: the ray
	// fwd + b·down with b = 50/f, intersected by hand.
	f := 101.0 / 2 / math.Tan(math.Pi/4)
	b := (100.0 - 50) / f
	sp, cp := math.Sincos(math.Pi / 4)
	wantX := 0.1 + (0.5-1.5)/(-sp-cp*b)*(cp-sp*b)
	x, y, ok = g.Backproject(100.0/201, 100.0/101)
	if !ok || math.Abs(float64(x)-wantX) > 1e-5 || math.Abs(float64(y)+0.2) > 1e-6 {
		t.Errorf("bottom: (%v, %v, %v), want (%v, -0.2, true)", x, y, ok, wantX)
	}
	if x, y, ok := g.Backproject(0, 50.0/101); !ok || !(y > -0.2) || math.Abs(float64(x)-1.1) > 1e-6 {
		t.Errorf("left edge: (%v, %v, %v), want y > -0.2 (left of the camera) at the same depth", x, y, ok)
	}
	g.Pitch = math.Pi / 8
	if _, _, ok := g.Backproject(100.0/201, 0); ok {
		t.Error("pitched down 22.5 degrees, the top row looks about 22 degrees above the horizon: it must miss the surface")
	}
}

func TestCameraGeometryValidate(t *testing.T) {
	good := CameraGeometry{Mount: [3]float64{0, 0, 1.4}, Pitch: 0.7, VFOV: 1, Height: 128, Width: 160, SurfaceZ: 0.85}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(*CameraGeometry)
		want string
	}{
		{func(g *CameraGeometry) { g.Height = 0 }, "image 0x160"},
		{func(g *CameraGeometry) { g.VFOV = 4 }, "field of view"},
		{func(g *CameraGeometry) { g.Pitch = 2 }, "pitch"},
		{func(g *CameraGeometry) { g.SurfaceZ = 2 }, "not below the camera"},
		{func(g *CameraGeometry) { g.Mount[1] = math.NaN() }, "NaN or Inf"},
	} {
		g := good
		tc.edit(&g)
		if err := g.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", g, err, tc.want)
		}
	}
}
