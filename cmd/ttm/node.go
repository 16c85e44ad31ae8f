package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/node"
)

func init() {
	register(command{name: "node", summary: "run the policy as a ROS 1 node (roslaunch-compatible)", run: runNode})
}

// runNode runs the ROS node. ROS arguments (_param:=value, __name:=,
// __ns:=, __log:=, __master:=, from:=to) may come anywhere on the command
// line, as roslaunch appends them; the rest are this command's flags.
func runNode(env *environment, args []string) error {
	rosArgs, err := ros.ParseArgs("ttm_node", args, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	fs := newFlags(env, "node", "--policy CKPT.safetensors [--backbone FILE.onnx] [--threads N] [_param:=value ...] [__name:=NAME] [__ns:=NS] [from:=to ...]")
	policyPath := fs.String("policy", "", "policy checkpoint `file` (.safetensors), as written by ttm init --policy or training")
	backbone := fs.String("backbone", "", "backbone ONNX `file` overriding the one the checkpoint names (its SHA-256 is still checked)")
	threads := fs.Int("threads", 0, "threads for the backbone and the TTM (0: one per CPU)")
	if err := parseFlags(fs, rosArgs.Rest, false); err != nil {
		return err
	}
	if err := requireFlag("policy", *policyPath); err != nil {
		return err
	}
	if *threads < 0 {
		return fmt.Errorf("%w: --threads %d is negative", errUsage, *threads)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return node.Run(ctx, node.Config{Args: rosArgs, Policy: *policyPath, Backbone: *backbone, Threads: *threads, Log: env.log})
}
