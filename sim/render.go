package sim

import (
	"errors"
	"fmt"
	"math"
)

// Renderer draws the head camera's view of a state: a pinhole projection of
// the scene, painted back to front with flat-shaded convex polygons and
// discs through OpenCV. It reuses its image and draw list, so rendering
// allocates nothing once the first frame is drawn. A Renderer is not safe
// for concurrent use.
type Renderer struct {
	h, w int
	cv   *canvas
	list drawList
	cam  camera
	s    *State // the state being drawn
	grp  [maxGroups]group
	// Scratch for poly: vertices being clipped, fixed-point output.
	va, vb [maxPoly]Vec3
	xy     [2 * maxPoly]int32
}

// MaxImageSide is the largest image height or width a Renderer accepts.
const MaxImageSide = 4096

const maxGroups = 64

// group is an object, or the arm with what it holds, sorted by depth.
type group struct {
	depth float64
	obj   int // object index, or -1 for the arm
}

// NewRenderer returns a renderer of h×w RGB images.
func NewRenderer(h, w int) (*Renderer, error) {
	if h < 8 || w < 8 || h > MaxImageSide || w > MaxImageSide {
		return nil, fmt.Errorf("sim: image size %dx%d: each side must be in [8, %d]", h, w, MaxImageSide)
	}
	cv, err := newCanvas(h, w)
	if err != nil {
		return nil, err
	}
	return &Renderer{h: h, w: w, cv: cv,
		list: drawList{ops: make([]int32, 0, 512*opFields), pts: make([]int32, 0, 16384)}}, nil
}

// Size returns the image height and width.
func (r *Renderer) Size() (h, w int) { return r.h, r.w }

// Close frees the OpenCV image. The renderer cannot be used afterwards.
func (r *Renderer) Close() {
	if r.cv != nil {
		r.cv.close()
		r.cv = nil
	}
}

// Render draws s into dst, an (H, W, 3) RGB image of H·W·3 bytes, row
// major. The memory cue of s's goal is drawn while s.Step < Goal.CueSteps.
func (r *Renderer) Render(dst []byte, s *State) error {
	if r.cv == nil {
		return errors.New("sim: render after Close")
	}
	if len(dst) != r.h*r.w*3 {
		return fmt.Errorf("sim: render: image buffer has %d bytes, want %d (%dx%dx3)", len(dst), r.h*r.w*3, r.h, r.w)
	}
	if err := r.build(s); err != nil {
		return err
	}
	if err := r.cv.paint(&r.list); err != nil {
		return err
	}
	copy(dst, r.cv.data)
	return nil
}

// Colours of the scene.
var (
	colWall     = RGB{205, 208, 215}
	colFloor    = RGB{120, 116, 110}
	colTop      = RGB{176, 134, 92}
	colCabinet  = RGB{222, 218, 206}
	colRecess   = RGB{55, 48, 42}
	colPanel    = RGB{200, 192, 176}
	colInterior = RGB{120, 92, 64}
	colHandle   = RGB{60, 60, 66}
	colCue      = RGB{255, 0, 220}
	colFinger   = RGB{40, 40, 45}
	colPalm     = RGB{80, 80, 88}
	colForearm  = RGB{96, 100, 112}
)

var lightDir = Vec3{-0.35, 0.3, 0.887}

// shade darkens c for a face of outward normal n lit from lightDir.
func shade(c RGB, n Vec3) RGB {
	k := 0.6 + 0.4*max(0, n.Dot(lightDir))
	return RGB{uint8(float64(c[0])*k + 0.5), uint8(float64(c[1])*k + 0.5), uint8(float64(c[2])*k + 0.5)}
}

// build fills the draw list for s.
func (r *Renderer) build(s *State) error {
	if err := s.Check(); err != nil {
		return err
	}
	r.s = s
	r.list.reset()
	r.cam.set(s, r.h, r.w)
	r.list.fill(colWall)
	r.quad(Vec3{-4, -4, 0}, Vec3{wallX, -4, 0}, Vec3{wallX, 4, 0}, Vec3{-4, 4, 0}, colFloor)
	r.quad(Vec3{wallX, -4, 0}, Vec3{wallX, 4, 0}, Vec3{wallX, 4, 3}, Vec3{wallX, -4, 3}, shade(colWall, Vec3{-1, 0, 0}))

	// Objects on the floor, behind or beside the counter, go first.
	for i := range s.Objects {
		if !s.Grasp.Holds(i) && !onCounter(s.Objects[i].Pos[0], s.Objects[i].Pos[1]) {
			r.object(&s.Objects[i])
		}
	}
	r.counter()
	cue := s.Goal.Cue != CueNone && s.Step < s.Goal.CueSteps
	if cue && s.Goal.Cue == CueArrow {
		r.arrow(s.Goal.Drawer)
	}
	if cue && s.Goal.Cue == CueRing && s.Goal.Object >= 0 && s.Goal.Object < len(s.Objects) {
		o := &s.Objects[s.Goal.Object]
		r.disc(Vec3{o.Pos[0], o.Pos[1], surfaceZ(o.Pos[0], o.Pos[1]) + 0.002}, footprint(o.Kind, o.Fallen)+0.03, colCue)
	}

	// Objects on the counter and the arm, far to near.
	n := 0
	for i := range s.Objects {
		if !s.Grasp.Holds(i) && onCounter(s.Objects[i].Pos[0], s.Objects[i].Pos[1]) {
			r.grp[n] = group{depth: r.cam.toCam(s.Objects[i].Pos)[2], obj: i}
			n++
		}
	}
	r.grp[n] = group{depth: r.cam.toCam(s.EEWorld())[2] - 0.02, obj: -1}
	n++
	for i := 1; i < n; i++ { // insertion sort, farthest first
		for j := i; j > 0 && r.grp[j].depth > r.grp[j-1].depth; j-- {
			r.grp[j], r.grp[j-1] = r.grp[j-1], r.grp[j]
		}
	}
	for _, g := range r.grp[:n] {
		if g.obj < 0 {
			r.arm()
		} else {
			r.object(&s.Objects[g.obj])
		}
	}
	return nil
}

// counter draws the cabinet, its worktop and the drawers.
func (r *Renderer) counter() {
	const x0, x1, hw = CounterFront, counterBack, counterHalfWidth
	r.quad(Vec3{x0, -hw, TableHeight}, Vec3{x1, -hw, TableHeight}, Vec3{x1, hw, TableHeight}, Vec3{x0, hw, TableHeight}, shade(colTop, Vec3{0, 0, 1}))
	r.face(Vec3{x0, -hw, 0}, Vec3{x0, hw, 0}, Vec3{x0, hw, TableHeight}, Vec3{x0, -hw, TableHeight}, Vec3{-1, 0, 0}, colCabinet)
	r.face(Vec3{x0, hw, 0}, Vec3{x1, hw, 0}, Vec3{x1, hw, TableHeight}, Vec3{x0, hw, TableHeight}, Vec3{0, 1, 0}, colCabinet)
	r.face(Vec3{x0, -hw, 0}, Vec3{x1, -hw, 0}, Vec3{x1, -hw, TableHeight}, Vec3{x0, -hw, TableHeight}, Vec3{0, -1, 0}, colCabinet)
	for i := range NumDrawers {
		z0, z1 := drawerZ(i)
		const g = 0.012
		r.quad(Vec3{x0 - 0.001, -drawerHalfWidth - g, z0 - g}, Vec3{x0 - 0.001, drawerHalfWidth + g, z0 - g},
			Vec3{x0 - 0.001, drawerHalfWidth + g, z1 + g}, Vec3{x0 - 0.001, -drawerHalfWidth - g, z1 + g}, colRecess)
	}
	for _, i := range [NumDrawers]int{DrawerBottom, DrawerTop} {
		r.drawer(i, r.s.Drawers[i].Open)
	}
}

// drawer draws drawer i pulled out by d.
func (r *Renderer) drawer(i int, d float64) {
	z0, z1 := drawerZ(i)
	front := CounterFront - d
	const hw, t = drawerHalfWidth, 0.01 // half width, wall thickness
	if d > 0.002 {
		zf := z0 + 0.02
		r.quad(Vec3{front + drawerPanel, -hw + t, zf}, Vec3{CounterFront, -hw + t, zf},
			Vec3{CounterFront, hw - t, zf}, Vec3{front + drawerPanel, hw - t, zf}, shade(colInterior, Vec3{0, 0, 1}))
		for _, sy := range [2]float64{-1, 1} {
			yi, yo := sy*(hw-t), sy*hw
			r.face(Vec3{front, yi, zf}, Vec3{CounterFront, yi, zf}, Vec3{CounterFront, yi, z1}, Vec3{front, yi, z1}, Vec3{0, -sy, 0}, colPanel)
			r.face(Vec3{front, yo, z0}, Vec3{CounterFront, yo, z0}, Vec3{CounterFront, yo, z1}, Vec3{front, yo, z1}, Vec3{0, sy, 0}, colPanel)
		}
	}
	r.box(Vec3{front + drawerPanel/2, 0, (z0 + z1) / 2}, 0, Vec3{drawerPanel, 2 * hw, z1 - z0}, colPanel)
	h := handlePos(i, d)
	r.box(Vec3{h[0] + handleOut/2, 0, h[2]}, 0, Vec3{handleOut, 2 * handleHalfLength, 0.024}, colHandle)
}

// arrow draws the cue arrow on the counter's front, pointing at drawer i.
func (r *Renderer) arrow(i int) {
	z0, z1 := drawerZ(i)
	zc, x := (z0+z1)/2, CounterFront-0.003
	r.quad(Vec3{x, 0.32, zc - 0.03}, Vec3{x, 0.44, zc - 0.03}, Vec3{x, 0.44, zc + 0.03}, Vec3{x, 0.32, zc + 0.03}, colCue)
	var v [3]Vec3
	v[0], v[1], v[2] = Vec3{x, 0.32, zc - 0.08}, Vec3{x, 0.32, zc + 0.08}, Vec3{x, 0.24, zc}
	r.poly(v[:], colCue)
}

// object draws o.
func (r *Renderer) object(o *Object) {
	k := &catalogue[o.Kind]
	axis := Vec3{0, 0, 1}
	if o.Fallen {
		axis = Vec3{math.Cos(o.Yaw), math.Sin(o.Yaw), 0}
	}
	switch k.Shape {
	case Cylinder:
		r.cylinder(o.Pos, axis, k.Radius, k.Height/2, k.Color, k.CapColor, k.Color)
	case Bottle:
		body := k.Height - capHeight
		bc := o.Pos.Add(axis.Scale(-k.Height/2 + body/2))
		nc := o.Pos.Add(axis.Scale(k.Height/2 - capHeight/2))
		if r.cam.toCam(nc)[2] > r.cam.toCam(bc)[2] {
			r.cylinder(nc, axis, 0.42*k.Radius, capHeight/2, k.CapColor, k.CapColor, k.CapColor)
			r.cylinder(bc, axis, k.Radius, body/2, k.Color, k.Color, k.Color)
		} else {
			r.cylinder(bc, axis, k.Radius, body/2, k.Color, k.Color, k.Color)
			r.cylinder(nc, axis, 0.42*k.Radius, capHeight/2, k.CapColor, k.CapColor, k.CapColor)
		}
	case Box:
		r.box(o.Pos, o.Yaw, k.Size, k.Color)
	case Sphere:
		r.sphere(o.Pos, k.Radius, k.Color, k.CapColor)
	}
}

// palmLift is the height of the palm's centre above the end-effector
// (the grasp point, between the fingertips).
const palmLift = 0.078

// arm draws the forearm, the gripper and what it holds.
func (r *Renderer) arm() {
	s := r.s
	e := s.EEWorld()
	yaw := s.Base.Yaw + s.Rot[2]
	ax := rotZ(Vec3{0, 1, 0}, yaw) // the fingers close along ax
	gap := (1 - s.Grip) * gripperWidth
	held := -1
	if s.Grasp.Kind == GraspObject {
		held = s.Grasp.Index
		gap = max(gap, min(2*bodyRadius(s.Objects[held].Kind), gripperWidth))
	}
	wrist := e.Add(Vec3{0, 0, 0.09})
	r.ribbon(wrist, s.ToWorld(shoulder), 0.02, colForearm)
	const fingerT, fingerW, fingerH = 0.014, 0.026, 0.075
	f0 := e.Add(ax.Scale(gap/2 + fingerT/2)).Add(Vec3{0, 0, fingerH/2 - 0.008})
	f1 := e.Add(ax.Scale(-gap/2 - fingerT/2)).Add(Vec3{0, 0, fingerH/2 - 0.008})
	if r.cam.toCam(f0)[2] < r.cam.toCam(f1)[2] {
		f0, f1 = f1, f0 // f0 is the far finger
	}
	size := Vec3{fingerW, fingerT, fingerH}
	r.box(f0, yaw, size, colFinger)
	if held >= 0 {
		r.object(&s.Objects[held])
	}
	r.box(e.Add(Vec3{0, 0, palmLift}), yaw, Vec3{0.05, gap + 2*fingerT + 0.01, 0.026}, colPalm)
	r.box(f1, yaw, size, colFinger)
}

// cylinder draws a closed cylinder of the given centre, unit axis, radius
// and half length; caps top (at +axis) and bottom.
func (r *Renderer) cylinder(c, axis Vec3, radius, half float64, side, top, bottom RGB) {
	const n = 12
	u := Vec3{1, 0, 0}
	if math.Abs(axis[0]) > 0.9 {
		u = Vec3{0, 1, 0}
	}
	u = u.Sub(axis.Scale(u.Dot(axis)))
	u = u.Scale(1 / u.Norm())
	v := axis.Cross(u)
	var lo, hi [n]Vec3
	ct, cb := c.Add(axis.Scale(half)), c.Add(axis.Scale(-half))
	for k := range n {
		s, co := math.Sincos(2 * math.Pi * float64(k) / n)
		d := u.Scale(co * radius).Add(v.Scale(s * radius))
		lo[k], hi[k] = cb.Add(d), ct.Add(d)
	}
	for k := range n {
		k1 := (k + 1) % n
		s, co := math.Sincos(2 * math.Pi * (float64(k) + 0.5) / n)
		nrm := u.Scale(co).Add(v.Scale(s))
		mid := lo[k].Add(hi[k1]).Scale(0.5)
		if r.cam.facing(mid, nrm) {
			q := [4]Vec3{lo[k], lo[k1], hi[k1], hi[k]}
			r.poly(q[:], shade(side, nrm))
		}
	}
	if r.cam.facing(ct, axis) {
		r.poly(hi[:], shade(top, axis))
	}
	if neg := axis.Scale(-1); r.cam.facing(cb, neg) {
		r.poly(lo[:], shade(bottom, neg))
	}
}

// boxFaces lists each face's corners (indices into box's corner array, bit
// 0: +x, bit 1: +y, bit 2: +z in the box's frame) and its normal's axis.
var boxFaces = [6]struct {
	v    [4]int
	axis int
	sign float64
}{
	{[4]int{1, 3, 7, 5}, 0, 1}, {[4]int{0, 4, 6, 2}, 0, -1},
	{[4]int{2, 6, 7, 3}, 1, 1}, {[4]int{0, 1, 5, 4}, 1, -1},
	{[4]int{4, 5, 7, 6}, 2, 1}, {[4]int{0, 2, 3, 1}, 2, -1},
}

// box draws a box of the given centre, yaw and size (along its yaw, across,
// height).
func (r *Renderer) box(c Vec3, yaw float64, size Vec3, col RGB) {
	ex := rotZ(Vec3{1, 0, 0}, yaw)
	ey := rotZ(Vec3{0, 1, 0}, yaw)
	axes := [3]Vec3{ex, ey, {0, 0, 1}}
	var corners [8]Vec3
	for i := range corners {
		p := c
		for a := range 3 {
			sgn := -0.5
			if i>>a&1 == 1 {
				sgn = 0.5
			}
			p = p.Add(axes[a].Scale(sgn * size[a]))
		}
		corners[i] = p
	}
	for _, f := range boxFaces {
		n := axes[f.axis].Scale(f.sign)
		fc := c.Add(n.Scale(size[f.axis] / 2))
		if r.cam.facing(fc, n) {
			q := [4]Vec3{corners[f.v[0]], corners[f.v[1]], corners[f.v[2]], corners[f.v[3]]}
			r.poly(q[:], shade(col, n))
		}
	}
}

// sphere draws a ball of colour col with a stem of colour stem on top.
func (r *Renderer) sphere(c Vec3, radius float64, col, stem RGB) {
	q := r.cam.toCam(c)
	if q[2] < cameraNear+radius {
		return
	}
	u, v := r.cam.project(q)
	rp := r.cam.f * radius / q[2]
	if !r.inGuard(u, v) {
		return
	}
	r.list.circle(fixed(u), fixed(v), fixed(rp), shade(col, Vec3{0, 0.3, 0.95}.Scale(0.8)))
	r.list.circle(fixed(u-0.25*rp), fixed(v-0.25*rp), fixed(0.55*rp), shade(col, lightDir))
	t0, t1 := r.cam.toCam(c.Add(Vec3{0, 0, radius * 0.85})), r.cam.toCam(c.Add(Vec3{0, 0, radius * 1.35}))
	u0, v0 := r.cam.project(t0)
	u1, v1 := r.cam.project(t1)
	th := int32(max(1, math.Round(r.cam.f*0.006/q[2])))
	r.list.line(int32(math.Round(u0)), int32(math.Round(v0)), int32(math.Round(u1)), int32(math.Round(v1)), th, stem)
}

// ribbon draws a rod from a to b of the given radius as a flat strip facing
// the camera.
func (r *Renderer) ribbon(a, b Vec3, radius float64, col RGB) {
	mid := a.Add(b).Scale(0.5)
	side := b.Sub(a).Cross(mid.Sub(r.cam.pos))
	l := side.Norm()
	if l == 0 {
		return
	}
	side = side.Scale(radius / l)
	q := [4]Vec3{a.Add(side), b.Add(side), b.Sub(side), a.Sub(side)}
	r.poly(q[:], col)
}

// disc draws a flat horizontal disc.
func (r *Renderer) disc(c Vec3, radius float64, col RGB) {
	const n = 16
	var v [n]Vec3
	for k := range n {
		s, co := math.Sincos(2 * math.Pi * float64(k) / n)
		v[k] = c.Add(Vec3{co * radius, s * radius, 0})
	}
	r.poly(v[:], col)
}

// quad draws a polygon of four corners whatever way it faces.
func (r *Renderer) quad(a, b, c, d Vec3, col RGB) {
	q := [4]Vec3{a, b, c, d}
	r.poly(q[:], col)
}

// face draws a one-sided quad with outward normal n, shaded.
func (r *Renderer) face(a, b, c, d, n Vec3, col RGB) {
	if r.cam.facing(a.Add(c).Scale(0.5), n) {
		q := [4]Vec3{a, b, c, d}
		r.poly(q[:], shade(col, n))
	}
}

// guard is how far outside the image (in image sizes) drawing is clipped.
const guard = 1.0

func (r *Renderer) inGuard(u, v float64) bool {
	return u > -guard*r.cam.w && u < (1+guard)*r.cam.w && v > -guard*r.cam.h && v < (1+guard)*r.cam.h
}

// poly clips the convex world polygon vs (at most maxPoly-5 corners) to
// the camera's near plane and a guard band around the image, projects it
// and adds it to the draw list.
func (r *Renderer) poly(vs []Vec3, col RGB) {
	if len(vs) < 3 || len(vs) > maxPoly-5 {
		return
	}
	a, b := &r.va, &r.vb
	n, front := len(vs), true
	for i, p := range vs {
		a[i] = r.cam.toCam(p)
		front = front && a[i][2] >= cameraNear
	}
	if !front { // most polygons lie wholly in front of the camera
		n = clipPlane(b[:], a[:n], 2, cameraNear, 1)
		a, b = b, a
		if n < 3 {
			return
		}
	}
	w, h := r.cam.w, r.cam.h
	inside := true
	for i := range n {
		u, v := r.cam.project(a[i])
		a[i] = Vec3{u, v, 0}
		inside = inside && r.inGuard(u, v)
	}
	if !inside {
		n = clipPlane(b[:], a[:n], 0, -guard*w, 1)
		n = clipPlane(a[:], b[:n], 0, (1+guard)*w, -1)
		n = clipPlane(b[:], a[:n], 1, -guard*h, 1)
		n = clipPlane(a[:], b[:n], 1, (1+guard)*h, -1)
		if n < 3 {
			return
		}
	}
	for i := range n {
		r.xy[2*i], r.xy[2*i+1] = fixed(a[i][0]), fixed(a[i][1])
	}
	r.list.poly(r.xy[:2*n], col)
}

// clipPlane clips polygon in against the half-space sign·(p[axis] - at) ≥ 0
// (Sutherland–Hodgman), writes the result to out and returns its length.
func clipPlane(out, in []Vec3, axis int, at, sign float64) int {
	n := 0
	if len(in) == 0 {
		return 0
	}
	prev := in[len(in)-1]
	dp := sign * (prev[axis] - at)
	for _, p := range in {
		d := sign * (p[axis] - at)
		if (d >= 0) != (dp >= 0) && n < len(out) {
			t := dp / (dp - d)
			out[n] = prev.Add(p.Sub(prev).Scale(t))
			n++
		}
		if d >= 0 && n < len(out) {
			out[n] = p
			n++
		}
		prev, dp = p, d
	}
	return n
}

// fixed converts a pixel coordinate to drawShift fixed point.
func fixed(x float64) int32 { return int32(math.Round(x * (1 << drawShift))) }
