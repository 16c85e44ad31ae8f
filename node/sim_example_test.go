package node_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/node"
	"github.com/ttmrobot/ttm/sim"
)

// The simulator as a ROS node, as `ttm sim --ros` runs it beside
// `ttm node`: two episodes of each of two tasks, in the namespace /sim
// with the headcam remapped; every frame is handed to a callback (to keep
// for a strip or a video), every result printed. RunSim returns when the
// episodes are done, or on Ctrl-C with those finished so far.
func ExampleRunSim() {
	log := hclog.New(&hclog.LoggerOptions{Name: "ttm_sim"})
	args, err := node.ParseArgs("ttm_sim", []string{"__ns:=/sim", "headcam/image_raw:=/sim/camera/image_raw"}, nil)
	if err != nil {
		log.Error("bad command line", "error", err)
		return
	}
	tasks, err := sim.SelectTasks("pick,drawer")
	if err != nil {
		log.Error("bad task list", "error", err)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	frames := 0
	results, err := node.RunSim(ctx, node.SimConfig{Args: args, Tasks: tasks, Episodes: 2, Seed: 1, Height: 128, Width: 160, Log: log,
		Frame: func(ep node.SimEpisode, step int, img []byte) { frames++ }})
	for _, r := range results {
		fmt.Printf("%s seed %d: %d steps, success %v\n", r.Task, r.Seed, r.Steps, r.Success)
	}
	fmt.Println("frames seen:", frames)
	if err != nil {
		log.Error("simulator stopped early", "error", err)
	}
}
