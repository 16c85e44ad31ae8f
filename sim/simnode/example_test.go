package simnode_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/sim/simnode"
)

// The simulator as a ROS node, as `ttm sim --ros` runs it beside
// `ttm node`: two episodes of each of two tasks, in the namespace /sim
// with the headcam remapped; every frame is handed to a callback (to keep
// for a strip or a video), every result printed. Run returns when the
// episodes are done, or on Ctrl-C with those finished so far.
func ExampleRun() {
	log := hclog.New(&hclog.LoggerOptions{Name: "ttm_sim"})
	args, err := ros.ParseArgs("ttm_sim", []string{"__ns:=/sim", "headcam/image_raw:=/sim/camera/image_raw"}, nil)
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
	results, err := simnode.Run(ctx, simnode.Config{Args: args, Tasks: tasks, Episodes: 2, Seed: 1, Height: 128, Width: 160, Log: log,
		Frame: func(ep simnode.Episode, step int, img []byte) { frames++ }})
	for _, r := range results {
		fmt.Printf("%s seed %d: %d steps, success %v\n", r.Task, r.Seed, r.Steps, r.Success)
	}
	fmt.Println("frames seen:", frames)
	if err != nil {
		log.Error("simulator stopped early", "error", err)
	}
}
