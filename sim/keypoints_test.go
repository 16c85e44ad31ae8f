package sim

import (
	"math"
	"testing"
)

// TestKeypointLabelsShowWhatTheyName renders each task's first frames and
// checks that every labelled point lies on what it names: moving the hand
// 30 cm sideways, the target out of the scene, or a drawer's handle to its
// drawer's other end of travel, changes the pixels around the label.
// The target and destination labels of objects are footprints (the
// worktop's point under what they name), so this holds for objects that
// stand on it and for handles: not for a held object or an empty spot,
// whose labels TestTargetLabelsBackproject checks. Labels
// do not model occlusion (the arm in front of a handle, one object behind
// another), so up to one point in ten may fail the check.
func TestKeypointLabelsShowWhatTheyName(t *testing.T) {
	const h, w = 128, 160
	rd, err := NewRenderer(h, w)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range Tasks() {
		t.Run(task.Name, func(t *testing.T) {
			labelled, missed := 0, 0
			for seed := uint64(1); seed <= 6; seed++ {
				ep, err := NewEpisode(task, seed, Options{Height: h, Width: w})
				if err != nil {
					t.Fatal(err)
				}
				x := ep.Expert(ExpertOptions{})
				for step := 0; step < 40 && !ep.Done(); step++ {
					s := ep.State()
					if step%8 == 0 {
						in, miss := checkLabels(t, rd, s, h, w)
						labelled, missed = labelled+in, missed+miss
					}
					if _, err := ep.Step(x.Act(s)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if labelled < 10 {
				t.Errorf("only %d points in view over the checked frames", labelled)
			}
			t.Logf("%d points labelled in view, %d not on what they name", labelled, missed)
			if missed*10 > labelled {
				t.Errorf("%d of %d labelled points do not lie on what they name", missed, labelled)
			}
		})
	}
}

// checkLabels checks the labels of s and returns how many were in view
// and how many of those fail the check (logged).
func checkLabels(t *testing.T, rd *Renderer, s *State, h, w int) (in, missed int) {
	t.Helper()
	labels := make([]float32, KeypointLabelLen)
	KeypointLabels(labels, s, h, w)
	base := make([]byte, h*w*3)
	if err := rd.Render(base, s); err != nil {
		t.Fatal(err)
	}
	for i := range KeypointCount {
		l := labels[3*i : 3*i+3]
		if l[2] == 0 {
			continue
		}
		if l[2] != 1 || l[0] < 0 || l[0] >= 1 || l[1] < 0 || l[1] >= 1 {
			t.Fatalf("step %d, point %d: label %v", s.Step, i, l)
		}
		in++
		moved := s.Clone()
		switch {
		case i == 0:
			// Sideways: lifted, the forearm from the shoulder would still
			// cross the old point.
			moved.EE[1] += 0.3
			if moved.Grasp.Kind == GraspObject {
				moved.Objects[moved.Grasp.Index].Pos = moved.EEWorld().Add(moved.Grasp.Offset)
			}
		case i == 1 && s.Goal.Kind == GoalDrawer && s.EEWorld().Sub(s.DrawerHandle(s.Goal.Drawer)).Norm() < 0.15:
			// The hand at the handle hides it.
			in--
			continue
		case i == 1 && s.Goal.Kind == GoalDrawer:
			d := &moved.Drawers[s.Goal.Drawer]
			d.Open = MaxDrawerOpen - d.Open
		case i == 1 && s.Grasp.Holds(s.Goal.Object), i == 2 && s.Goal.Kind == GoalPutBack:
			// Footprints of nothing that stands there: under a held
			// object, an empty spot.
			// TestTargetLabelsBackproject checks where they are.
			in--
			continue
		case i == 1:
			moved.Objects[s.Goal.Object].Pos[2] += 5
		default:
			moved.Objects[s.Goal.Other].Pos[2] += 5
		}
		img := make([]byte, h*w*3)
		if err := rd.Render(img, moved); err != nil {
			t.Fatal(err)
		}
		u, v := int(l[0]*float32(w)), int(l[1]*float32(h))
		changed := 0
		for y := max(v-2, 0); y <= min(v+2, h-1); y++ {
			for x := max(u-2, 0); x <= min(u+2, w-1); x++ {
				for c := range 3 {
					if base[(y*w+x)*3+c] != img[(y*w+x)*3+c] {
						changed++
						break
					}
				}
			}
		}
		if changed < 3 {
			t.Logf("step %d, goal %v: point %d at (%d, %d) does not lie on what it names (%d of 25 pixels change when it moves away)",
				s.Step, s.Goal.Kind, i, u, v, changed)
			missed++
		}
	}
	return in, missed
}

// TestMemoryKeypointLabels: the memory labels are the plain ones, except
// that a memory task's target (and put back's spot) stays labelled after
// its cue, where the plain labels drop it; at the cue's last frame both
// label the target at the same point.
func TestMemoryKeypointLabels(t *testing.T) {
	const h, w = 128, 160
	for _, tc := range []struct {
		task string
		// point whose label the cue hides afterwards (1 target, 2 destination)
		hidden int
		// first step without it in the plain labels
		from int
	}{{"cue_pick", 1, cueSteps}, {"pointed_drawer", 1, cueSteps}, {"put_back", 2, 2}, {"pick", -1, 0}, {"move", -1, 0}} {
		t.Run(tc.task, func(t *testing.T) {
			task, err := TaskByName(tc.task)
			if err != nil {
				t.Fatal(err)
			}
			plain, mem := make([]float32, KeypointLabelLen), make([]float32, KeypointLabelLen)
			kept := 0
			for seed := uint64(1); seed <= 4; seed++ {
				ep, err := NewEpisode(task, seed, Options{Height: h, Width: w})
				if err != nil {
					t.Fatal(err)
				}
				x := ep.Expert(ExpertOptions{})
				for step := 0; step < 30 && !ep.Done(); step++ {
					s := ep.State()
					KeypointLabels(plain, s, h, w)
					MemoryKeypointLabels(mem, s, h, w)
					for i := range KeypointCount {
						p, m := plain[3*i:3*i+3], mem[3*i:3*i+3]
						switch {
						case i == tc.hidden && step >= tc.from:
							if p[2] != 0 {
								t.Fatalf("seed %d step %d: plain label of point %d shown after the cue: %v", seed, step, i, p)
							}
							if m[2] == 1 {
								kept++
							}
						case p[0] != m[0] || p[1] != m[1] || p[2] != m[2]:
							t.Fatalf("seed %d step %d: point %d labelled %v plainly, %v with memory", seed, step, i, p, m)
						}
					}
					if _, err := ep.Step(x.Act(s)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tc.hidden >= 0 && kept < 20 {
				t.Errorf("the memory labels keep the cued point in only %d frames after the cue", kept)
			}
		})
	}
}

// TestDrawerLabelsTellTheDrawersApart: the two drawers' handles, one above
// the other, have one footprint; their target labels, at the handles,
// lie apart in every first frame that shows them (3 px for a robot far
// from the counter, 9 to 45 px for most).
func TestDrawerLabelsTellTheDrawersApart(t *testing.T) {
	const h, w = 128, 160
	task, err := TaskByName("drawer")
	if err != nil {
		t.Fatal(err)
	}
	a, b := make([]float32, KeypointLabelLen), make([]float32, KeypointLabelLen)
	compared := 0
	for seed := uint64(1); seed <= 12; seed++ {
		ep, err := NewEpisode(task, seed, Options{Height: h, Width: w})
		if err != nil {
			t.Fatal(err)
		}
		s := ep.State()
		other := s.Clone()
		other.Goal.Drawer = 1 - s.Goal.Drawer
		KeypointLabels(a, s, h, w)
		KeypointLabels(b, other, h, w)
		if a[5] == 0 || b[5] == 0 {
			continue
		}
		compared++
		if du, dv := (a[3]-b[3])*w, (a[4]-b[4])*h; du*du+dv*dv < 3*3 {
			t.Errorf("seed %d: the drawers' labels (%v, %v) and (%v, %v) are %.1f px apart, want 3 or more",
				seed, a[3], a[4], b[3], b[4], math.Sqrt(float64(du*du+dv*dv)))
		}
	}
	if compared < 8 {
		t.Errorf("only %d frames show both handles", compared)
	}
}
