package sim_test

import (
	"fmt"

	"github.com/ttmrobot/ttm/sim"
)

// An episode of the pick family played by its scripted expert: the loop a
// policy would run, seeing only the frame and the instruction.
func Example() {
	task, err := sim.TaskByName("pick")
	if err != nil {
		panic(err)
	}
	ep, err := sim.NewEpisode(task, 7, sim.Options{Height: 64, Width: 80})
	if err != nil {
		panic(err)
	}
	defer ep.Close()
	img := make([]byte, 64*80*3) // (H, W, 3) RGB
	expert := ep.Expert(sim.ExpertOptions{})
	for !ep.Done() {
		instruction, err := ep.Observe(img)
		if err != nil {
			panic(err)
		}
		_ = instruction // a policy would act on img and instruction
		if _, err := ep.Step(expert.Act(ep.State())); err != nil {
			panic(err)
		}
	}
	fmt.Printf("%q: success %v after %d steps\n", ep.Instruction(), ep.Success(), ep.Steps())
	// Output: "pick up the coke can": success true after 22 steps
}

// Run plays an episode with any Agent; here the scripted expert, with
// action noise and pauses.
func ExampleRun() {
	task, _ := sim.TaskByName("pointed_drawer")
	ep, _ := sim.NewEpisode(task, 3, sim.Options{Height: 64, Width: 80})
	defer ep.Close()
	agent := sim.ExpertAgent{Expert: ep.Expert(sim.ExpertOptions{Seed: 1, Noise: 0.1, PauseProb: 0.05})}
	frames := 0
	res, err := sim.Run(ep, agent, func(step int, img []byte) error { frames++; return nil })
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s %q: success %v, %d steps, %d frames\n", res.Task, res.Instruction, res.Success, res.Steps, frames)
	// Output: pointed_drawer "pull open the indicated drawer": success true, 24 steps, 25 frames
}
