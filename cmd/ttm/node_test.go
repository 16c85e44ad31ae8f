package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/internal/rostest"
	"github.com/ttmrobot/ttm/internal/safetensors"
	"github.com/ttmrobot/ttm/policy"
)

// runAsMain makes the test binary act as the ttm binary: roslaunch starts
// launch/ttm_node, which execs $TTM_BIN (this binary) with "node ...".
const runAsMain = "TTM_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runAsMain) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// smallPolicy writes a small policy whose head is biased to arm mode: a
// seeded policy picks terminate, ending its episode, about every third step.
func smallPolicy(t *testing.T) string {
	t.Helper()
	return armPolicy(t, "small")
}

// armPolicy is a fresh checkpoint of preset with its head biased to arm
// mode, as smallPolicy.
// withRate writes a copy of the checkpoint at path that records it learnt
// at hz (policy.Config.Rate), as ttm train writes it, beside it.
func withRate(t *testing.T, path string, hz float64) string {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := policy.ParseConfig([]byte(f.Metadata[policy.ConfigKey]))
	if err != nil {
		t.Fatal(err)
	}
	c.Rate = hz
	f.Metadata[policy.ConfigKey] = c.JSON()
	out := strings.TrimSuffix(path, ".safetensors") + "-rated.safetensors"
	if err := safetensors.WriteFile(out, f); err != nil {
		t.Fatal(err)
	}
	return out
}

func armPolicy(t *testing.T, preset string) string {
	t.Helper()
	spec, err := policy.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), preset+".safetensors")
	if err := policy.Create(spec, 3, "", out, nil); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	name := policy.Prefix + "head/bias"
	bias, err := f.Tensors[name].Floats()
	if err != nil {
		t.Fatal(err)
	}
	bias[action.ModeArm] = 1e3 // the mode's logits come first
	f.Tensors[name] = safetensors.FromFloat32(bias, len(bias))
	if err := safetensors.WriteFile(out, f); err != nil {
		t.Fatal(err)
	}
	return out
}

// lockedBuffer collects a process's output.
type lockedBuffer struct {
	mu sync.Mutex // mu guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestNodeLaunch starts the project's sim.launch with the real roslaunch
// (which runs launch/ttm_node, which runs this binary as `ttm node` with
// roslaunch's __name:=, __log:= and remaps), feeds it frames and an
// instruction with rostopic pub, and checks that the launch file's
// namespace, remap and parameters took effect: the node's name, the camera
// topic it subscribes, rosparam, and the action rate: by default the one
// the policy learnt at (4 Hz here).
func TestNodeLaunch(t *testing.T) {
	m := rostest.StartMaster(t)
	ckpt := withRate(t, smallPolicy(t), 4)
	l := startLaunch(t, m, []string{"TTM_LOG_LEVEL=debug"}, "sim.launch", "policy:="+ckpt, "threads:=2", "simulator:=false")

	rostest.WaitFor(t, 60*time.Second, "the node's status topic", func() error {
		if err := l.running(); err != nil {
			return err
		}
		_, err := m.Run(5*time.Second, "rostopic", "echo", "-n", "1", "/sim/status")
		return err
	})

	// 32x24 rgb8 frames at 10 Hz with fresh stamps, and the instruction.
	frame := make([]string, 24*32*3)
	for i := range frame {
		frame[i] = strconv.Itoa(i * 7 % 256)
	}
	img := fmt.Sprintf("{header: {stamp: now, frame_id: headcam}, height: 24, width: 32, encoding: rgb8, is_bigendian: 0, step: 96, data: [%s]}",
		strings.Join(frame, ","))
	startTool(t, m, "rostopic", "pub", "-s", "-r", "10", "/sim/camera/image_raw", "sensor_msgs/Image", img)
	m.MustRun(15*time.Second, "rostopic", "pub", "-1", "/sim/instruction", "std_msgs/String", "data: 'open the drawer'")

	rostest.WaitFor(t, 30*time.Second, "status acting", func() error {
		o, err := m.Run(5*time.Second, "rostopic", "echo", "-n", "1", "/sim/status")
		if err != nil {
			return err
		}
		if !strings.Contains(o, `data: "acting"`) {
			return fmt.Errorf("status %q", o)
		}
		return nil
	})
	res := m.RunParallel(20*time.Second,
		[]string{"rostopic", "echo", "-p", "-n", "26", "/sim/action"},
		[]string{"rosparam", "get", "/sim/ttm_node/rate"},
		[]string{"rosparam", "get", "/sim/ttm_node/max_steps"},
		[]string{"rostopic", "info", "/sim/camera/image_raw"},
		[]string{"rosnode", "list"},
		[]string{"rostopic", "list"},
	)
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	rate, n := echoRate(t, res[0].Out)
	if math.Abs(rate-4)/4 > 0.02 {
		t.Errorf("/sim/action at %.3f Hz over %d messages, want the policy's 4 Hz within 2 %%", rate, n)
	}
	t.Logf("/sim/action: %.3f Hz over %d messages", rate, n)
	for i, want := range []string{"0.0", "300"} { // ~rate 0: the policy's
		if got := strings.TrimSpace(res[1+i].Out); got != want {
			t.Errorf("%v = %q, want %q (sim.yaml)", res[1+i].Cmd, got, want)
		}
	}
	if subs := res[3].Out[strings.Index(res[3].Out, "Subscribers:"):]; !strings.Contains(subs, "/sim/ttm_node") {
		t.Errorf("the node does not subscribe the remapped camera topic:\n%s", res[3].Out)
	}
	if !rostest.Contains(res[4].Out, "/sim/ttm_node") {
		t.Errorf("rosnode list = %q", res[4].Out)
	}
	for _, topic := range []string{"/sim/action", "/sim/cmd_vel", "/sim/arm/command", "/sim/gripper/command", "/sim/episode_done", "/diagnostics"} {
		if !rostest.Contains(res[5].Out, topic) {
			t.Errorf("rostopic list lacks %s", topic)
		}
	}
	if rostest.Contains(res[5].Out, "/sim/headcam/image_raw") {
		t.Error("the default camera topic was not remapped")
	}

	if err := l.interrupt(t, 20*time.Second); err != nil {
		t.Errorf("roslaunch after SIGINT: %v", err)
	}
	log := l.log.String()
	if !strings.Contains(log, "node stopped") {
		t.Errorf("the node did not log its shutdown")
	}
	if strings.Contains(log, "process has died") {
		t.Errorf("roslaunch reports the node died")
	}
}

// echoRate reads `rostopic echo -p` output and returns the message rate by
// rospy's receive times (the %time column, ns: the least-squares slope over
// the messages, so single late arrivals weigh little) and the number of
// messages; it fails on a NaN or Inf action value.
func echoRate(t *testing.T, out string) (float64, int) {
	t.Helper()
	lines := rostest.Lines(out)
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "%time") {
		t.Fatalf("not rostopic echo -p output: %q", out)
	}
	var si, st, sii, sit, t0 float64
	for i, l := range lines[1:] {
		fields := strings.Split(l, ",")
		ts, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			t.Fatalf("row %q: %v", l, err)
		}
		for _, f := range fields[5:] { // the action values after the layout
			if v, err := strconv.ParseFloat(f, 64); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("row %d: action value %q", i, f)
			}
		}
		if i == 0 {
			t0 = ts
		}
		x, y := float64(i), (ts-t0)/1e9
		si, st, sii, sit = si+x, st+y, sii+x*x, sit+x*y
	}
	n := float64(len(lines) - 1)
	return (n*sii - si*si) / (n*sit - si*st), len(lines) - 1
}

// TestNodeCommand checks `ttm node` itself: flags and ROS arguments mixed
// as roslaunch passes them, a clear refusal with a non-zero exit when the
// policy is too slow for the rate, and usage errors.
func TestNodeCommand(t *testing.T) {
	m := rostest.StartMaster(t)
	ckpt := smallPolicy(t)
	master := "__master:=" + m.URI
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		stderrIn string
	}{
		{"no policy", []string{"node", master}, 2, "--policy is required"},
		{"bad ROS argument", []string{"node", "--policy", ckpt, "__name:=a/b"}, 2, "__name:=a/b"},
		{"unknown flag", []string{"node", "--policy", ckpt, "--fast"}, 2, "flag provided but not defined: -fast"},
		{"stray argument", []string{"node", "--policy", ckpt, "extra"}, 2, "unexpected arguments extra"},
		{"missing checkpoint", []string{"node", "--policy", filepath.Join(t.TempDir(), "none.safetensors"), master, "_warmup_steps:=1"}, 1, "none.safetensors"},
		{"too slow", []string{"node", master, "_rate:=1000", "__name:=slow", "--policy", ckpt, "_warmup_steps:=100", "__log:=/tmp/slow.log", "--threads", "2"}, 1,
			"node /slow refuses to start at 1000 Hz: warm-up: the policy's p99 step latency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderrIn) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr, tc.code, tc.stderrIn)
			}
		})
	}
}
