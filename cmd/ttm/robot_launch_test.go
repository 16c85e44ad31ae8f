package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/rostest"
)

// TestRobotLaunchB3 starts launch/robot.launch with the real roslaunch on a
// robot-b3 checkpoint, RT-1's EfficientNet-B3 at 300x300, as a robot
// selects it: roslaunch ttm robot.launch policy:=B3.safetensors rate:=2.
// A camera and the operator's heartbeat (rostopic pub) and an instruction
// drive it; the node must load B3's 1536x9x9 map and act on the frames.
// The rate is 2 Hz, not the robot's 10: the test shares two cores with the
// other packages' tests, and whether B3 keeps 10 Hz is a measurement (the
// soak, make soak SOAK_PRESET=robot-b3), not a pass or fail on the clock of
// whichever machine runs the suite.
func TestRobotLaunchB3(t *testing.T) {
	if testing.Short() {
		t.Skip("generates EfficientNet-B3")
	}
	m := rostest.StartMaster(t)
	ckpt := armPolicy(t, "robot-b3")
	// A 32x32 rgb8 camera at 15 Hz with fresh stamps, and the heartbeat.
	// They start first and must be publishing before the node launches, as
	// a robot's drivers are: the start-up of a Python ROS tool (about half
	// a second of CPU) would otherwise land in the node's warm-up, which
	// times B3 on both cores against the control period.
	pixels := strings.TrimSuffix(strings.Repeat("90, 120, 200, ", 32*32), ", ")
	startTool(t, m, "rostopic", "pub", "-s", "-r", "15", "/headcam/image_raw", "sensor_msgs/Image",
		"{header: {stamp: now, frame_id: head_camera_optical_frame}, height: 32, width: 32, encoding: rgb8, step: 96, data: ["+pixels+"]}")
	startTool(t, m, "rostopic", "pub", "-r", "10", "/heartbeat", "std_msgs/Empty")
	for _, topic := range []string{"/headcam/image_raw", "/heartbeat"} {
		rostest.WaitFor(t, 30*time.Second, topic+" publishing", func() error {
			_, err := m.Run(5*time.Second, "rostopic", "echo", "-n", "1", "--noarr", topic)
			return err
		})
	}
	l := startLaunch(t, m, nil, "robot.launch", "policy:="+ckpt, "threads:=2", "rate:=2")

	rostest.WaitFor(t, 90*time.Second, "the node loading B3 and waiting for an instruction", func() error {
		out := l.log.String()
		if !strings.Contains(out, "shape=1536x9x9") {
			return fmt.Errorf("no B3 backbone in the log yet")
		}
		// The warm-up is read from the log: a rostopic started to ask for
		// /status during it would compete with the steps it times.
		if strings.Contains(out, "refuses to start") {
			t.Fatal("the node refused to start (its output follows)")
		}
		if !strings.Contains(out, "warm-up done") {
			return fmt.Errorf("no warm-up in the log yet")
		}
		o, err := m.Run(5*time.Second, "rostopic", "echo", "-n", "1", "/status")
		if err != nil {
			return err
		}
		if !strings.Contains(o, "instruction") {
			return fmt.Errorf("status %q", o)
		}
		return nil
	})
	m.MustRun(rostest.ToolTimeout, "rostopic", "pub", "-1", "/instruction", "std_msgs/String", "data: 'pick up the coke can'")
	rostest.WaitFor(t, 60*time.Second, "the node acting", func() error {
		o, err := m.Run(5*time.Second, "rostopic", "echo", "-n", "1", "/status")
		if err != nil {
			return err
		}
		if !strings.Contains(o, `data: "acting"`) {
			return fmt.Errorf("status %q", o)
		}
		return nil
	})
	o := m.MustRun(20*time.Second, "rostopic", "echo", "-n", "3", "/action")
	if n := strings.Count(o, "data: ["); n != 3 {
		t.Errorf("%d actions echoed, want 3:\n%s", n, o)
	}
}
