package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/rostest"
	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
)

// rosProc is a process the test started: this test binary as ttm, or a ROS
// tool, in a process group of its own.
type rosProc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	out    lockedBuffer
	exited chan error
	err    error
	done   bool
}

func startROSProc(t *testing.T, m *rostest.Master, name string, argv ...string) *rosProc {
	t.Helper()
	p := &rosProc{t: t, name: name, exited: make(chan error, 1)}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = append(m.Env(), runAsMain+"=1")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.stop(syscall.SIGKILL, time.Second)
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.out.String())
		}
	})
	return p
}

func startTTMProc(t *testing.T, m *rostest.Master, name string, args ...string) *rosProc {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return startROSProc(t, m, name, append([]string{self}, args...)...)
}

// stop sends sig to the process group and waits for the exit.
func (p *rosProc) stop(sig syscall.Signal, wait time.Duration) error {
	if p.done {
		return p.err
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case p.err = <-p.exited:
	case <-time.After(wait):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.err = fmt.Errorf("%s did not exit within %v of %v", p.name, wait, sig)
		<-p.exited
	}
	p.done = true
	return p.err
}

// running fails if the process has exited.
func (p *rosProc) running() error {
	select {
	case err := <-p.exited:
		p.exited <- err
		return fmt.Errorf("%s exited: %v\n%s", p.name, err, p.out.String())
	default:
		return nil
	}
}

// expertBag records the scripted expert's episode of task (seed 1, 128x160,
// 24 steps at most) in a dataset under dir, and reads it back.
func expertBag(t *testing.T, dir, task string) (string, *sim.RecordedEpisode) {
	t.Helper()
	ds := filepath.Join(dir, "ds")
	if code, _, stderr := runCmd(t, "record", "--experts", "--tasks", task, "--episodes", "1", "--size", "128x160", "--max-steps", "24", "--out", ds); code != 0 {
		t.Fatalf("record: exit %d: %s", code, stderr)
	}
	bag := filepath.Join(ds, sim.EpisodeFile(task, 1))
	ep, err := sim.ReadEpisode(bag, sim.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return bag, ep
}

func frameSet(t *testing.T, ep *sim.RecordedEpisode) map[[32]byte]int {
	set := map[[32]byte]int{}
	for k, s := range ep.Steps {
		if _, ok := set[sha256.Sum256(s.Image)]; !ok {
			set[sha256.Sum256(s.Image)] = k
		}
	}
	return set
}

// TestRecordReplayWithROS runs the real node against a real roscore and
// checks, with the ROS tools:
//   - ttm replay --ros republishes an episode bag to the live node, which
//     acts on it (rostopic echo sees its actions);
//   - rosbag record and ttm record --ros take bags of the live node (frames,
//     instruction, actions) that ReadEpisode and ttm replay read; SIGINT
//     closes ttm record's bag properly;
//   - the rosbag record bag, like a robot's (no episode info, no proprio
//     topic), is indexed with ttm record --index and trains a policy that
//     reads proprioception;
//   - rosbag play --clock plays a project bag into a node on /use_sim_time,
//     which acts on it.
func TestRecordReplayWithROS(t *testing.T) {
	m := rostest.StartMaster(t)
	ckpt := smallPolicy(t) // biased to arm mode: it acts without ending its episode
	dir := t.TempDir()
	bag, orig := expertBag(t, dir, "drawer")
	origFrames := frameSet(t, orig)
	master := "__master:=" + m.URI

	// Phase 1: a node on wall time.
	// 2 Hz: on a loaded 2-core machine a 10 Hz node may refuse to start
	// (its warm-up measures the policy against the period).
	node1 := startTTMProc(t, m, "ttm node", "node", "--policy", ckpt, "--threads", "2", "_rate:=2")
	rostest.WaitFor(t, 60*time.Second, "the node's status", func() error {
		if err := node1.running(); err != nil {
			t.Fatal(err)
		}
		_, err := m.Run(5*time.Second, "rostopic", "echo", "-n", "1", "/status")
		return err
	})
	liveROS, liveTTM := filepath.Join(dir, "rosbag_record.bag"), filepath.Join(dir, "ttm_record.bag")
	recROS := startROSProc(t, m, "rosbag record", rostest.Tool(t, "rosbag"), "record", "-O", liveROS, "__name:=bag_recorder",
		"/headcam/image_raw", "/instruction", "/action", "/episode_done", "/tf", "/tf_static", "/joint_states", "/headcam/camera_info")
	recTTM := startTTMProc(t, m, "ttm record --ros", "record", "--ros", "--out", liveTTM)
	rostest.WaitFor(t, 30*time.Second, "both recorders subscribed to the camera and the actions", func() error {
		for _, p := range []*rosProc{recROS, recTTM} {
			if err := p.running(); err != nil {
				t.Fatal(err)
			}
		}
		for _, topic := range []string{"/headcam/image_raw", "/action"} {
			out, err := m.Run(5*time.Second, "rostopic", "info", topic)
			if err != nil {
				return err
			}
			subs := out[strings.Index(out, "Subscribers:"):]
			if !strings.Contains(subs, "/bag_recorder") || !strings.Contains(subs, "/ttm_record") {
				return fmt.Errorf("%s subscribers: %s", topic, subs)
			}
		}
		return nil
	})
	echo := make(chan rostest.Result, 1)
	go func() {
		out, err := m.Run(60*time.Second, "rostopic", "echo", "-p", "-n", "6", "/action")
		echo <- rostest.Result{Out: out, Err: err}
	}()
	code, stdout, stderr := runCmd(t, "replay", bag, "--ros", "--speed", "2", master)
	if code != 0 {
		t.Fatalf("replay --ros: exit %d: %s", code, stderr)
	}
	var frames, late, acted int
	if _, err := fmt.Sscanf(stdout, "replayed %d frames (%d late); the node published %d actions", &frames, &late, &acted); err != nil || frames != len(orig.Steps) || acted < 5 {
		t.Fatalf("replay --ros: %q (%v); want %d frames and the node acting", stdout, err, len(orig.Steps))
	}
	e := <-echo
	if e.Err != nil {
		t.Fatal(e.Err)
	}
	if rows := rostest.Lines(e.Out); len(rows) != 7 || !strings.Contains(rows[0], "field.data10") {
		t.Errorf("rostopic echo /action: %q", e.Out)
	}
	for _, p := range []*rosProc{recROS, recTTM} {
		if err := p.stop(syscall.SIGINT, 20*time.Second); err != nil {
			t.Errorf("%s after SIGINT: %v", p.name, err)
		}
	}
	if !strings.Contains(recTTM.out.String(), "recorded") {
		t.Errorf("ttm record --ros output:\n%s", recTTM.out.String())
	}
	for _, live := range []string{liveROS, liveTTM} {
		t.Run(filepath.Base(live), func(t *testing.T) { checkLiveBag(t, live, ckpt, orig, origFrames) })
	}
	t.Run("robot bag trains", func(t *testing.T) { checkRobotBagTrains(t, liveROS) })
	if out := m.MustRun(30*time.Second, "rosbag", "check", liveTTM); !strings.Contains(out, "does not need any migrations") {
		t.Errorf("rosbag check %s: %s", liveTTM, out)
	}
	// --duration ends a recording on its own (an empty bag is still a bag).
	short := filepath.Join(dir, "short.bag")
	if code, _, stderr := runCmd(t, "record", "--ros", "--duration", "300ms", "--out", short, master, "__name:=short_recorder"); code != 0 {
		t.Fatalf("record --ros --duration: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(short); err != nil {
		t.Error(err)
	}
	if err := node1.stop(syscall.SIGINT, 20*time.Second); err != nil {
		t.Errorf("node after SIGINT: %v", err)
	}

	// Phase 2: rosbag play --clock into a node on simulated time.
	m.MustRun(10*time.Second, "rosparam", "set", "/use_sim_time", "true")
	node2 := startTTMProc(t, m, "ttm node (sim time)", "node", "--policy", ckpt, "--threads", "2", "_rate:=2", "__name:=ttm_sim_time")
	rostest.WaitFor(t, 60*time.Second, "the sim-time node's status", func() error {
		if err := node2.running(); err != nil {
			t.Fatal(err)
		}
		_, err := m.Run(5*time.Second, "rostopic", "echo", "-n", "1", "/status")
		return err
	})
	go func() {
		out, err := m.Run(60*time.Second, "rostopic", "echo", "-p", "-n", "5", "/action")
		echo <- rostest.Result{Out: out, Err: err}
	}()
	play := startROSProc(t, m, "rosbag play", rostest.Tool(t, "rosbag"), "play", "--clock", "-d", "1", bag,
		"--topics", "/headcam/image_raw", "/instruction")
	select {
	case e = <-echo:
	case <-time.After(60 * time.Second):
		t.Fatal("no actions from the sim-time node")
	}
	if e.Err != nil {
		t.Fatalf("%v\nrosbag play:\n%s", e.Err, play.out.String())
	}
	rows := rostest.Lines(e.Out)
	if len(rows) != 6 {
		t.Fatalf("rostopic echo /action: %q", e.Out)
	}
	for _, r := range rows[1:] {
		for _, f := range strings.Split(r, ",")[5:] {
			if v, err := strconv64(f); err != nil || math.IsNaN(v) {
				t.Errorf("action value %q", f)
			}
		}
	}
	if err := play.stop(syscall.SIGINT, 10*time.Second); err != nil && !strings.Contains(err.Error(), "exit status") {
		t.Logf("rosbag play: %v", err)
	}
	node2.stop(syscall.SIGINT, 20*time.Second)
}

func strconv64(s string) (float64, error) {
	var v float64
	_, err := fmt.Sscan(s, &v)
	return v, err
}

// checkLiveBag reads a bag taken from the live node: its frames are the
// episode's, its instruction too, and ttm replay scores it.
func checkLiveBag(t *testing.T, path, ckpt string, orig *sim.RecordedEpisode, origFrames map[[32]byte]int) {
	ep, err := sim.ReadEpisode(path, sim.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ep.HasInfo || ep.Info.Instruction != orig.Info.Instruction || ep.Info.Height != 128 || ep.Info.Width != 160 || len(ep.Steps) < 5 {
		t.Fatalf("live bag: %d steps, info %+v", len(ep.Steps), ep.Info)
	}
	for k, s := range ep.Steps {
		if _, ok := origFrames[sha256.Sum256(s.Image)]; !ok {
			t.Fatalf("step %d: a frame that is not one of the episode's", k)
		}
		if len(s.Action) != 11 {
			t.Fatalf("step %d: action %v", k, s.Action)
		}
	}
	code, stdout, stderr := runCmd(t, "replay", path, "--policy", ckpt, "--json", "--threads", "2")
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	var rep replayReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Steps != len(ep.Steps) || rep.Compared != rep.Steps {
		t.Errorf("replay: %d steps, %d compared; the bag has %d", rep.Steps, rep.Compared, len(ep.Steps))
	}
	// The node ran this policy on these frames, from a fresh memory, and
	// published its actions after RT-1's mode gating (no safety limits are
	// configured), as the replay compares them. Only timing separates the
	// two: a frame that reaches the recorder while the node is still
	// computing an action is paired with that action, though the node
	// acted on the frame before, and from then on the memories differ. The
	// node's action carries no stamp of its frame, so that cannot be
	// undone: the mode, fixed by the arm bias, agrees everywhere; how many
	// steps agree to the bit depends on the machine's load, and is logged.
	if acc := rep.Dims[0].BinAccuracy; acc == nil || *acc != 1 {
		t.Errorf("mode bin accuracy %v, want 1", acc)
	}
	exact := 0
	for _, s := range rep.PerStep {
		if slices.Equal(s.Action, s.Recorded) {
			exact++
		}
	}
	t.Logf("%s: %d steps from %d messages; %d of them replayed bit-identically to the node's actions; mean bin accuracy %.3f",
		filepath.Base(path), len(ep.Steps), len(ep.Steps)+ep.Unpaired, exact, rep.MeanBinAccuracy)
}

// TestRecordReplayProprioWithROS: over a real roscore, ttm replay --ros
// republishes an expert episode's robot state before each of its frames
// (the hand on /tf, the gripper on /joint_states, and our labelled
// proprio topic), so a node running a policy that reads proprioception
// (small-proprio), from the robot's tree or from the topic, acts on the
// replay instead of waiting in no_proprio; ttm record --ros takes them
// with the rest, so ReadEpisode gives every step of the live bag the
// reading sent with its frame, and the offline replay of that bag runs the
// proprioceptive policy.
func TestRecordReplayProprioWithROS(t *testing.T) {
	for _, tc := range []struct {
		source string
		topic  string // the topic the node reads the hand from
	}{{"tf", "/joint_states"}, {"topic", "proprio"}} {
		t.Run(tc.source, func(t *testing.T) { testRecordReplayProprio(t, tc.source, tc.topic) })
	}
}

func testRecordReplayProprio(t *testing.T, source, topic string) {
	m := rostest.StartMaster(t)
	ckpt := armPolicy(t, "small-proprio")
	dir := t.TempDir()
	bag, orig := expertBag(t, dir, "pick")
	// The readings recorded with each frame (identical frames may come
	// with different readings).
	readings := map[[32]byte][][]float32{}
	for _, s := range orig.Steps {
		if len(s.Proprio) != 4 {
			t.Fatalf("the expert's bag: proprioception %v", s.Proprio)
		}
		h := sha256.Sum256(s.Image)
		readings[h] = append(readings[h], s.Proprio)
	}

	const ns = "/rp"
	pn := startTestPolicyNode(t, m, ckpt, "__ns:="+ns, "_rate:=2", "_warmup_steps:=100", "_max_image_age:=1.0", "_max_proprio_age:=1.0",
		"_proprio_source:="+source)
	live := filepath.Join(dir, "live.bag")
	rec := startTTMProc(t, m, "ttm record --ros", "record", "--ros", "--out", live, "__ns:="+ns)
	if !strings.HasPrefix(topic, "/") {
		topic = ns + "/" + topic
	}
	rostest.WaitFor(t, 60*time.Second, "the policy node and the recorder subscribed to "+topic, func() error {
		if err := rec.running(); err != nil {
			t.Fatal(err)
		}
		out, err := m.Run(5*time.Second, "rostopic", "info", topic)
		if err != nil {
			return err
		}
		if subs := out[strings.Index(out, "Subscribers:"):]; !strings.Contains(subs, ns+"/ttm_node") || !strings.Contains(subs, ns+"/ttm_record") {
			return fmt.Errorf("subscribers: %s", subs)
		}
		return nil
	})
	if st := pn.Stats(); st.Acted != 0 || st.ProprioIn != 0 || st.JointStatesIn != 0 {
		t.Fatalf("before the replay the node acted %d times on %d readings, %d joint states", st.Acted, st.ProprioIn, st.JointStatesIn)
	}
	code, stdout, stderr := runCmd(t, "replay", bag, "--ros", "__master:="+m.URI, "__ns:="+ns)
	if code != 0 {
		t.Fatalf("replay --ros: exit %d: %s", code, stderr)
	}
	var frames, late, published int
	if _, err := fmt.Sscanf(stdout, "replayed %d frames (%d late); the node published %d actions", &frames, &late, &published); err != nil || frames != len(orig.Steps) {
		t.Fatalf("replay --ros: %q (%v); want %d frames", stdout, err, len(orig.Steps))
	}
	st := pn.Stats()
	readIn, refused := st.ProprioIn, st.ProprioBad
	if source == "tf" {
		readIn, refused = min(st.JointStatesIn, st.TransformsIn), st.JointStatesBad+st.TransformsBad
	}
	if st.Acted < 5 || readIn == 0 || refused != 0 {
		t.Errorf("the node acted %d times (published %d actions, reason now %v) on %d readings, %d refused; want it acting on the replayed proprioception",
			st.Acted, published, st.Reason, readIn, refused)
	}
	if err := rec.stop(syscall.SIGINT, 20*time.Second); err != nil {
		t.Fatalf("ttm record --ros after SIGINT: %v", err)
	}

	ep, err := sim.ReadEpisode(live, sim.ReadOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if ep.ProprioLabel != "hand_x;hand_y;hand_z;gripper" || len(ep.Steps) < 5 {
		t.Fatalf("live bag: %d steps, proprioception labelled %q", len(ep.Steps), ep.ProprioLabel)
	}
	// A step's reading is the one sent with its frame, unless the action
	// reached the recorder between the next frame's reading and that
	// frame (the recorder sees them on two connections): at most a couple
	// of steps in a run.
	exact := 0
	for k, s := range ep.Steps {
		rs, ok := readings[sha256.Sum256(s.Image)]
		if !ok {
			t.Fatalf("step %d: a frame that is not one of the episode's", k)
		}
		if len(s.Proprio) != 4 {
			t.Fatalf("step %d: proprioception %v", k, s.Proprio)
		}
		if slices.ContainsFunc(rs, func(r []float32) bool { return slices.Equal(r, s.Proprio) }) {
			exact++
		}
	}
	t.Logf("live bag: %d steps, %d with the reading sent with their frame; the node acted %d times", len(ep.Steps), exact, st.Acted)
	if exact < len(ep.Steps)-2 {
		t.Errorf("only %d of %d steps carry the reading sent with their frame", exact, len(ep.Steps))
	}
	// The live bag drives the proprioceptive policy offline too.
	code, stdout, stderr = runCmd(t, "replay", live, "--policy", ckpt, "--ns", ns, "--json", "--threads", "2")
	if code != 0 {
		t.Fatalf("replay --policy on the live bag: exit %d: %s", code, stderr)
	}
	var rep replayReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Steps != len(ep.Steps) {
		t.Errorf("replay --policy on the live bag: %d steps (%v), the bag has %d", rep.Steps, err, len(ep.Steps))
	}
}

// checkRobotBagTrains indexes a bag that rosbag record took of a robot (no
// episode info, no proprio topic: the hand on /tf, the gripper on
// /joint_states) and trains a policy that reads proprioception on it: the
// reading of every step comes from the tree, and the checkpoint records
// the rate of the bag's frames.
func checkRobotBagTrains(t *testing.T, bag string) {
	ds := filepath.Join(t.TempDir(), "robot")
	if err := os.MkdirAll(ds, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(bag, filepath.Join(ds, "demo-1.bag")); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd(t, "record", "--index", "--out", ds); code != 2 || !strings.Contains(stderr, "does not say its task: give --task") {
		t.Errorf("index without --task: exit %d: %s", code, stderr)
	}
	if code, stdout, stderr := runCmd(t, "record", "--index", "--out", ds, "--task", "drawer"); code != 0 || !strings.Contains(stdout, "indexed 1 bags") {
		t.Fatalf("record --index: exit %d: %s%s", code, stdout, stderr)
	}
	ep, err := sim.ReadEpisode(filepath.Join(ds, "demo-1.bag"), sim.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ep.HasInfo || ep.ProprioLabel != "hand_x;hand_y;hand_z;gripper" || len(ep.Steps) < 5 {
		t.Fatalf("the robot's bag: info %v, proprioception %q, %d steps", ep.HasInfo, ep.ProprioLabel, len(ep.Steps))
	}
	for k, st := range ep.Steps {
		if len(st.Proprio) != 4 {
			t.Fatalf("step %d: proprioception %v, want one read from the tree", k, st.Proprio)
		}
	}
	ckpt := filepath.Join(t.TempDir(), "p.safetensors")
	if code, _, stderr := runCmd(t, "train", "--data", ds, "--preset", "small-proprio", "--keypoint-weight", "0", "--out", ckpt, "--steps", "2", "--batch", "2", "--window", "4"); code != 0 { // a robot's bag has no keypoint labels
		t.Fatalf("train on the robot's bag: exit %d: %s", code, stderr)
	}
	p, err := policy.Load(ckpt, policy.Options{NoBackbone: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if want := 1 / ep.Info.Period; math.Abs(p.Rate()-want) > 1e-6*want {
		t.Errorf("the checkpoint records %v Hz, the bag's frames came at %v", p.Rate(), want)
	}
}
