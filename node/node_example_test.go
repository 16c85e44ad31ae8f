package node_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/node"
	"github.com/ttmrobot/ttm/policy"
)

// The node as `ttm node` runs it: ROS arguments as roslaunch gives them, a
// policy checkpoint, and a context that ends on Ctrl-C. Run returns when the
// node stops; it refuses to start (an error) when the checkpoint does not
// match the parameters or is too slow for ~rate.
func ExampleRun() {
	log := hclog.New(&hclog.LoggerOptions{Name: "ttm"})
	args, err := ros.ParseArgs("ttm_node", []string{"__name:=ttm_policy", "_rate:=10", "headcam/image_raw:=/camera/image_raw"}, nil)
	if err != nil {
		log.Error("bad command line", "error", err)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := node.Run(ctx, node.Config{Args: args, Policy: "policy.safetensors", Threads: 2, Log: log}); err != nil {
		log.Error("node failed", "error", err)
	}
}

// printSink prints what the loop publishes.
type printSink struct{}

func (printSink) Action(o *node.Output) {
	fmt.Printf("acting=%v reason=%s step=%d action=%v\n", o.Acting, o.Reason.Key(), o.Step, o.Action)
}
func (printSink) Status(text string, _ node.Reason) { fmt.Println("status:", text) }

// The control loop without ROS, stepped by a manual clock: what the
// simulator and replay use, and how the tests drive it.
func ExampleNewLoop() {
	p, err := policy.Load("policy.safetensors", policy.Options{Threads: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	clock := ros.NewManualClock(time.Unix(1000, 0))
	in := node.NewInputs(clock)
	loop, err := node.NewLoop(p, node.LoopConfig{Rate: 10}, clock, in, printSink{}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { loop.Run(ctx); close(done) }()

	in.SetInstruction("pick up the coke can")
	if err := in.PutImage(node.SyntheticImage(256, 320, 0), clock.Now()); err != nil {
		fmt.Println(err)
	}
	clock.Advance(loop.Period()) // the next tick acts on the frame
	time.Sleep(time.Second)      // (a real program waits for the output)
	cancel()
	<-done
}
