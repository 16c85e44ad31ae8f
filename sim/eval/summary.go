package eval

import (
	"fmt"
	"os"
	"strings"

	"github.com/ttmrobot/ttm/sim"
)

// Summary returns a markdown report of the ledger, like the paper's
// success figure as a table: one row per task family, then the five
// families and the memory tasks together, then everything; one column per
// run. Timing, if not nil, adds a latency table (which, unlike the rest,
// changes between runs).
func Summary(l *Ledger, t *Timing) string {
	var b strings.Builder
	s := l.Setup
	fmt.Fprintf(&b, "# Closed-loop evaluation\n\n")
	fmt.Fprintf(&b, "%d episodes per task (seeds %d to %d), frames %dx%d, latency %s",
		s.Episodes, s.Seed, s.Seed+uint64(s.Episodes)-1, s.Height, s.Width, s.Latency)
	if s.Shard != nil {
		fmt.Fprintf(&b, ", shard %s only", s.Shard)
	}
	b.WriteString(".\n\n")
	for _, r := range l.Runs {
		fmt.Fprintf(&b, "- **%s**: %s", r.Name, r.Agent)
		if r.Checkpoint != "" {
			fmt.Fprintf(&b, " `%s` (sha256 %.12s)", r.Checkpoint, r.CheckpointSHA256)
		}
		if r.Ablation != AblationNone && r.Ablation != "" {
			fmt.Fprintf(&b, ", ablation %s", r.Ablation)
		}
		if r.Memory != "" {
			fmt.Fprintf(&b, ", memory %s", r.Memory)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Success rate\n\nSuccess in %, its 95 % Wilson interval, successes/episodes.\n\n")
	rows := summaryRows(l)
	table(&b, l, rows, func(st Stats) string {
		return fmt.Sprintf("%.1f [%.1f, %.1f] %d/%d", 100*st.SuccessRate, 100*st.CILow, 100*st.CIHigh, st.Successes, st.Episodes)
	})
	b.WriteString("\n## Steps to success\n\nMean / median number of steps after which the goal first held, over the successful episodes.\n\n")
	table(&b, l, rows, func(st Stats) string {
		if st.MeanStepsToSuccess == nil {
			return "–"
		}
		return fmt.Sprintf("%.1f / %.1f", *st.MeanStepsToSuccess, *st.MedianStepsToSuccess)
	})
	if hasKeypoints(l) {
		fmt.Fprintf(&b, "\n## Keypoint error\n\nMean distance in pixels between the policy's keypoints and the simulator's labelled points (%s), over the frames that showed each (– where none did); meaningful for checkpoints trained with keypoint supervision. In a memory task that cues its target (an object, a drawer) a fourth number is the target keypoint's error in the frames after the cue, against where the cued target is: what the policy remembers. A percentage after the target or destination error is the share of its frames in which that point marked the other of the two objects (more than 8 px from its own label, within 8 px of the other's).\n\n", strings.Join(sim.KeypointNames[:], " / "))
		table(&b, l, rows, pointCells(func(pe PointError) string {
			c := "–"
			if pe.Frames > 0 {
				c = fmt.Sprintf("%.1f", pe.MeanPx)
			}
			if pe.OnOther > 0 {
				c += fmt.Sprintf(" (%.0f %% on the other)", 100*float64(pe.OnOther)/float64(pe.Frames))
			}
			return c
		}))
		fmt.Fprintf(&b, "\n## Keypoint precision\n\nThe same over the frames in which each point lay within 8 px of its label, that is, where it marked the right thing: their mean distance in pixels and their share of the frames that showed the point (%s).\n\n", strings.Join(sim.KeypointNames[:], " / "))
		table(&b, l, rows, pointCells(func(pe PointError) string {
			switch {
			case pe.Near > 0:
				return fmt.Sprintf("%.1f (%.0f %%)", pe.NearMeanPx, 100*float64(pe.Near)/float64(pe.Frames))
			case pe.Frames > 0:
				return "– (0 %)"
			}
			return "–"
		}))
	}
	if hasGoalProbe(l) {
		b.WriteString("\n## Goal probe error\n\nMean distance in cm between the policy's goal probe and where the goal stood at the episode's start, in the frames after a memory task's cue (every frame of a task without one) and, in brackets, in the frames that showed the cue: after the cue only the memory knows the place.\n\n")
		table(&b, l, rows, func(st Stats) string {
			g := st.GoalProbe
			switch {
			case g == nil:
				return "–"
			case g.CueFrames > 0:
				return fmt.Sprintf("%.1f (%.1f)", g.MeanCm, g.CueMeanCm)
			}
			return fmt.Sprintf("%.1f", g.MeanCm)
		})
	}
	if hasAgreement(l) {
		b.WriteString("\n## Agreement with the expert\n\nOn the states of the agent's own rollouts: how often its mode (terminate, arm, base) was the noise-free expert's; where both moved the arm, the mean distance between their displacements (action units of 5 cm) and how often their gripper commands agreed.\n\n")
		table(&b, l, rows, func(st Stats) string {
			a := st.ExpertAgreement
			if a == nil {
				return "–"
			}
			if a.ArmSteps == 0 {
				return fmt.Sprintf("mode %.0f %%", 100*a.ModeMatch)
			}
			return fmt.Sprintf("mode %.0f %%, arm %.2f, grip %.0f %%", 100*a.ModeMatch, a.ArmError, 100*a.GripMatch)
		})
	}
	if hasFailures(l) {
		b.WriteString("\n## Why episodes failed\n\nFailed episodes by the first cause that fits, read off the rollout and the expert's labels on its states: the target keypoint on something else (target_elsewhere), the arm moving before the base was in place (arm_before_base), the gripper opened on what the expert would hold (let_go), a gripper closed on nothing and nothing grasped (missed_grasp), never closed where the expert closes (never_closed), a terminate where the expert would go on (stopped_early), anything else (other).\n\n")
		table(&b, l, rows, func(st Stats) string {
			var parts []string
			for _, c := range FailureCauses {
				if n := st.Failures[c]; n > 0 {
					parts = append(parts, fmt.Sprintf("%s %d", c, n))
				}
			}
			if len(parts) == 0 {
				return "–"
			}
			return strings.Join(parts, ", ")
		})
	}
	if t != nil {
		fmt.Fprintf(&b, "\n## Timing\n\nAgent latency per decision (from timing.json; it varies between runs). Deadline: one period at %g Hz. Wall time %.0f s on %d workers.\n\n",
			t.Rate, t.WallSeconds, t.Workers)
		b.WriteString("| run | decisions | mean ms | p50 ms | p99 ms | max ms | deadline misses |\n| --- | --- | --- | --- | --- | --- | --- |\n")
		for _, r := range t.Runs {
			fmt.Fprintf(&b, "| %s | %d | %.3f | %.3f | %.3f | %.3f | %d |\n", r.Name, r.Decisions, r.MeanMS, r.P50MS, r.P99MS, r.MaxMS, r.DeadlineMisses)
		}
	}
	return b.String()
}

// pointCells is a table cell of a run's keypoints: cell of each point,
// separated by slashes; – for a run without keypoints.
func pointCells(cell func(PointError) string) func(Stats) string {
	return func(st Stats) string {
		if len(st.KeypointError) == 0 {
			return "–"
		}
		parts := make([]string, len(st.KeypointError))
		for i, pe := range st.KeypointError {
			parts[i] = cell(pe)
		}
		return strings.Join(parts, " / ")
	}
}

// hasKeypoints reports whether any run reported keypoints.
func hasKeypoints(l *Ledger) bool {
	for _, r := range l.Runs {
		if len(r.Overall.KeypointError) > 0 {
			return true
		}
	}
	return false
}

// hasGoalProbe reports whether any run reported a goal probe.
func hasGoalProbe(l *Ledger) bool {
	for _, r := range l.Runs {
		if r.Overall.GoalProbe != nil {
			return true
		}
	}
	return false
}

// hasFailures reports whether any run has a failure cause.
func hasFailures(l *Ledger) bool {
	for _, r := range l.Runs {
		if len(r.Overall.Failures) > 0 {
			return true
		}
	}
	return false
}

// hasAgreement reports whether any run was compared with the expert.
func hasAgreement(l *Ledger) bool {
	for _, r := range l.Runs {
		if r.Overall.ExpertAgreement != nil {
			return true
		}
	}
	return false
}

// summaryRow is one row: a family, a group or everything.
type summaryRow struct {
	label string
	get   func(r *RunLedger) (Stats, bool)
}

func summaryRows(l *Ledger) []summaryRow {
	var rows []summaryRow
	groups := map[string]int{}
	for _, name := range l.Setup.Tasks {
		label := name
		if t, err := sim.TaskByName(name); err == nil && t.Memory {
			label += " (memory)"
			groups[GroupMemory]++
		} else {
			groups[GroupFamilies]++
		}
		rows = append(rows, summaryRow{label, func(r *RunLedger) (Stats, bool) { st, ok := r.PerFamily[name]; return st, ok }})
	}
	for _, g := range []string{GroupFamilies, GroupMemory} {
		if groups[g] < 2 || groups[g] == len(l.Setup.Tasks) {
			continue // a lone task, or everything: another row says it
		}
		label := fmt.Sprintf("**all %d families**", groups[g])
		if g == GroupMemory {
			label = fmt.Sprintf("**all %d memory tasks**", groups[g])
		}
		rows = append(rows, summaryRow{label, func(r *RunLedger) (Stats, bool) { st, ok := r.Groups[g]; return st, ok }})
	}
	rows = append(rows, summaryRow{"**overall**", func(r *RunLedger) (Stats, bool) { return r.Overall, true }})
	return rows
}

func table(b *strings.Builder, l *Ledger, rows []summaryRow, cell func(Stats) string) {
	b.WriteString("| family |")
	sep := "| --- |"
	for _, r := range l.Runs {
		fmt.Fprintf(b, " %s |", r.Name)
		sep += " --- |"
	}
	b.WriteString("\n" + sep + "\n")
	for _, row := range rows {
		fmt.Fprintf(b, "| %s |", row.label)
		for i := range l.Runs {
			st, ok := row.get(&l.Runs[i])
			c := "–"
			if ok {
				c = cell(st)
			}
			fmt.Fprintf(b, " %s |", c)
		}
		b.WriteString("\n")
	}
}

// WriteSummary writes Summary(l, t) to path.
func WriteSummary(path string, l *Ledger, t *Timing) error {
	if err := os.WriteFile(path, []byte(Summary(l, t)), 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}
