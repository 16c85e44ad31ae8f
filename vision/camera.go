package vision

import (
	"errors"
	"fmt"
	"math"
)

// CameraGeometry is a head camera's calibration in the robot's base frame
// (x forward, y left, z up, metres): a pinhole at Mount looking along the
// base's heading, pitched down by Pitch radians, with square pixels, a
// vertical field of view VFOV over Height rows and the principal point at
// the image centre. SurfaceZ is the height of the work surface that
// Backproject intersects.
type CameraGeometry struct {
	Mount    [3]float64 `json:"mount"`
	Pitch    float64    `json:"pitch"`
	VFOV     float64    `json:"vfov"`
	Height   int        `json:"height"`
	Width    int        `json:"width"`
	SurfaceZ float64    `json:"surface_z"`
}

// Validate reports the first unusable field.
func (g CameraGeometry) Validate() error {
	for _, v := range []float64{g.Mount[0], g.Mount[1], g.Mount[2], g.Pitch, g.VFOV, g.SurfaceZ} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errors.New("camera geometry: a value is NaN or Inf")
		}
	}
	switch {
	case g.Height < 1 || g.Width < 1:
		return fmt.Errorf("camera geometry: image %dx%d", g.Height, g.Width)
	case !(g.VFOV > 0 && g.VFOV < math.Pi):
		return fmt.Errorf("camera geometry: vertical field of view %v rad: want (0, pi)", g.VFOV)
	case !(g.Pitch > -math.Pi/2 && g.Pitch < math.Pi/2):
		return fmt.Errorf("camera geometry: pitch %v rad: want (-pi/2, pi/2)", g.Pitch)
	case g.SurfaceZ >= g.Mount[2]:
		return fmt.Errorf("camera geometry: the surface (z %v) is not below the camera (z %v)", g.SurfaceZ, g.Mount[2])
	}
	return nil
}

// Backproject returns where the ray through image point (u, v) meets the
// work surface, in the base frame; u and v are fractions of the image's
// width and height (the keypoint convention: pixel column u·Width, row
// v·Height, pixel centres at integer coordinates). ok is false when the
// ray does not go down to the surface.
//
//	ray = fwd + a·right + b·down,  a = (u·W - (W-1)/2)/f,  b = (v·H - (H-1)/2)/f,  f = H / (2 tan(VFOV/2))
//	fwd = (cos p, 0, -sin p), right = (0, -1, 0), down = (-sin p, 0, -cos p)
func (g CameraGeometry) Backproject(u, v float32) (x, y float32, ok bool) {
	dx, dy, dz := g.ray(u, v)
	if dz >= 0 {
		return 0, 0, false
	}
	t := (g.SurfaceZ - g.Mount[2]) / dz
	return float32(g.Mount[0] + t*dx), float32(g.Mount[1] + t*dy), true
}

// AtDepth returns where the ray through image point (u, v) (Backproject's
// convention) passes depth x, the base frame's x: its y and z there. ok is
// false when the ray does not reach x ahead of the camera. Unlike
// Backproject it needs no surface: it locates a point that does not stand
// on the worktop, such as a drawer's handle on the cabinet's front, at the
// depth of whatever reaches for it.
func (g CameraGeometry) AtDepth(u, v, x float32) (y, z float32, ok bool) {
	dx, dy, dz := g.ray(u, v)
	t := (float64(x) - g.Mount[0]) / dx
	if !(dx > 0 && t > 0) {
		return 0, 0, false
	}
	return float32(g.Mount[1] + t*dy), float32(g.Mount[2] + t*dz), true
}

// ray is the direction, in the base frame and not normalised, of the ray
// through image point (u, v) (Backproject's formula).
func (g CameraGeometry) ray(u, v float32) (dx, dy, dz float64) {
	sp, cp := math.Sincos(g.Pitch)
	h, w := float64(g.Height), float64(g.Width)
	f := h / 2 / math.Tan(g.VFOV/2)
	a := (float64(u)*w - (w-1)/2) / f
	b := (float64(v)*h - (h-1)/2) / f
	return cp - sp*b, -a, -sp - cp*b
}
