package eval_test

import (
	"context"
	"fmt"

	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/sim/eval"
)

// Score the scripted experts on two tasks, 3 seeded episodes each. A
// checkpoint is scored the same way with eval.PolicyRuns (and its
// ablations) in Runs; eval.WriteOutputs writes ledger, summary and plots.
func ExampleEvaluate() {
	tasks, _ := sim.SelectTasks("pick,cue_pick")
	led, _, err := eval.Evaluate(context.Background(), eval.Config{
		Tasks: tasks, Episodes: 3, Seed: 1, Height: 32, Width: 40,
		Runs: []eval.RunSpec{eval.ExpertRun(sim.ExpertOptions{})},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range []string{"pick", "cue_pick"} {
		st := led.PerFamily[f]
		fmt.Printf("%s: %d/%d, 95%% CI [%.2f, %.2f]\n", f, st.Successes, st.Episodes, st.CILow, st.CIHigh)
	}
	fmt.Printf("overall: %.0f%%\n", 100*led.Overall.SuccessRate)
	// Output:
	// pick: 3/3, 95% CI [0.44, 1.00]
	// cue_pick: 3/3, 95% CI [0.44, 1.00]
	// overall: 100%
}

func ExampleWilson() {
	low, high := eval.Wilson(36, 50)
	fmt.Printf("36/50: [%.3f, %.3f]\n", low, high)
	// Output:
	// 36/50: [0.583, 0.825]
}
