package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Task is a task family: a scene generator with several objects and
// phrasings, a success detector and a step cap.
type Task struct {
	// Name is the family's name: pick, knock, upright, move, drawer, or a
	// memory task: cue_pick, put_back, pointed_drawer.
	Name string
	// Memory tasks cannot be solved from the current frame alone: what
	// they ask about is shown only in early frames.
	Memory bool
	// MaxSteps ends an episode that has not terminated.
	MaxSteps int
	// Summary describes the task in one line.
	Summary string

	setup func(r *rand.Rand, s *State) (instruction string)
}

// Success is the task's success detector (see the package function Success).
func (t *Task) Success(s *State) bool { return Success(s) }

func (t *Task) String() string { return t.Name }

// cueSteps is how many frames a memory cue is shown for.
const cueSteps = 3

var registry = []*Task{
	{Name: "pick", MaxSteps: 60, Summary: "pick up the named object", setup: setupPick},
	{Name: "knock", MaxSteps: 60, Summary: "knock the named can or bottle over", setup: setupKnock},
	{Name: "upright", MaxSteps: 90, Summary: "stand a fallen can or bottle upright", setup: setupUpright},
	{Name: "move", MaxSteps: 100, Summary: "move one object near another", setup: setupMove},
	{Name: "drawer", MaxSteps: 70, Summary: "open or close the top or bottom drawer", setup: setupDrawer},
	{Name: "cue_pick", Memory: true, MaxSteps: 60, Summary: "pick the object ringed in the first frames", setup: setupCuePick},
	{Name: "put_back", Memory: true, MaxSteps: 100, Summary: "an object is slid away; put it back on its starting spot", setup: setupPutBack},
	{Name: "pointed_drawer", Memory: true, MaxSteps: 70, Summary: "open the drawer an arrow pointed at in the first frames", setup: setupPointedDrawer},
}

// Tasks returns every task: the five families, then the memory tasks.
func Tasks() []*Task { return slices.Clone(registry) }

// TaskByName returns the task called name.
func TaskByName(name string) (*Task, error) {
	for _, t := range registry {
		if t.Name == name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("sim: unknown task %q (known: %s)", name, strings.Join(taskNames(), ", "))
}

func taskNames() []string {
	names := make([]string, len(registry))
	for i, t := range registry {
		names[i] = t.Name
	}
	return names
}

var (
	pickPhrases    = []string{"pick the %s", "pick up the %s", "grab the %s", "lift the %s"}
	knockPhrases   = []string{"knock the %s over", "knock over the %s", "push the %s over", "tip over the %s"}
	uprightPhrases = []string{"place the %s upright", "stand the %s up", "set the %s upright", "put the %s upright"}
	movePhrases    = []string{"move the %s near the %s", "put the %s next to the %s", "bring the %s close to the %s", "place the %s near the %s"}
	openPhrases    = []string{"open the %s drawer", "pull the %s drawer open", "open %s drawer"}
	closePhrases   = []string{"close the %s drawer", "push the %s drawer shut", "close %s drawer"}
	cuePhrases     = []string{"pick the object that was marked", "pick up the object that lit up", "grab the highlighted object"}
	putBackPhrases = []string{"put the %s back where it was", "return the %s to where it started", "move the %s back to its spot"}
	pointedPhrases = []string{"open the drawer the arrow pointed at", "open the drawer that was pointed at", "pull open the indicated drawer"}
	drawerNames    = [NumDrawers]string{DrawerTop: "top", DrawerBottom: "bottom"}
)

func phrase(r *rand.Rand, ps []string, args ...any) string {
	return fmt.Sprintf(ps[r.IntN(len(ps))], args...)
}

// startState returns a state with the base at a random pose in front of
// the counter, the arm at home and the gripper open.
func startState(r *rand.Rand) *State {
	s := &State{EE: armHome}
	s.Base = Pose{
		X:   -0.20 + 0.2*r.Float64(),
		Y:   -0.10 + 0.2*r.Float64(),
		Yaw: -0.20 + 0.4*r.Float64(),
	}
	return s
}

// chooseKinds returns n distinct kinds; the first is drawn from first
// (all kinds if empty).
func chooseKinds(r *rand.Rand, n int, first []Kind) []Kind {
	if len(first) == 0 {
		first = Kinds()
	}
	k0 := first[r.IntN(len(first))]
	ks := []Kind{k0}
	for _, i := range r.Perm(int(numKinds)) {
		if len(ks) == n {
			break
		}
		if Kind(i) != k0 {
			ks = append(ks, Kind(i))
		}
	}
	return ks
}

var tippable = []Kind{CokeCan, PepsiCan, SevenUpCan, WaterBottle, JuiceBottle}

// placeObjects puts objects of the given kinds on the worktop at random,
// apart from each other; fallen[i] lays object i on its side. Object 0 is
// placed first.
func placeObjects(r *rand.Rand, s *State, kinds []Kind, fallen []bool) {
	s.Objects = make([]Object, len(kinds))
	for attempt := 0; ; attempt++ {
		ok := true
		for i, k := range kinds {
			o := &s.Objects[i]
			*o = Object{Kind: k, Fallen: fallen != nil && fallen[i]}
			if o.Fallen || catalogue[k].Shape == Box {
				o.Yaw = math.Pi * (2*r.Float64() - 1)
			}
			placed := false
			for try := 0; try < 200 && !placed; try++ {
				o.Pos = Vec3{spawnX0 + (spawnX1-spawnX0)*r.Float64(), spawnY0 + (spawnY1-spawnY0)*r.Float64(), 0}
				placed = clearSpot(s, i, o.Pos, footprint(k, o.Fallen), 0.05)
			}
			if !placed {
				ok = false
				break
			}
			rest(o)
		}
		if ok || attempt > 100 {
			return
		}
	}
}

// clearSpot reports whether a footprint of radius rad at p keeps gap from
// objects 0..n-1.
func clearSpot(s *State, n int, p Vec3, rad, gap float64) bool {
	for j := range n {
		o := &s.Objects[j]
		if p.DistXY(o.Pos) < rad+footprint(o.Kind, o.Fallen)+gap {
			return false
		}
	}
	return true
}

func setupPick(r *rand.Rand, s *State) string {
	kinds := chooseKinds(r, 3+r.IntN(3), nil)
	placeObjects(r, s, kinds, nil)
	s.Goal = Goal{Kind: GoalPick, Object: 0}
	shuffle(r, s)
	return phrase(r, pickPhrases, s.Objects[s.Goal.Object].Kind)
}

func setupKnock(r *rand.Rand, s *State) string {
	kinds := chooseKinds(r, 3+r.IntN(3), tippable)
	placeObjects(r, s, kinds, nil)
	s.Goal = Goal{Kind: GoalKnock, Object: 0}
	shuffle(r, s)
	return phrase(r, knockPhrases, s.Objects[s.Goal.Object].Kind)
}

func setupUpright(r *rand.Rand, s *State) string {
	n := 2 + r.IntN(3)
	kinds := chooseKinds(r, n, tippable)
	fallen := make([]bool, n)
	fallen[0] = true
	placeObjects(r, s, kinds, fallen)
	s.Goal = Goal{Kind: GoalUpright, Object: 0}
	shuffle(r, s)
	return phrase(r, uprightPhrases, s.Objects[s.Goal.Object].Kind)
}

func setupMove(r *rand.Rand, s *State) string {
	for {
		kinds := chooseKinds(r, 3+r.IntN(3), nil)
		placeObjects(r, s, kinds, nil)
		// The first object far enough from object 0 is the reference.
		for j := 1; j < len(s.Objects); j++ {
			if s.Objects[0].Pos.DistXY(s.Objects[j].Pos) >= 0.30 {
				s.Goal = Goal{Kind: GoalMoveNear, Object: 0, Other: j}
				shuffle(r, s)
				return phrase(r, movePhrases, s.Objects[s.Goal.Object].Kind, s.Objects[s.Goal.Other].Kind)
			}
		}
	}
}

func setupDrawer(r *rand.Rand, s *State) string {
	placeObjects(r, s, chooseKinds(r, 2+r.IntN(3), nil), nil)
	shuffle(r, s)
	d := r.IntN(NumDrawers)
	s.Goal = Goal{Kind: GoalDrawer, Drawer: d, Open: r.IntN(2) == 0}
	if s.Goal.Open {
		return phrase(r, openPhrases, drawerNames[d])
	}
	s.Drawers[d].Open = 0.16 + 0.09*r.Float64()
	return phrase(r, closePhrases, drawerNames[d])
}

func setupCuePick(r *rand.Rand, s *State) string {
	placeObjects(r, s, chooseKinds(r, 3+r.IntN(2), nil), nil)
	s.Goal = Goal{Kind: GoalPick, Object: 0, Cue: CueRing, CueSteps: cueSteps}
	shuffle(r, s)
	return phrase(r, cuePhrases)
}

func setupPutBack(r *rand.Rand, s *State) string {
	for {
		placeObjects(r, s, chooseKinds(r, 3+r.IntN(2), nil), nil)
		o := &s.Objects[0]
		fp := footprint(o.Kind, false)
		for try := 0; try < 200; try++ {
			to := Vec3{spawnX0 + (spawnX1-spawnX0)*r.Float64(), spawnY0 + (spawnY1-spawnY0)*r.Float64(), o.Pos[2]}
			if to.DistXY(o.Pos) < 0.20 || !pathClear(s, 0, o.Pos, to, fp) {
				continue
			}
			s.Goal = Goal{Kind: GoalPutBack, Object: 0, Spot: o.Pos, SlideTo: to, SlideStart: 2, SlideSteps: 3}
			shuffle(r, s)
			return phrase(r, putBackPhrases, s.Objects[s.Goal.Object].Kind)
		}
	}
}

// pathClear reports whether object i, of footprint fp, can slide from a to
// b without touching another object.
func pathClear(s *State, i int, a, b Vec3, fp float64) bool {
	for j := range s.Objects {
		if j == i {
			continue
		}
		o := &s.Objects[j]
		if _, d := segmentPointXY(a, b, o.Pos); d < fp+footprint(o.Kind, o.Fallen)+0.03 {
			return false
		}
	}
	return true
}

func setupPointedDrawer(r *rand.Rand, s *State) string {
	placeObjects(r, s, chooseKinds(r, 2+r.IntN(2), nil), nil)
	shuffle(r, s)
	s.Goal = Goal{Kind: GoalDrawer, Drawer: r.IntN(NumDrawers), Open: true, Exclusive: true, Cue: CueArrow, CueSteps: cueSteps}
	return phrase(r, pointedPhrases)
}

// shuffle permutes the objects so the target is not always object 0, and
// renumbers the goal.
func shuffle(r *rand.Rand, s *State) {
	perm := r.Perm(len(s.Objects)) // object i goes to slot perm[i]
	objs := make([]Object, len(s.Objects))
	for i, p := range perm {
		objs[p] = s.Objects[i]
	}
	s.Objects = objs
	if len(perm) > 0 {
		s.Goal.Object = perm[s.Goal.Object]
		s.Goal.Other = perm[s.Goal.Other]
	}
}
