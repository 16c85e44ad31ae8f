package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/robot"
	"github.com/ttmrobot/ttm/internal/rosbag"
)

// played is an episode played without recording: its frames (before each
// step) and actions.
type played struct {
	res       Result
	frames    [][]byte
	actions   [][]float32
	keypoints [][]float32 // each frame's KeypointLabels
	lying     []float32   // and TargetLying
	proprio   [][]float32 // the proprioception each action was computed from
	states    []*State    // the state each action was computed from
}

// noisyExpert is the expert of the recording tests: noise and pauses make
// the actions less regular.
var noisyExpert = ExpertOptions{Seed: 2, Noise: 0.05, PauseProb: 0.05}

func play(t *testing.T, task string, seed uint64, h, w int) played {
	t.Helper()
	tk, err := TaskByName(task)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := NewEpisode(tk, seed, Options{Height: h, Width: w})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	var p played
	x := ExpertAgent{Expert: ep.Expert(noisyExpert)}
	agent := agentFunc(func(o *Observation) ([]float32, error) {
		s := o.State
		if want := []float32{float32(s.EE[0]), float32(s.EE[1]), float32(s.EE[2]), float32(s.Grip)}; !reflect.DeepEqual(o.Proprio, want) {
			t.Fatalf("step %d: proprioception %v, the state's hand and gripper %v", o.Step, o.Proprio, want)
		}
		p.proprio = append(p.proprio, append([]float32(nil), o.Proprio...))
		p.states = append(p.states, o.State.Clone())
		a, err := x.Act(o)
		p.actions = append(p.actions, append([]float32(nil), a...))
		return a, err
	})
	p.res, err = Run(ep, agent, func(k int, img []byte) error {
		p.frames = append(p.frames, append([]byte(nil), img...))
		l := make([]float32, KeypointLabelLen)
		KeypointLabels(l, ep.State(), h, w)
		p.keypoints = append(p.keypoints, l)
		p.lying = append(p.lying, TargetLying(ep.State(), l))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p.frames = p.frames[:len(p.actions)] // the final frame has no action
	p.keypoints = p.keypoints[:len(p.actions)]
	p.lying = p.lying[:len(p.actions)]
	return p
}

type agentFunc func(*Observation) ([]float32, error)

func (agentFunc) Reset(string)                            {}
func (f agentFunc) Act(o *Observation) ([]float32, error) { return f(o) }

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)

func record(t *testing.T, path, task string, seed uint64, h, w int, opts RecordOptions) Result {
	t.Helper()
	tk, err := TaskByName(task)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := NewEpisode(tk, seed, Options{Height: h, Width: w})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	x := noisyExpert
	opts.Expert = &x
	res, err := RecordEpisode(path, ep, ExpertAgent{Expert: ep.Expert(noisyExpert)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A recorded episode reads back as played: the same frames, actions and
// outcome, frame k paired with the action computed from it, stamped
// t0 + k·period.
func TestRecordEpisodeRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		task  string
		lying []float32 // the target-lying labels the episode must show
	}{{"pick", []float32{0}}, {"cue_pick", []float32{0, NoLyingLabel}}, {"knock", []float32{0, 1}}} {
		t.Run(tc.task, func(t *testing.T) {
			want := play(t, tc.task, 4, 48, 64)
			for _, l := range tc.lying {
				if !slices.Contains(want.lying, l) {
					t.Fatalf("the played episode's target-lying labels %v lack %v", want.lying, l)
				}
			}
			path := filepath.Join(t.TempDir(), "ep.bag")
			res := record(t, path, tc.task, 4, 48, 64, RecordOptions{Start: t0})
			if res != want.res {
				t.Fatalf("recorded %+v, played %+v", res, want.res)
			}
			ep, err := ReadEpisode(path, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !ep.HasInfo || !ep.Done || ep.Unpaired != 0 || len(ep.Steps) != res.Steps {
				t.Fatalf("read: info %v done %v unpaired %d, %d steps of %d", ep.HasInfo, ep.Done, ep.Unpaired, len(ep.Steps), res.Steps)
			}
			if ep.ProprioLabel != "hand_x;hand_y;hand_z;gripper" {
				t.Errorf("proprioception labelled %q", ep.ProprioLabel)
			}
			for k, s := range ep.Steps {
				if !bytes.Equal(s.Image, want.frames[k]) {
					t.Fatalf("step %d: frame differs from the one played", k)
				}
				if !reflect.DeepEqual(s.Action, want.actions[k]) {
					t.Fatalf("step %d: action %v, played %v", k, s.Action, want.actions[k])
				}
				if !reflect.DeepEqual(s.Keypoints, want.keypoints[k]) {
					t.Fatalf("step %d: keypoint labels %v, played %v", k, s.Keypoints, want.keypoints[k])
				}
				if s.TargetLying != want.lying[k] {
					t.Fatalf("step %d: target-lying label %v, played %v", k, s.TargetLying, want.lying[k])
				}
				if !reflect.DeepEqual(s.Proprio, want.proprio[k]) {
					t.Fatalf("step %d: proprioception %v, played %v", k, s.Proprio, want.proprio[k])
				}
				if st := t0.Add(time.Duration(k) * 333333333); !s.Stamp.Equal(st) { // the period: 1/3 s in whole ns
					t.Fatalf("step %d stamped %v, want %v", k, s.Stamp, st)
				}
			}
			tk, _ := TaskByName(tc.task)
			wantInfo := EpisodeInfo{Version: 1, Task: tc.task, Family: TaskFamily(tk), Memory: tk.Memory, Instruction: res.Instruction, Agent: "expert",
				Seed: 4, Steps: res.Steps, Success: res.Success, Terminated: res.Terminated, Height: 48, Width: 64,
				Period: time.Duration(333333333).Seconds(), Start: t0, Expert: &noisyExpert}
			got := ep.Info
			if !got.Start.Equal(t0) {
				t.Errorf("start %v", got.Start)
			}
			got.Start = t0
			if !reflect.DeepEqual(got, wantInfo) {
				t.Errorf("info\n got %+v\nwant %+v", got, wantInfo)
			}
		})
	}
}

func TestTaskFamily(t *testing.T) {
	for name, want := range map[string]string{"pick": "pick", "drawer": "drawer", "cue_pick": "memory", "put_back": "memory"} {
		tk, _ := TaskByName(name)
		if got := TaskFamily(tk); got != want {
			t.Errorf("TaskFamily(%s) = %s", name, got)
		}
	}
}

// rosTool runs one of Debian's ROS tools on a bag (no master needed).
func rosTool(t *testing.T, tool string, args ...string) string {
	t.Helper()
	path := filepath.Join("/usr/bin", tool)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s not found: run `make setup` (Debian ros-core)", path)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "PATH=/usr/bin:"+os.Getenv("PATH"), "ROS_HOME="+home, "ROS_LOG_DIR="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// yamlField returns the value of "key: value" on the first line that has it.
func yamlField(t *testing.T, out, key string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+":"); ok {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	t.Fatalf("no %s in\n%s", key, out)
	return ""
}

// An episode bag passes rosbag info and check, and rostopic echo -b decodes
// each topic to the recorded values.
func TestEpisodeBagWithROSTools(t *testing.T) {
	want := play(t, "drawer", 3, 32, 40)
	path := filepath.Join(t.TempDir(), "drawer-000003.bag")
	res := record(t, path, "drawer", 3, 32, 40, RecordOptions{Start: t0})
	n := strconv.Itoa(res.Steps)

	t.Run("info", func(t *testing.T) {
		t.Parallel()
		out := rosTool(t, "rosbag", "info", "--yaml", path)
		if got := yamlField(t, out, "messages"); got != strconv.Itoa(8*res.Steps+4) {
			t.Errorf("messages: %s, want %d", got, 8*res.Steps+4)
		}
		for _, want := range []string{"topic: /headcam/image_raw\n      type: sensor_msgs/Image\n      messages: " + n,
			"topic: /episode/keypoints\n      type: std_msgs/Float32MultiArray\n      messages: " + n,
			"topic: /episode/target_lying\n      type: std_msgs/Float32MultiArray\n      messages: " + n,
			"topic: /proprio\n      type: std_msgs/Float32MultiArray\n      messages: " + n,
			"topic: /action\n      type: std_msgs/Float32MultiArray\n      messages: " + n,
			"topic: /tf\n      type: tf2_msgs/TFMessage\n      messages: " + n, "topic: /tf_static\n      type: tf2_msgs/TFMessage\n      messages: 1",
			"topic: /joint_states\n      type: sensor_msgs/JointState\n      messages: " + n,
			"topic: /headcam/camera_info\n      type: sensor_msgs/CameraInfo\n      messages: " + n,
			"topic: /instruction\n      type: std_msgs/String\n      messages: 1", "topic: /episode_done\n      type: std_msgs/Bool\n      messages: 1",
			"topic: /episode/info\n      type: std_msgs/String\n      messages: 1"} {
			if !strings.Contains(out, want) {
				t.Errorf("rosbag info lacks %q:\n%s", want, out)
			}
		}
		if got := yamlField(t, out, "start"); got != fmt.Sprintf("%.6f", float64(t0.UnixNano())/1e9) {
			t.Errorf("start %s, want t0 %v", got, t0)
		}
	})
	t.Run("check", func(t *testing.T) {
		t.Parallel()
		if out := rosTool(t, "rosbag", "check", path); !strings.Contains(out, "does not need any migrations") {
			t.Errorf("rosbag check: %s", out)
		}
	})
	t.Run("echo", func(t *testing.T) {
		t.Parallel()
		if got := yamlField(t, rosTool(t, "rostopic", "echo", "-b", path, "-n", "1", "/instruction"), "data"); got != res.Instruction {
			t.Errorf("instruction %q, want %q", got, res.Instruction)
		}
		var info EpisodeInfo
		// rostopic prints the JSON as a folded YAML string: let YAML unfold it.
		cmd := exec.Command("/usr/bin/python3", "-c", "import sys, yaml; print(yaml.safe_load(sys.stdin.read().split('---')[0])['data'])")
		cmd.Stdin = strings.NewReader(rosTool(t, "rostopic", "echo", "-b", path, "-n", "1", "/episode/info"))
		raw, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatalf("episode info %q: %v", raw, err)
		}
		if info.Task != "drawer" || info.Seed != 3 || info.Steps != res.Steps || info.Success != res.Success || info.Height != 32 || info.Width != 40 {
			t.Errorf("episode info %+v", info)
		}
		if got := yamlField(t, rosTool(t, "rostopic", "echo", "-b", path, "-n", "1", "/episode_done"), "data"); got != "True" {
			t.Errorf("episode_done %s", got)
		}
		// Every action, as CSV: the label and the values as written.
		rows := strings.Split(strings.TrimSpace(rosTool(t, "rostopic", "echo", "-b", path, "-p", "/action")), "\n")
		if len(rows) != res.Steps+1 {
			t.Fatalf("%d action rows, want %d", len(rows)-1, res.Steps)
		}
		label := "mode;world_vector/x;world_vector/y;world_vector/z;rotation_delta/roll;rotation_delta/pitch;rotation_delta/yaw;gripper;base/yaw;base/x;base/y"
		for k, row := range rows[1:] {
			f := strings.Split(row, ",")
			if len(f) != 5+11 || f[1] != label || f[2] != "11" || f[3] != "11" {
				t.Fatalf("action row %d: %q", k, row)
			}
			for j, s := range f[5:] {
				v, err := strconv.ParseFloat(s, 64)
				if err != nil || float32(v) != want.actions[k][j] {
					t.Fatalf("action %d value %d: %q, recorded %v", k, j, s, want.actions[k][j])
				}
			}
		}
		// The proprioception, labelled, as played.
		rows = strings.Split(strings.TrimSpace(rosTool(t, "rostopic", "echo", "-b", path, "-p", "/proprio")), "\n")
		if len(rows) != res.Steps+1 {
			t.Fatalf("%d proprioception rows, want %d", len(rows)-1, res.Steps)
		}
		for k, row := range rows[1:] {
			f := strings.Split(row, ",")
			if len(f) != 5+4 || f[1] != "hand_x;hand_y;hand_z;gripper" {
				t.Fatalf("proprioception row %d: %q", k, row)
			}
			for j, s := range f[5:] {
				v, err := strconv.ParseFloat(s, 64)
				if err != nil || float32(v) != want.proprio[k][j] {
					t.Fatalf("proprioception %d value %d: %q, played %v", k, j, s, want.proprio[k][j])
				}
			}
		}
		img := rosTool(t, "rostopic", "echo", "-b", path, "-n", "1", "--noarr", "/headcam/image_raw")
		for key, v := range map[string]string{"seq": "0", "secs": strconv.FormatInt(t0.Unix(), 10), "nsecs": strconv.Itoa(t0.Nanosecond()),
			"frame_id": "head_camera_optical_frame", "height": "32", "width": "40", "encoding": "rgb8", "step": "120"} {
			if got := yamlField(t, img, key); got != v {
				t.Errorf("image %s = %s, want %s", key, got, v)
			}
		}
	})
}

// csvRows runs rostopic echo -b -p on a topic of a bag and returns its rows
// as maps from column name to value.
func csvRows(t *testing.T, path, topic string) []map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(rosTool(t, "rostopic", "echo", "-b", path, "-p", topic)), "\n")
	cols := strings.Split(lines[0], ",")
	var rows []map[string]string
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) != len(cols) {
			t.Fatalf("%s: row %q has %d fields, the header %d", topic, l, len(f), len(cols))
		}
		row := map[string]string{}
		for i, c := range cols {
			row[c] = f[i]
		}
		rows = append(rows, row)
	}
	return rows
}

// An episode bag holds what a ROS robot publishes of itself, as ROS's
// tools decode it: per frame the tf of the base and the hand, the gripper's
// joint and the camera's intrinsics, stamped as the frame, and the static
// frames once.
func TestEpisodeBagRobotTopics(t *testing.T) {
	const h, w = 32, 40
	want := play(t, "pick", 5, h, w)
	path := filepath.Join(t.TempDir(), "pick.bag")
	res := record(t, path, "pick", 5, h, w, RecordOptions{Start: t0})
	num := func(row map[string]string, col string) float64 {
		t.Helper()
		v, err := strconv.ParseFloat(row[col], 64)
		if err != nil {
			t.Fatalf("column %s: %q: %v", col, row[col], err)
		}
		return v
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	images := csvRows(t, path, "/headcam/image_raw")
	tf, joints, infos := csvRows(t, path, "/tf"), csvRows(t, path, "/joint_states"), csvRows(t, path, "/headcam/camera_info")
	if len(images) != res.Steps || len(tf) != res.Steps || len(joints) != res.Steps || len(infos) != res.Steps {
		t.Fatalf("%d images, %d tf, %d joint_states, %d camera_info; want %d each", len(images), len(tf), len(joints), len(infos), res.Steps)
	}
	f, cx, cy := CameraIntrinsics(h, w)
	for k, s := range want.states {
		stamp := images[k]["field.header.stamp"]
		for _, st := range []string{tf[k]["field.transforms0.header.stamp"], tf[k]["field.transforms1.header.stamp"],
			joints[k]["field.header.stamp"], infos[k]["field.header.stamp"]} {
			if st != stamp {
				t.Fatalf("step %d: stamps %s, the image's %s", k, st, stamp)
			}
		}
		r := tf[k]
		if r["field.transforms0.header.frame_id"] != "odom" || r["field.transforms0.child_frame_id"] != "base_link" ||
			r["field.transforms1.header.frame_id"] != "arm_mount" || r["field.transforms1.child_frame_id"] != "hand" {
			t.Fatalf("step %d: tf frames %v", k, r)
		}
		near("base x", num(r, "field.transforms0.transform.translation.x"), s.Base.X)
		near("base y", num(r, "field.transforms0.transform.translation.y"), s.Base.Y)
		yaw := 2 * math.Atan2(num(r, "field.transforms0.transform.rotation.z"), num(r, "field.transforms0.transform.rotation.w"))
		near("base yaw", math.Remainder(yaw-s.Base.Yaw, 2*math.Pi), 0)
		for i, c := range []string{"x", "y", "z"} {
			near("hand "+c, num(r, "field.transforms1.transform.translation."+c)+ArmMount[i], s.EE[i])
		}
		if joints[k]["field.name0"] != "gripper_finger_joint" {
			t.Fatalf("joint names %v", joints[k])
		}
		near("grip", (num(joints[k], "field.position0")-robot.GripperOpenPosition)/(robot.GripperClosedPosition-robot.GripperOpenPosition), s.Grip)
		ci := infos[k]
		if ci["field.header.frame_id"] != "head_camera_optical_frame" || ci["field.distortion_model"] != "plumb_bob" || ci["field.height"] != "32" || ci["field.width"] != "40" {
			t.Fatalf("camera_info %v", ci)
		}
		for i, v := range []float64{f, 0, cx, 0, f, cy, 0, 0, 1} {
			near(fmt.Sprintf("K%d", i), num(ci, fmt.Sprintf("field.K%d", i)), v)
			near(fmt.Sprintf("P%d", i), num(ci, fmt.Sprintf("field.P%d", i+i/3)), v)
		}
	}
	static := csvRows(t, path, "/tf_static")
	if len(static) != 1 || static[0]["field.transforms1.child_frame_id"] != "head_camera_link" ||
		static[0]["field.transforms2.child_frame_id"] != "head_camera_optical_frame" {
		t.Fatalf("tf_static %v", static)
	}
	// An old reader's view is unchanged; the replay's view has it all.
	ep, err := ReadEpisode(path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ep.TFStatic == nil || len(ep.TFStatic.Transforms) != 3 || len(ep.Robot) != 3*res.Steps {
		t.Fatalf("read back: tf_static %v, %d robot messages", ep.TFStatic, len(ep.Robot))
	}
}

// An interrupted recording leaves nothing under the bag's name, nor an
// .active file.
func TestRecordInterrupted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ep.bag")
	ctx, cancel := context.WithCancel(context.Background())
	tk, _ := TaskByName("move")
	ep, err := NewEpisode(tk, 1, Options{Height: 16, Width: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	x := ExpertAgent{Expert: ep.Expert(ExpertOptions{})}
	agent := agentFunc(func(o *Observation) ([]float32, error) {
		if o.Step == 5 {
			cancel()
		}
		return x.Act(o)
	})
	if _, err := RecordEpisode(path, ep, agent, RecordOptions{Context: ctx}); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	// An agent error aborts the same way.
	ep2, _ := NewEpisode(tk, 1, Options{Height: 16, Width: 16})
	defer ep2.Close()
	bad := agentFunc(func(o *Observation) ([]float32, error) { return nil, errors.New("agent broke") })
	if _, err := RecordEpisode(path, ep2, bad, RecordOptions{}); err == nil || !strings.Contains(err.Error(), "agent broke") {
		t.Fatalf("err = %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if _, err := RecordEpisode(path, ep2, bad, RecordOptions{Period: time.Second, ActionDelay: time.Second}); err == nil {
		t.Error("an action delay of a whole period accepted")
	}
}

// liveBag writes a bag as `rosbag record` takes it from a node in the
// /robot namespace: a 10 Hz bgr8 camera and compressed copies, the node's
// actions at 5 Hz a little after a frame, no episode info.
func liveBag(t *testing.T, path string, withInstruction bool) (frames [][]byte) {
	t.Helper()
	w, err := rosbag.Create(path, rosbag.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := func(ms int) rosbag.Time {
		tm, _ := rosbag.FromTime(t0.Add(time.Duration(ms) * time.Millisecond))
		return tm
	}
	if withInstruction {
		w.Write("/robot/instruction", at(0), &rosbag.String{Data: "pick the apple"})
	}
	w.Write("/robot/action", at(10), &rosbag.Float32MultiArray{Data: []float32{-1, -1}}) // before any frame
	for k := range 10 {
		rgb := make([]byte, 4*5*3)
		bgr := make([]byte, len(rgb))
		for i := range rgb {
			rgb[i] = byte(k*31 + i)
		}
		for i := 0; i < len(rgb); i += 3 {
			bgr[i], bgr[i+1], bgr[i+2] = rgb[i+2], rgb[i+1], rgb[i]
		}
		frames = append(frames, rgb)
		stamp := at(100*k + 100 - 30) // the camera stamps 30 ms before the record time
		w.Write("/robot/headcam/image_raw", at(100*k+100), &rosbag.Image{Header: rosbag.Header{Seq: uint32(k), Stamp: stamp}, Height: 4, Width: 5, Encoding: "bgr8", Step: 15, Data: bgr})
		if k%2 == 1 {
			w.Write("/robot/action", at(100*k+100+20), &rosbag.Float32MultiArray{Data: []float32{float32(k), 0.5}})
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return frames
}

func TestReadLiveBag(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "live.bag")
	frames := liveBag(t, path, true)
	if _, err := ReadEpisode(path, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "/robot/headcam/image_raw") {
		t.Errorf("default topics on a namespaced bag: %v (the error should list the bag's topics)", err)
	}
	ep, err := ReadEpisode(path, ReadOptions{Namespace: "/robot"})
	if err != nil {
		t.Fatal(err)
	}
	if ep.HasInfo || ep.Done || ep.Unpaired != 1 || len(ep.Steps) != 5 || ep.Info.Instruction != "pick the apple" ||
		ep.Info.Height != 4 || ep.Info.Width != 5 || ep.Info.Steps != 5 || ep.Info.Period != 0.2 {
		t.Fatalf("live bag: %+v, %d steps", ep.Info, len(ep.Steps))
	}
	for i, s := range ep.Steps {
		k := 2*i + 1
		if !bytes.Equal(s.Image, frames[k]) || !reflect.DeepEqual(s.Action, []float32{float32(k), 0.5}) ||
			!s.Stamp.Equal(t0.Add(time.Duration(100*k+70)*time.Millisecond)) {
			t.Errorf("step %d: action %v stamp %v, want frame %d", i, s.Action, s.Stamp, k)
		}
	}
	// Remapped names, and the instruction given when the bag has none.
	noInstr := filepath.Join(dir, "noinstr.bag")
	liveBag(t, noInstr, false)
	if _, err := ReadEpisode(noInstr, ReadOptions{Namespace: "/robot"}); err == nil || !strings.Contains(err.Error(), "no instruction") {
		t.Errorf("no instruction: %v", err)
	}
	ep, err = ReadEpisode(noInstr, ReadOptions{Instruction: "given", Topics: Topics{Image: "/robot/headcam/image_raw", Action: "/robot/action"}})
	if err != nil || ep.Info.Instruction != "given" || len(ep.Steps) != 5 {
		t.Errorf("explicit topics: %v %+v", err, ep)
	}
}

// Frames of every supported kind become the same rgb8 pixels; a bag with
// frames and no actions gives one step per frame.
func TestReadEncodings(t *testing.T) {
	const h, w = 3, 4
	rgb := make([]byte, h*w*3)
	grey := make([]byte, h*w)
	for i := range grey {
		grey[i] = byte(17 * i)
		rgb[3*i], rgb[3*i+1], rgb[3*i+2] = grey[i], grey[i], grey[i]
	}
	pic := image.NewGray(image.Rect(0, 0, w, h))
	copy(pic.Pix, grey)
	var pngData bytes.Buffer
	if err := png.Encode(&pngData, pic); err != nil {
		t.Fatal(err)
	}
	padded := make([]byte, h*(w*3+2)) // rgb8 rows with 2 bytes of padding
	for y := range h {
		copy(padded[y*(w*3+2):], rgb[y*w*3:(y+1)*w*3])
	}
	bgr := bytes.Clone(rgb) // grey: bgr equals rgb; swap a pixel to tell
	bgr[0], bgr[2] = 1, 2
	rgbSwapped := bytes.Clone(rgb)
	rgbSwapped[0], rgbSwapped[2] = 2, 1
	var rgba, bgra []byte
	for i := 0; i < len(rgb); i += 3 {
		rgba = append(rgba, rgb[i], rgb[i+1], rgb[i+2], 0xEE)
		bgra = append(bgra, bgr[i], bgr[i+1], bgr[i+2], 0xEE)
	}
	white, flat := bytes.Repeat([]byte{255}, 3*h*w), bytes.Repeat([]byte{90}, 3*h*w)
	for _, tc := range []struct {
		name string
		msg  rosbag.Message
		want []byte
		err  string
	}{
		{"rgb8 with row padding", &rosbag.Image{Height: h, Width: w, Encoding: "rgb8", Step: w*3 + 2, Data: padded}, rgb, ""},
		{"bgr8", &rosbag.Image{Height: h, Width: w, Encoding: "bgr8", Step: w * 3, Data: bgr}, rgbSwapped, ""},
		{"mono8", &rosbag.Image{Height: h, Width: w, Encoding: "mono8", Step: w, Data: grey}, rgb, ""},
		{"rgba8", &rosbag.Image{Height: h, Width: w, Encoding: "rgba8", Step: w * 4, Data: rgba}, rgb, ""},
		{"bgra8", &rosbag.Image{Height: h, Width: w, Encoding: "bgra8", Step: w * 4, Data: bgra}, rgbSwapped, ""},
		// U = V = 128, Y = 235: white.
		{"yuv422", &rosbag.Image{Height: h, Width: w, Encoding: "yuv422", Step: w * 2, Data: bytes.Repeat([]byte{128, 235}, h*w)}, white, ""},
		{"yuv422_yuy2", &rosbag.Image{Height: h, Width: w, Encoding: "yuv422_yuy2", Step: w * 2, Data: bytes.Repeat([]byte{235, 128}, h*w)}, white, ""},
		// A flat grey scene through any mosaic is that grey.
		{"bayer_grbg8", &rosbag.Image{Height: h, Width: w, Encoding: "bayer_grbg8", Step: w, Data: flat[:h*w]}, flat, ""},
		{"bayer_rggb8", &rosbag.Image{Height: h, Width: w, Encoding: "bayer_rggb8", Step: w, Data: flat[:h*w]}, flat, ""},
		{"odd 4:2:2 width", &rosbag.Image{Height: h, Width: w - 1, Encoding: "yuv422", Step: w * 2, Data: make([]byte, 2*h*w)}, nil, "width is odd"},
		{"upper case", &rosbag.Image{Height: h, Width: w, Encoding: "RGB8", Step: w * 3, Data: rgb}, nil, `use "rgb8"`},
		{"png", &rosbag.CompressedImage{Format: "png", Data: pngData.Bytes()}, rgb, ""},
		{"16UC1", &rosbag.Image{Height: h, Width: w, Encoding: "16UC1", Step: 2 * w, Data: make([]byte, 2*h*w)}, nil, `encoding "16UC1"`},
		{"short data", &rosbag.Image{Height: h, Width: w, Encoding: "rgb8", Step: w * 3, Data: rgb[:10]}, nil, "has 10 bytes"},
		{"bad png", &rosbag.CompressedImage{Format: "png", Data: pngData.Bytes()[:20]}, nil, "compressed frame"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.bag")
			bw, err := rosbag.Create(path, rosbag.WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			topic := "/headcam/image_raw"
			if _, ok := tc.msg.(*rosbag.CompressedImage); ok {
				topic += "/compressed"
			}
			bw.Write("/instruction", rosbag.Time{Sec: 1}, &rosbag.String{Data: "x"})
			bw.Write(topic, rosbag.Time{Sec: 2}, tc.msg)
			bw.Write(topic, rosbag.Time{Sec: 3}, tc.msg)
			if err := bw.Close(); err != nil {
				t.Fatal(err)
			}
			ep, err := ReadEpisode(path, ReadOptions{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ep.Steps) != 2 || ep.Steps[0].Action != nil || !bytes.Equal(ep.Steps[0].Image, tc.want) || ep.Info.Period != 1 {
				t.Errorf("%d steps, image %v, period %v; want %v", len(ep.Steps), ep.Steps[0].Image, ep.Info.Period, tc.want)
			}
		})
	}
}

// Bags that do not hold a consistent episode are refused with the reason.
func TestReadEpisodeRejects(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, f func(w *rosbag.Writer)) string {
		path := filepath.Join(dir, name)
		w, err := rosbag.Create(path, rosbag.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.Write("/instruction", rosbag.Time{Sec: 1}, &rosbag.String{Data: "x"})
		f(w)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	frame := func(h, w int) *rosbag.Image {
		return &rosbag.Image{Height: uint32(h), Width: uint32(w), Encoding: "rgb8", Step: uint32(3 * w), Data: make([]byte, 3*h*w)}
	}
	act := &rosbag.Float32MultiArray{Data: []float32{1, 2}}
	for _, tc := range []struct {
		name string
		path string
		err  string
	}{
		{"size change", write("size.bag", func(w *rosbag.Writer) {
			w.Write("/headcam/image_raw", rosbag.Time{Sec: 2}, frame(4, 4))
			w.Write("/headcam/image_raw", rosbag.Time{Sec: 3}, frame(4, 5))
		}), "is 4x5, the first frame was 4x4"},
		{"action lengths", write("len.bag", func(w *rosbag.Writer) {
			w.Write("/headcam/image_raw", rosbag.Time{Sec: 2}, frame(4, 4))
			w.Write("/action", rosbag.Time{Sec: 2}, act)
			w.Write("/action", rosbag.Time{Sec: 3}, &rosbag.Float32MultiArray{Data: []float32{1}})
		}), "has 1 values, the first had 2"},
		{"info disagrees", write("info.bag", func(w *rosbag.Writer) {
			w.Write("/headcam/image_raw", rosbag.Time{Sec: 2}, frame(4, 4))
			w.Write("/action", rosbag.Time{Sec: 2}, act)
			w.Write("/episode/info", rosbag.Time{Sec: 1}, &rosbag.String{Data: `{"version":1,"task":"pick","steps":7,"height":4,"width":4}`})
		}), "info says 7 steps, the bag holds 1"},
		{"proprioception length", write("proprio.bag", func(w *rosbag.Writer) {
			w.Write("/headcam/image_raw", rosbag.Time{Sec: 2}, frame(4, 4))
			w.Write("/proprio", rosbag.Time{Sec: 2}, &rosbag.Float32MultiArray{Data: []float32{0.5, 0, 0.9, 0}})
			w.Write("/proprio", rosbag.Time{Sec: 3}, &rosbag.Float32MultiArray{Data: []float32{0.5, 0, 0.9}})
		}), "proprioception at"},
		{"proprioception NaN", write("proprionan.bag", func(w *rosbag.Writer) {
			w.Write("/headcam/image_raw", rosbag.Time{Sec: 2}, frame(4, 4))
			w.Write("/proprio", rosbag.Time{Sec: 2}, &rosbag.Float32MultiArray{Data: []float32{0.5, float32(math.NaN()), 0.9, 0}})
		}), "all finite"},
		{"wrong type", write("type.bag", func(w *rosbag.Writer) {
			w.Write("/action", rosbag.Time{Sec: 2}, &rosbag.String{Data: "go"})
		}), "message type mismatch"},
		{"no frames", write("empty.bag", func(w *rosbag.Writer) {}), "no frames with actions"},
		{"not a bag", func() string {
			p := filepath.Join(dir, "text.bag")
			os.WriteFile(p, []byte("hello"), 0o644)
			return p
		}(), "not a ROS bag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ReadEpisode(tc.path, ReadOptions{}); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err = %v, want %q", err, tc.err)
			}
		})
	}
}

// MaxSteps cuts an episode short: the first steps as played, no more.
func TestRecordMaxSteps(t *testing.T) {
	want := play(t, "upright", 2, 24, 32)
	path := filepath.Join(t.TempDir(), "ep.bag")
	res := record(t, path, "upright", 2, 24, 32, RecordOptions{MaxSteps: 5})
	if res.Steps != 5 || res.Terminated || want.res.Steps <= 5 {
		t.Fatalf("result %+v (the full episode has %d steps)", res, want.res.Steps)
	}
	ep, err := ReadEpisode(path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.Steps) != 5 || ep.Info.Steps != 5 || ep.Info.Terminated || !ep.Done {
		t.Fatalf("%d steps, info %+v", len(ep.Steps), ep.Info)
	}
	for k, s := range ep.Steps {
		if !bytes.Equal(s.Image, want.frames[k]) || !reflect.DeepEqual(s.Action, want.actions[k]) {
			t.Fatalf("step %d differs from the played episode", k)
		}
	}
}

// A camera that publishes raw frames and their compressed copies: the raw
// ones are read, the copies ignored.
func TestReadPrefersRawFrames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "both.bag")
	w, err := rosbag.Create(path, rosbag.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pic := image.NewGray(image.Rect(0, 0, 2, 2)) // black, unlike the raw frames
	var buf bytes.Buffer
	png.Encode(&buf, pic)
	w.Write("/instruction", rosbag.Time{Sec: 1}, &rosbag.String{Data: "x"})
	for k := range 3 {
		tm := rosbag.Time{Sec: 2 + uint32(k)}
		w.Write("/headcam/image_raw", tm, &rosbag.Image{Height: 2, Width: 2, Encoding: "mono8", Step: 2, Data: []byte{9, 9, 9, 9}})
		w.Write("/headcam/image_raw/compressed", rosbag.Time{Sec: tm.Sec, Nsec: 1}, &rosbag.CompressedImage{Format: "png", Data: buf.Bytes()})
		w.Write("/action", rosbag.Time{Sec: tm.Sec, Nsec: 2}, &rosbag.Float32MultiArray{Data: []float32{1}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ep, err := ReadEpisode(path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, s := range ep.Steps {
		if s.Image[0] != 9 {
			t.Errorf("step %d acted on the compressed copy", k)
		}
	}
}
