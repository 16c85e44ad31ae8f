package policy

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/vision"
)

// smallCheckpoint writes one small policy (and its seeded backbone) per
// test binary; the tests load it as they need.
var smallCheckpoint = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "policy-test")
	if err != nil {
		return "", err
	}
	spec, err := Preset("small")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "small.safetensors")
	return out, Create(spec, 7, "", out, nil)
})

func loadSmall(t *testing.T, opts Options) *Policy {
	t.Helper()
	path, err := smallCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Load(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// loadPreset loads a fresh policy of preset name (presetCheckpoint), closed
// when the test ends.
func loadPreset(t *testing.T, name string) *Policy {
	t.Helper()
	p, err := Load(presetCheckpoint(t, name), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// frame returns a seeded 256x320 RGB frame.
func frame(seed uint64) vision.Frame {
	r := rand.New(rand.NewPCG(seed, 1))
	img := &vision.Image{Height: 256, Width: 320, Encoding: "rgb8", Step: 320 * 3, Data: make([]byte, 256*320*3)}
	for i := range img.Data {
		img.Data[i] = byte(r.IntN(256))
	}
	f, err := vision.DecodeImage(img)
	if err != nil {
		panic(err)
	}
	return f
}

func TestPresetsAreConsistent(t *testing.T) {
	for _, name := range []string{"robot", "robot-b3", "small", "small-keypoints", "small-proprio", "small-geometry"} {
		s, err := Preset(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.HasPrefix(name, "robot") && (s.TTM.InputTokens != 48 || s.TTM.MemorySize != 96 || s.TTM.ProcessSize != 16 || s.TTM.Dim != 512) {
			t.Errorf("robot preset is not the paper's TTM: %+v", s.TTM)
		}
	}
	s, _ := Preset("small")
	s.Policy.Padding = 3
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "1 frames x 4 tokens + 11 action tokens + 0 proprioception tokens + 3 padding = 18 input tokens, the TTM takes 16") {
		t.Errorf("inconsistent token count: %v", err)
	}
	s, _ = Preset("small-proprio")
	s.Policy.Proprio = []string{"hand_x", "hand_x"}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), `"hand_x" named twice`) {
		t.Errorf("repeated proprioception name: %v", err)
	}
	s.Policy.Proprio = nil
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "0 proprioception tokens") {
		t.Errorf("proprioception token count: %v", err)
	}
	s, _ = Preset("small")
	s.Language.Width = 32
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "FiLM takes 64-wide") {
		t.Errorf("embedding width mismatch: %v", err)
	}
}

func TestStepIsDeterministicAndReplayable(t *testing.T) {
	a, b := loadSmall(t, Options{}), loadSmall(t, Options{})
	sa, sb := a.NewState(), b.NewState()
	act := make([]float32, 11)
	var actions [][]float32
	var hashes []uint64
	for i := 0; i < 6; i++ {
		obs := &Observation{Frame: frame(uint64(i)), Instruction: "pick the coke can"}
		if err := a.Step(obs, sa, act); err != nil {
			t.Fatal(err)
		}
		actions = append(actions, append([]float32(nil), act...))
		hashes = append(hashes, sa.Hash())
		if i == 2 {
			snap := sa.Clone()
			defer func() {
				// Replaying steps 3.. from the snapshot gives the same bits.
				sa.CopyFrom(snap)
				for j := 3; j < 6; j++ {
					if err := a.Step(&Observation{Frame: frame(uint64(j)), Instruction: "pick the coke can"}, sa, act); err != nil {
						t.Fatal(err)
					}
					if sa.Hash() != hashes[j] || !equal(act, actions[j]) {
						t.Errorf("replay of step %d differs", j)
					}
				}
			}()
		}
		for d, v := range act {
			dim := a.ActionSpace().Dims[d]
			if math.IsNaN(float64(v)) || float64(v) < dim.Low || float64(v) > dim.High {
				t.Fatalf("step %d: %s = %g", i, dim.Name, v)
			}
		}
	}
	for i := 0; i < 6; i++ {
		if err := b.Step(&Observation{Frame: frame(uint64(i)), Instruction: "pick the coke can"}, sb, act); err != nil {
			t.Fatal(err)
		}
		if sb.Hash() != hashes[i] || !equal(act, actions[i]) {
			t.Errorf("step %d: a second policy from the same checkpoint differs", i)
		}
	}
	if sa.Steps != 6 || sa.Window.Len() != 1 {
		t.Errorf("state after 6 steps: %d steps, window of %d", sa.Steps, sa.Window.Len())
	}
}

// TestStateVectorsListEveryVector: every []float32 field of State is in
// Vectors, so Clone, CopyFrom and a saved training state carry it, and a
// clone's vectors are its own.
func TestStateVectorsListEveryVector(t *testing.T) {
	p := loadPreset(t, "small-memory-film")
	st := p.NewState()
	listed, names := map[*[]float32]bool{}, map[string]bool{}
	for _, v := range st.Vectors() {
		if listed[v.V] || names[v.Name] {
			t.Fatalf("%s is listed twice", v.Name)
		}
		listed[v.V], names[v.Name] = true, true
	}
	rv := reflect.ValueOf(st).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		if f.Type() != reflect.TypeFor[[]float32]() {
			continue
		}
		if !listed[f.Addr().Interface().(*[]float32)] {
			t.Errorf("State.%s is not in Vectors", rv.Type().Field(i).Name)
		}
	}

	for i, v := range st.Vectors() {
		if len(*v.V) == 0 {
			t.Fatalf("%s is empty in a small-memory-film state", v.Name)
		}
		for j := range *v.V {
			(*v.V)[j] = float32(10*i + j)
		}
	}
	c := st.Clone()
	for i, v := range c.Vectors() {
		if !slices.Equal(*v.V, *st.Vectors()[i].V) {
			t.Errorf("the clone's %s differs", v.Name)
		}
		clear(*v.V)
		if (*st.Vectors()[i].V)[1] == 0 {
			t.Errorf("clearing the clone's %s cleared the state's", v.Name)
		}
	}
	if n := testing.AllocsPerRun(10, func() { c.CopyFrom(st) }); n != 0 {
		t.Errorf("CopyFrom allocates %v times", n)
	}
	for i, v := range c.Vectors() {
		if !slices.Equal(*v.V, *st.Vectors()[i].V) {
			t.Errorf("CopyFrom did not restore %s", v.Name)
		}
	}
}

// TestStepFeaturesEqualsStep: a step from the frame's cached feature map
// (Features) gives the same action and memory as a step from the frame.
func TestStepFeaturesEqualsStep(t *testing.T) {
	p := loadSmall(t, Options{})
	c, n, err := p.FeatureShape()
	if err != nil {
		t.Fatal(err)
	}
	feat := make([]float32, c*n)
	sa, sb := p.NewState(), p.NewState()
	a, b := make([]float32, 11), make([]float32, 11)
	for i := range 3 {
		obs := &Observation{Frame: frame(uint64(i)), Instruction: "pick the coke can"}
		if err := p.Step(obs, sa, a); err != nil {
			t.Fatal(err)
		}
		if err := p.Features(feat, obs.Frame); err != nil {
			t.Fatal(err)
		}
		if err := p.StepFeatures(feat, obs, sb, b); err != nil {
			t.Fatal(err)
		}
		if !equal(a, b) || sa.Hash() != sb.Hash() {
			t.Fatalf("step %d: StepFeatures %v, Step %v", i, b, a)
		}
	}
	if err := p.StepFeatures(feat[1:], &Observation{Instruction: "pick"}, sb, b); err == nil {
		t.Error("a short feature map was accepted")
	}
}

func equal(a, b []float32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestStepFailsClosed(t *testing.T) {
	p := loadSmall(t, Options{NoBackbone: true})
	st := p.NewState()
	act := make([]float32, 11)
	tokens := make([]float32, 4*64)
	for i := range tokens {
		tokens[i] = float32(i%9) * 0.1
	}
	if err := p.StepTokens(tokens, nil, st, act); err != nil {
		t.Fatal(err)
	}
	before, steps, prev := st.Hash(), st.Steps, append([]float32(nil), st.Prev...)
	tokens[5] = float32(math.NaN())
	err := p.StepTokens(tokens, nil, st, act)
	if !errors.Is(err, ErrNonFinite) {
		t.Fatalf("NaN tokens: %v", err)
	}
	if st.Hash() != before || st.Steps != steps || !equal(st.Prev, prev) {
		t.Error("a failed step changed the state")
	}
	if err := p.Step(&Observation{}, st, act); err == nil {
		t.Error("Step without a backbone succeeded")
	}
	q := loadSmall(t, Options{})
	for name, obs := range map[string]*Observation{
		"short embedding": {Frame: frame(1), Embedding: make([]float32, 3)},
		"NaN embedding":   {Frame: frame(1), Embedding: append(make([]float32, 63), float32(math.Inf(1)))},
		"empty frame":     {Instruction: "open the drawer"},
	} {
		st := q.NewState()
		if err := q.Step(obs, st, act); err == nil {
			t.Errorf("%s: accepted", name)
		} else if st.Steps != 0 || st.Window.Len() != 0 {
			t.Errorf("%s: the state changed", name)
		}
	}
}

func TestLoadFailsClosedOnMismatch(t *testing.T) {
	path, err := smallCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	other := action.RT1()
	other.Dims[action.DimGripper].High = 2
	corrupt := filepath.Join(t.TempDir(), "b.onnx")
	b, _ := os.ReadFile(strings.TrimSuffix(path, ".safetensors") + ".backbone.onnx")
	b[len(b)/2] ^= 1
	os.WriteFile(corrupt, b, 0o644)
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"action space", Options{Expect: Expect{ActionSpace: &other}}, "action space mismatch"},
		{"image size", Options{Expect: Expect{ImageHeight: 300, ImageWidth: 300}}, "image size mismatch: the checkpoint takes 128x160"},
		{"backbone hash", Options{Expect: Expect{BackboneSHA256: strings.Repeat("0", 64)}}, "backbone mismatch"},
		{"normalisation", Options{Expect: Expect{Mean: []float32{0.5, 0.5, 0.5}}}, "normalisation mismatch"},
		{"altered backbone", Options{Backbone: corrupt}, "SHA-256"},
		{"missing backbone", Options{Backbone: filepath.Join(t.TempDir(), "nope.onnx")}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Load(path, tc.opts)
			if err == nil {
				p.Close()
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q", err, tc.want)
			}
		})
	}
}

func TestStepDoesNotAllocate(t *testing.T) {
	for _, model := range []string{"ttm", "recurrent", "small-keypoints", "small-proprio", "small-geometry", "small-memory-film", "small-goal-probe", "small-memory-prior", "kitchen-sightline"} {
		var p *Policy
		switch model {
		case "ttm":
			p = loadSmall(t, Options{})
		case "small-keypoints", "small-proprio", "small-geometry", "small-memory-film", "small-goal-probe", "small-memory-prior", "kitchen-sightline": // colour patches and the hidden stage(s) in the front end
			p = loadPreset(t, model)
		default:
			p = loadSeq(t, model, Options{})
		}
		st := p.NewState()
		act := make([]float32, 11)
		obs := &Observation{Frame: frame(3), Instruction: "knock the water bottle over", Proprio: []float32{0.5, 0, 0.9, 0.2}}
		p.Step(obs, st, act)
		if a := testing.AllocsPerRun(5, func() {
			if err := p.Step(obs, st, act); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s: Step allocates %.1f times", model, a)
		}
		checkKeypoints(t, model, p)
	}
}

// checkKeypoints: a policy with a keypoint token reports one point per
// channel of the last frame, inside the image; others report none.
func checkKeypoints(t *testing.T, model string, p *Policy) {
	t.Helper()
	h := p.Spec().Vision.Head
	if _, _, ok := p.Keypoint(0); ok != h.Keypoints {
		t.Errorf("%s: Keypoint(0) ok = %v with keypoints %v", model, ok, h.Keypoints)
	}
	if !h.Keypoints {
		return
	}
	for i := range h.Dim {
		if u, v, ok := p.Keypoint(i); !ok || u < 0 || u > 1 || v < 0 || v > 1 {
			t.Errorf("%s: keypoint %d = (%v, %v, %v), want a point inside the image", model, i, u, v, ok)
		}
	}
	if _, _, ok := p.Keypoint(h.Dim); ok {
		t.Errorf("%s: keypoint %d of %d channels reported", model, h.Dim, h.Dim)
	}
}

// TestProprio: a policy that reads the arm's proprioception takes it as an
// input token (a different reading changes the action's logits and the
// memory), refuses an observation without it or with a wrong or
// non-finite one and leaves its state alone then, and keeps its layout
// through a checkpoint.
func TestProprio(t *testing.T) {
	path := presetCheckpoint(t, "small-proprio")
	p, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !slices.Equal(p.Proprio(), action.ArmProprio) {
		t.Fatalf("proprioception %v after a round trip, want %v", p.Proprio(), action.ArmProprio)
	}
	act := make([]float32, 11)
	step := func(q []float32) (*State, []float32, error) {
		st := p.NewState()
		err := p.Step(&Observation{Frame: frame(4), Instruction: "pick the apple", Proprio: q}, st, act)
		return st, slices.Clone(p.Logits()), err
	}
	a, la, err := step([]float32{0.5, 0, 0.9, 0})
	if err != nil {
		t.Fatal(err)
	}
	b, lb, err := step([]float32{0.5, 0, 0.6, 1})
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash() == b.Hash() || slices.Equal(la, lb) {
		t.Error("the proprioception does not reach the memory or the logits")
	}
	for name, q := range map[string][]float32{
		"missing": nil,
		"short":   {0.5, 0, 0.9},
		"NaN":     {0.5, float32(math.NaN()), 0.9, 0},
		"Inf":     {0.5, 0, 0.9, float32(math.Inf(-1))},
	} {
		st, _, err := step(q)
		if err == nil || !strings.Contains(err.Error(), "proprioception") {
			t.Errorf("%s proprioception: error %v", name, err)
		}
		if st.Steps != 0 || st.Window.Len() != 0 || st.Hash() != p.NewState().Hash() {
			t.Errorf("%s proprioception: the state changed", name)
		}
	}
	// A policy without proprioception ignores it.
	q := loadSmall(t, Options{})
	if err := q.Step(&Observation{Frame: frame(4), Instruction: "pick", Proprio: []float32{1, 2}}, q.NewState(), act); err != nil {
		t.Errorf("a policy without proprioception: %v", err)
	}
}

// TestTargetGeometry: a small-geometry policy's proprioception token reads
// the robot's values and then where its own target and destination
// keypoints lie on the counter (its camera calibration's back-projection),
// and specs that ask for more points than the keypoint token has are
// refused.
func TestTargetGeometry(t *testing.T) {
	spec, err := Preset("small-geometry")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "target.safetensors")
	if err := Create(spec, 2, "", path, nil); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	q := []float32{0.5, 0, 0.9, 0.2}
	trained := *p.Spec().Policy.TargetGeometry
	robot := trained // the robot's camera, as the node reads it: mounted 3 cm higher, pitched 0.02 rad more
	robot.Mount[2] += 0.03
	robot.Pitch += 0.02
	for _, tc := range []struct {
		name   string
		camera *vision.CameraGeometry
		want   vision.CameraGeometry
	}{{"trained calibration", nil, trained}, {"the robot's", &robot, robot}} {
		obs := &Observation{Frame: frame(5), Instruction: "pick the apple", Proprio: q, Camera: tc.camera}
		if err := p.Step(obs, p.NewState(), make([]float32, 11)); err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(q)
		for c := 1; c <= 2; c++ { // the target, its destination
			u, v, _ := p.Keypoint(c)
			x, y, ok := tc.want.Backproject(u, v)
			if ok { // and from the hand, in units of 5 cm
				want = append(want, x, y, 1, (x-q[0])/0.05, (y-q[1])/0.05)
			} else {
				want = append(want, 0, 0, 0, 0, 0)
			}
		}
		for i := range want {
			if math.Abs(float64(p.proprio[i]-want[i])) > 1e-5*max(1, math.Abs(float64(want[i]))) {
				t.Fatalf("%s: proprioception token input %v, want %v", tc.name, p.proprio, want)
			}
		}
	}
	small := robot
	small.Height /= 2
	err = p.Step(&Observation{Frame: frame(5), Instruction: "pick the apple", Proprio: q, Camera: &small}, p.NewState(), make([]float32, 11))
	if err == nil || !strings.Contains(err.Error(), "camera geometry for 64x160 images") {
		t.Errorf("a calibration for another image size: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"no keypoints", func(s *Spec) { s.Vision.Head.Keypoints, s.Vision.Head.KeypointWindow = false, 0 }, "needs a vision head with that many keypoints"},
		{"more points than channels", func(s *Spec) { s.Policy.GeometryPoints = s.Vision.Head.Dim }, "needs a vision head with that many keypoints"},
		{"negative points", func(s *Spec) { s.Policy.GeometryPoints = -1 }, "geometry points"},
		{"points without geometry", func(s *Spec) { s.Policy.TargetGeometry, s.Policy.GeometryRelative = nil, 0 }, "geometry points"},
		{"relative without a hand", func(s *Spec) { s.Policy.Proprio = []string{"gripper"} }, "relative to the hand"},
		{"relative by NaN", func(s *Spec) { s.Policy.GeometryRelative = math.NaN() }, "relative to the hand"},
	} {
		bad := spec
		bad.Policy.Proprio = slices.Clone(spec.Policy.Proprio)
		tc.edit(&bad)
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// TestGeometrySightline: with GeometrySightline (kitchen-sightline) each
// geometry point adds where its line of sight passes the hand's depth,
// from the hand in units of GeometryRelative, after the point's worktop
// values; specs without the relative geometry or the hand's height are
// refused.
func TestGeometrySightline(t *testing.T) {
	p := loadPreset(t, "kitchen-sightline")
	spec := p.Spec()
	g := spec.Policy.TargetGeometry
	for _, q := range [][]float32{{0.5, 0, 0.9, 0.2}, {0.45, -0.1, 0.5, 0}, {-0.2, 0, 1, 0}} { // the last: the hand behind the camera
		if err := p.Step(&Observation{Frame: frame(5), Instruction: "open the top drawer", Proprio: q}, p.NewState(), make([]float32, 11)); err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(q)
		for c := 1; c <= 2; c++ {
			u, v, _ := p.Keypoint(c)
			pt := make([]float32, 7)
			if x, y, ok := g.Backproject(u, v); ok {
				copy(pt, []float32{x, y, 1, (x - q[0]) / 0.05, (y - q[1]) / 0.05})
			}
			if y, z, ok := g.AtDepth(u, v, q[0]); ok {
				pt[5], pt[6] = (y-q[1])/0.05, (z-q[2])/0.05
			} else if q[0] > float32(g.Mount[0]) {
				t.Fatalf("keypoint %d (%v, %v): its line of sight misses the hand's depth %v", c, u, v, q[0])
			}
			want = append(want, pt...)
		}
		if len(p.proprio) != len(want) {
			t.Fatalf("proprioception token input of %d values, want %d", len(p.proprio), len(want))
		}
		for i := range want {
			if math.Abs(float64(p.proprio[i]-want[i])) > 1e-5*max(1, math.Abs(float64(want[i]))) {
				t.Fatalf("hand %v: proprioception token input %v, want %v", q, p.proprio, want)
			}
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*Spec)
	}{
		{"not relative", func(s *Spec) { s.Policy.GeometryRelative = 0 }},
		{"no hand height", func(s *Spec) { s.Policy.Proprio = []string{"hand_x", "hand_y", "gripper"} }},
	} {
		bad := spec
		bad.Policy.Proprio = slices.Clone(spec.Policy.Proprio)
		tc.edit(&bad)
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "line of sight") {
			t.Errorf("%s: %v, want an error about the line of sight", tc.name, err)
		}
	}
}

// TestLoadTakesAnyHeadOverTheNodesLayout: the node expects RT-1's layout
// (node params); a checkpoint that regresses the arm over that layout
// (small-geometry) loads, and one whose layout differs does not.
func TestLoadTakesAnyHeadOverTheNodesLayout(t *testing.T) {
	path := presetCheckpoint(t, "small-geometry")
	rt1 := action.RT1()
	p, err := Load(path, Options{NoBackbone: true, Expect: Expect{ActionSpace: &rt1}})
	if err != nil {
		t.Fatalf("a regressed arm over RT-1's layout, the node expecting RT-1: %v", err)
	}
	p.Close()
	rt1.Dims[action.DimWorldX].High = 0.5
	if p, err := Load(path, Options{NoBackbone: true, Expect: Expect{ActionSpace: &rt1}}); err == nil || !strings.Contains(err.Error(), "action space mismatch") {
		if p != nil {
			p.Close()
		}
		t.Errorf("another bound on world_vector/x: %v, want an action space mismatch", err)
	}
}

// presetCheckpoint creates a fresh checkpoint of the named preset (seed 1,
// with its seeded backbone) in a temporary folder and returns its path.
func presetCheckpoint(tb testing.TB, name string) string {
	tb.Helper()
	spec, err := Preset(name)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), name+".safetensors")
	if err := Create(spec, 1, "", path, nil); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestGoalProbe: a small-goal-probe policy's goal probe is the Dense layer of
// the step's pooled output, computed here by hand; it does not change the
// action; it survives a checkpoint; policies without it report none.
func TestGoalProbe(t *testing.T) {
	path := presetCheckpoint(t, "small-goal-probe")
	p, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r := rand.New(rand.NewPCG(9, 9))
	for i := range p.head.goalB {
		p.head.goalB[i] = float32(r.NormFloat64())
	}
	p.ParamsChanged()
	obs := &Observation{Frame: frame(5), Instruction: "open the drawer the arrow pointed at", Proprio: []float32{0.5, 0, 0.9, 0}}
	act := make([]float32, p.ActionSpace().Len())
	st := p.NewState()
	for range 2 {
		if err := p.Step(obs, st, act); err != nil {
			t.Fatal(err)
		}
	}
	est := p.GoalEstimate()
	if len(est) != GoalLen {
		t.Fatalf("goal estimate %v, want %d values", est, GoalLen)
	}
	d := p.spec.TTM.Dim
	for j := range GoalLen {
		want := float64(p.head.goalB[j])
		for i := range d {
			want += float64(p.pooled[i]) * float64(p.head.goalW[i*GoalLen+j])
		}
		if math.Abs(float64(est[j])-want) > 1e-4*(1+math.Abs(want)) {
			t.Errorf("goal estimate[%d] = %v, by hand %v", j, est[j], want)
		}
	}

	// The probe does not act: other probe weights, the same action.
	snap := st.Clone()
	ref := slices.Clone(act)
	saved := slices.Clone(p.head.goalW)
	for i := range p.head.goalW {
		p.head.goalW[i] = float32(r.NormFloat64())
	}
	p.ParamsChanged()
	p.Step(obs, st, act)
	st.CopyFrom(snap)
	copy(p.head.goalW, saved)
	p.ParamsChanged()
	p.Step(obs, st, ref)
	if !slices.Equal(act, ref) {
		t.Errorf("the goal probe changed the action: %v against %v", act, ref)
	}

	out := filepath.Join(t.TempDir(), "probe.safetensors")
	if err := p.SaveAs(out, filepath.Join(filepath.Dir(path), p.Spec().Vision.Backbone.File)); err != nil {
		t.Fatal(err)
	}
	q, err := Load(out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if !slices.Equal(q.head.goalW, p.head.goalW) || !slices.Equal(q.head.goalB, p.head.goalB) || !q.Spec().Policy.GoalProbe {
		t.Error("the goal probe did not survive a checkpoint")
	}

	plain := loadPreset(t, "small-memory-film")
	plain.Step(obs, plain.NewState(), act)
	if plain.GoalEstimate() != nil {
		t.Error("a policy without a goal probe reports an estimate")
	}
}

// TestMemoryFiLM: a small-memory-film policy's FiLM reads the previous step's
// output: the fed-back output is the step's pooled output, it changes the
// next step's action, the no-memory ablation and a memory knock-out cut
// it, snapshots carry it, and its layer survives a checkpoint.
func TestMemoryFiLM(t *testing.T) {
	path := presetCheckpoint(t, "small-memory-film")
	p, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !slices.ContainsFunc(p.params, func(v float32) bool { return v != 0 }) || slices.ContainsFunc(p.head.feedbackW, func(v float32) bool { return v != 0 }) {
		t.Fatal("a fresh small-memory-film policy should start with a zero feedback layer (the small-geometry policy it extends)")
	}
	r := rand.New(rand.NewPCG(8, 8))
	for i := range p.head.feedbackW {
		p.head.feedbackW[i] = float32(r.NormFloat64())
	}
	for _, s := range p.visionHd.Specs { // FiLM starts as the identity, blind to its embedding
		if strings.Contains(s.Name, "film/") {
			for i := s.Offset; i < s.Offset+s.Size; i++ {
				p.visionHd.Params[i] = float32(r.NormFloat64() * 0.1)
			}
		}
	}
	p.ParamsChanged()
	obs := &Observation{Frame: frame(5), Instruction: "pick the object that was marked", Proprio: []float32{0.5, 0, 0.9, 0}}
	act, ref := make([]float32, p.ActionSpace().Len()), make([]float32, p.ActionSpace().Len())

	// Second-step actions from the same memory, with and without the
	// first step's output fed back.
	secondStep := func(cut bool) []float32 {
		st := p.NewState()
		if err := p.Step(obs, st, act); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(st.Feedback, p.pooled) {
			t.Fatal("the state does not hold the step's pooled output")
		}
		if cut {
			clear(st.Feedback)
		}
		if err := p.Step(obs, st, act); err != nil {
			t.Fatal(err)
		}
		return slices.Clone(act)
	}
	if a, b := secondStep(false), secondStep(true); slices.Equal(a, b) {
		t.Error("the fed-back output does not change the next action")
	}
	p.SetNoMemory(true)
	if a, b := secondStep(false), secondStep(true); !slices.Equal(a, b) {
		t.Errorf("with the no-memory ablation the fed-back output still matters: %v against %v", a, b)
	}
	p.SetNoMemory(false)

	st := p.NewState()
	p.Step(obs, st, act)
	snap := st.Clone()
	p.Step(obs, st, ref)
	st2 := p.NewState()
	st2.CopyFrom(snap)
	p.Step(obs, st2, act)
	if !slices.Equal(act, ref) || !slices.Equal(st.Feedback, st2.Feedback) {
		t.Error("a restored snapshot does not replay the step")
	}
	st.ResetMemory()
	if slices.ContainsFunc(st.Feedback, func(v float32) bool { return v != 0 }) {
		t.Error("a memory knock-out leaves the fed-back output")
	}

	saved := filepath.Join(filepath.Dir(path), "recall.safetensors") // beside the backbone
	if err := p.Save(saved); err != nil {
		t.Fatal(err)
	}
	q, err := Load(saved, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if !q.Spec().Policy.MemoryFiLM || !slices.Equal(q.head.feedbackW, p.head.feedbackW) {
		t.Error("the feedback layer did not survive the checkpoint")
	}
}
