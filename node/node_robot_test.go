package node

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/nodetest"
	"github.com/ttmrobot/ttm/internal/robot"
	"github.com/ttmrobot/ttm/internal/rostest"
)

// staticTransformPublisher is Debian's tf2_ros tool (package tf2-tools).
const staticTransformPublisher = "/usr/lib/tf2_ros/static_transform_publisher"

// robotPy publishes what a ROS arm publishes of itself, with rospy and
// tf2_ros, stamped now at 20 Hz: the hand under the arm's mount on /tf,
// the gripper's finger joint on /joint_states (among other joints), and
// the head camera's calibration on NS/headcam/camera_info (argv: NS, the
// image height, width and focal length in pixels).
const robotPy = `
import sys, rospy, tf2_ros
from geometry_msgs.msg import TransformStamped
from sensor_msgs.msg import JointState, CameraInfo
ns, h, w, f = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
rospy.init_node("arm_driver")
tfb = tf2_ros.TransformBroadcaster()
joints = rospy.Publisher("/joint_states", JointState, queue_size=10)
info = rospy.Publisher(ns + "/headcam/camera_info", CameraInfo, queue_size=10)
rate = rospy.Rate(20)
while not rospy.is_shutdown():
    now = rospy.Time.now()
    t = TransformStamped()
    t.header.stamp, t.header.frame_id, t.child_frame_id = now, "arm_mount", "hand"
    t.transform.translation.x, t.transform.translation.z = 0.45, -0.3
    t.transform.rotation.w = 1.0
    tfb.sendTransform(t)
    js = JointState()
    js.header.stamp = now
    js.name, js.position = ["shoulder_pan_joint", "gripper_finger_joint"], [0.3, 0.01]
    joints.publish(js)
    ci = CameraInfo()
    ci.header.stamp, ci.header.frame_id = now, "head_camera_optical_frame"
    ci.height, ci.width, ci.distortion_model = h, w, "plumb_bob"
    ci.D = [0.0] * 5
    ci.K = [f, 0, (w - 1) / 2.0, 0, f, (h - 1) / 2.0, 0, 0, 1]
    ci.R = [1, 0, 0, 0, 1, 0, 0, 0, 1]
    ci.P = [f, 0, (w - 1) / 2.0, 0, 0, f, (h - 1) / 2.0, 0, 0, 0, 1, 0]
    info.publish(ci)
    rate.sleep()
`

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// startProc starts a ROS program against m, stopped (its process group)
// when the test ends or stop is called.
func startProc(t *testing.T, m *rostest.Master, name string, args ...string) (stop func()) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = m.Env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out.String())
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestNodeReadsRobotTree runs the node on a policy with proprioception and
// a camera calibration against a robot made of the real tools: Debian's
// static_transform_publisher for the fixed frames, a rospy tf2 broadcaster
// for the hand, a rospy joint_states and camera_info publisher. Actions
// flow, and the node stops, saying why, when the hand's transform stops.
func TestNodeReadsRobotTree(t *testing.T) {
	if _, err := os.Stat(staticTransformPublisher); err != nil {
		t.Skipf("%s: %v (Debian package tf2-tools; make setup-test installs it)", staticTransformPublisher, err)
	}
	m := rostest.StartMaster(t)
	ckpt := targetPath(t)
	g := *loadPolicy(t, ckpt).Spec().Policy.TargetGeometry
	const ns = "/arm"

	// x y z yaw pitch roll parent child, as static_transform_publisher takes them.
	for i, tr := range [][]string{
		{"0", "-0.25", "1.15", "0", "0", "0", robot.FrameBase, robot.FrameArmMount},
		{ftoa(g.Mount[0]), ftoa(g.Mount[1]), ftoa(g.Mount[2]), "0", ftoa(g.Pitch), "0", robot.FrameBase, robot.FrameCamera},
		{"0", "0", "0", "-1.5707963267948966", "0", "-1.5707963267948966", robot.FrameCamera, robot.FrameCameraOptical},
	} {
		startProc(t, m, staticTransformPublisher, append(tr, "__name:=static_tf_"+strconv.Itoa(i))...)
	}
	const h, w = 256, 320
	f := h / 2 / math.Tan(g.VFOV/2)
	stopArm := startProc(t, m, "/usr/bin/python3", "-c", robotPy, ns, strconv.Itoa(h), strconv.Itoa(w), ftoa(f))

	log, _ := rostest.Logger(t)
	args := nodetest.Args(t, m, "ttm_node", "__name:=ttm_policy", "__ns:="+ns, "_rate:=5", "_warmup_steps:="+testWarmupSteps)
	n, err := Start(context.Background(), Config{Args: args, Policy: ckpt, Threads: 2, Log: log, PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	startCamera(t, m.URI, ns+"/headcam/image_raw", h, w, 10, log.Named("camera"))
	w8 := startWatcher(t, m.URI, ns+"/action", log.Named("watcher"))
	m.MustRun(rostest.ToolTimeout, "rostopic", "pub", "-1", ns+"/instruction", "std_msgs/String", "data: 'pick up the coke can'")

	rostest.WaitFor(t, 30*time.Second, "actions from the robot's tree", func() error {
		if s := n.Stats(); s.Acted < 5 {
			return fmt.Errorf("acted %d times, status %q", s.Acted, statusText(s.Reason, s.Acted > 0))
		}
		return nil
	})
	if len(w8.actionsSince(time.Time{})) == 0 {
		t.Error("no action reached a subscriber")
	}
	kv, _ := w8.lastDiagnostics("/arm/ttm_policy: control loop")
	for _, k := range []string{"transforms_in", "joint_states_in", "camera_info_in"} {
		if v, err := strconv.Atoi(kv[k]); err != nil || v == 0 {
			t.Errorf("diagnostics %s = %q", k, kv[k])
		}
	}

	// The arm's driver dies: its transform ages past ~max_proprio_age.
	stopArm()
	rostest.WaitFor(t, 15*time.Second, "the stop for stale proprioception", func() error {
		if s := n.Stats(); s.Reason != ReasonStaleProprio {
			return fmt.Errorf("reason %v", s.Reason)
		}
		return nil
	})
	out := m.MustRun(rostest.ToolTimeout, "rostopic", "echo", "-n", "1", ns+"/status")
	status := strings.Trim(strings.TrimSpace(strings.TrimPrefix(rostest.Lines(out)[0], "data:")), `"'`)
	if !strings.HasPrefix(status, "stopped: proprioception too old: tf: arm_mount -> hand: the newest transform is") {
		t.Errorf("status %q", status)
	}
}
