package sim

import "math"

// camera is the head camera: a pinhole looking forward along the base's
// heading, pitched down by cameraPitch, with square pixels. Camera
// coordinates: x right, y down (image rows), z along the optical axis.
type camera struct {
	pos              Vec3 // world
	right, down, fwd Vec3 // world directions of the camera axes
	f                float64
	cx, cy           float64 // principal point: the image centre, in pixels
	w, h             float64
}

// set places the camera for state s and an image of h rows and w columns.
// The focal length (pixels) gives the vertical field of view cameraVFOV;
// pixel centres are at integer coordinates, so the optical axis passes
// through ((w-1)/2, (h-1)/2).
func (c *camera) set(s *State, h, w int) {
	c.pos = s.ToWorld(cameraMount)
	sy, cy := math.Sincos(s.Base.Yaw)
	sp, cp := math.Sincos(cameraPitch)
	c.fwd = Vec3{cp * cy, cp * sy, -sp}
	c.right = Vec3{sy, -cy, 0}
	c.down = Vec3{-sp * cy, -sp * sy, -cp}
	c.f, c.cx, c.cy = CameraIntrinsics(h, w)
	c.w, c.h = float64(w), float64(h)
}

// toCam converts a world point to camera coordinates.
func (c *camera) toCam(p Vec3) Vec3 {
	v := p.Sub(c.pos)
	return Vec3{v.Dot(c.right), v.Dot(c.down), v.Dot(c.fwd)}
}

// project maps camera coordinates (q[2] > 0) to pixel coordinates.
func (c *camera) project(q Vec3) (u, v float64) {
	return c.cx + c.f*q[0]/q[2], c.cy + c.f*q[1]/q[2]
}

// facing reports whether a face with outward normal n through point p
// faces the camera.
func (c *camera) facing(p, n Vec3) bool { return n.Dot(c.pos.Sub(p)) > 0 }

// ImagePoint is where world point p appears in the head camera's image of
// h rows and w columns in state s, in pixels (column u, row v); ok is false
// for a point behind the camera. For diagnostics and overlays: a policy
// sees only the image.
func ImagePoint(s *State, h, w int, p Vec3) (u, v float64, ok bool) {
	var c camera
	c.set(s, h, w)
	q := c.toCam(p)
	if q[2] <= 0 {
		return 0, 0, false
	}
	u, v = c.project(q)
	return u, v, true
}
