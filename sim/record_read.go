package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // the default compressed-image decoder reads JPEG and PNG
	_ "image/png"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/ttmrobot/ttm/internal/rawimage"
	"github.com/ttmrobot/ttm/internal/robot"
	"github.com/ttmrobot/ttm/internal/rosbag"
)

// RecordedStep is one step of a recorded episode: the frame and the action
// computed from it.
type RecordedStep struct {
	// Stamp is the frame's header stamp (its record time when unstamped).
	Stamp time.Time
	// Image is the frame as rgb8, (H, W, 3). Steps that acted on the same
	// frame share it; do not modify it.
	Image []byte
	// Action is the recorded action, nil in a bag without actions.
	Action []float32
	// Keypoints are the frame's keypoint labels (KeypointLabels), nil in a
	// bag without them (a robot's).
	Keypoints []float32
	// TargetLying is the frame's TargetLying label, NoLyingLabel in a bag
	// without them.
	TargetLying float32
	// Proprio is the latest proprioception recorded before the action
	// (State.Proprio's layout for the simulator's bags), or in a bag
	// without a proprio topic the reading of the robot's tree at the
	// frame's stamp (see ReadEpisode); nil when there is none.
	Proprio []float32
}

// RecordedEpisode is an episode read from a bag.
type RecordedEpisode struct {
	Info  EpisodeInfo
	Steps []RecordedStep
	// Done reports an episode_done message with true.
	Done bool
	// HasInfo reports that the bag held EpisodeInfo; without it Info is
	// filled from what the bag shows (instruction, image size, steps, the
	// median time between steps).
	HasInfo bool
	// Unpaired counts actions recorded before any frame, which are
	// dropped.
	Unpaired int
	// ProprioLabel is the label of the first proprioception message's
	// layout (layout.dim[0].label: "hand_x;hand_y;hand_z;gripper" in the
	// simulator's bags, and for readings of the robot's tree), "" when it
	// has none or the bag has no proprioception; a replay republishes it
	// with the readings.
	ProprioLabel string
	// TFStatic is the bag's first tf_static message, nil in a bag without
	// one.
	TFStatic *rosbag.TFMessage
	// Robot are the bag's tf, joint_states and camera_info messages in
	// record order, for a replay; nil in a bag without them.
	Robot []RecordedMessage
}

// RecordedMessage is a message a robot publishes of itself, as recorded.
type RecordedMessage struct {
	Time time.Time      // record time
	Msg  rosbag.Message // *rosbag.TFMessage (tf), *rosbag.JointState or *rosbag.CameraInfo
}

// CompressedDecoder decodes a sensor_msgs/CompressedImage into rgb8 pixels,
// (h, w, 3).
type CompressedDecoder func(format string, data []byte) (rgb []byte, h, w int, err error)

// ReadOptions configures ReadEpisode.
type ReadOptions struct {
	// Topics and Namespace name the topics, as for RecordOptions; a bag
	// that `rosbag record` took from a node in namespace /robot is read
	// with Namespace "/robot", a remapped camera with Topics.Image.
	Topics    Topics
	Namespace string
	// Instruction replaces the bag's instruction; it is needed for a bag
	// without one.
	Instruction string
	// DecodeCompressed decodes compressed frames. It defaults to Go's
	// image/jpeg and image/png; give vision's OpenCV decoder to decode
	// exactly as the node does.
	DecodeCompressed CompressedDecoder
	// Arm, to read the proprioception of a bag without a proprio topic
	// from its tf and joint_states, as the node does: the simulated
	// robot's names where empty (robot.Arm.Defaults).
	robot.Arm
	// ProprioTolerance is how far from a frame's stamp the tree and the
	// gripper joint may be read. It defaults to DefaultProprioTolerance.
	ProprioTolerance time.Duration
}

// ReadEpisode reads an episode bag: one written by RecordEpisode, or one
// `rosbag record` took from a live node. Frames may be sensor_msgs/Image
// (any encoding of rawimage.Names, as the node reads them) or CompressedImage (read only when the bag has no
// raw frames); they become rgb8. Each action
// is paired with the latest frame recorded at or before it (by record
// time), the frame the node acted on; frames with no action after them
// before the next frame are skipped, and a frame several actions were
// computed from is shared by their steps. A bag without actions gives a
// step per frame with a nil Action. The instruction is the first on the
// instruction topic (or opts.Instruction); all frames must have one size.
//
// A step's Proprio is the latest reading on the proprio topic before its
// action. A bag without a proprio topic (a robot's) has it from the
// robot's tree instead, as the node reads it: the hand frame's origin in
// the base frame at the frame's stamp (tf_static and tf), and the gripper
// joint's closedness (joint_states), each within opts.ProprioTolerance of
// the frame, labelled "hand_x;hand_y;hand_z;gripper"; a step whose tree
// gives no such reading in range keeps a nil Proprio. When both exist (the
// simulator's bags) the proprio topic wins.
func ReadEpisode(path string, opts ReadOptions) (*RecordedEpisode, error) {
	r, err := rosbag.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sim: read episode: %w", err)
	}
	defer r.Close()
	ep, err := readEpisode(r, opts)
	if err != nil {
		return nil, fmt.Errorf("sim: read episode %s: %w", path, err)
	}
	return ep, nil
}

func readEpisode(r *rosbag.Reader, opts ReadOptions) (*RecordedEpisode, error) {
	if err := opts.treeOptions(); err != nil {
		return nil, err
	}
	topics := opts.Topics.resolve(opts.Namespace)
	decode := opts.DecodeCompressed
	if decode == nil {
		decode = decodeStd
	}
	ep := &RecordedEpisode{}
	var (
		instruction string
		frame       []byte    // the latest frame, rgb8
		keypoints   []float32 // the latest frame's labels
		lying       float32   // and its TargetLying label
		proprio     []float32 // the latest proprioception
		stamp       time.Time
		h, w        int
		frames      []RecordedStep // every frame, for a bag without actions
		actionLen   = -1
		img         rosbag.Image
		cimg        rosbag.CompressedImage
		str         rosbag.String
		arr         rosbag.Float32MultiArray
		flag        rosbag.Bool
		tree        = robotTree{joint: opts.GripperJoint, sorted: true}
	)
	setFrame := func(rgb []byte, fh, fw int, st, recTime time.Time) error {
		if h == 0 {
			h, w = fh, fw
		} else if fh != h || fw != w {
			return fmt.Errorf("frame at %v is %dx%d, the first frame was %dx%d", recTime.Format(time.RFC3339Nano), fh, fw, h, w)
		}
		st = stampOr(st, recTime)
		frame, stamp, keypoints, lying = rgb, st, nil, NoLyingLabel
		frames = append(frames, RecordedStep{Stamp: st, Image: rgb, Proprio: proprio, TargetLying: NoLyingLabel})
		return nil
	}
	topicList := []string{topics.Image, topics.Compressed, topics.Instruction, topics.Action, topics.EpisodeDone, topics.Info, topics.Keypoints, topics.TargetLying, topics.Proprio,
		topics.TF, topics.TFStatic, topics.JointStates, topics.CameraInfo}
	if r.Count(topics.Image) > 0 { // a camera publishing both: the raw frames, not their compressed copies
		topicList = slices.DeleteFunc(topicList, func(t string) bool { return t == topics.Compressed })
	}
	for rec, err := range r.Messages(topicList...) {
		if err != nil {
			return nil, err
		}
		recTime := rec.Time.Time()
		switch rec.Conn.Topic {
		case topics.Image:
			if err := rec.Decode(&img); err != nil {
				return nil, err
			}
			rgb, err := rawToRGB(&img)
			if err != nil {
				return nil, fmt.Errorf("frame at %v on %s: %w", recTime.Format(time.RFC3339Nano), topics.Image, err)
			}
			if err := setFrame(rgb, int(img.Height), int(img.Width), img.Header.Stamp.Time(), recTime); err != nil {
				return nil, err
			}
		case topics.Compressed:
			if err := rec.Decode(&cimg); err != nil {
				return nil, err
			}
			rgb, fh, fw, err := decode(cimg.Format, cimg.Data)
			if err != nil {
				return nil, fmt.Errorf("frame at %v on %s: %w", recTime.Format(time.RFC3339Nano), topics.Compressed, err)
			}
			if len(rgb) != fh*fw*3 || fh <= 0 || fw <= 0 {
				return nil, fmt.Errorf("frame at %v on %s: decoder returned %d bytes for %dx%d", recTime.Format(time.RFC3339Nano), topics.Compressed, len(rgb), fh, fw)
			}
			if err := setFrame(rgb, fh, fw, cimg.Header.Stamp.Time(), recTime); err != nil {
				return nil, err
			}
		case topics.Instruction:
			if err := rec.Decode(&str); err != nil {
				return nil, err
			}
			if instruction == "" {
				instruction = str.Data
			}
		case topics.Action:
			if err := rec.Decode(&arr); err != nil {
				return nil, err
			}
			if actionLen < 0 {
				actionLen = len(arr.Data)
			}
			if len(arr.Data) == 0 || len(arr.Data) != actionLen {
				return nil, fmt.Errorf("action at %v has %d values, the first had %d", recTime.Format(time.RFC3339Nano), len(arr.Data), actionLen)
			}
			if frame == nil {
				ep.Unpaired++
				continue
			}
			ep.Steps = append(ep.Steps, RecordedStep{Stamp: stamp, Image: frame, Action: slices.Clone(arr.Data), Keypoints: keypoints, TargetLying: lying, Proprio: proprio})
		case topics.Keypoints:
			if err := rec.Decode(&arr); err != nil {
				return nil, err
			}
			if len(arr.Data) == 0 || len(arr.Data)%keypointValues != 0 || !finite(arr.Data) {
				return nil, fmt.Errorf("keypoint labels at %v: %d values, want a multiple of %d, all finite", recTime.Format(time.RFC3339Nano), len(arr.Data), keypointValues)
			}
			if frame != nil {
				keypoints = slices.Clone(arr.Data)
				frames[len(frames)-1].Keypoints = keypoints
			}
		case topics.TargetLying:
			if err := rec.Decode(&arr); err != nil {
				return nil, err
			}
			if len(arr.Data) != 1 || (arr.Data[0] != 0 && arr.Data[0] != 1 && arr.Data[0] != NoLyingLabel) {
				return nil, fmt.Errorf("target-lying label at %v: %v, want one value of 0, 1 or %d", recTime.Format(time.RFC3339Nano), arr.Data, NoLyingLabel)
			}
			if frame != nil {
				lying = arr.Data[0]
				frames[len(frames)-1].TargetLying = lying
			}
		case topics.Proprio:
			if err := rec.Decode(&arr); err != nil {
				return nil, err
			}
			if len(arr.Data) == 0 || !finite(arr.Data) || (proprio != nil && len(arr.Data) != len(proprio)) {
				return nil, fmt.Errorf("proprioception at %v: %d values (the previous had %d), want a constant positive number, all finite", recTime.Format(time.RFC3339Nano), len(arr.Data), len(proprio))
			}
			if proprio == nil && len(arr.Layout.Dim) > 0 {
				ep.ProprioLabel = arr.Layout.Dim[0].Label
			}
			proprio = slices.Clone(arr.Data)
			if frame != nil {
				frames[len(frames)-1].Proprio = proprio
			}
		case topics.TFStatic:
			var m rosbag.TFMessage
			if err := rec.Decode(&m); err != nil {
				return nil, fmt.Errorf("%s: %w", topics.TFStatic, err)
			}
			if ep.TFStatic == nil {
				ep.TFStatic = &m
			}
			tree.tf = append(tree.tf, treeMessage{&m, true})
		case topics.TF, topics.JointStates, topics.CameraInfo:
			var m rosbag.Message
			switch rec.Conn.Topic {
			case topics.TF:
				m = &rosbag.TFMessage{}
			case topics.JointStates:
				m = &rosbag.JointState{}
			default:
				m = &rosbag.CameraInfo{}
			}
			if err := rec.Decode(m); err != nil {
				return nil, fmt.Errorf("%s: %w", rec.Conn.Topic, err)
			}
			ep.Robot = append(ep.Robot, RecordedMessage{Time: recTime, Msg: m})
			switch m := m.(type) {
			case *rosbag.TFMessage:
				tree.tf = append(tree.tf, treeMessage{m, false})
			case *rosbag.JointState:
				tree.putJoints(m, recTime)
			}
		case topics.EpisodeDone:
			if err := rec.Decode(&flag); err != nil {
				return nil, err
			}
			ep.Done = ep.Done || flag.Data
		case topics.Info:
			if err := rec.Decode(&str); err != nil {
				return nil, err
			}
			if err := json.Unmarshal([]byte(str.Data), &ep.Info); err != nil {
				return nil, fmt.Errorf("episode info on %s: %w", topics.Info, err)
			}
			ep.HasInfo = true
		}
	}
	if actionLen < 0 { // no actions: a step per frame
		ep.Steps = frames
	}
	if proprio == nil && tree.deriveProprio(ep.Steps, &opts) {
		ep.ProprioLabel = proprioLayout.Dim[0].Label
	}
	if len(ep.Steps) == 0 {
		return nil, fmt.Errorf("no frames with actions on %s or %s and %s (topics in the bag: %s)", topics.Image, topics.Compressed, topics.Action, bagTopics(r))
	}
	if opts.Instruction != "" {
		instruction = opts.Instruction
	}
	return ep, ep.complete(instruction, h, w)
}

// complete checks the metadata against the steps, or fills it in.
func (ep *RecordedEpisode) complete(instruction string, h, w int) error {
	in := &ep.Info
	if ep.HasInfo {
		switch {
		case in.Version != InfoVersion:
			return fmt.Errorf("episode info version %d (this reader reads %d)", in.Version, InfoVersion)
		case in.Steps != len(ep.Steps):
			return fmt.Errorf("episode info says %d steps, the bag holds %d", in.Steps, len(ep.Steps))
		case in.Height != h || in.Width != w:
			return fmt.Errorf("episode info says %dx%d frames, the bag holds %dx%d", in.Height, in.Width, h, w)
		}
	} else {
		in.Version, in.Steps, in.Height, in.Width = InfoVersion, len(ep.Steps), h, w
		in.Start = ep.Steps[0].Stamp
		in.Period = medianPeriod(ep.Steps)
	}
	if instruction != "" {
		in.Instruction = instruction
	}
	if in.Instruction == "" {
		return errors.New("no instruction in the bag: give one (ReadOptions.Instruction)")
	}
	return nil
}

// medianPeriod is the median time between successive steps' frames, in
// seconds (0 for one step).
func medianPeriod(steps []RecordedStep) float64 {
	var d []float64
	for i := 1; i < len(steps); i++ {
		d = append(d, steps[i].Stamp.Sub(steps[i-1].Stamp).Seconds())
	}
	if len(d) == 0 {
		return 0
	}
	sort.Float64s(d)
	return d[len(d)/2]
}

func bagTopics(r *rosbag.Reader) string {
	var names []string
	for _, c := range r.Connections() {
		names = append(names, c.Topic+" ("+c.Type+")")
	}
	slices.Sort(names)
	return fmt.Sprint(names)
}

// rawToRGB converts a raw frame in any encoding of package rawimage to a
// new rgb8 buffer.
func rawToRGB(m *rosbag.Image) ([]byte, error) {
	enc, err := rawimage.Lookup(m.Encoding)
	if err != nil {
		return nil, err
	}
	bpp := int64(enc.BytesPerPixel)
	h, w, step := int64(m.Height), int64(m.Width), int64(m.Step)
	if h <= 0 || w <= 0 || h > MaxImageSide || w > MaxImageSide {
		return nil, fmt.Errorf("%dx%d %s frame: each side must be in [1, %d]", h, w, m.Encoding, MaxImageSide)
	}
	if enc.Pairs && w%2 != 0 {
		return nil, fmt.Errorf("%dx%d %s frame: the width is odd; 4:2:2 pixels come in pairs that share U and V", h, w, m.Encoding)
	}
	if step < w*bpp || int64(len(m.Data)) < (h-1)*step+w*bpp {
		return nil, fmt.Errorf("%dx%d %s frame with step %d has %d bytes of data", h, w, m.Encoding, step, len(m.Data))
	}
	out := make([]byte, h*w*3)
	enc.ToRGB(out, m.Data, int(step), int(w), int(h))
	return out, nil
}

// decodeStd decodes JPEG or PNG with Go's image packages.
func decodeStd(format string, data []byte) ([]byte, int, int, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("compressed frame (format %q): %w", format, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > MaxImageSide || cfg.Height > MaxImageSide {
		return nil, 0, 0, fmt.Errorf("compressed frame (format %q) of %dx%d: each side must be in [1, %d]", format, cfg.Height, cfg.Width, MaxImageSide)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("compressed frame (format %q): %w", format, err)
	}
	b := img.Bounds()
	h, w := b.Dy(), b.Dx()
	out := make([]byte, 0, h*w*3)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			out = append(out, byte(r>>8), byte(g>>8), byte(bl>>8))
		}
	}
	return out, h, w, nil
}

// finite reports whether x holds no NaN or Inf.
func finite(x []float32) bool {
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return false
		}
	}
	return true
}
