package ros_test

import (
	"fmt"

	"github.com/ttmrobot/ttm/internal/ros"
)

// A command line as roslaunch passes it to `ttm node`: the binary's own flags
// come back in Rest, the ROS arguments are applied.
func ExampleParseArgs() {
	noEnv := func(string) (string, bool) { return "", false }
	a, err := ros.ParseArgs("ttm_node", []string{
		"--policy", "robot.safetensors",
		"__name:=policy", "__ns:=/robot", "headcam/image_raw:=/cam/image", "_rate:=3", "_bounds:=[-1, 1]",
	}, noEnv)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("node:", a.NodeName(), "master:", a.MasterURI)
	fmt.Println("rest:", a.Rest)
	for _, name := range []string{"headcam/image_raw", "action", "~status", "/diagnostics"} {
		resolved, _ := a.Resolve(name)
		fmt.Printf("%s -> %s\n", name, resolved)
	}
	for _, p := range a.Params {
		fmt.Printf("%s = %v (%T)\n", p.Key, p.Value, p.Value)
	}

	_, err = ros.ParseArgs("ttm_node", []string{"__name:=robot/policy"}, noEnv)
	fmt.Println(err)
	// Output:
	// node: /robot/policy master: http://localhost:11311
	// rest: [--policy robot.safetensors]
	// headcam/image_raw -> /cam/image
	// action -> /robot/action
	// ~status -> /robot/policy/status
	// /diagnostics -> /diagnostics
	// /robot/policy/rate = 3 (int)
	// /robot/policy/bounds = [-1 1] ([]interface {})
	// __name:=robot/policy: base name "robot/policy": character '/' at offset 5 is not allowed (letters, digits and '_' only) (use __ns:= for a namespace)
}
