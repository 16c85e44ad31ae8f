package eval

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/internal/atomicfile"
	"github.com/ttmrobot/ttm/sim"
)

// ExpertAgreement compares an agent's decisions with the noise-free
// scripted expert's action on the same states: the labels a DAgger
// rollout would record (see sim.DAggerAgent). Where keypoint error tells
// whether a policy sees the hand and the target, this tells what it does
// with them, and in which phase it departs from the expert.
type ExpertAgreement struct {
	Decisions int `json:"decisions"`
	// ModeMatch is the fraction of decisions whose mode (terminate, arm,
	// base) is the expert's.
	ModeMatch float64 `json:"mode_match"`
	// ArmSteps counts the decisions where both moved the arm; over them,
	// ArmError is the mean distance between the two end-effector
	// displacements (world_vector, in action units of sim.ArmScale) and
	// GripMatch the fraction whose gripper commands have the same sign.
	ArmSteps  int     `json:"arm_steps"`
	ArmError  float64 `json:"arm_error"`
	GripMatch float64 `json:"grip_match"`
}

// agreementTally accumulates an episode's ExpertAgreement. The expert is
// asked at every decision, in order, on the state the agent acts on: it
// remembers its progress through the task, as in a DAgger rollout.
type agreementTally struct {
	expert                         sim.Expert
	decisions, modeMatch, armSteps int
	gripMatch                      int
	armError                       float64
	fail                           failureTally
}

var rt1 = action.RT1()

// actionMode is the mode an RT-1 action selects.
func actionMode(a []float32) int { return rt1.Dims[action.DimMode].Bin(a[action.DimMode]) }

// add compares the agent's action act on state s with the expert's, which
// it returns (the expert's buffer, valid until the next add).
func (t *agreementTally) add(s *sim.State, act []float32) []float32 {
	label := t.expert.Act(s)
	t.decisions++
	t.fail.add(s, act, label)
	m := actionMode(act)
	if m != actionMode(label) {
		return label
	}
	t.modeMatch++
	if m != action.ModeArm {
		return label
	}
	t.armSteps++
	var d2 float64
	for k := action.DimWorldX; k <= action.DimWorldZ; k++ {
		d := float64(act[k] - label[k])
		d2 += d * d
	}
	t.armError += math.Sqrt(d2)
	if (act[action.DimGripper] >= 0) == (label[action.DimGripper] >= 0) {
		t.gripMatch++
	}
	return label
}

func (t *agreementTally) result() *ExpertAgreement {
	if t == nil || t.decisions == 0 {
		return nil
	}
	a := &ExpertAgreement{Decisions: t.decisions, ModeMatch: float64(t.modeMatch) / float64(t.decisions), ArmSteps: t.armSteps}
	if t.armSteps > 0 {
		a.ArmError = t.armError / float64(t.armSteps)
		a.GripMatch = float64(t.gripMatch) / float64(t.armSteps)
	}
	return a
}

// poolAgreement is the decision-weighted ExpertAgreement of the episodes
// (arm-step-weighted for the arm's numbers); nil when none has one.
func poolAgreement(es []EpisodeResult) *ExpertAgreement {
	var p ExpertAgreement
	var modes, arm, grip float64
	for _, e := range es {
		a := e.ExpertAgreement
		if a == nil {
			continue
		}
		p.Decisions += a.Decisions
		p.ArmSteps += a.ArmSteps
		modes += a.ModeMatch * float64(a.Decisions)
		arm += a.ArmError * float64(a.ArmSteps)
		grip += a.GripMatch * float64(a.ArmSteps)
	}
	if p.Decisions == 0 {
		return nil
	}
	p.ModeMatch = modes / float64(p.Decisions)
	if p.ArmSteps > 0 {
		p.ArmError, p.GripMatch = arm/float64(p.ArmSteps), grip/float64(p.ArmSteps)
	}
	return &p
}

// traceRow is one decision of a traced episode.
type traceRow struct {
	step       int
	agent, exp [11]float32
	hand       sim.Vec3 // the end-effector in the base frame
	toTarget   sim.Vec3 // sim.State.Target minus the end-effector, world frame (its length: hand_target_m)
	base       sim.Pose
	grip       float64
	held       sim.GraspKind
	// points are the agent's keypoints and labels the labelled points,
	// hand then target, (u, v) as fractions of the frame; NaN where the
	// agent has no keypoints or the point is out of view.
	points, labels [2 * sim.KeypointCount]float32
}

// traceColumns are the CSV header of a trace, after "step".
var traceColumns = []string{"mode", "world_x", "world_y", "world_z", "roll", "pitch", "yaw", "gripper", "base_yaw", "base_x", "base_y"}

// writeTrace writes a traced episode as CSV: per decision the agent's
// action, the expert's action on the same state, the hand's distance to
// the target, the base's pose, the gripper's closedness, the hand in the
// base frame, the target relative to the hand (world frame), what the
// gripper holds (0 nothing, 1 an object, 2 a drawer's handle), and the
// agent's keypoints beside the labelled points (empty fields where there
// are none).
func writeTrace(path string, rows []traceRow) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	err := atomicfile.Write(path, func(f io.Writer) error {
		w := bufio.NewWriter(f)
		fmt.Fprint(w, "step")
		for _, who := range []string{"agent", "expert"} {
			for _, c := range traceColumns {
				fmt.Fprintf(w, ",%s_%s", who, c)
			}
		}
		fmt.Fprint(w, ",hand_target_m,base_x,base_y,base_yaw,grip,hand_x,hand_y,hand_z,target_dx,target_dy,target_dz,held")
		for _, who := range []string{"agent", "label"} {
			for _, p := range sim.KeypointNames {
				fmt.Fprintf(w, ",%s_%s_u,%s_%s_v", who, p, who, p)
			}
		}
		fmt.Fprintln(w)
		for _, r := range rows {
			fmt.Fprintf(w, "%d", r.step)
			for _, a := range [2]*[11]float32{&r.agent, &r.exp} {
				for _, v := range a {
					fmt.Fprintf(w, ",%.4g", v)
				}
			}
			fmt.Fprintf(w, ",%.4f,%.4f,%.4f,%.4f,%.3f", r.toTarget.Norm(), r.base.X, r.base.Y, r.base.Yaw, r.grip)
			fmt.Fprintf(w, ",%.4f,%.4f,%.4f", r.hand[0], r.hand[1], r.hand[2])
			fmt.Fprintf(w, ",%.4f,%.4f,%.4f,%d", r.toTarget[0], r.toTarget[1], r.toTarget[2], r.held)
			for _, a := range [2]*[2 * sim.KeypointCount]float32{&r.points, &r.labels} {
				for _, v := range a {
					if math.IsNaN(float64(v)) {
						fmt.Fprint(w, ",")
					} else {
						fmt.Fprintf(w, ",%.4f", v)
					}
				}
			}
			fmt.Fprintln(w)
		}
		return w.Flush()
	})
	if err != nil {
		return fmt.Errorf("trace %s: %w", path, err)
	}
	return nil
}

// tracePoints fills r's keypoints from agent k (nil: none) and the
// labelled points, from labels: the frame's sim.KeypointLabels, which the
// keypoint tally has already computed.
func tracePoints(r *traceRow, k keypointer, labels *[sim.KeypointLabelLen]float32) {
	nan := float32(math.NaN())
	for i := range r.points {
		r.points[i], r.labels[i] = nan, nan
	}
	if k == nil {
		return
	}
	const per = sim.KeypointLabelLen / sim.KeypointCount
	for i := range sim.KeypointCount {
		u, v, ok := k.Keypoint(i)
		if !ok {
			return
		}
		r.points[2*i], r.points[2*i+1] = u, v
		if l := labels[i*per : (i+1)*per]; l[2] > 0 {
			r.labels[2*i], r.labels[2*i+1] = l[0], l[1]
		}
	}
}
