package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/rosbag"
	"github.com/ttmrobot/ttm/internal/tf"
)

// DefaultProprioTolerance is ReadOptions.ProprioTolerance's default, the
// node's default max_proprio_age.
const DefaultProprioTolerance = 500 * time.Millisecond

// treeOptions fills in ReadOptions' robot description and checks it, as
// the node does its RobotConfig.
func (o *ReadOptions) treeOptions() error {
	o.ProprioTolerance = cmp.Or(o.ProprioTolerance, DefaultProprioTolerance)
	if o.ProprioTolerance < 0 {
		return fmt.Errorf("proprioception tolerance %v is negative", o.ProprioTolerance)
	}
	return o.Arm.Defaults()
}

func finite64(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// robotTree gathers what a bag holds of the robot's tree and gripper, to
// derive the proprioception of a bag without a proprio topic.
type robotTree struct {
	tf     []treeMessage // /tf and /tf_static in record order
	joint  string
	grip   []jointSample // the gripper joint's finite positions
	sorted bool          // grip is sorted by stamp
}

type treeMessage struct {
	msg    *rosbag.TFMessage
	static bool
}

type jointSample struct {
	stamp    time.Time
	position float64
}

// putJoints takes a joint_states message recorded at recTime: its gripper
// joint's position, if it has one, stamped by its header (recTime when
// unstamped).
func (t *robotTree) putJoints(m *rosbag.JointState, recTime time.Time) {
	i := slices.Index(m.Name, t.joint)
	if i < 0 || i >= len(m.Position) || !finite64(m.Position[i]) {
		return
	}
	st := stampOr(m.Header.Stamp.Time(), recTime)
	if n := len(t.grip); n > 0 && st.Before(t.grip[n-1].stamp) {
		t.sorted = false
	}
	t.grip = append(t.grip, jointSample{st, m.Position[i]})
}

// stampOr is st, or recTime when st is unset.
func stampOr(st, recTime time.Time) time.Time {
	if st.IsZero() || st.Equal(time.Unix(0, 0)) {
		return recTime
	}
	return st
}

// deriveProprio sets each step's Proprio from the tree, in
// action.ArmProprio's layout, as the node reads it (node.ProprioTF): the
// hand frame's origin in the base frame at the frame's stamp, looked up
// within opts.ProprioTolerance, and the gripper's closedness from the
// joint position stamped nearest the frame, within the tolerance. A step
// the tree cannot give a reading within its range (action.ProprioRange)
// keeps a nil Proprio. It reports whether any step got one.
func (t *robotTree) deriveProprio(steps []RecordedStep, opts *ReadOptions) bool {
	if len(t.tf) == 0 || len(t.grip) == 0 {
		return false
	}
	buf := t.buffer()
	if !t.sorted {
		slices.SortStableFunc(t.grip, func(a, b jointSample) int { return a.stamp.Compare(b.stamp) })
	}
	got := false
	var last []float32 // the reading of the previous step, shared with the steps of its frame
	for k := range steps {
		s := &steps[k]
		if k > 0 && s.Stamp.Equal(steps[k-1].Stamp) {
			s.Proprio = last
			continue
		}
		last = t.reading(buf, s.Stamp, opts)
		s.Proprio = last
		got = got || last != nil
	}
	return got
}

// buffer returns a tf buffer fed with the bag's transforms. It keeps every
// dynamic sample of the bag; an unstamped dynamic transform, and one the
// buffer refuses (a bad quaternion, a loop), are left out, as the node
// leaves them out.
func (t *robotTree) buffer() *tf.Buffer {
	first, last := uint64(math.MaxUint64), uint64(0) // ns
	n := 0
	for _, m := range t.tf {
		for _, tr := range m.msg.Transforms {
			if st := tr.Header.Stamp; !m.static && st != (rosbag.Time{}) {
				first, last = min(first, st.Nanos()), max(last, st.Nanos())
				n++
			}
		}
	}
	buf := tf.NewBuffer(tf.BufferConf{History: time.Duration(last-min(first, last)) + time.Second, MaxSamples: n + 1})
	for _, m := range t.tf {
		for _, tr := range m.msg.Transforms {
			if !m.static && tr.Header.Stamp == (rosbag.Time{}) {
				continue
			}
			p, q := tr.Transform.Translation, tr.Transform.Rotation
			_ = buf.Add(tr.Header.FrameID, tr.ChildFrameID, tr.Header.Stamp.Time(),
				tf.Transform{Translation: [3]float64{p.X, p.Y, p.Z}, Rotation: [4]float64{q.X, q.Y, q.Z, q.W}}, m.static)
		}
	}
	return buf
}

// reading is the proprioception at time at, or nil.
func (t *robotTree) reading(buf *tf.Buffer, at time.Time, opts *ReadOptions) []float32 {
	hand, err := buf.Lookup(opts.BaseFrame, opts.HandFrame, at, opts.ProprioTolerance)
	if err != nil {
		return nil
	}
	i, _ := slices.BinarySearchFunc(t.grip, at, func(s jointSample, at time.Time) int { return s.stamp.Compare(at) })
	if i == len(t.grip) || i > 0 && at.Sub(t.grip[i-1].stamp) < t.grip[i].stamp.Sub(at) {
		i--
	}
	if d := at.Sub(t.grip[i].stamp).Abs(); d > opts.ProprioTolerance {
		return nil
	}
	grip := opts.Closedness(t.grip[i].position)
	// action.ArmProprio's layout.
	v := []float32{float32(hand.Translation[0]), float32(hand.Translation[1]), float32(hand.Translation[2]), float32(grip)}
	for j, name := range action.ArmProprio {
		lo, hi, ok := action.ProprioRange(name)
		if !finite64(float64(v[j])) || ok && (v[j] < lo || v[j] > hi) {
			return nil
		}
	}
	return v
}
