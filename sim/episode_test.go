package sim

import (
	"hash/fnv"
	"math"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"
)

// episodeHash plays task/seed with a noisy expert and hashes every frame
// and the state after every step.
func episodeHash(t *testing.T, task *Task, seed uint64) uint64 {
	t.Helper()
	ep, err := NewEpisode(task, seed, Options{Height: 32, Width: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	h := fnv.New64a()
	h.Write([]byte(ep.Instruction()))
	x := ep.Expert(ExpertOptions{Seed: 3, Noise: 0.1, BaseNoise: 0.03, PauseProb: 0.1})
	img := make([]byte, 32*40*3)
	for !ep.Done() {
		if err := ep.Render(img); err != nil {
			t.Fatal(err)
		}
		h.Write(img)
		if _, err := ep.Step(x.Act(ep.State())); err != nil {
			t.Fatal(err)
		}
		s := ep.State()
		for _, o := range s.Objects {
			for _, v := range [...]float64{o.Pos[0], o.Pos[1], o.Pos[2], o.Yaw} {
				b := math.Float64bits(v)
				h.Write([]byte{byte(b), byte(b >> 8), byte(b >> 16), byte(b >> 24), byte(b >> 32), byte(b >> 40), byte(b >> 48), byte(b >> 56)})
			}
		}
		e := s.EEWorld()
		for _, v := range [...]float64{e[0], e[1], e[2], s.Base.Yaw, s.Grip, s.Drawers[0].Open, s.Drawers[1].Open} {
			b := math.Float64bits(v)
			h.Write([]byte{byte(b), byte(b >> 8), byte(b >> 16), byte(b >> 24), byte(b >> 32), byte(b >> 40), byte(b >> 48), byte(b >> 56)})
		}
	}
	return h.Sum64()
}

func TestDeterministic(t *testing.T) {
	for _, task := range Tasks() {
		a, b := episodeHash(t, task, 9), episodeHash(t, task, 9)
		if a != b {
			t.Errorf("%s: two runs of seed 9 differ", task.Name)
		}
		if c := episodeHash(t, task, 10); c == a {
			t.Errorf("%s: seeds 9 and 10 gave the same episode", task.Name)
		}
	}
}

func TestRegistry(t *testing.T) {
	var names []string
	for _, task := range Tasks() {
		names = append(names, task.Name)
		got, err := TaskByName(task.Name)
		if err != nil || got != task {
			t.Errorf("TaskByName(%q) = %v, %v", task.Name, got, err)
		}
	}
	want := "pick knock upright move drawer cue_pick put_back pointed_drawer"
	if strings.Join(names, " ") != want {
		t.Errorf("tasks %v, want %s", names, want)
	}
	memory := map[string]bool{"cue_pick": true, "put_back": true, "pointed_drawer": true}
	for _, task := range Tasks() {
		if task.Memory != memory[task.Name] {
			t.Errorf("%s: Memory = %v", task.Name, task.Memory)
		}
	}
	if _, err := TaskByName("fly"); err == nil || !strings.Contains(err.Error(), "pick") {
		t.Errorf("TaskByName(fly) error %v, want one listing the known tasks", err)
	}
	// Tasks returns a copy: changing it does not change the registry.
	ts := Tasks()
	ts[0] = nil
	if Tasks()[0] == nil {
		t.Error("Tasks exposes the registry")
	}
}

// TestTaskVariety checks that each task draws several phrasings and
// targets, and that no episode starts solved.
func TestTaskVariety(t *testing.T) {
	for _, task := range Tasks() {
		instr, targets := map[string]bool{}, map[string]bool{}
		for seed := range uint64(60) {
			ep, err := NewEpisode(task, seed, Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := ep.State()
			instr[ep.Instruction()] = true
			switch s.Goal.Kind {
			case GoalDrawer:
				targets[drawerNames[s.Goal.Drawer]+map[bool]string{true: " open", false: " close"}[s.Goal.Open]] = true
			default:
				targets[s.Objects[s.Goal.Object].Kind.String()] = true
			}
			if ep.Success() {
				t.Errorf("%s seed %d starts solved", task.Name, seed)
			}
			if n := len(s.Objects); n < 2 || n > 5 {
				t.Errorf("%s seed %d has %d objects", task.Name, seed, n)
			}
			for i := range s.Objects {
				if !s.OnTable(i) {
					t.Errorf("%s seed %d: object %d is not on the worktop", task.Name, seed, i)
				}
			}
		}
		if len(instr) < 3 {
			t.Errorf("%s: %d distinct instructions in 60 seeds, want several", task.Name, len(instr))
		}
		if len(targets) < 2 {
			t.Errorf("%s: targets %v in 60 seeds, want several", task.Name, targets)
		}
	}
}

func TestStepErrors(t *testing.T) {
	task, _ := TaskByName("pick")
	ep, _ := NewEpisode(task, 1, Options{})
	if _, err := ep.Step(make([]float32, 10)); err == nil || !strings.Contains(err.Error(), "10 values") {
		t.Errorf("short action: error %v", err)
	}
	nan := armAct(0, 0, 0, 0)
	nan[action.DimWorldY] = float32(math.NaN())
	if _, err := ep.Step(nan); err == nil || !strings.Contains(err.Error(), "world_vector/y") {
		t.Errorf("NaN action: error %v, want one naming world_vector/y", err)
	}
	inf := armAct(0, 0, 0, 0)
	inf[action.DimBaseYaw] = float32(math.Inf(-1))
	if _, err := ep.Step(inf); err == nil || !strings.Contains(err.Error(), "base/yaw") {
		t.Errorf("Inf action: error %v, want one naming base/yaw", err)
	}
	if ep.Steps() != 0 {
		t.Errorf("rejected actions counted as steps: %d", ep.Steps())
	}
	term := make([]float32, 11)
	if done, err := ep.Step(term); !done || err != nil {
		t.Fatalf("terminate: done %v err %v", done, err)
	}
	if _, err := ep.Step(term); err == nil {
		t.Error("step after the end succeeded")
	}
	if _, err := NewEpisode(nil, 1, Options{}); err == nil {
		t.Error("NewEpisode(nil) succeeded")
	}
	if _, err := NewEpisode(task, 1, Options{Height: 5}); err == nil {
		t.Error("NewEpisode with a 5-row image succeeded")
	}
	if _, err := NewEpisode(&Task{Name: "empty"}, 1, Options{}); err == nil {
		t.Error("NewEpisode with a task not from the registry succeeded")
	}
}

func TestStepClampsAndCaps(t *testing.T) {
	task, _ := TaskByName("drawer")
	ep, _ := NewEpisode(task, 2, Options{})
	s := ep.State()
	e0 := s.EE
	a := armAct(0, 0, 7, 0) // 7 units is clamped to 1
	a[action.DimMode] = 1.4 // rounds to arm
	ep.Step(a)
	if !near(s.EE[2]-e0[2], ArmScale, 1e-12) {
		t.Errorf("a clamped full-scale step moved the hand %v, want %v", s.EE[2]-e0[2], ArmScale)
	}
	hold := armAct(0, 0, 0, 0)
	for i := 1; i < task.MaxSteps; i++ {
		done, err := ep.Step(hold)
		if err != nil || done != (i == task.MaxSteps-1) {
			t.Fatalf("step %d: done %v err %v; want the episode to end at the cap %d", i+1, done, err, task.MaxSteps)
		}
	}
	if ep.State().Terminated {
		t.Error("the step cap set Terminated")
	}
}

func TestStepAndExpertAllocs(t *testing.T) {
	task, _ := TaskByName("move")
	ep, _ := NewEpisode(task, 1, Options{})
	x := ep.Expert(ExpertOptions{Noise: 0.05})
	ep.Step(x.Act(ep.State()))
	n := testing.AllocsPerRun(20, func() {
		if !ep.Done() {
			ep.Step(x.Act(ep.State()))
		}
	})
	if n != 0 {
		t.Errorf("a step with the expert allocates %v times, want 0", n)
	}
}

// TestExpertActionsInBounds checks every expert action against the RT-1
// bounds, with noise.
func TestExpertActionsInBounds(t *testing.T) {
	space := action.RT1()
	for _, task := range Tasks() {
		for seed := range uint64(5) {
			ep, _ := NewEpisode(task, seed, Options{})
			x := ep.Expert(ExpertOptions{Seed: seed, Noise: 0.5, BaseNoise: 0.5, PauseProb: 0.1})
			for !ep.Done() {
				a := x.Act(ep.State())
				if len(a) != space.Len() {
					t.Fatalf("%s: expert action has %d values", task.Name, len(a))
				}
				for i, d := range space.Dims {
					if v := float64(a[i]); v < d.Low || v > d.High || math.IsNaN(v) {
						t.Fatalf("%s seed %d: %s = %v outside [%g, %g]", task.Name, seed, d.Name, v, d.Low, d.High)
					}
				}
				if m := a[action.DimMode]; m != 0 && m != 1 && m != 2 {
					t.Fatalf("%s: mode %v is not a category", task.Name, m)
				}
				if a[action.DimMode] == action.ModeArm && math.Abs(float64(a[action.DimWorldX])) > 1 {
					t.Fatalf("%s: arm step beyond one unit", task.Name)
				}
				ep.Step(a)
			}
		}
	}
}

// TestExpertUsesModes checks that the experts drive the base first (the
// start pose is off the working pose) and then the arm.
func TestExpertUsesModes(t *testing.T) {
	task, _ := TaskByName("pick")
	ep, _ := NewEpisode(task, 3, Options{})
	x := ep.Expert(ExpertOptions{})
	var modes []int
	for !ep.Done() {
		a := x.Act(ep.State())
		modes = append(modes, int(a[action.DimMode]))
		ep.Step(a)
	}
	if modes[0] != action.ModeBase || modes[len(modes)-1] != action.ModeTerminate {
		t.Errorf("modes %v: want base first and terminate last", modes)
	}
	arm := 0
	for _, m := range modes {
		if m == action.ModeArm {
			arm++
		}
	}
	if arm < 5 {
		t.Errorf("modes %v: want arm steps", modes)
	}
}

func BenchmarkStep(b *testing.B) {
	task, _ := TaskByName("move")
	b.ReportAllocs()
	var ep *Episode
	var x Expert
	for b.Loop() {
		if ep == nil || ep.Done() {
			ep, _ = NewEpisode(task, uint64(b.N), Options{})
			x = ep.Expert(ExpertOptions{Noise: 0.05})
		}
		ep.Step(x.Act(ep.State()))
	}
}

// TestStartGoal: the goal probe's label is the goal in the starting base
// frame: back in the world it is the cued object, put_back's spot (where
// the object stood before it was slid away) or the goal drawer's handle,
// whose height tells the two drawers apart.
func TestStartGoal(t *testing.T) {
	handleZ := [NumDrawers]float64{(drawerTopZ0 + drawerTopZ1) / 2, (drawerBottomZ0 + drawerBottomZ1) / 2}
	for _, tc := range []struct {
		task string
		want func(s *State) Vec3 // in the world, at the start
	}{
		{"cue_pick", func(s *State) Vec3 { return s.Objects[s.Goal.Object].Pos }},
		{"put_back", func(s *State) Vec3 { return s.Goal.Spot }},
		{"pointed_drawer", func(s *State) Vec3 { return handlePos(s.Goal.Drawer, 0) }},
		{"drawer", func(s *State) Vec3 { return handlePos(s.Goal.Drawer, s.Drawers[s.Goal.Drawer].Open) }},
		{"move", func(s *State) Vec3 { return s.Objects[s.Goal.Object].Pos }},
	} {
		t.Run(tc.task, func(t *testing.T) {
			task, err := TaskByName(tc.task)
			if err != nil {
				t.Fatal(err)
			}
			var drawers [NumDrawers]int
			for seed := uint64(1); seed <= 30; seed++ {
				g, err := StartGoal(task, seed)
				if err != nil {
					t.Fatal(err)
				}
				ep, err := NewEpisode(task, seed, Options{})
				if err != nil {
					t.Fatal(err)
				}
				s := ep.State()
				want := tc.want(s)
				if got := s.ToWorld(g); got.Sub(want).Norm() > 1e-9 {
					t.Fatalf("seed %d: start goal %v is %v in the world, want %v", seed, g, got, want)
				}
				if s.Goal.Kind == GoalDrawer {
					drawers[s.Goal.Drawer]++
					if math.Abs(g[2]-handleZ[s.Goal.Drawer]) > 1e-9 {
						t.Fatalf("seed %d: drawer %d's handle at height %v, want %v", seed, s.Goal.Drawer, g[2], handleZ[s.Goal.Drawer])
					}
				}
				if s.Goal.Kind == GoalPutBack && s.Goal.SlideTo.Sub(s.Goal.Spot).Norm() < 0.2 {
					t.Fatalf("seed %d: the slide moves the object %v, less than the task's 20 cm", seed, s.Goal.SlideTo.Sub(s.Goal.Spot).Norm())
				}
			}
			if tc.task == "pointed_drawer" && (drawers[0] == 0 || drawers[1] == 0) {
				t.Errorf("30 seeds point at drawers %v: both should come up", drawers)
			}
		})
	}
	if _, err := StartGoal(nil, 1); err == nil {
		t.Error("a start goal without a task")
	}
}
