package tf

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Unix(1000, 0)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func tr(x, y, z float64, q [4]float64) Transform {
	return Transform{Translation: [3]float64{x, y, z}, Rotation: q}
}

var (
	qID   = [4]float64{0, 0, 0, 1}
	qZ45  = [4]float64{0, 0, math.Sin(math.Pi / 8), math.Cos(math.Pi / 8)}
	qZ90  = [4]float64{0, 0, s2, s2}
	qZm90 = [4]float64{0, 0, -s2, s2}
	qZ135 = [4]float64{0, 0, math.Sin(3 * math.Pi / 8), math.Cos(3 * math.Pi / 8)}
)

func mustAdd(t testing.TB, b *Buffer, parent, child string, stamp time.Time, x Transform, static bool) {
	t.Helper()
	if err := b.Add(parent, child, stamp, x, static); err != nil {
		t.Fatal(err)
	}
}

// robot builds odom -> base_link (dynamic), base_link -> arm_mount
// (static), arm_mount -> hand (dynamic), base_link -> camera (static), with
// dynamic samples at 0 s and 1 s.
func robot(t testing.TB) *Buffer {
	b := NewBuffer(BufferConf{})
	mustAdd(t, b, "odom", "base_link", at(0), tr(1, 0, 0, qID), false)
	mustAdd(t, b, "odom", "base_link", at(1), tr(2, 0, 0, qZ90), false)
	mustAdd(t, b, "base_link", "arm_mount", time.Time{}, tr(0.1, 0, 0.5, qID), true)
	mustAdd(t, b, "arm_mount", "hand", at(0), tr(0.3, 0, 0, qZ90), false)
	mustAdd(t, b, "arm_mount", "hand", at(1), tr(0.5, 0, 0, qZ90), false)
	mustAdd(t, b, "/base_link", "camera", time.Time{}, tr(0, 0, 1, qZ90), true)
	return b
}

func TestLookupChain(t *testing.T) {
	b := robot(t)
	c45, s45 := math.Cos(math.Pi/4), math.Sin(math.Pi/4)
	cases := []struct {
		target, source string
		at             time.Time
		want           Transform
	}{
		// At 0.5 s the hand is 0.4 m along arm_mount's x: (0.5, 0, 0.5) in
		// base_link, rotated Rz90.
		{"base_link", "hand", at(0.5), tr(0.5, 0, 0.5, qZ90)},
		// camera = Rz90 at (0,0,1) in base_link: p_cam = Rz(-90)·(p - (0,0,1)).
		{"camera", "hand", at(0.5), tr(0, -0.5, -0.5, qID)},
		{"hand", "camera", at(0.5), tr(0, 0.5, 0.5, qID)},
		// base_link at 0.5 s: (1.5, 0, 0), Rz45.
		{"odom", "base_link", at(0.5), tr(1.5, 0, 0, qZ45)},
		{"odom", "hand", at(0.5), tr(1.5+0.5*c45, 0.5*s45, 0.5, qZ135)},
		{"odom", "hand", at(0), tr(1.4, 0, 0.5, qZ90)},
		{"odom", "hand", at(1), tr(2, 0.5+0.1, 0.5, [4]float64{0, 0, 1, 0})},
		// Zero time: each edge's newest.
		{"odom", "hand", time.Time{}, tr(2, 0.6, 0.5, [4]float64{0, 0, 1, 0})},
		{"/camera", "/arm_mount", at(0.5), tr(0, -0.1, -0.5, qZm90)},
		{"hand", "hand", at(0.5), Identity()},
		{"odom", "odom", time.Time{}, Identity()},
	}
	for _, c := range cases {
		t.Run(c.target+"<-"+c.source, func(t *testing.T) {
			got, err := b.Lookup(c.target, c.source, c.at, 0)
			if err != nil {
				t.Fatal(err)
			}
			nearTransform(t, "lookup", got, c.want, 1e-12)
		})
	}
}

func TestLookupErrors(t *testing.T) {
	b := robot(t)
	mustAdd(t, b, "map", "elsewhere", time.Time{}, Identity(), true)
	cases := []struct {
		name           string
		target, source string
		at             time.Time
		tol            time.Duration
		kind           error
		msg            string
	}{
		{"newest at the tolerance", "odom", "base_link", at(1.05), 50 * time.Millisecond, nil, ""},
		{"oldest at the tolerance", "odom", "base_link", at(-0.05), 50 * time.Millisecond, nil, ""},
		{"after the tolerance", "odom", "base_link", at(1.05).Add(time.Nanosecond), 50 * time.Millisecond, ErrExtrapolation,
			"tf: odom -> base_link: the newest transform is 0.05 s older than the requested time (tolerance 0.05 s)"},
		{"spec example", "camera", "odom", at(1.32), 50 * time.Millisecond, ErrExtrapolation,
			"tf: odom -> base_link: the newest transform is 0.32 s older than the requested time (tolerance 0.05 s)"},
		{"before the oldest", "camera", "hand", at(-0.25), 0, ErrExtrapolation,
			"tf: arm_mount -> hand: the oldest transform is 0.25 s newer than the requested time (tolerance 0 s)"},
		{"unknown", "camera", "gripper", at(0), 0, ErrUnknownFrame,
			`tf: frame "gripper" does not exist; 7 known frames: arm_mount, base_link, camera, elsewhere, hand, …`},
		{"not connected", "hand", "elsewhere", at(0), 0, ErrNotConnected,
			"tf: hand and elsewhere are not connected: their trees have roots odom and map"},
		{"before ROS time", "odom", "hand", time.Unix(-1, 0), 0, ErrInvalid, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := b.Lookup(c.target, c.source, c.at, c.tol)
			if !errors.Is(err, c.kind) || (c.kind == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, c.kind)
			}
			if c.msg != "" && err.Error() != c.msg {
				t.Errorf("err = %q\nwant  %q", err, c.msg)
			}
		})
	}
	if _, err := NewBuffer(BufferConf{}).Lookup("a", "b", time.Time{}, 0); !errors.Is(err, ErrUnknownFrame) ||
		!strings.Contains(err.Error(), "no frames are known yet") {
		t.Errorf("empty buffer: %v", err)
	}
}

func TestAddRefuses(t *testing.T) {
	ok := tr(1, 2, 3, qZ90)
	bad := func(f func(*Transform)) Transform { x := ok; f(&x); return x }
	cases := []struct {
		name          string
		parent, child string
		stamp         time.Time
		x             Transform
		static        bool
		kind          error
	}{
		{"empty parent", "", "b", at(0), ok, false, ErrInvalid},
		{"empty child after the slash", "a", "/", at(0), ok, false, ErrInvalid},
		{"own parent", "/a", "a", at(0), ok, false, ErrInvalid},
		{"NaN translation", "a", "b", at(0), bad(func(x *Transform) { x.Translation[1] = math.NaN() }), false, ErrInvalid},
		{"Inf rotation", "a", "b", at(0), bad(func(x *Transform) { x.Rotation[0] = math.Inf(-1) }), true, ErrInvalid},
		{"norm 0.5", "a", "b", at(0), bad(func(x *Transform) { x.Rotation = [4]float64{0, 0, 0, 0.5} }), false, ErrInvalid},
		{"norm 1.2", "a", "b", at(0), bad(func(x *Transform) { x.Rotation = [4]float64{0, 0, 0, 1.2} }), false, ErrInvalid},
		{"zero quaternion", "a", "b", at(0), bad(func(x *Transform) { x.Rotation = [4]float64{} }), true, ErrInvalid},
		{"zero stamp", "a", "b", time.Time{}, ok, false, ErrInvalid},
		{"before 1970", "a", "b", time.Unix(-5, 0), ok, false, ErrInvalid},
		{"after 2106", "a", "b", time.Unix(1<<32, 0), ok, false, ErrInvalid},
		{"valid", "a", "b", at(0), ok, false, nil},
		{"valid static", "a", "b", time.Time{}, ok, true, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := NewBuffer(BufferConf{})
			err := b.Add(c.parent, c.child, c.stamp, c.x, c.static)
			if !errors.Is(err, c.kind) || (c.kind == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, c.kind)
			}
			if n := len(b.Frames()); c.kind != nil && n != 0 {
				t.Errorf("%d frames stored after a refusal", n)
			}
		})
	}
}

func TestNormalises(t *testing.T) {
	b := NewBuffer(BufferConf{})
	mustAdd(t, b, "a", "b", at(0), tr(0, 0, 0, [4]float64{0, 0, 1.05 * s2, 1.05 * s2}), false)
	got, err := b.Lookup("a", "b", at(0), 0)
	if err != nil {
		t.Fatal(err)
	}
	nearQuat(t, "normalised", got.Rotation, qZ90, 1e-15)
}

func TestReparent(t *testing.T) {
	b := NewBuffer(BufferConf{})
	mustAdd(t, b, "a", "c", at(0), tr(1, 0, 0, qID), false)
	mustAdd(t, b, "a", "c", at(1), tr(1, 0, 0, qID), false)
	mustAdd(t, b, "b", "c", at(0.5), tr(0, 2, 0, qID), false)
	if _, err := b.Lookup("a", "c", at(0.5), 0); !errors.Is(err, ErrNotConnected) {
		t.Errorf("old parent still linked: %v", err)
	}
	got, err := b.Lookup("b", "c", time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	nearTransform(t, "new edge", got, tr(0, 2, 0, qID), 0)
	// The old edge's samples are gone: 0 s would be in range otherwise.
	if _, err := b.Lookup("b", "c", at(0), 0); !errors.Is(err, ErrExtrapolation) {
		t.Errorf("lookup at an old sample: %v", err)
	}
	// Switching between static and dynamic drops the old edge too.
	mustAdd(t, b, "b", "c", time.Time{}, tr(0, 3, 0, qID), true)
	mustAdd(t, b, "b", "c", at(5), tr(0, 4, 0, qID), false)
	if _, err := b.Lookup("b", "c", at(0), 0); !errors.Is(err, ErrExtrapolation) {
		t.Errorf("the static edge survived a dynamic one: %v", err)
	}
	want := []FrameInfo{{Name: "a"}, {Name: "b"}, {Name: "c", Parent: "b", Newest: at(5)}}
	got2 := b.Frames()
	if len(got2) != len(want) {
		t.Fatalf("Frames = %v", got2)
	}
	for i := range want {
		if got2[i].Name != want[i].Name || got2[i].Parent != want[i].Parent || got2[i].Static != want[i].Static || !got2[i].Newest.Equal(want[i].Newest) {
			t.Errorf("Frames[%d] = %+v, want %+v", i, got2[i], want[i])
		}
	}
}

func TestLoops(t *testing.T) {
	cases := []struct {
		name  string
		edges [][2]string
	}{
		{"a->b->a", [][2]string{{"a", "b"}, {"b", "a"}}},
		{"a->b->c->a", [][2]string{{"a", "b"}, {"b", "c"}, {"c", "a"}}},
		{"static a->b->c->a", [][2]string{{"a", "b"}, {"b", "c"}, {"/c", "/a"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := NewBuffer(BufferConf{})
			for i, e := range c.edges {
				err := b.Add(e[0], e[1], at(0), Identity(), strings.HasPrefix(c.name, "static"))
				last := i == len(c.edges)-1
				if last != errors.Is(err, ErrLoop) {
					t.Fatalf("edge %v: %v", e, err)
				}
			}
			if _, err := b.Lookup("a", "b", at(0), 0); err != nil {
				t.Errorf("the tree before the refused edge is gone: %v", err)
			}
		})
	}
	// A loop that got in regardless is found, not walked forever.
	b := NewBuffer(BufferConf{})
	mustAdd(t, b, "a", "b", at(0), Identity(), false)
	mustAdd(t, b, "x", "y", at(0), Identity(), false)
	b.frames[b.index["a"]].parent = b.index["b"]
	b.frames[b.index["a"]].static = true
	if _, err := b.Lookup("a", "x", at(0), 0); !errors.Is(err, ErrLoop) {
		t.Errorf("lookup through a loop: %v", err)
	}
}

func TestStaticReplaced(t *testing.T) {
	b := NewBuffer(BufferConf{})
	mustAdd(t, b, "base_link", "camera", time.Time{}, tr(1, 0, 0, qID), true)
	mustAdd(t, b, "base_link", "camera", time.Time{}, tr(0, 1, 0, qZ90), true)
	for _, when := range []time.Time{{}, at(-100), at(1e6)} {
		got, err := b.Lookup("base_link", "camera", when, 0)
		if err != nil {
			t.Fatal(err)
		}
		nearTransform(t, "replaced", got, tr(0, 1, 0, qZ90), 0)
	}
	if f := b.Frames(); len(f) != 2 || !f[1].Static || f[1].Parent != "base_link" {
		t.Errorf("Frames = %+v", f)
	}
}

func TestOutOfOrder(t *testing.T) {
	b := NewBuffer(BufferConf{})
	for _, s := range []float64{3, 1, 2, 0, 2.5} {
		mustAdd(t, b, "a", "b", at(s), tr(s*10, 0, 0, qID), false)
	}
	mustAdd(t, b, "a", "b", at(2), tr(20, 1, 0, qID), false) // replaces 2 s
	cases := []struct{ sec, x, y float64 }{{0, 0, 0}, {0.5, 5, 0}, {1.5, 15, 0.5}, {2, 20, 1}, {2.25, 22.5, 0.5}, {2.75, 27.5, 0}, {3, 30, 0}}
	for _, c := range cases {
		got, err := b.Lookup("a", "b", at(c.sec), 0)
		if err != nil {
			t.Fatal(err)
		}
		nearVec(t, "translation", got.Translation[:], []float64{c.x, c.y, 0}, 1e-12)
	}
}

func TestHistory(t *testing.T) {
	b := NewBuffer(BufferConf{History: time.Second})
	for i := range 11 {
		mustAdd(t, b, "a", "b", at(0.5*float64(i)), tr(float64(i), 0, 0, qID), false)
	}
	// Kept: 4.0 s to 5.0 s.
	if _, err := b.Lookup("a", "b", at(3.9), 0); !errors.Is(err, ErrExtrapolation) {
		t.Errorf("3.9 s not pruned: %v", err)
	}
	if _, err := b.Lookup("a", "b", at(4), 0); err != nil {
		t.Errorf("4 s pruned: %v", err)
	}
	if err := b.Add("a", "b", at(3.9), Identity(), false); !errors.Is(err, ErrTooOld) ||
		!strings.Contains(err.Error(), "1.1 s older than the newest, beyond the history of 1 s") {
		t.Errorf("stamp beyond the history: %v", err)
	}
	mustAdd(t, b, "a", "b", at(4.25), tr(100, 0, 0, qID), false)
	got, err := b.Lookup("a", "b", at(4.25), 0)
	if err != nil || got.Translation[0] != 100 {
		t.Errorf("in-history insert: %v %v", got, err)
	}
	f := &b.frames[b.index["b"]]
	if n := len(f.samples) - f.start; n != 4 {
		t.Errorf("%d samples kept, want 4", n)
	}
}

// TestClearDynamic: after ROS time jumps back (a bag loops), the dynamic
// edges start again and the latched static ones stay.
func TestClearDynamic(t *testing.T) {
	b := NewBuffer(BufferConf{History: time.Second})
	mustAdd(t, b, "base", "mount", time.Time{}, tr(0, 0, 1, qID), true)
	mustAdd(t, b, "mount", "hand", at(100), tr(0.5, 0, 0, qID), false)
	if err := b.Add("mount", "hand", at(10), Identity(), false); !errors.Is(err, ErrTooOld) {
		t.Fatalf("a stamp 90 s back: %v", err)
	}
	b.ClearDynamic()
	if _, err := b.Lookup("base", "hand", at(100), 0); !errors.Is(err, ErrExtrapolation) {
		t.Errorf("the cleared edge still answers: %v", err)
	}
	if f := b.Frames(); len(f) != 3 || !f[1].Newest.IsZero() {
		t.Errorf("frames after clearing %+v, want base, hand (no samples), mount", f)
	}
	mustAdd(t, b, "mount", "hand", at(10), tr(0.25, 0, 0, qID), false)
	got, err := b.Lookup("base", "hand", at(10), 0)
	if err != nil || got.Translation != [3]float64{0.25, 0, 1} {
		t.Errorf("after the jump: %v %v, want (0.25, 0, 1) through the static edge", got, err)
	}
}

func TestMaxSamples(t *testing.T) {
	const m = 8
	b := NewBuffer(BufferConf{MaxSamples: m})
	for i := range 1000 {
		mustAdd(t, b, "a", "b", at(float64(i)*1e-3), tr(float64(i), 0, 0, qID), false)
	}
	f := &b.frames[b.index["b"]]
	if n := len(f.samples) - f.start; n != m || cap(f.samples) > 2*m {
		t.Errorf("kept %d samples in a slice of capacity %d, want %d in at most %d", n, cap(f.samples), m, 2*m)
	}
	if _, err := b.Lookup("a", "b", at(0.991), 0); !errors.Is(err, ErrExtrapolation) {
		t.Errorf("sample 991 kept: %v", err)
	}
	got, err := b.Lookup("a", "b", at(0.9925), 0)
	if err != nil || !near(got.Translation[0], 992.5, 1e-9) {
		t.Errorf("sample 992.5: %v %v", got, err)
	}
	if err := b.Add("a", "b", at(0.5), Identity(), false); !errors.Is(err, ErrInvalid) {
		t.Errorf("a stamp older than a full edge: %v", err)
	}
}

func TestMaxFrames(t *testing.T) {
	b := NewBuffer(BufferConf{MaxFrames: 4})
	mustAdd(t, b, "a", "b", at(0), Identity(), false)
	mustAdd(t, b, "b", "c", at(0), Identity(), false)
	mustAdd(t, b, "c", "d", at(0), Identity(), true)
	if err := b.Add("d", "e", at(0), Identity(), false); !errors.Is(err, ErrTooManyFrames) {
		t.Errorf("fifth frame: %v", err)
	}
	mustAdd(t, b, "a", "d", at(0), Identity(), false)
	if n := len(b.Frames()); n != 4 {
		t.Errorf("%d frames", n)
	}
	b.Clear()
	if n := len(b.Frames()); n != 0 {
		t.Errorf("%d frames after Clear", n)
	}
	mustAdd(t, b, "d", "e", at(0), Identity(), false)
}

// naiveLookup is the reference for Lookup: each frame's pose in its root,
// by recursion with a linear scan of the samples, then
// T_root_target⁻¹ · T_root_source.
func naiveLookup(b *Buffer, target, source string, ns int64) (Transform, bool) {
	var pose func(i int32) (Transform, int32, bool)
	pose = func(i int32) (Transform, int32, bool) {
		f := b.frames[i]
		if f.parent < 0 {
			return Identity(), i, true
		}
		e := f.fixed
		if !f.static {
			live := f.samples[f.start:]
			found := false
			for k := 0; k+1 < len(live); k++ {
				if live[k].stamp <= ns && ns <= live[k+1].stamp {
					e = Interpolate(live[k].t, live[k+1].t, float64(ns-live[k].stamp)/float64(live[k+1].stamp-live[k].stamp))
					found = true
					break
				}
			}
			if !found {
				return Transform{}, 0, false
			}
		}
		p, root, ok := pose(f.parent)
		return p.Mul(e), root, ok
	}
	ps, rs, ok1 := pose(b.index[source])
	pt, rt, ok2 := pose(b.index[target])
	if !ok1 || !ok2 || rs != rt {
		return Transform{}, false
	}
	return pt.Inverse().Mul(ps), true
}

func TestLookupMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 20 {
		b := NewBuffer(BufferConf{})
		const n = 12
		for i := 1; i < n; i++ {
			p, c := string(rune('a'+r.IntN(i))), string(rune('a'+i))
			if r.IntN(3) == 0 {
				mustAdd(t, b, p, c, time.Time{}, randTransform(r), true)
				continue
			}
			for k := range 4 {
				mustAdd(t, b, p, c, at(float64(k)+r.Float64()*0.5-0.25), randTransform(r), false)
			}
		}
		for range 50 {
			x, y := string(rune('a'+r.IntN(n))), string(rune('a'+r.IntN(n)))
			when := at(0.25 + r.Float64()*2.5)
			want, ok := naiveLookup(b, x, y, when.UnixNano())
			got, err := b.Lookup(x, y, when, 0)
			if !ok || err != nil {
				t.Fatalf("lookup %s<-%s: ok %v, err %v", x, y, ok, err)
			}
			nearTransform(t, x+"<-"+y, got, want, 1e-12)
		}
	}
}

func TestConcurrent(t *testing.T) {
	b := robot(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				x, err := b.Lookup("camera", "hand", time.Time{}, 0)
				if err == nil && !x.finite() {
					t.Error("non-finite lookup")
				}
				_ = b.Frames()
			}
		})
	}
	for i := range 5000 {
		s := at(2 + float64(i)*1e-3)
		mustAdd(t, b, "odom", "base_link", s, tr(float64(i), 0, 0, qZ90), false)
		mustAdd(t, b, "arm_mount", "hand", s, tr(0.5, 0, 0, qID), false)
		if i%1000 == 999 {
			b.Clear()
			mustAdd(t, b, "base_link", "arm_mount", time.Time{}, Identity(), true)
			mustAdd(t, b, "base_link", "camera", time.Time{}, Identity(), true)
		}
	}
	close(stop)
	wg.Wait()
}

// chain4 builds map -> odom -> base_link -> arm_mount -> hand, two edges
// static, and returns a time between samples.
func chain4(t testing.TB) (*Buffer, time.Time) {
	b := NewBuffer(BufferConf{})
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 100 {
		s := at(float64(i) * 0.01)
		mustAdd(t, b, "map", "odom", s, randTransform(r), false)
		mustAdd(t, b, "arm_mount", "hand", s, randTransform(r), false)
	}
	mustAdd(t, b, "odom", "base_link", time.Time{}, randTransform(r), true)
	mustAdd(t, b, "base_link", "arm_mount", time.Time{}, randTransform(r), true)
	return b, at(0.555)
}

func TestLookupAllocs(t *testing.T) {
	b, when := chain4(t)
	for _, c := range []struct{ target, source string }{{"map", "hand"}, {"hand", "map"}, {"/odom", "arm_mount"}} {
		n := testing.AllocsPerRun(100, func() {
			if _, err := b.Lookup(c.target, c.source, when, 0); err != nil {
				t.Fatal(err)
			}
		})
		if n != 0 {
			t.Errorf("Lookup(%s, %s) allocates %v times", c.target, c.source, n)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	buf, when := chain4(b)
	for _, c := range []struct {
		name           string
		target, source string
		at             time.Time
	}{
		{"chain4", "map", "hand", when},
		{"chain4-latest", "map", "hand", time.Time{}},
		{"siblings", "hand", "odom", when},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := buf.Lookup(c.target, c.source, c.at, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAdd(b *testing.B) {
	buf := NewBuffer(BufferConf{})
	x := tr(1, 2, 3, qZ90)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := buf.Add("odom", "base_link", t0.Add(time.Duration(i)*time.Millisecond), x, false); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
