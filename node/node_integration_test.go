package node

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/diagnostic_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
	"github.com/hashicorp/go-hclog"
	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/nodetest"
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/language"

	"github.com/ttmrobot/ttm/internal/nn"
	"github.com/ttmrobot/ttm/internal/rostest"
	"github.com/ttmrobot/ttm/policy"
)

const (
	nodeNS   = "/robot"
	nodeName = "/robot/ttm_policy"
)

// rosRate is the control rate of TestNodeWithROS. Under the race detector
// the policy runs several times slower: go test -race -run TestNodeWithROS
// ./node -ros-rate=2.
var rosRate = flag.Int("ros-rate", 10, "control rate of TestNodeWithROS, Hz")

// TestNodeWithROS runs the whole node in this process against Debian's
// roscore, fed by a Go camera publisher at 10 Hz, and checks it with the
// real ROS tools: rate, fail-closed behaviour, e-stop, services, remaps,
// diagnostics, and re-registration after roscore restarts.
func TestNodeWithROS(t *testing.T) {
	m := rostest.StartMaster(t)
	ckpt := modeCheckpoint(t, action.ModeArm) // a seeded policy terminates its episode every few steps
	t.Run("Params", func(t *testing.T) { testNodeParams(t, m) })
	t.Run("RefusesToStart", func(t *testing.T) { testRefusesToStart(t, m, ckpt) })

	log, logs := rostest.Logger(t)
	args := nodetest.Args(t, m, "ttm_node", "__name:=ttm_policy", "__ns:="+nodeNS, "_rate:="+strconv.Itoa(*rosRate), "_max_image_age:=0.5",
		"_warmup_steps:="+testWarmupSteps, "cmd_vel:=/base/cmd_vel", "__log:=/tmp/ignored.log")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, err := Start(ctx, Config{Args: args, Policy: ckpt, Threads: 2, Log: log, PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	cam := startCamera(t, m.URI, nodeNS+"/headcam/image_raw", 128, 160, 10, log.Named("camera"))
	watch := startWatcher(t, m.URI, nodeNS+"/action", log.Named("watcher"))
	nodetest.WaitConnected(t, n.sup, 1, 10*time.Second)

	// Fail closed: frames but no instruction, nothing is published.
	rostest.WaitFor(t, 10*time.Second, "frames at the node", func() error {
		if s := n.Stats(); s.FramesIn < 3 {
			return errors.New("fewer than 3 frames")
		}
		return nil
	})
	if s := n.Stats(); s.Acted != 0 || s.Stopped != 0 || len(watch.actionsSince(time.Time{})) != 0 {
		t.Fatalf("published before any instruction: %+v", s.Counters)
	}
	if got := echoStatus(t, m); got != "waiting: no instruction yet" {
		t.Errorf("status before the instruction = %q", got)
	}
	m.MustRun(rostest.ToolTimeout, "rostopic", "pub", "-1", nodeNS+"/instruction", "std_msgs/String", "data: 'pick up the coke can'")
	waitStatus(t, m, n, "acting")

	t.Run("Rate", func(t *testing.T) { testRate(t, m, watch) })
	t.Run("Outputs", func(t *testing.T) { testOutputs(t, m) })
	t.Run("StallStops", func(t *testing.T) { testStallStops(t, m, n, cam, watch) })
	t.Run("EStopLatches", func(t *testing.T) { testEStopLatches(t, m, n, watch) })
	t.Run("WrongTypeEStop", func(t *testing.T) { testWrongTypeEStop(t, m, n, watch, logs) })
	t.Run("InstructionAbuse", func(t *testing.T) { testInstructionAbuse(t, m, n, logs) })
	t.Run("Services", func(t *testing.T) { testServices(t, m, n) })
	t.Run("Diagnostics", func(t *testing.T) { testDiagnostics(t, watch) })
	t.Run("MasterRestart", func(t *testing.T) { testNodeMasterRestart(t, m, n, logs) })
	t.Run("SimTime", func(t *testing.T) { testSimTime(t, m, ckpt) }) // last: sets /use_sim_time

	for _, a := range watch.actionsSince(time.Time{}) {
		for j, v := range a.msg.Data {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("an action published at %v has %v at %d", a.at, v, j)
			}
		}
	}
	cancel()
	if err := n.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}

// testNodeParams loads a parameter file as roslaunch would and reads it
// back, with a command-line override.
func testNodeParams(t *testing.T, m *rostest.Master) {
	yaml := filepath.Join(t.TempDir(), "p.yaml")
	err := os.WriteFile(yaml, []byte(`rate: 15
deadline: 0.05
max_image_age: 0.25
max_proprio_age: 0.75
heartbeat_timeout: 0.4
max_steps: 200
reset_on_instruction: false
enabled: false
follow_camera: false
max_rate: [0, 1, 1, 1, 2, 2, 2, 3, 2, 1, 1]
workspace: {min: [0.2, -0.4, 0.0], max: [0.8, 0.4, 0.6], scale: 0.02}
expect_image_height: 128
expect_image_width: 160
expect_backbone_sha256: abc
warmup_steps: 7
diagnostics_period: 0.5
max_frame_pixels: 2000000
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	m.MustRun(rostest.ToolTimeout, "rosparam", "load", yaml, "/params_test")
	np, err := ReadNodeParams(context.Background(), ros.NewParams(nodetest.Args(t, m, "params_test", "_rate:=12.5"), 0))
	if err != nil {
		t.Fatal(err)
	}
	c := np.Loop
	want := LoopConfig{Rate: 12.5, Deadline: 50 * time.Millisecond, MaxImageAge: 250 * time.Millisecond, MaxProprioAge: 750 * time.Millisecond,
		HeartbeatTimeout: 400 * time.Millisecond,
		MaxSteps:         200, KeepMemoryOnInstruction: true,
		Safety: policy.SafetyConfig{MaxRate: []float64{0, 1, 1, 1, 2, 2, 2, 3, 2, 1, 1},
			Workspace: &policy.Workspace{Min: [3]float64{0.2, -0.4, 0}, Max: [3]float64{0.8, 0.4, 0.6}, Scale: 0.02}},
		WorkspaceStart: [3]float64{0.5, 0, 0.3}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("loop config\n got %+v\nwant %+v", c, want)
	}
	if !np.StartDisabled || np.Expect.ImageHeight != 128 || np.Expect.ImageWidth != 160 || np.Expect.BackboneSHA256 != "abc" ||
		np.WarmupSteps != 7 || np.DiagnosticsPeriod != 500*time.Millisecond || np.Expect.ActionSpace == nil || np.UseSimTime ||
		np.MaxFramePixels != 2000000 {
		t.Errorf("params %+v", np)
	}
	// Defaults.
	np, err = ReadNodeParams(context.Background(), ros.NewParams(nodetest.Args(t, m, "params_defaults"), 0))
	if err != nil {
		t.Fatal(err)
	}
	if c := np.Loop; c.Rate != 0 || c.Deadline != 0 || np.RateMismatch != RateRefuse || c.MaxImageAge != 500*time.Millisecond || c.HeartbeatTimeout != 0 ||
		c.MaxSteps != 0 || !c.FollowCamera || c.KeepMemoryOnInstruction || c.Safety.MaxRate != nil || c.Safety.Workspace != nil || np.StartDisabled || np.WarmupSteps != MinWarmupSteps ||
		np.MaxFramePixels != DefaultMaxFramePixels {
		t.Errorf("defaults %+v", np)
	}
}

func testRefusesToStart(t *testing.T, m *rostest.Master, ckpt string) {
	for _, tc := range []struct {
		name        string
		args        []string
		trainedRate float64 // Hz the checkpoint records (0: the small checkpoint's none)
		wantErr     string
	}{
		{"too slow for the rate", []string{"_rate:=1000", "_warmup_steps:=100"}, 0, "refuses to start at 1000 Hz: warm-up: the policy's p99 step latency"},
		{"image size", []string{"_expect_image_height:=224", "_expect_image_width:=224"}, 0, "image size mismatch: the checkpoint takes 128x160, the node is configured for 224x224"},
		{"backbone", []string{"_expect_backbone_sha256:=00ff"}, 0, "backbone mismatch"},
		{"pinned policy", []string{"_expect_policy_sha256:=00ff"}, 0, "policy mismatch: its tensors' SHA-256 is"},
		{"parameter type", []string{"_rate:=fast"}, 0, "parameter /refuse/rate (from the command line): want float"},
		{"rate mismatch value", []string{"_rate_mismatch:=scale"}, 0, `~rate_mismatch "scale": want refuse, rescale or lockstep`},
		{"bad workspace", []string{"_workspace/min:=[0, 0]", "_workspace/max:=[1, 1, 1]"}, 0, "must both be [x, y, z]"},
		{"frame pixels beyond the decoders' limit", []string{"_max_frame_pixels:=16777217"}, 0, "parameter ~max_frame_pixels is 16777217; want 1 to 16777216"},
		{"another rate than trained", []string{"_rate:=10"}, 3,
			"refuses to start: the policy learnt its per-step actions at 3 Hz; at ~rate 10 Hz its arm would move 3.33 times as fast"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := ckpt
			if tc.trainedRate > 0 {
				path = ratedCheckpoint(t, ckpt, tc.trainedRate)
			}
			_, err := Start(context.Background(), Config{Args: nodetest.Args(t, m, "refuse", tc.args...), Policy: path, Threads: 2})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Start = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
	if out := m.MustRun(rostest.ToolTimeout, "rosnode", "list"); strings.Contains(out, "/refuse") {
		t.Errorf("a node that refused to start registered: %q", out)
	}
}

func echoStatus(t *testing.T, m *rostest.Master) string {
	t.Helper()
	out := m.MustRun(rostest.ToolTimeout, "rostopic", "echo", "-n", "1", nodeNS+"/status")
	s := strings.TrimSpace(strings.TrimPrefix(rostest.Lines(out)[0], "data:"))
	return strings.Trim(s, `"'`)
}

// waitStatus waits until the node's loop reports the status and the
// latched status topic says so. (Under load a single missed deadline makes
// the status flicker; the topic is read until it agrees.)
func waitStatus(t *testing.T, m *rostest.Master, n *Node, want string) {
	t.Helper()
	rostest.WaitFor(t, 15*time.Second, "status "+want, func() error {
		s := n.Stats()
		if got := statusText(s.Reason, s.Acted > 0); got != want {
			return errors.New("loop: " + got)
		}
		if got := echoStatus(t, m); got != want {
			return errors.New("status topic: " + got)
		}
		return nil
	})
}

// testRate: 51 actions by rostopic echo's receive clock, and a 4 s window of
// the Go subscriber, both within 2 % of 10 Hz.
func testRate(t *testing.T, m *rostest.Master, w *watcher) {
	start := time.Now()
	hz := float64(*rosRate)
	n := 5**rosRate + 1 // 5 s
	out := m.MustRun(20*time.Second, "rostopic", "echo", "-p", "-n", strconv.Itoa(n), nodeNS+"/action")
	csv, err := parseEchoCSV(out)
	if err != nil {
		t.Fatal(err)
	}
	rate, err := csv.echoRate()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(rate-hz)/hz > 0.02 {
		t.Errorf("rostopic echo: %.3f Hz over %d actions, want %g Hz within 2 %%", rate, len(csv.rows), hz)
	}
	rows := csv.actionRows(t, 11)
	label := csv.rows[0][1]
	if label != ros.ActionLabel(action.RT1()) || len(rows) != n {
		t.Errorf("action layout label %q (%d rows)", label, len(rows))
	}
	for i, r := range rows {
		if r[0] != 0 && r[0] != 1 && r[0] != 2 {
			t.Errorf("action %d: mode %v is not a category", i, r[0])
		}
	}
	// The Go subscriber over exactly 4 s, well inside the run above.
	from := start.Add(500 * time.Millisecond)
	got := 0
	for _, a := range w.actionsSince(from) {
		if a.at.Before(from.Add(4 * time.Second)) {
			got++
		}
	}
	if want := 4 * *rosRate; got < want-1 || got > want+1 {
		t.Errorf("Go subscriber: %d actions in 4 s, want %d ± 1 (%g Hz within 2 %% plus the window's edge)", got, want, hz)
	}
	t.Logf("rate: rostopic echo %.3f Hz; Go subscriber %d actions in 4 s", rate, got)
}

// testOutputs: every output topic carries messages under its resolved (and
// remapped) name.
func testOutputs(t *testing.T, m *rostest.Master) {
	res := m.RunParallel(rostest.ToolTimeout,
		[]string{"rostopic", "list"},
		[]string{"rostopic", "echo", "-n", "1", "/base/cmd_vel"},
		[]string{"rostopic", "echo", "-n", "1", nodeNS + "/arm/command"},
		[]string{"rostopic", "echo", "-n", "1", nodeNS + "/gripper/command"},
		[]string{"rostopic", "echo", "-n", "1", nodeNS + "/episode_done"},
		[]string{"rosservice", "list"},
	)
	rostest.RequireOK(t, res)
	for _, topic := range []string{"/base/cmd_vel", "/robot/action", "/robot/arm/command", "/robot/gripper/command", "/robot/episode_done",
		"/robot/status", "/diagnostics", "/robot/headcam/image_raw", "/robot/headcam/image_raw/compressed", "/robot/instruction",
		"/robot/instruction_embedding", "/robot/e_stop", "/robot/e_stop_reset", "/robot/heartbeat"} {
		if !rostest.Contains(res[0].Out, topic) {
			t.Errorf("rostopic list lacks %s", topic)
		}
	}
	if rostest.Contains(res[0].Out, "/robot/cmd_vel") {
		t.Error("cmd_vel was not remapped")
	}
	for i, want := range []string{"angular:", "angular:", "data: ", "data: False"} {
		if !strings.Contains(res[1+i].Out, want) {
			t.Errorf("%v = %q, want %q", res[1+i].Cmd, res[1+i].Out, want)
		}
	}
	for _, srv := range []string{"/robot/reset_memory", "/robot/enable"} {
		if !rostest.Contains(res[5].Out, srv) {
			t.Errorf("rosservice list lacks %s", srv)
		}
	}
}

// isStop reports whether an action is a stop action without rate limits:
// every velocity and delta is zero.
func isStop(a []float64) bool {
	for i := action.DimWorldX; i <= action.DimBaseY; i++ {
		if i != action.DimGripper && a[i] != 0 {
			return false
		}
	}
	return true
}

// testStallStops: when the camera stalls, the node publishes the stop
// action once the newest frame is older than max_image_age (0.5 s), keeps
// publishing it at the rate, and acts again when frames come back.
func testStallStops(t *testing.T, m *rostest.Master, n *Node, cam *testCamera, w *watcher) {
	cam.paused.Store(true)
	defer cam.paused.Store(false)
	stalled := time.Now()
	waitStatus(t, m, n, "stopped: camera frame too old")
	if d := time.Since(stalled); d < 400*time.Millisecond {
		t.Errorf("stopped %v after the camera stalled, before max_image_age", d)
	}
	out := m.MustRun(rostest.ToolTimeout, "rostopic", "echo", "-p", "-n", "5", nodeNS+"/action")
	csv, err := parseEchoCSV(out)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range csv.actionRows(t, 11) {
		if !isStop(r) {
			t.Errorf("stalled camera: action %d = %v, want the stop action", i, r)
		}
	}
	// Every action after the limit (plus one tick of slack) is the stop action.
	period := time.Second / time.Duration(*rosRate)
	for _, a := range w.actionsSince(stalled.Add(500*time.Millisecond + period + 200*time.Millisecond)) {
		v := make([]float64, len(a.msg.Data))
		for i, x := range a.msg.Data {
			v[i] = float64(x)
		}
		if !isStop(v) {
			t.Errorf("action at %v after the stall: %v", a.at.Sub(stalled), v)
		}
	}
	if s := n.Stats(); s.StaleFrames == 0 {
		t.Error("no stale-frame ticks counted")
	}
	cam.paused.Store(false)
	waitStatus(t, m, n, "acting")
}

// testEStopLatches: e_stop stops the node until e_stop_reset, however fresh
// the frames.
func testEStopLatches(t *testing.T, m *rostest.Master, n *Node, w *watcher) {
	m.MustRun(rostest.ToolTimeout, "rostopic", "pub", "-1", nodeNS+"/e_stop", "std_msgs/Empty", "{}")
	waitStatus(t, m, n, "stopped: e-stop latched (publish e_stop_reset to clear)")
	latched := time.Now()
	// The loop publishes the stop action at every tick (TestLoopEStopLatches
	// counts them on a manual clock); here a dozen of them come over ROS
	// while frames keep coming at 10 Hz.
	const stops = 12
	var acts []received[std_msgs.Float32MultiArray]
	rostest.WaitFor(t, 20*time.Second, fmt.Sprintf("%d actions after the e-stop", stops), func() error {
		if acts = w.actionsSince(latched); len(acts) < stops {
			return fmt.Errorf("%d actions", len(acts))
		}
		return nil
	})
	if s := n.Stats(); s.Reason != ReasonEStop {
		t.Fatalf("e-stop no longer latched: %v", s.Reason)
	}
	for _, a := range acts {
		for i := action.DimWorldX; i <= action.DimBaseY; i++ {
			if i != action.DimGripper && a.msg.Data[i] != 0 {
				t.Fatalf("action during e-stop: %v", a.msg.Data)
			}
		}
	}
	m.MustRun(rostest.ToolTimeout, "rostopic", "pub", "-1", nodeNS+"/e_stop_reset", "std_msgs/Empty", "{}")
	waitStatus(t, m, n, "acting")
}

// testWrongTypeEStop: an e-stop published as std_msgs/Bool, which goroslib
// drops, stops the node and is named on status and /diagnostics while it
// publishes; killed, it leaves the e-stop latched until e_stop_reset.
func testWrongTypeEStop(t *testing.T, m *rostest.Master, n *Node, w *watcher, logs *rostest.Log) {
	published := make(chan error, 1)
	go func() {
		_, err := m.Run(8*time.Second, "rostopic", "pub", "-r", "5", nodeNS+"/e_stop", "std_msgs/Bool", "data: true")
		published <- err
	}()
	waitStatus(t, m, n, "stopped: "+ReasonUnreadableSafety.String())
	rostest.WaitFor(t, 10*time.Second, "the publisher named on /diagnostics", func() error {
		kv, st := w.lastDiagnostics(nodeName + ": control loop")
		if st == nil {
			return errors.New("no diagnostics")
		}
		want := nodeNS + "/e_stop: /rostopic_"
		if got := kv["wrong_type_publishers"]; !strings.HasPrefix(got, want) || !strings.Contains(got, "publishes std_msgs/Bool, the node reads std_msgs/Empty") {
			return fmt.Errorf("wrong_type_publishers = %q", got)
		}
		if kv["state"] != "unreadable_safety_input" || st.Level != diagnostic_msgs.DiagnosticStatus_ERROR {
			return fmt.Errorf("state %q at level %d", kv["state"], st.Level)
		}
		return nil
	})
	if err := <-published; err == nil || !strings.Contains(err.Error(), "no result within") {
		t.Fatalf("rostopic pub -r ended on its own: %v", err)
	}
	waitStatus(t, m, n, "stopped: e-stop latched (publish e_stop_reset to clear)")
	if len(logs.Entries("e-stop latched: a publisher on e_stop sends a type the node cannot read")) == 0 {
		t.Error("the latch was not logged")
	}
	m.MustRun(rostest.ToolTimeout, "rostopic", "pub", "-1", nodeNS+"/e_stop_reset", "std_msgs/Empty", "{}")
	waitStatus(t, m, n, "acting")
}

// testInstructionAbuse: an instruction over the limit and a burst of empty
// ones are refused on arrival and counted, the episode goes on, and the
// log holds one line of them.
func testInstructionAbuse(t *testing.T, m *rostest.Master, n *Node, logs *rostest.Log) {
	before := n.Stats()
	logged := len(logs.Entries("instruction refused"))
	m.MustRun(rostest.ToolTimeout, "rostopic", "pub", "-1", nodeNS+"/instruction", "std_msgs/String", "data: "+strings.Repeat("a", language.MaxInstructionBytes+1))
	pub := newTopicPublisher(t, m.URI, "test_spam", nodeNS+"/instruction", &std_msgs.String{}, hclog.NewNullLogger())
	defer pub.close()
	rostest.WaitFor(t, 10*time.Second, "the spammer's connection", func() error {
		if p := pub.Load(); p == nil {
			return errors.New("not registered")
		}
		return nil
	})
	for range 500 {
		pub.Load().Write(&std_msgs.String{})
		time.Sleep(time.Millisecond)
	}
	rostest.WaitFor(t, 10*time.Second, "the instructions refused", func() error {
		if got := n.Stats().InstructionsBad - before.InstructionsBad; got < 1+450 {
			return fmt.Errorf("%d refused", got)
		}
		return nil
	})
	if s := n.Stats(); s.Episode != before.Episode {
		t.Errorf("episode %d after the refused instructions, was %d", s.Episode, before.Episode)
	}
	if got := len(logs.Entries("instruction refused")) - logged; got > 1 {
		t.Errorf("%d log lines for the refused instructions, want at most 1", got)
	}
}

func testServices(t *testing.T, m *rostest.Master, n *Node) {
	before := n.Stats().Episode
	out := m.MustRun(rostest.ToolTimeout, "rosservice", "call", nodeNS+"/reset_memory")
	if !strings.Contains(out, "success: True") || !strings.Contains(out, "a new episode started with instruction") {
		t.Errorf("reset_memory = %q, want success and the instruction the episode started with", out)
	}
	if s := n.Stats(); s.Episode != before+1 {
		t.Errorf("episode %d after reset_memory, was %d", s.Episode, before)
	}
	out = m.MustRun(rostest.ToolTimeout, "rosservice", "call", nodeNS+"/enable", "data: false")
	if !strings.Contains(out, "success: True") {
		t.Errorf("enable false = %q", out)
	}
	waitStatus(t, m, n, "stopped: disabled (call enable with true)")
	m.MustRun(rostest.ToolTimeout, "rosservice", "call", nodeNS+"/enable", "data: true")
	waitStatus(t, m, n, "acting")
}

func testDiagnostics(t *testing.T, w *watcher) {
	kv, st := w.lastDiagnostics(nodeName + ": control loop")
	if st == nil {
		t.Fatal("no diagnostics from the node")
	}
	rate, err := strconv.ParseFloat(kv["rate_measured_hz"], 64)
	if hz := float64(*rosRate); err != nil || math.Abs(rate-hz)/hz > 0.02 {
		t.Errorf("rate_measured_hz = %q (over the last 64 ticks), want %g within 2 %%", kv["rate_measured_hz"], hz)
	}
	for _, k := range []string{"deadline_misses", "inference_p99_ms", "jitter_p99_ms", "end_to_end_p50_ms", "image_age_ms",
		"frames_dropped", "stale_frame_ticks", "tick_latency_max_ms", "publish_p50_ms"} {
		if _, err := strconv.ParseFloat(kv[k], 64); err != nil {
			t.Errorf("diagnostics value %s = %q", k, kv[k])
		}
	}
	if kv["stale_frame_ticks"] == "0" {
		t.Error("the stall did not show in stale_frame_ticks")
	}
	if kv["trained_rate_hz"] != "0.0000" || kv["per_step_scale"] != "1.0000" { // a checkpoint that records no rate
		t.Errorf("trained_rate_hz %q, per_step_scale %q", kv["trained_rate_hz"], kv["per_step_scale"])
	}
	if kv["state"] != "acting" || kv["rate_target_hz"] != strconv.Itoa(*rosRate)+".000" {
		t.Errorf("state %q, target %q", kv["state"], kv["rate_target_hz"])
	}
}

// testNodeMasterRestart: roscore restarts; the node re-registers, the
// camera too, and actions flow again with the instruction it had.
func testNodeMasterRestart(t *testing.T, m *rostest.Master, n *Node, logs *rostest.Log) {
	acted := n.Stats().Acted
	m.Restart()
	nodetest.WaitConnected(t, n.sup, 2, 20*time.Second)
	waitStatus(t, m, n, "acting")
	out := m.MustRun(rostest.ToolTimeout, "rostopic", "echo", "-p", "-n", "3", nodeNS+"/action")
	if _, err := parseEchoCSV(out); err != nil {
		t.Fatal(err)
	}
	if n.Stats().Acted <= acted {
		t.Error("no new actions after the restart")
	}
	if len(logs.Entries("ROS master restarted")) == 0 {
		t.Error("the restart was not logged")
	}
	if out := m.MustRun(rostest.ToolTimeout, "rosparam", "get", nodeName+"/rate"); strings.TrimSpace(out) != strconv.Itoa(*rosRate) {
		t.Errorf("rosparam get rate after the restart = %q", out)
	}
}

// testSimTime: with /use_sim_time the loop ticks on /clock, which the test
// moves by hand: not before the first message, once per period of ROS time
// however fast ROS time runs against the wall clock, and not while ROS
// time stands still.
func testSimTime(t *testing.T, m *rostest.Master, ckpt string) {
	m.MustRun(rostest.ToolTimeout, "rosparam", "set", "/use_sim_time", "true")
	defer m.MustRun(rostest.ToolTimeout, "rosparam", "set", "/use_sim_time", "false")
	log, _ := rostest.Logger(t)
	clock := startClock(t, m.URI, log.Named("clock"))
	n, err := Start(context.Background(), Config{Args: nodetest.Args(t, m, "ttm_simtime", "_warmup_steps:="+testWarmupSteps), Policy: ckpt, Threads: 2, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if !n.Params().UseSimTime {
		t.Fatal("the node did not read /use_sim_time")
	}
	// The loop waits for the first /clock message: ROS time reads zero until then.
	time.Sleep(500 * time.Millisecond)
	if got := n.Stats().Ticks; got != 0 {
		t.Fatalf("%d ticks before any /clock message", got)
	}
	waitTicks := func(want uint64) {
		t.Helper()
		rostest.WaitFor(t, 20*time.Second, fmt.Sprintf("tick %d", want), func() error {
			if got := n.Stats().Ticks; got < want {
				return fmt.Errorf("%d ticks", got)
			}
			return nil
		})
	}
	start, period := time.Unix(5000, 0), n.Loop().Period()
	clock.set(start)
	waitTicks(1) // the first tick runs at the first reading
	// One tick per period of ROS time, as fast as the loop takes them:
	// ROS time runs ahead of the wall clock.
	const periods = 20
	for i := range uint64(periods) {
		clock.set(start.Add(time.Duration(i+1) * period))
		waitTicks(i + 2)
	}
	// ROS time stands still: however many times it is published, no tick.
	clock.waitSent(t, 10)
	if s := n.Stats(); s.Ticks != periods+1 || s.SkippedTicks != 0 {
		t.Errorf("%d ticks, %d skipped over %d periods of ROS time; want %d and none", s.Ticks, s.SkippedTicks, periods, periods+1)
	}
}

// TestNodeCloseLeavesNothing: `rosnode kill` stops the node (Done, then
// Close returns no error, as a ROS node exits normally), and a closed node
// leaves no goroutine behind (its own; other nodes in the process would
// close their side of connections at their own pace, so none run here).
func TestNodeCloseLeavesNothing(t *testing.T) {
	m := rostest.StartMaster(t)
	ckpt := smallPath(t)
	log, _ := rostest.Logger(t)
	nn.SetParallelism(2) // the worker team is process-wide; start it before the baseline
	baseline := runtime.NumGoroutine()
	n, err := Start(context.Background(), Config{Args: nodetest.Args(t, m, "ttm_close", "_warmup_steps:="+testWarmupSteps), Policy: ckpt, Threads: 2, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	nodetest.WaitConnected(t, n.sup, 1, 10*time.Second)
	m.MustRun(rostest.ToolTimeout, "rostopic", "pub", "-1", "/instruction", "std_msgs/String", "data: x")
	m.MustRun(rostest.ToolTimeout, "rosnode", "kill", "/ttm_close")
	select {
	case <-n.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the node did not stop after rosnode kill")
	}
	if err := n.Close(); err != nil {
		t.Fatalf("Close after rosnode kill = %v, want nil", err)
	}
	rostest.CheckNoGoroutineLeak(t, baseline)
}

// testWarmupSteps is the warm-up of nodes these tests start at 10 Hz. With
// 100 timed steps the p99 tolerates one slow step while other test packages
// load the two cores (with 2 steps it was the maximum, and CI refused a start
// at 109 ms against the 100 ms period). The refusal itself is tested with a
// policy too slow for its rate.
const testWarmupSteps = "100"
