package eval

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/sim"
)

// fixedExpert answers with the next of its actions.
type fixedExpert struct{ acts [][]float32 }

func (e *fixedExpert) Act(*sim.State) []float32 {
	a := e.acts[0]
	e.acts = e.acts[1:]
	return a
}

func rt1Action(mode int, wx, wy, wz, grip float32) []float32 {
	a := make([]float32, 11)
	a[action.DimMode], a[action.DimGripper] = float32(mode), grip
	a[action.DimWorldX], a[action.DimWorldY], a[action.DimWorldZ] = wx, wy, wz
	return a
}

func TestExpertAgreementByHand(t *testing.T) {
	const arm, base, stop = action.ModeArm, action.ModeBase, action.ModeTerminate
	steps := []struct{ agent, expert []float32 }{
		{rt1Action(arm, 1, 0, 0, 1), rt1Action(arm, 0, 0, 0, 1)},      // arm error 1, grip agrees
		{rt1Action(arm, 0.3, 0.4, 0, -1), rt1Action(arm, 0, 0, 0, 1)}, // arm error 0.5, grip disagrees
		{rt1Action(base, 0, 0, 0, 1), rt1Action(arm, 0, 0, 0, 1)},     // mode differs
		{rt1Action(stop, 1, 1, 1, 1), rt1Action(stop, 0, 0, 0, -1)},   // mode agrees, not an arm step
	}
	ex := &fixedExpert{}
	for _, s := range steps {
		ex.acts = append(ex.acts, s.expert)
	}
	tally := agreementTally{expert: ex}
	for _, s := range steps {
		tally.add(&sim.State{}, s.agent)
	}
	got := tally.result()
	want := ExpertAgreement{Decisions: 4, ModeMatch: 0.75, ArmSteps: 2, ArmError: 0.75, GripMatch: 0.5}
	if math.Abs(got.ArmError-want.ArmError) > 1e-6 {
		t.Errorf("arm error %v, want %v", got.ArmError, want.ArmError)
	}
	got.ArmError = want.ArmError
	if *got != want {
		t.Errorf("agreement %+v, want %+v", *got, want)
	}
	if (&agreementTally{expert: ex}).result() != nil {
		t.Error("an episode without decisions has an agreement")
	}
}

func TestPoolAgreement(t *testing.T) {
	es := []EpisodeResult{
		{ExpertAgreement: &ExpertAgreement{Decisions: 10, ModeMatch: 1, ArmSteps: 4, ArmError: 0.5, GripMatch: 1}},
		{}, // the expert's own episode: none
		{ExpertAgreement: &ExpertAgreement{Decisions: 30, ModeMatch: 0.5, ArmSteps: 12, ArmError: 0.1, GripMatch: 0.5}},
	}
	got := poolAgreement(es)
	want := ExpertAgreement{Decisions: 40, ModeMatch: 25.0 / 40, ArmSteps: 16, ArmError: (2 + 1.2) / 16, GripMatch: 10.0 / 16}
	if got == nil || got.Decisions != want.Decisions || got.ArmSteps != want.ArmSteps ||
		math.Abs(got.ModeMatch-want.ModeMatch) > 1e-12 || math.Abs(got.ArmError-want.ArmError) > 1e-12 || math.Abs(got.GripMatch-want.GripMatch) > 1e-12 {
		t.Errorf("pooled %+v, want %+v", got, want)
	}
	if poolAgreement(es[1:2]) != nil {
		t.Error("pooled an agreement out of none")
	}
}

// shadow acts exactly as the expert would, but is not privileged: it
// reads the episode it was begun on behind the harness's back, so the
// harness compares it with the expert like any policy.
type shadowPlayer struct{}

func (shadowPlayer) Begin(ep *sim.Episode) (sim.Agent, bool, error) {
	return &shadow{ep: ep, x: ep.Expert(sim.ExpertOptions{})}, false, nil
}
func (shadowPlayer) Close() error { return nil }

type shadow struct {
	ep *sim.Episode
	x  sim.Expert
}

func (*shadow) Reset(string) {}
func (a *shadow) Act(*sim.Observation) ([]float32, error) {
	return a.x.Act(a.ep.State()), nil
}

// Keypoint reports every point at (0.25, 0.5).
func (a *shadow) Keypoint(i int) (u, v float32, ok bool) { return 0.25, 0.5, i < 4 }

// TestExpertAgreementClosedLoop: an agent that is the expert agrees with it
// on every decision, its traces show both actions equal, and the
// terminator, ending every episode at once, never agrees (the expert
// first moves the base).
func TestExpertAgreementClosedLoop(t *testing.T) {
	dir := t.TempDir()
	shadowRun := RunSpec{Name: "shadow", Agent: "test", Ablation: AblationNone,
		NewPlayer: func() (Player, error) { return shadowPlayer{}, nil }}
	cfg := Config{Tasks: tasks(t, "pick,drawer"), Episodes: 2, Seed: 5, Height: 64, Width: 80, Workers: 1,
		Runs:   []RunSpec{shadowRun, customRun("quitter", func() sim.Agent { return &terminator{} }), ExpertRun(sim.ExpertOptions{})},
		Traces: 1, TraceDir: dir}
	led, _, err := Evaluate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sh := led.Runs[0].Overall
	if sh.Successes != sh.Episodes {
		t.Fatalf("the shadow expert succeeded %d/%d", sh.Successes, sh.Episodes)
	}
	a := sh.ExpertAgreement
	if a == nil || a.ModeMatch != 1 || a.ArmError != 0 || a.GripMatch != 1 || a.ArmSteps == 0 {
		t.Errorf("shadow's agreement %+v, want full agreement over some arm steps", a)
	}
	decisions := 0
	for _, e := range led.Runs[0].Episodes {
		decisions += e.Decisions
	}
	if a != nil && a.Decisions != decisions {
		t.Errorf("agreement over %d decisions, the episodes made %d", a.Decisions, decisions)
	}
	if q := led.Runs[1].Overall.ExpertAgreement; q == nil || q.ModeMatch != 0 || q.ArmSteps != 0 {
		t.Errorf("quitter's agreement %+v, want mode 0 and no arm steps", q)
	}
	if led.Runs[2].Overall.ExpertAgreement != nil {
		t.Error("the expert run was compared with itself")
	}
	if !strings.Contains(Summary(led, nil), "## Agreement with the expert") {
		t.Error("summary has no agreement table")
	}

	for _, name := range []string{"pick-000.csv", "drawer-000.csv"} {
		rows := readCSV(t, filepath.Join(dir, "shadow", name))
		ep := led.Runs[0].Episodes[0]
		if name == "drawer-000.csv" {
			ep = led.Runs[0].Episodes[2]
		}
		if len(rows) != ep.Decisions+1 {
			t.Errorf("%s: %d rows, want a header and %d decisions", name, len(rows), ep.Decisions)
		}
		n := len(traceColumns)
		col := map[string]int{}
		for i, c := range rows[0] {
			col[c] = i
		}
		for i, r := range rows[1:] {
			if strings.Join(r[1:1+n], ",") != strings.Join(r[1+n:1+2*n], ",") {
				t.Errorf("%s row %d: agent %v, expert %v", name, i, r[1:1+n], r[1+n:1+2*n])
			}
			if r[col["agent_hand_u"]] != "0.2500" || r[col["agent_target_v"]] != "0.5000" {
				t.Errorf("%s row %d: agent keypoints %v, want 0.25, 0.5", name, i, r[col["agent_hand_u"]:col["agent_target_v"]+1])
			}
			if r[col["label_hand_u"]] == "" {
				t.Errorf("%s row %d: no hand label", name, i)
			}
			var d [3]float64
			for j, c := range []string{"target_dx", "target_dy", "target_dz"} {
				d[j] = parseFloat(t, r[col[c]])
			}
			if got, want := math.Sqrt(d[0]*d[0]+d[1]*d[1]+d[2]*d[2]), parseFloat(t, r[col["hand_target_m"]]); math.Abs(got-want) > 2e-4 {
				t.Errorf("%s row %d: target offset of length %.4f, hand to target %.4f", name, i, got, want)
			}
		}
		// The expert lifts the object: the trace shows it held (1) at some
		// decision.
		if name == "pick-000.csv" && !slices.ContainsFunc(rows[1:], func(r []string) bool { return r[col["held"]] == "1" }) {
			t.Errorf("%s: the gripper never holds the object", name)
		}
	}
	// The quitter has no keypoints: its trace leaves them empty.
	rows := readCSV(t, filepath.Join(dir, "quitter", "pick-000.csv"))
	if len(rows) != 2 || len(rows[1]) != len(rows[0]) || rows[1][len(rows[1])-1] != "" || rows[1][len(rows[1])-8] != "" {
		t.Errorf("quitter's trace %v, want one decision without keypoints", rows)
	}
	if _, err := os.Stat(filepath.Join(dir, "shadow", "pick-001.csv")); !os.IsNotExist(err) {
		t.Errorf("traced beyond the first episode: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ExpertRun(sim.ExpertOptions{}).Name)); !os.IsNotExist(err) {
		t.Errorf("traced the expert run: %v", err)
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

func parseFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
