package sim_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ttmrobot/ttm/sim"
)

// Record an expert episode as a ROS bag, then read it back.
func ExampleRecordEpisode() {
	dir, _ := os.MkdirTemp("", "dataset")
	defer os.RemoveAll(dir)
	task, _ := sim.TaskByName("drawer")
	ep, err := sim.NewEpisode(task, 3, sim.Options{Height: 32, Width: 40})
	if err != nil {
		panic(err)
	}
	defer ep.Close()
	path := filepath.Join(dir, sim.EpisodeFile("drawer", 3))
	res, err := sim.RecordEpisode(path, ep, sim.ExpertAgent{Expert: ep.Expert(sim.ExpertOptions{})}, sim.RecordOptions{})
	if err != nil {
		panic(err)
	}
	got, err := sim.ReadEpisode(path, sim.ReadOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(filepath.Base(path), res.Success, len(got.Steps) == res.Steps, got.Info.Instruction == res.Instruction)
	fmt.Println(len(got.Steps[0].Image) == 32*40*3, len(got.Steps[0].Action))
	// Output:
	// drawer-000003.bag true true true
	// true 11
}
