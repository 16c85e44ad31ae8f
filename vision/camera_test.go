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

// TestAtDepthByHand: the centre ray of a camera pitched down 45 degrees
// drops as far as it goes ahead; any ray passes its own back-projection at
// the surface's height; no ray reaches a depth behind the camera, and one
// above the horizon still passes depths ahead (a handle needs no surface).
func TestAtDepthByHand(t *testing.T) {
	g := CameraGeometry{Mount: [3]float64{0.1, -0.2, 1.5}, Pitch: math.Pi / 4, VFOV: math.Pi / 2, Height: 101, Width: 201, SurfaceZ: 0.5}
	y, z, ok := g.AtDepth(100.0/201, 50.0/101, 0.6)
	if !ok || math.Abs(float64(y)+0.2) > 1e-6 || math.Abs(float64(z)-1.0) > 1e-6 {
		t.Errorf("centre at x 0.6: (%v, %v, %v), want (-0.2, 1.0, true): 0.5 m ahead at 45 degrees is 0.5 m down", y, z, ok)
	}
	for _, p := range [][2]float32{{0.1, 0.9}, {0.8, 0.7}, {0.5, 0.99}} {
		x, by, ok := g.Backproject(p[0], p[1])
		if !ok {
			t.Fatalf("%v misses the surface", p)
		}
		y, z, ok := g.AtDepth(p[0], p[1], x)
		if !ok || math.Abs(float64(y-by)) > 1e-5 || math.Abs(float64(z)-g.SurfaceZ) > 1e-5 {
			t.Errorf("%v at its back-projection's depth %v: (%v, %v, %v), want (%v, %v, true)", p, x, y, z, ok, by, g.SurfaceZ)
		}
	}
	if _, _, ok := g.AtDepth(100.0/201, 50.0/101, 0.05); ok {
		t.Error("a depth behind the camera (x 0.05 < 0.1) must not be reached")
	}
	g.Pitch = math.Pi / 8
	if _, z, ok := g.AtDepth(100.0/201, 0, 1.1); !ok || !(z > 1.5) {
		t.Errorf("a ray above the horizon at 1 m ahead: z %v (%v), want above the camera", z, ok)
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
