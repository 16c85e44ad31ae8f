package ros

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/rosbag"
	"github.com/ttmrobot/ttm/internal/rostest"
)

// Record and Replay refuse bad configurations before touching the master
// or the disk.
func TestRecordReplayRejectConfig(t *testing.T) {
	args, err := ParseArgs("rec", []string{"__master:=http://127.0.0.1:1"}, rostest.Env(nil))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "x.bag")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		conf RecordConfig
		want string
	}{
		{"no args", RecordConfig{Out: out}, "Args and Out are required"},
		{"no out", RecordConfig{Args: args}, "Args and Out are required"},
		{"unknown topic", RecordConfig{Args: args, Out: out, Topics: []string{"cmd_vel"}}, `topic "cmd_vel" is not one of`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Record(ctx, tc.conf); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(out + ".active"); err == nil {
				t.Error("a refused recording left a file")
			}
		})
	}
	frame := ReplayFrame{Height: 2, Width: 2, RGB: make([]byte, 12)}
	for _, tc := range []struct {
		name string
		conf ReplayConfig
		want string
	}{
		{"no frames", ReplayConfig{Args: args, Instruction: "x"}, "frames are required"},
		{"no instruction", ReplayConfig{Args: args, Frames: []ReplayFrame{frame}}, "an instruction"},
		{"bad frame", ReplayConfig{Args: args, Instruction: "x", Frames: []ReplayFrame{frame, {Height: 2, Width: 2, RGB: make([]byte, 11)}}}, "frame 1: 11 bytes for 2x2"},
		{"speed", ReplayConfig{Args: args, Instruction: "x", Frames: []ReplayFrame{frame}, Speed: -1}, "speed -1"},
		{"empty proprio", ReplayConfig{Args: args, Instruction: "x", Frames: []ReplayFrame{{Height: 2, Width: 2, RGB: make([]byte, 12), Proprio: []float32{}}}},
			"frame 0: proprioception of 0 values"},
		{"proprio length", ReplayConfig{Args: args, Instruction: "x", Frames: []ReplayFrame{frame,
			{Height: 2, Width: 2, RGB: make([]byte, 12), Proprio: make([]float32, 4)}, {Height: 2, Width: 2, RGB: make([]byte, 12), Proprio: make([]float32, 3)}}},
			"frame 2: proprioception of 3 values, the frames before had 4"},
		{"robot without a stamp", ReplayConfig{Args: args, Instruction: "x", Frames: []ReplayFrame{frame}, Robot: []ReplayMessage{{Msg: &rosbag.JointState{}}}},
			"need the first frame's recorded stamp"},
		{"robot message type", ReplayConfig{Args: args, Instruction: "x", Frames: []ReplayFrame{{Height: 2, Width: 2, RGB: make([]byte, 12), Stamp: time.Unix(1, 0)}},
			Robot: []ReplayMessage{{Msg: &rosbag.String{}}}}, "robot message 0 is a *rosbag.String"},
		{"robot order", ReplayConfig{Args: args, Instruction: "x", Frames: []ReplayFrame{{Height: 2, Width: 2, RGB: make([]byte, 12), Stamp: time.Unix(1, 0)}},
			Robot: []ReplayMessage{{At: time.Second, Msg: &rosbag.TFMessage{}}, {Msg: &rosbag.CameraInfo{}}}}, "robot message 1 at 0s comes before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Replay(ctx, tc.conf); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// No master: Replay gives up after Wait, naming the master.
	start := time.Now()
	_, err = Replay(ctx, ReplayConfig{Args: args, Instruction: "x", Frames: []ReplayFrame{frame}, Wait: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no ROS master at http://127.0.0.1:1") || time.Since(start) > 5*time.Second {
		t.Errorf("without a master: %v after %v", err, time.Since(start))
	}
}
