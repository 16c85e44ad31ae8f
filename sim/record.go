package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"strings"
	"time"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/robot"

	"github.com/ttmrobot/ttm/internal/rosbag"
)

// Topics names the topics of an episode bag. Relative names resolve in a
// namespace (RecordOptions.Namespace, ReadOptions.Namespace); absolute
// names are used as they are. The defaults are the node's topic names
// (node/topics.go: TopicImage, TopicCompressed, TopicInstruction,
// TopicAction, TopicEpisodeDone), repeated here because sim does not import
// node, and the episode's metadata.
type Topics struct {
	Image       string // sensor_msgs/Image, rgb8 frames
	Compressed  string // sensor_msgs/CompressedImage (read only)
	Instruction string // std_msgs/String
	Action      string // std_msgs/Float32MultiArray, the node's labelled layout
	EpisodeDone string // std_msgs/Bool
	Info        string // std_msgs/String, EpisodeInfo as JSON
	// Keypoints: std_msgs/Float32MultiArray, each frame's keypoint labels
	// (KeypointLabels), which only a simulator knows.
	Keypoints string
	// TargetLying: std_msgs/Float32MultiArray, each frame's TargetLying
	// label (one value), which only a simulator knows.
	TargetLying string
	// Proprio: std_msgs/Float32MultiArray, the robot's proprioception
	// (State.Proprio, action.ArmProprio's layout, labelled).
	Proprio string
	// What a ROS robot publishes of itself: TF and TFStatic
	// (tf2_msgs/TFMessage, StaticTransforms and State.Transforms),
	// JointStates (sensor_msgs/JointState, JointGripper) and CameraInfo
	// (sensor_msgs/CameraInfo, the headcam's intrinsics).
	TF, TFStatic, JointStates, CameraInfo string
}

// DefaultTopics returns the default topic names.
func DefaultTopics() Topics {
	return Topics{
		Image:       "headcam/image_raw",
		Compressed:  "headcam/image_raw/compressed",
		Instruction: "instruction",
		Action:      "action",
		EpisodeDone: "episode_done",
		Info:        "episode/info",
		Keypoints:   "episode/keypoints",
		TargetLying: "episode/target_lying",
		Proprio:     "proprio",
		TF:          "/tf",
		TFStatic:    "/tf_static",
		JointStates: "/joint_states",
		CameraInfo:  "headcam/camera_info",
	}
}

// resolve fills empty names with the defaults and puts relative names in
// namespace ns ("" is the root).
func (t Topics) resolve(ns string) Topics {
	d := DefaultTopics()
	fix := func(name, def string) string {
		if name == "" {
			name = def
		}
		if strings.HasPrefix(name, "/") {
			return path.Clean(name)
		}
		return path.Join("/", ns, name)
	}
	return Topics{Image: fix(t.Image, d.Image), Compressed: fix(t.Compressed, d.Compressed), Instruction: fix(t.Instruction, d.Instruction),
		Action: fix(t.Action, d.Action), EpisodeDone: fix(t.EpisodeDone, d.EpisodeDone), Info: fix(t.Info, d.Info),
		Keypoints: fix(t.Keypoints, d.Keypoints), TargetLying: fix(t.TargetLying, d.TargetLying), Proprio: fix(t.Proprio, d.Proprio), TF: fix(t.TF, d.TF), TFStatic: fix(t.TFStatic, d.TFStatic),
		JointStates: fix(t.JointStates, d.JointStates), CameraInfo: fix(t.CameraInfo, d.CameraInfo)}
}

// InfoVersion is the version of the EpisodeInfo JSON in the bags.
const InfoVersion = 1

// EpisodeInfo is an episode's metadata, stored as JSON on the info topic.
type EpisodeInfo struct {
	Version     int    `json:"version"`
	Task        string `json:"task"`
	Family      string `json:"family"` // TaskFamily: the task's name for the five families, "memory" for memory tasks
	Memory      bool   `json:"memory"`
	Instruction string `json:"instruction"`
	Agent       string `json:"agent"` // "expert", "policy:FILE" ...
	Seed        uint64 `json:"seed"`
	Steps       int    `json:"steps"`
	Success     bool   `json:"success"`
	Terminated  bool   `json:"terminated"`
	Height      int    `json:"height"`
	Width       int    `json:"width"`
	// Period is the time between frames, seconds.
	Period float64 `json:"period"`
	// Start is the wall-clock time of frame 0 (t0).
	Start time.Time `json:"start"`
	// Expert holds the scripted expert's noise options, for expert
	// episodes.
	Expert *ExpertOptions `json:"expert,omitempty"`
	// Label says whose actions the action topic holds when they are not
	// the executed ones: LabelExpert for DAgger episodes (the noise-free
	// expert's action on each state visited). Empty: the agent's own.
	Label string `json:"label,omitempty"`
}

// TaskFamily is the family a task is scored under: its own name for the
// five RT-1 families, "memory" for the memory tasks.
func TaskFamily(t *Task) string {
	if t.Memory {
		return "memory"
	}
	return t.Name
}

// RecordOptions configures RecordEpisode.
type RecordOptions struct {
	// Topics and Namespace name the topics (defaults: DefaultTopics in the
	// root namespace).
	Topics    Topics
	Namespace string
	// Start is t0, the stamp of frame 0. It defaults to the wall clock when
	// the episode starts.
	Start time.Time
	// Period is the time between frames: frame k is stamped t0 + k·Period.
	// It defaults to StepSeconds (RT-1's 3 Hz).
	Period time.Duration
	// ActionDelay is how long after its frame an action is stamped. It
	// defaults to 1 ms; it must be less than Period.
	ActionDelay time.Duration
	// Agent names the agent in the metadata ("expert" by default), and
	// Expert records the expert's options there.
	Agent  string
	Expert *ExpertOptions
	// MaxSteps ends the episode after this many steps, before the task's
	// own cap (0: no limit of its own); such an episode is neither
	// terminated nor capped, and its success is judged where it stopped.
	MaxSteps int
	// Context interrupts the recording between two steps: the bag is
	// aborted and RecordEpisode returns an error wrapping ErrInterrupted.
	Context context.Context
	// MemoryLabels labels a memory task's cued target, and put back's
	// spot, in every frame that shows them, not only while the cue does
	// (MemoryKeypointLabels): privileged labels for a policy whose
	// keypoints can read its memory (policy.Config.MemoryFiLM).
	MemoryLabels bool
	// Label names whose labels a Labeler agent records in place of its
	// executed actions (LabelExpert for a DAggerAgent); it goes to
	// EpisodeInfo.Label. It is required for a Labeler and refused for
	// other agents.
	Label string
}

// ErrInterrupted reports a recording stopped by its context.
var ErrInterrupted = errors.New("sim: recording interrupted")

// actionLayout is the layout of the action topic: one dimension labelled
// with the action space's names joined by ";" (node.ActionLabel).
func actionLayout(space action.Space) rosbag.MultiArrayLayout {
	names := make([]string, len(space.Dims))
	for i, d := range space.Dims {
		names[i] = d.Name
	}
	n := uint32(len(names))
	return rosbag.MultiArrayLayout{Dim: []rosbag.MultiArrayDimension{{Label: strings.Join(names, ";"), Size: n, Stride: n}}}
}

// RecordEpisode plays ep to the end with agent, as Run does, and writes it
// to a bag at path, atomically (rosbag.Create: path appears only when the
// bag is complete; on any error, or an interruption, nothing is left). The
// bag holds, on the topics of opts:
//
//	instruction   std_msgs/String at t0 (latched for rosbag play)
//	tf_static     tf2_msgs/TFMessage at t0 (latched), stamped t0: StaticTransforms
//	image         sensor_msgs/Image rgb8 per step k, stamped (header and record) t0 + k·Period, frame_id head_camera_optical_frame, seq k
//	camera_info   sensor_msgs/CameraInfo per step k, stamped as the image: CameraIntrinsics
//	tf            tf2_msgs/TFMessage per step k, stamped as the image: State.Transforms when frame k was taken
//	joint_states  sensor_msgs/JointState per step k, stamped as the image: JointGripper at State.GripperPosition
//	proprio       std_msgs/Float32MultiArray per step k, at t0 + k·Period + ActionDelay/4: the robot's proprioception
//	              when frame k was taken (State.Proprio)
//	action        std_msgs/Float32MultiArray per step k, at t0 + k·Period + ActionDelay: the action computed from frame k
//	              (for a Labeler agent, its label of step k: see RecordOptions.Label)
//	keypoints     std_msgs/Float32MultiArray per step k, at t0 + k·Period + ActionDelay/2: the keypoint labels of frame k
//	              (KeypointLabels: the hand's and the target's image points, for keypoint supervision)
//	episode_done  std_msgs/Bool true at t0 + steps·Period
//	info          std_msgs/String at t0 (latched): EpisodeInfo as JSON
func RecordEpisode(path string, ep *Episode, agent Agent, opts RecordOptions) (Result, error) {
	if opts.Period == 0 {
		opts.Period = StepPeriod
	}
	if opts.ActionDelay == 0 {
		opts.ActionDelay = time.Millisecond
	}
	if opts.Period < 0 || opts.ActionDelay < 0 || opts.ActionDelay >= opts.Period {
		return Result{}, fmt.Errorf("sim: record %s: period %v and action delay %v: want 0 <= delay < period", path, opts.Period, opts.ActionDelay)
	}
	if opts.MaxSteps < 0 {
		return Result{}, fmt.Errorf("sim: record %s: max steps %d is negative", path, opts.MaxSteps)
	}
	if _, ok := agent.(Labeler); ok != (opts.Label != "") {
		if ok {
			return Result{}, fmt.Errorf("sim: record %s: the agent labels its steps (sim.Labeler): RecordOptions.Label must say whose labels they are", path)
		}
		return Result{}, fmt.Errorf("sim: record %s: label %q, but the agent does not label its steps (not a sim.Labeler)", path, opts.Label)
	}
	if opts.Start.IsZero() {
		opts.Start = time.Now()
	}
	if opts.Agent == "" {
		opts.Agent = "expert"
	}
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	topics := opts.Topics.resolve(opts.Namespace)
	t0, err := rosbag.FromTime(opts.Start)
	if err != nil {
		return Result{}, fmt.Errorf("sim: record %s: start %w", path, err)
	}
	stamp := func(d time.Duration) rosbag.Time {
		t, _ := rosbag.FromTime(opts.Start.Add(d)) // within range: t0 is, and episodes last hours at most
		return t
	}

	w, err := rosbag.Create(path, rosbag.WriterOptions{})
	if err != nil {
		return Result{}, err
	}
	rec := &bagRecorder{w: w, ep: ep, topics: topics, agent: agent, ctx: ctx, period: opts.Period, delay: opts.ActionDelay, stamp: stamp,
		act: rosbag.Float32MultiArray{Layout: actionLayout(rt1)}, maxSteps: opts.MaxSteps, memoryLabels: opts.MemoryLabels,
		kp:      rosbag.Float32MultiArray{Layout: keypointLayout, Data: make([]float32, KeypointLabelLen)},
		lying:   rosbag.Float32MultiArray{Layout: lyingLayout, Data: make([]float32, 1)},
		proprio: rosbag.Float32MultiArray{Layout: proprioLayout, Data: make([]float32, ProprioLen)}}
	h, wd := ep.ImageSize()
	rec.img = rosbag.Image{Header: rosbag.Header{FrameID: robot.FrameCameraOptical}, Height: uint32(h), Width: uint32(wd), Encoding: "rgb8", Step: uint32(3 * wd)}
	rec.info = cameraInfo(h, wd)
	rec.joints = rosbag.JointState{Name: []string{robot.JointGripper}, Position: make([]float64, 1)}
	rec.tf = rosbag.TFMessage{Transforms: make([]rosbag.TransformStamped, 2)}
	res, err := rec.run(ep, t0)
	if err == nil {
		err = rec.finish(ep, res, opts, t0)
	}
	if err != nil {
		w.Abort()
		return res, fmt.Errorf("sim: record %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return res, fmt.Errorf("sim: record %s: %w", path, err)
	}
	return res, nil
}

// bagRecorder writes an episode's steps as they are played.
type bagRecorder struct {
	w      *rosbag.Writer
	ep     *Episode
	topics Topics
	agent  Agent
	ctx    context.Context
	period time.Duration
	delay  time.Duration
	stamp  func(time.Duration) rosbag.Time
	img    rosbag.Image
	act    rosbag.Float32MultiArray
	kp     rosbag.Float32MultiArray
	lying  rosbag.Float32MultiArray
	// proprio is the proprioception message.
	proprio rosbag.Float32MultiArray
	// What a robot publishes of itself with each frame.
	info   rosbag.CameraInfo
	joints rosbag.JointState
	tf     rosbag.TFMessage

	maxSteps     int
	memoryLabels bool
}

// errMaxSteps ends Run at RecordOptions.MaxSteps.
var errMaxSteps = errors.New("max steps")

var _ Agent = (*bagRecorder)(nil)

func (r *bagRecorder) run(ep *Episode, t0 rosbag.Time) (Result, error) {
	if _, err := r.w.AddConnection(latched(r.topics.Instruction, rosbag.StringType)); err != nil {
		return Result{}, err
	}
	if err := r.w.Write(r.topics.Instruction, t0, &rosbag.String{Data: ep.Instruction()}); err != nil {
		return Result{}, err
	}
	if _, err := r.w.AddConnection(latched(r.topics.TFStatic, rosbag.TFMessageType)); err != nil {
		return Result{}, err
	}
	static := StaticTransforms()
	var msg rosbag.TFMessage
	for _, tr := range static {
		msg.Transforms = append(msg.Transforms, bagTransform(tr, t0))
	}
	if err := r.w.Write(r.topics.TFStatic, t0, &msg); err != nil {
		return Result{}, err
	}
	res, err := Run(ep, r, r.frame)
	if errors.Is(err, errMaxSteps) {
		res.Steps, res.Success, res.Terminated, err = ep.Steps(), ep.Success(), ep.State().Terminated, nil
	}
	return res, err
}

func latched(topic string, mt rosbag.MessageType) rosbag.Connection {
	return rosbag.Connection{Topic: topic, Type: mt.Name, MD5Sum: mt.MD5Sum, MessageDefinition: mt.Definition, Latching: true}
}

// frame writes frame k (Run's FrameFunc); the last frame, after the last
// action, is not recorded.
func (r *bagRecorder) frame(k int, img []byte) error {
	if r.ep.Done() { // Run's final frame, after the last step
		return nil
	}
	if err := r.ctx.Err(); err != nil {
		return fmt.Errorf("%w at step %d: %v", ErrInterrupted, k, err)
	}
	if r.maxSteps > 0 && k == r.maxSteps {
		return errMaxSteps
	}
	t := r.stamp(time.Duration(k) * r.period)
	r.img.Header.Seq, r.img.Header.Stamp, r.img.Data = uint32(k), t, img
	if err := r.w.Write(r.topics.Image, t, &r.img); err != nil {
		return err
	}
	st := r.ep.State()
	r.info.Header.Seq, r.info.Header.Stamp = uint32(k), t
	r.joints.Header.Seq, r.joints.Header.Stamp = uint32(k), t
	r.joints.Position[0] = st.GripperPosition()
	for i, tr := range st.Transforms() {
		r.tf.Transforms[i] = bagTransform(tr, t)
	}
	for _, m := range []struct {
		topic string
		msg   rosbag.Message
	}{{r.topics.CameraInfo, &r.info}, {r.topics.TF, &r.tf}, {r.topics.JointStates, &r.joints}} {
		if err := r.w.Write(m.topic, t, m.msg); err != nil {
			return err
		}
	}
	// Between the frame and its action, so that a reader meets them in
	// that order whatever it does with equal times.
	r.ep.State().Proprio(r.proprio.Data)
	if err := r.w.Write(r.topics.Proprio, r.stamp(time.Duration(k)*r.period+r.delay/4), &r.proprio); err != nil {
		return err
	}
	h, w := r.ep.ImageSize()
	keypointLabels(r.kp.Data, r.ep.State(), h, w, r.memoryLabels)
	if err := r.w.Write(r.topics.Keypoints, r.stamp(time.Duration(k)*r.period+r.delay/2), &r.kp); err != nil {
		return err
	}
	r.lying.Data[0] = TargetLying(r.ep.State(), r.kp.Data)
	return r.w.Write(r.topics.TargetLying, r.stamp(time.Duration(k)*r.period+r.delay/2), &r.lying)
}

// bagTransform is tr stamped t.
func bagTransform(tr Transform, t rosbag.Time) rosbag.TransformStamped {
	p, q := tr.T.Translation, tr.T.Rotation
	return rosbag.TransformStamped{Header: rosbag.Header{Stamp: t, FrameID: tr.Parent}, ChildFrameID: tr.Child,
		Transform: rosbag.Transform{Translation: rosbag.Vector3{X: p[0], Y: p[1], Z: p[2]}, Rotation: rosbag.Quaternion{X: q[0], Y: q[1], Z: q[2], W: q[3]}}}
}

// cameraInfo is the headcam's camera_info for h x w images (unstamped):
// plumb_bob without distortion, K from CameraIntrinsics, R = I, P = [K | 0].
func cameraInfo(h, w int) rosbag.CameraInfo {
	f, cx, cy := CameraIntrinsics(h, w)
	return rosbag.CameraInfo{Header: rosbag.Header{FrameID: robot.FrameCameraOptical}, Height: uint32(h), Width: uint32(w),
		DistortionModel: "plumb_bob", D: make([]float64, 5),
		K: [9]float64{f, 0, cx, 0, f, cy, 0, 0, 1}, R: [9]float64{1, 0, 0, 0, 1, 0, 0, 0, 1}, P: [12]float64{f, 0, cx, 0, 0, f, cy, 0, 0, 0, 1, 0}}
}

// keypointLayout labels the keypoints topic's values.
var keypointLayout = rosbag.MultiArrayLayout{Dim: []rosbag.MultiArrayDimension{
	{Label: "hand/u;hand/v;hand/weight;target/u;target/v;target/weight;destination/u;destination/v;destination/weight", Size: KeypointLabelLen, Stride: KeypointLabelLen}}}

// lyingLayout labels the target_lying topic's value.
var lyingLayout = rosbag.MultiArrayLayout{Dim: []rosbag.MultiArrayDimension{{Label: "target/lying", Size: 1, Stride: 1}}}

// Reset implements Agent for the wrapped agent.
func (r *bagRecorder) Reset(instruction string) { r.agent.Reset(instruction) }

// Act runs the wrapped agent and records its action, or, for a Labeler,
// its label of the step; the action it returns is executed either way.
func (r *bagRecorder) Act(obs *Observation) ([]float32, error) {
	a, err := r.agent.Act(obs)
	if err != nil {
		return nil, err
	}
	rec := a
	if l, ok := r.agent.(Labeler); ok {
		rec = l.Label()
		if len(rec) != len(rt1.Dims) {
			return nil, fmt.Errorf("label of %d values, want %d (action.RT1 layout)", len(rec), len(rt1.Dims))
		}
		for i, v := range rec {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("label %s is %v", rt1.Dims[i].Name, v)
			}
		}
	}
	t := r.stamp(time.Duration(obs.Step)*r.period + r.delay)
	r.act.Data = rec
	if err := r.w.Write(r.topics.Action, t, &r.act); err != nil {
		return nil, err
	}
	return a, nil
}

// finish writes the end of the episode and its metadata.
func (r *bagRecorder) finish(ep *Episode, res Result, opts RecordOptions, t0 rosbag.Time) error {
	if err := r.w.Write(r.topics.EpisodeDone, r.stamp(time.Duration(res.Steps)*r.period), &rosbag.Bool{Data: true}); err != nil {
		return err
	}
	h, w := ep.ImageSize()
	info := EpisodeInfo{Version: InfoVersion, Task: res.Task, Family: TaskFamily(ep.Task()), Memory: ep.Task().Memory,
		Instruction: res.Instruction, Agent: opts.Agent, Seed: res.Seed, Steps: res.Steps, Success: res.Success, Terminated: res.Terminated,
		Height: h, Width: w, Period: opts.Period.Seconds(), Start: opts.Start, Expert: opts.Expert, Label: opts.Label}
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	if _, err := r.w.AddConnection(latched(r.topics.Info, rosbag.StringType)); err != nil {
		return err
	}
	return r.w.Write(r.topics.Info, t0, &rosbag.String{Data: string(b)})
}
