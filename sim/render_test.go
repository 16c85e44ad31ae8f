package sim

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"math"
	"testing"

	"gocv.io/x/gocv"
)

// paintGoCV is the reference for canvas.paint: the same draw list drawn
// call by call with gocv's own drawing functions.
func paintGoCV(m *gocv.Mat, d *drawList) {
	for i := 0; i+opFields <= len(d.ops); i += opFields {
		kind, n, c, off := d.ops[i], int(d.ops[i+1]), d.ops[i+2], int(d.ops[i+3])
		r, g, b := uint8(c>>16), uint8(c>>8), uint8(c)
		// gocv writes a colour's B to channel 0; our channel 0 is red.
		col := color.RGBA{R: b, G: g, B: r}
		switch kind {
		case opFill:
			m.SetTo(gocv.NewScalar(float64(r), float64(g), float64(b), 0))
		case opPoly:
			pts := make([]image.Point, n)
			for k := range pts {
				pts[k] = image.Pt(int(d.pts[off+2*k]), int(d.pts[off+2*k+1]))
			}
			pv := gocv.NewPointsVectorFromPoints([][]image.Point{pts})
			gocv.FillPolyWithParams(m, pv, col, gocv.Line8, drawShift, image.Point{})
			pv.Close()
		case opCircle:
			gocv.CircleWithParams(m, image.Pt(int(d.pts[off]), int(d.pts[off+1])), n, col, -1, gocv.Line8, drawShift)
		case opLine:
			gocv.Line(m, image.Pt(int(d.pts[off]), int(d.pts[off+1])), image.Pt(int(d.pts[off+2]), int(d.pts[off+3])), col, n)
		}
	}
}

// workState is a state with the base at its table working pose and the
// hand parked low at the right, out of the way.
func workState(objs ...Object) *State {
	return &State{Base: Pose{X: 0.2}, EE: Vec3{0.25, -0.5, 0.9}, Objects: objs}
}

func pixel(img []byte, w int, u, v float64) RGB {
	x, y := int(math.Round(u)), int(math.Round(v))
	i := 3 * (y*w + x)
	return RGB{img[i], img[i+1], img[i+2]}
}

func TestCameraProjection(t *testing.T) {
	const h, w = 256, 320
	var c camera
	c.set(&State{Base: Pose{X: 1, Y: 2, Yaw: math.Pi / 2}}, h, w)
	// The mount (-0.05, 0, 1.40) turned 90° is (0, -0.05) from the base.
	if !nearVec(c.pos, Vec3{1, 1.95, 1.4}, 1e-12) {
		t.Fatalf("camera at %v, want (1, 1.95, 1.4)", c.pos)
	}
	f := h / 2 / math.Tan(cameraVFOV/2) // pinhole: half the rows span half the field of view
	cx, cy := (w-1)/2.0, (h-1)/2.0
	heading := Vec3{0, 1, 0} // base yaw 90°: forward is world +y
	down := math.Tan(cameraPitch)
	cases := []struct {
		name string
		p    Vec3
		u, v float64
	}{
		// A point 2 m along the optical axis: the image centre.
		{"optical axis", c.pos.Add(heading.Scale(2 * math.Cos(cameraPitch))).Add(Vec3{0, 0, -2 * math.Sin(cameraPitch)}), cx, cy},
		// Level with the camera, far ahead: pitch above the centre.
		{"horizon", c.pos.Add(heading.Scale(100)), cx, cy - f*down},
		// 0.1 m to the robot's right (world +x when facing +y) of a point
		// 1 m ahead level with the camera.
		// Its depth along the optical axis is cos(pitch), its offset 0.1.
		{"right", c.pos.Add(heading.Scale(1)).Add(Vec3{0.1, 0, 0}), cx + f*0.1/math.Cos(cameraPitch), cy - f*down},
	}
	for _, tc := range cases {
		u, v := c.project(c.toCam(tc.p))
		if !near(u, tc.u, 1e-6) || !near(v, tc.v, 1e-6) {
			t.Errorf("%s: projects to (%.4f, %.4f), want (%.4f, %.4f)", tc.name, u, v, tc.u, tc.v)
		}
	}
}

// TestShimMatchesGoCV draws real frames through the one-call shim and
// through gocv's drawing functions, and requires identical bytes.
func TestShimMatchesGoCV(t *testing.T) {
	for _, size := range [][2]int{{64, 80}, {256, 320}} {
		h, w := size[0], size[1]
		r, err := NewRenderer(h, w)
		if err != nil {
			t.Fatal(err)
		}
		ref := gocv.NewMatWithSize(h, w, gocv.MatTypeCV8UC3)
		for _, task := range Tasks() {
			ep, _ := NewEpisode(task, 11, Options{})
			x := ep.Expert(ExpertOptions{})
			for !ep.Done() {
				s := ep.State()
				if s.Step%5 == 0 {
					if err := r.build(s); err != nil {
						t.Fatal(err)
					}
					if err := r.cv.paint(&r.list); err != nil {
						t.Fatal(err)
					}
					paintGoCV(&ref, &r.list)
					if !bytes.Equal(r.cv.data, ref.ToBytes()) {
						t.Fatalf("%dx%d %s step %d: shim and gocv frames differ", h, w, task.Name, s.Step)
					}
				}
				ep.Step(x.Act(s))
			}
		}
		ref.Close()
		r.Close()
	}
}

func TestObjectColours(t *testing.T) {
	const h, w = 256, 320
	r, err := NewRenderer(h, w)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	img := make([]byte, h*w*3)
	for _, k := range Kinds() {
		t.Run(k.String(), func(t *testing.T) {
			o := resting(k, 0.85, 0.1, false)
			s := workState(o)
			if err := r.Render(img, s); err != nil {
				t.Fatal(err)
			}
			u, v := r.cam.project(r.cam.toCam(o.Pos))
			got, want := pixel(img, w, u, v), catalogue[k].Color
			// Flat shading scales the colour by k in [0.6, 1].
			m := 0
			for c := 1; c < 3; c++ {
				if want[c] > want[m] {
					m = c
				}
			}
			scale := float64(got[m]) / float64(want[m])
			ok := scale >= 0.59 && scale <= 1.01
			for c := range 3 {
				ok = ok && math.Abs(float64(got[c])-scale*float64(want[c])) <= 2
			}
			if !ok {
				t.Errorf("pixel at the %s's centre is %v, want its colour %v shaded", k, got, want)
			}
		})
	}
}

func TestGripperVisible(t *testing.T) {
	const h, w = 128, 160
	r, _ := NewRenderer(h, w)
	defer r.Close()
	s := workState()
	s.EE = Vec3{0.55, 0.1, 0.95} // base frame: over the worktop
	img := make([]byte, h*w*3)
	if err := r.Render(img, s); err != nil {
		t.Fatal(err)
	}
	palm := s.EEWorld().Add(Vec3{0, 0, palmLift})
	u, v := r.cam.project(r.cam.toCam(palm))
	p := pixel(img, w, u, v)
	top := shade(colPalm, Vec3{0, 0, 1})
	if p != top && p != shade(colPalm, Vec3{-1, 0, 0}) {
		t.Errorf("pixel at the palm is %v, want the palm's colour %v", p, top)
	}
	// Open and closed grippers draw differently.
	open := append([]byte(nil), img...)
	s.Grip = 1
	r.Render(img, s)
	if bytes.Equal(open, img) {
		t.Error("open and closed gripper render the same")
	}
}

func TestDrawerStateVisible(t *testing.T) {
	const h, w = 128, 160
	r, _ := NewRenderer(h, w)
	defer r.Close()
	s := &State{Base: Pose{X: -0.15}, EE: Vec3{0.3, -0.5, 1.2}}
	closed := make([]byte, h*w*3)
	r.Render(closed, s)
	inside := shade(colInterior, Vec3{0, 0, 1})
	count := func(img []byte) (n int) {
		for i := 0; i < len(img); i += 3 {
			if (RGB{img[i], img[i+1], img[i+2]}) == inside {
				n++
			}
		}
		return n
	}
	if n := count(closed); n != 0 {
		t.Errorf("closed drawers: %d pixels of drawer inside visible", n)
	}
	for _, i := range []int{DrawerTop, DrawerBottom} {
		for _, d := range []float64{0.10, 0.25} {
			s.Drawers = [NumDrawers]Drawer{}
			s.Drawers[i].Open = d
			img := make([]byte, h*w*3)
			r.Render(img, s)
			// Pulled out fully, its inside shows over the front panel; at
			// 10 cm the panel hides it from the head camera, but the
			// drawer has visibly come out.
			if n := count(img); d == MaxDrawerOpen && n < 40 {
				t.Errorf("drawer %d open %.2f m: %d pixels of its inside visible, want at least 40", i, d, n)
			}
			diff := 0
			for p := 0; p < len(img); p += 3 {
				if img[p] != closed[p] || img[p+1] != closed[p+1] || img[p+2] != closed[p+2] {
					diff++
				}
			}
			if diff < h*w/100 {
				t.Errorf("drawer %d open %.2f m: %d pixels differ from the closed view, want at least 1%%", i, d, diff)
			}
		}
	}
}

// cuePixels counts pixels of the cue colour.
func cuePixels(img []byte) int {
	n := 0
	for i := 0; i+2 < len(img); i += 3 {
		if img[i] == colCue[0] && img[i+1] == colCue[1] && img[i+2] == colCue[2] {
			n++
		}
	}
	return n
}

// TestCueShownOnlyAtStart checks, for the memory tasks with a visual cue,
// that the cue is visible in the first frame of every episode and in most
// frames of steps 0..2 (the arm may pass in front of it), and in no frame
// after.
func TestCueShownOnlyAtStart(t *testing.T) {
	for _, name := range []string{"cue_pick", "pointed_drawer"} {
		task, _ := TaskByName(name)
		seen, early := 0, 0
		for seed := range uint64(30) {
			ep, _ := NewEpisode(task, seed, Options{Height: 64, Width: 80})
			x := ep.Expert(ExpertOptions{})
			img := make([]byte, 64*80*3)
			for !ep.Done() {
				ep.Render(img)
				n, step := cuePixels(img), ep.Steps()
				if step == 0 && n < 3 {
					t.Errorf("%s seed %d: the first frame shows %d cue pixels, want it visible", name, seed, n)
				}
				if step < cueSteps {
					early++
					if n >= 3 {
						seen++
					}
				}
				if step >= cueSteps && n != 0 {
					t.Errorf("%s seed %d step %d: cue still visible (%d pixels)", name, seed, step, n)
				}
				ep.Step(x.Act(ep.State()))
			}
			ep.Close()
		}
		if seen*10 < early*9 {
			t.Errorf("%s: the cue is visible in %d of %d early frames, want at least 90%%", name, seen, early)
		}
	}
}

func TestRenderAllocs(t *testing.T) {
	r, _ := NewRenderer(64, 80)
	defer r.Close()
	task, _ := TaskByName("move")
	ep, _ := NewEpisode(task, 2, Options{})
	s := ep.State()
	img := make([]byte, 64*80*3)
	r.Render(img, s)
	if n := testing.AllocsPerRun(100, func() { r.Render(img, s) }); n != 0 {
		t.Errorf("Render allocates %v times per frame, want 0", n)
	}
}

func TestRenderErrors(t *testing.T) {
	for _, sz := range [][2]int{{0, 80}, {64, 7}, {-1, 5}, {64, MaxImageSide + 1}} {
		if _, err := NewRenderer(sz[0], sz[1]); err == nil {
			t.Errorf("NewRenderer(%d, %d) succeeded", sz[0], sz[1])
		}
	}
	r, _ := NewRenderer(16, 16)
	if err := r.Render(make([]byte, 16*16*3-1), &State{}); err == nil {
		t.Error("Render into a short buffer succeeded")
	}
	if err := r.Render(make([]byte, 16*16*4), &State{}); err == nil {
		t.Error("Render into a 4-channel sized buffer succeeded")
	}
	r.Close()
	if err := r.Render(make([]byte, 16*16*3), &State{}); err == nil {
		t.Error("Render after Close succeeded")
	}
	r.Close() // a second Close is harmless
}

func BenchmarkRender(b *testing.B) {
	task, _ := TaskByName("pick")
	ep, _ := NewEpisode(task, 1, Options{})
	x := ep.Expert(ExpertOptions{})
	for range 15 { // mid-episode: the arm among the objects
		ep.Step(x.Act(ep.State()))
	}
	s := ep.State()
	for _, sz := range [][2]int{{64, 80}, {128, 160}, {256, 320}} {
		b.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(b *testing.B) {
			r, _ := NewRenderer(sz[0], sz[1])
			defer r.Close()
			img := make([]byte, sz[0]*sz[1]*3)
			b.ReportAllocs()
			for b.Loop() {
				if err := r.Render(img, s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}
