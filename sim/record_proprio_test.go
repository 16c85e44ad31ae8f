package sim

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/robot"
	"github.com/ttmrobot/ttm/internal/rosbag"
)

// rewriteBag copies the bag at src to dst, message by message in record
// order; edit sees each record with its index on its topic and returns
// keep false to drop it, or a message to write in its place (nil: as it
// is).
func rewriteBag(t *testing.T, src, dst string, edit func(rec rosbag.Record, k int) (m rosbag.Message, keep bool)) {
	t.Helper()
	r, err := rosbag.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := rosbag.Create(dst, rosbag.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for rec, err := range r.Messages() {
		if err != nil {
			t.Fatal(err)
		}
		k := seen[rec.Conn.Topic]
		seen[rec.Conn.Topic]++
		m, keep := edit(rec, k)
		if !keep {
			continue
		}
		data := rec.Data
		if m != nil {
			data = m.MarshalROS(nil)
		}
		id, err := w.AddConnection(*rec.Conn)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteMessage(id, rec.Time, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// withoutProprio drops the proprio topic, then applies edit to the rest.
func withoutProprio(edit func(rec rosbag.Record, k int) (rosbag.Message, bool)) func(rosbag.Record, int) (rosbag.Message, bool) {
	return func(rec rosbag.Record, k int) (rosbag.Message, bool) {
		if rec.Conn.Topic == "/proprio" {
			return nil, false
		}
		if edit == nil {
			return nil, true
		}
		return edit(rec, k)
	}
}

// gripperAt returns rec's joint_states message with the gripper joint at
// position p.
func gripperAt(t *testing.T, rec rosbag.Record, p float64) *rosbag.JointState {
	t.Helper()
	var m rosbag.JointState
	if err := rec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	m.Position[0] = p
	return &m
}

// TestReadProprioFromTree: a simulator's bag without its proprio topic
// reads back, from its tf, tf_static and joint_states, the proprioception
// the topic held, step by step, labelled as the topic was.
func TestReadProprioFromTree(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "pick.bag")
	record(t, orig, "pick", 5, 24, 32, RecordOptions{Start: t0})
	tree := filepath.Join(dir, "tree.bag")
	rewriteBag(t, orig, tree, withoutProprio(nil))
	want, err := ReadEpisode(orig, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadEpisode(tree, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ProprioLabel != want.ProprioLabel || got.ProprioLabel != "hand_x;hand_y;hand_z;gripper" || len(got.Steps) != len(want.Steps) {
		t.Fatalf("label %q (%d steps), the proprio topic's %q (%d steps)", got.ProprioLabel, len(got.Steps), want.ProprioLabel, len(want.Steps))
	}
	worst := 0.0
	for k := range want.Steps {
		g, w := got.Steps[k].Proprio, want.Steps[k].Proprio
		if len(g) != len(w) || len(w) != ProprioLen {
			t.Fatalf("step %d: %v, the topic's %v", k, g, w)
		}
		for i := range w {
			worst = max(worst, math.Abs(float64(g[i]-w[i])))
		}
	}
	t.Logf("%d steps; largest difference from the proprio topic %.3g", len(want.Steps), worst)
	if worst > 1e-6 {
		t.Errorf("the tree's readings differ from the topic's by up to %g", worst)
	}
}

// TestReadProprioFromTreeGaps: a step the tree cannot give a reading for
// (a frame missing, a reading too far in time, out of range or not
// finite) has a nil Proprio, never a wrong or NaN one; the others read.
func TestReadProprioFromTreeGaps(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "pick.bag")
	record(t, orig, "pick", 5, 24, 32, RecordOptions{Start: t0})
	const cut = 4 // the step whose tree an edit spoils
	tight := ReadOptions{ProprioTolerance: 10 * time.Millisecond}
	for _, tc := range []struct {
		name string
		edit func(rec rosbag.Record, k int) (rosbag.Message, bool)
		opts ReadOptions
		nil  func(k int) bool // which steps have no reading
	}{
		{"no tf", func(rec rosbag.Record, k int) (rosbag.Message, bool) { return nil, rec.Conn.Topic != "/tf" }, ReadOptions{},
			func(int) bool { return true }},
		{"no tf_static", func(rec rosbag.Record, k int) (rosbag.Message, bool) { return nil, rec.Conn.Topic != "/tf_static" }, ReadOptions{},
			func(int) bool { return true }},
		{"no joint_states", func(rec rosbag.Record, k int) (rosbag.Message, bool) { return nil, rec.Conn.Topic != "/joint_states" }, ReadOptions{},
			func(int) bool { return true }},
		{"tf ends", func(rec rosbag.Record, k int) (rosbag.Message, bool) { return nil, rec.Conn.Topic != "/tf" || k < cut }, tight,
			func(k int) bool { return k >= cut }},
		{"joint_states end", func(rec rosbag.Record, k int) (rosbag.Message, bool) {
			return nil, rec.Conn.Topic != "/joint_states" || k < cut
		}, tight,
			func(k int) bool { return k >= cut }},
		{"NaN gripper", func(rec rosbag.Record, k int) (rosbag.Message, bool) {
			if rec.Conn.Topic == "/joint_states" && k == cut {
				return gripperAt(t, rec, math.NaN()), true
			}
			return nil, true
		}, tight, func(k int) bool { return k == cut }},
		{"gripper beyond closed", func(rec rosbag.Record, k int) (rosbag.Message, bool) {
			if rec.Conn.Topic == "/joint_states" && k == cut {
				return gripperAt(t, rec, robot.GripperClosedPosition-robot.GripperOpenPosition), true // closedness 2
			}
			return nil, true
		}, ReadOptions{}, func(k int) bool { return k == cut }},
		{"another hand frame", nil, ReadOptions{Arm: robot.Arm{HandFrame: "tool0"}}, func(int) bool { return true }},
		{"another joint", nil, ReadOptions{Arm: robot.Arm{GripperJoint: "finger", GripperOpen: 0, GripperClosed: 1}}, func(int) bool { return true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "edited.bag")
			rewriteBag(t, orig, path, withoutProprio(tc.edit))
			ep, err := ReadEpisode(path, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			read := 0
			for k, s := range ep.Steps {
				if s.Proprio != nil {
					read++
				}
				switch {
				case tc.nil(k) && s.Proprio != nil:
					t.Errorf("step %d: %v, want none", k, s.Proprio)
				case !tc.nil(k) && (len(s.Proprio) != ProprioLen || !finite(s.Proprio)):
					t.Errorf("step %d: %v, want a reading", k, s.Proprio)
				}
			}
			if wantLabel := read > 0; (ep.ProprioLabel != "") != wantLabel {
				t.Errorf("%d steps read, label %q", read, ep.ProprioLabel)
			}
		})
	}
}

// A robot description that cannot be read is refused.
func TestReadProprioOptionsRejected(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ep.bag")
	record(t, path, "move", 1, 16, 16, RecordOptions{Start: t0, MaxSteps: 2})
	for _, tc := range []struct {
		opts ReadOptions
		err  string
	}{
		{ReadOptions{Arm: robot.Arm{BaseFrame: "hand"}}, `both "hand"`},
		{ReadOptions{Arm: robot.Arm{GripperJoint: "finger"}}, "two different finite positions"},
		{ReadOptions{Arm: robot.Arm{GripperOpen: math.Inf(1)}}, "two different finite positions"},
		{ReadOptions{ProprioTolerance: -time.Second}, "negative"},
	} {
		if _, err := ReadEpisode(path, tc.opts); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.err)
		}
	}
}
