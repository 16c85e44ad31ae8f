package eval

import (
	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/sim"
)

// Failure causes of an unsuccessful episode (EpisodeResult.Failure), in
// the order they are tried: the first that fits names the failure. All
// are read off the rollout's states, the agent's decisions and the
// noise-free expert's labels on the same states, so the table of causes
// says where a policy departs from the task without watching videos.
const (
	// FailTarget: the agent's target keypoint lay more than
	// targetOffPx from the labelled target in most frames that showed the
	// target with nothing held (it went for something else).
	FailTarget = "target_elsewhere"
	// FailArmBeforeBase: at least earlyArmDecisions decisions moved the
	// arm where the expert still drove the base into place.
	FailArmBeforeBase = "arm_before_base"
	// FailLetGo: the agent opened the gripper on something the expert
	// would have kept holding (a drop, or a release before the object was
	// placed or swung upright).
	FailLetGo = "let_go"
	// FailMissedGrasp: the gripper closed on nothing and nothing was
	// ever grasped.
	FailMissedGrasp = "missed_grasp"
	// FailNeverClosed: the expert asked for a closed gripper at some
	// decision, the agent never closed it.
	FailNeverClosed = "never_closed"
	// FailStoppedEarly: the agent terminated where the expert would have
	// gone on (a pick below its lift height, a knock that did not topple
	// the object) and nothing above explains it.
	FailStoppedEarly = "stopped_early"
	// FailOther: none of the above (the step limit reached, say).
	FailOther = "other"
)

// FailureCauses lists the causes in the order they are tried.
var FailureCauses = []string{FailTarget, FailArmBeforeBase, FailLetGo, FailMissedGrasp, FailNeverClosed, FailStoppedEarly, FailOther}

const (
	targetOffPx       = 8 // pixels: a target keypoint this far off marks something else
	earlyArmDecisions = 3
)

// failureTally follows an episode's decisions for its failure cause.
type failureTally struct {
	armBeforeBase                 int
	letGo, stoppedEarly           bool
	grasped, closedEmpty          bool
	expertClosed, agentClosed     bool
	targetFrames, targetOffFrames int
}

// add records the agent's action act and the expert's label on state s.
func (f *failureTally) add(s *sim.State, act, label []float32) {
	am, em := actionMode(act), actionMode(label)
	if am == action.ModeArm && em == action.ModeBase {
		f.armBeforeBase++
	}
	held := s.Grasp.Kind != sim.GraspNone
	f.grasped = f.grasped || held
	f.closedEmpty = f.closedEmpty || !held && s.Grip >= 0.99
	agentCloses, expertCloses := act[action.DimGripper] > 0, label[action.DimGripper] > 0
	f.agentClosed = f.agentClosed || agentCloses || s.Grip > 0
	f.expertClosed = f.expertClosed || expertCloses
	if held && am != action.ModeTerminate && !agentCloses && expertCloses {
		f.letGo = true
	}
	f.stoppedEarly = am == action.ModeTerminate && em != action.ModeTerminate
}

// addTarget records a frame's target keypoint error errPx (pixels, as
// keypointTally measured it; negative where the frame did not show the
// target) on state s, if nothing is held.
func (f *failureTally) addTarget(errPx float64, s *sim.State) {
	if errPx < 0 || s.Grasp.Kind != sim.GraspNone {
		return
	}
	f.targetFrames++
	if errPx > targetOffPx {
		f.targetOffFrames++
	}
}

// cause is the failure cause of an unsuccessful episode.
func (f *failureTally) cause() string {
	switch {
	case f.targetFrames > 0 && 2*f.targetOffFrames > f.targetFrames:
		return FailTarget
	case f.armBeforeBase >= earlyArmDecisions:
		return FailArmBeforeBase
	case f.letGo:
		return FailLetGo
	case f.closedEmpty && !f.grasped:
		return FailMissedGrasp
	case f.expertClosed && !f.agentClosed:
		return FailNeverClosed
	case f.stoppedEarly:
		return FailStoppedEarly
	}
	return FailOther
}

// countFailures counts the episodes' failure causes; nil when none has one.
func countFailures(es []EpisodeResult) map[string]int {
	var n map[string]int
	for _, e := range es {
		if e.Failure == "" {
			continue
		}
		if n == nil {
			n = map[string]int{}
		}
		n[e.Failure]++
	}
	return n
}
