package simnode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/nodetest"
	"github.com/ttmrobot/ttm/internal/rostest"
	"github.com/ttmrobot/ttm/sim"
)

// TestNodeWithROS runs the simulator node against Debian's roscore and
// drives it with rostopic alone (no policy node): the latched instruction
// and the headcam frames as rostopic sees them, frames published again
// while no action comes, malformed actions refused without a step, a
// well-formed action stepping the simulator, a terminate ending the
// episode, the instruction latched again after a roscore restart, and a
// run stopping with ErrNoActions when nothing drives it.
func TestNodeWithROS(t *testing.T) {
	m := rostest.StartMaster(t)
	log, _ := rostest.Logger(t)
	const ns = "/simtest"
	pick, _ := sim.TaskByName("pick")
	drawer, _ := sim.TaskByName("drawer")
	const seed, h, w = 5, 48, 64
	instruction := func(task *sim.Task) string { return episodeInstruction(t, task, seed) }

	var mu sync.Mutex // mu guards frames
	var frames []string
	s, err := Start(context.Background(), Config{
		Args: nodetest.Args(t, m, "ttm_sim", "__ns:="+ns), Tasks: []*sim.Task{pick, drawer}, Seed: seed, Height: h, Width: w,
		ActionTimeout: 500 * time.Millisecond, EpisodeTimeout: 60 * time.Second, StartTimeout: 60 * time.Second,
		ResetTimeout: time.Second, Log: log, PollInterval: 200 * time.Millisecond,
		Frame: func(ep Episode, step int, img []byte) {
			if len(img) != h*w*3 {
				t.Errorf("frame of %d bytes", len(img))
			}
			mu.Lock()
			frames = append(frames, fmt.Sprintf("%s/%d", ep.Task.Name, step))
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nodetest.WaitConnected(t, s.sup, 1, 10*time.Second)

	// What a policy node would see: the latched instruction and a frame.
	res := m.RunParallel(rostest.ToolTimeout,
		[]string{"rostopic", "echo", "-n", "1", ns + "/instruction"},
		[]string{"rostopic", "echo", "--noarr", "-n", "1", ns + "/headcam/image_raw"},
		[]string{"rostopic", "info", ns + "/action"},
	)
	rostest.RequireOK(t, res)
	if got, want := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(res[0].Out), "---")), fmt.Sprintf("data: %q", instruction(pick)); got != want {
		t.Errorf("instruction topic: %q, want %q", got, want)
	}
	for _, want := range []string{"height: 48", "width: 64", `encoding: "rgb8"`, "step: 192", `frame_id: "head_camera_optical_frame"`, "length: 9216>"} {
		if !strings.Contains(res[1].Out, want) {
			t.Errorf("headcam message lacks %q:\n%s", want, res[1].Out)
		}
	}
	if !strings.Contains(res[2].Out, ns+"/ttm_sim") {
		t.Errorf("the sim node does not subscribe %s/action:\n%s", ns, res[2].Out)
	}
	if st := s.Stats(); st.Republished == 0 || st.FramesPublished < 2 {
		t.Errorf("no action for seconds, but the frame was not published again: %+v", st)
	}

	// Malformed actions: refused, no step.
	res = m.RunParallel(rostest.ToolTimeout,
		[]string{"rostopic", "pub", "-1", ns + "/action", "std_msgs/Float32MultiArray", "{data: [1, 0.5, 0.5]}"},
		[]string{"rostopic", "pub", "-1", ns + "/action", "std_msgs/Float32MultiArray", "{data: [1, .nan, 0, 0, 0, 0, 0, 0, 0, 0, 0]}"},
	)
	rostest.RequireOK(t, res)
	rostest.WaitFor(t, 10*time.Second, "two refused actions", func() error {
		if st := s.Stats(); st.Rejected < 2 {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	if st := s.Stats(); st.Steps != 0 || st.Rejected != 2 {
		t.Fatalf("after two malformed actions: %+v; want 2 refused and no step", st)
	}

	// A well-formed arm action steps the simulator once.
	m.MustRun(rostest.ToolTimeout, "rostopic", "pub", "-1", ns+"/action", "std_msgs/Float32MultiArray", "{data: [1, 0.5, 0, 0, 0, 0, 0, -1, 0, 0, 0]}")
	rostest.WaitFor(t, 10*time.Second, "one step", func() error {
		if st := s.Stats(); st.Steps != 1 || st.Step != 1 {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})

	// roscore restarts: the node registers again and latches the
	// instruction on the new master.
	m.Restart()
	nodetest.WaitConnected(t, s.sup, 2, 20*time.Second)
	out := m.MustRun(rostest.ToolTimeout, "rostopic", "echo", "-n", "1", ns+"/instruction")
	if !strings.Contains(out, instruction(pick)) {
		t.Errorf("after the restart the instruction topic holds %q", out)
	}

	// A terminate (no episode_done publisher: applied as it comes) ends the
	// episode; the next one publishes its own instruction.
	m.MustRun(rostest.ToolTimeout, "rostopic", "pub", "-1", ns+"/action", "std_msgs/Float32MultiArray", "{data: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}")
	rostest.WaitFor(t, 10*time.Second, "the second episode", func() error {
		if st := s.Stats(); st.Episodes != 2 || st.EpisodesDone != 1 {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	out = m.MustRun(rostest.ToolTimeout, "rostopic", "echo", "-n", "1", ns+"/instruction")
	if !strings.Contains(out, instruction(drawer)) {
		t.Errorf("second episode's instruction topic holds %q, want %q", out, instruction(drawer))
	}

	// Closing stops the run; the finished episode is reported.
	s.Close()
	results, err := s.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Wait error %v, want context.Canceled", err)
	}
	if len(results) != 1 {
		t.Fatalf("results %+v, want the first episode's", results)
	}
	r := results[0]
	if r.Task != "pick" || r.Seed != seed || r.Steps != 2 || !r.Terminated || r.Rejected != 2 || r.Stalled || r.Instruction != instruction(pick) {
		t.Errorf("first episode %+v; want pick seed 5, 2 steps, terminated, 2 refused", r)
	}
	mu.Lock()
	if got := strings.Join(frames, " "); got != "pick/0 pick/1 pick/2 drawer/0" {
		t.Errorf("frames seen: %s", got)
	}
	mu.Unlock()

	// Nothing drives a run: it stops with ErrNoActions after the start
	// timeout.
	start := time.Now()
	_, err = Run(context.Background(), Config{Args: nodetest.Args(t, m, "ttm_sim_alone", "__ns:=/alone"), Tasks: []*sim.Task{pick},
		Height: h, Width: w, ActionTimeout: 200 * time.Millisecond, StartTimeout: time.Second, NoReset: true, Log: log})
	if !errors.Is(err, ErrNoActions) || !strings.Contains(err.Error(), "/alone/action") {
		t.Errorf("Run with no policy node: %v, want ErrNoActions naming /alone/action", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("gave up after %v, want about the 1 s start timeout", d)
	}
}

// TestResetWaitsForTheInstruction provokes the race between an
// episode's instruction and the reset_memory call, which travel on separate
// connections: the second episode's instruction message is held back
// 1.5 s, so the policy node (a stand-in answering as the real one does,
// over Debian's roscore) applies the reset while it still has the first
// episode's instruction, and says so in its answer. The simulator node must call again until the answer names
// the new instruction, and only then start the episode: when it shows the
// episode's first frame the policy node's episode has the new instruction.
func TestResetWaitsForTheInstruction(t *testing.T) {
	m := rostest.StartMaster(t)
	log, _ := rostest.Logger(t)
	const ns = "/race"
	pick, _ := sim.TaskByName("pick")
	drawer, _ := sim.TaskByName("drawer")
	const seed, h, w = 3, 64, 80
	late := episodeInstruction(t, drawer, seed)

	var mu sync.Mutex // mu guards publishedAt
	var publishedAt time.Time
	testHookPublishInstruction = func(text string, publish func()) {
		if text != late {
			publish()
			return
		}
		go func() {
			time.Sleep(1500 * time.Millisecond)
			mu.Lock()
			publishedAt = time.Now()
			mu.Unlock()
			publish()
		}()
	}
	defer func() { testHookPublishInstruction = nil }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := startFakePolicy(t, nodetest.Args(t, m, "ttm_node", "__ns:="+ns), log.Named("policy"))

	type seen struct {
		at          time.Time
		instruction string
		named       bool
	}
	var first seen
	results, err := Run(ctx, Config{
		Args: nodetest.Args(t, m, "ttm_sim", "__ns:="+ns), Tasks: []*sim.Task{pick, drawer}, Seed: seed, Height: h, Width: w, MaxSteps: 2,
		ActionTimeout: time.Second, EpisodeTimeout: 60 * time.Second, StartTimeout: 60 * time.Second, ResetTimeout: 5 * time.Second,
		Log: log.Named("sim"), PollInterval: 200 * time.Millisecond,
		Frame: func(ep Episode, step int, _ []byte) {
			if ep.Task == drawer && step == 0 {
				text, named := n.episodeInstruction()
				first = seen{time.Now(), text, named}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[1].Instruction != late || results[1].Steps != 2 {
		t.Fatalf("results %+v, want two episodes of 2 steps, the second %q", results, late)
	}
	if !first.named || first.instruction != late {
		t.Errorf("the drawer episode started while the policy node's episode had instruction %q (named %v), want %q", first.instruction, first.named, late)
	}
	mu.Lock()
	defer mu.Unlock()
	if publishedAt.IsZero() || first.at.Before(publishedAt) {
		t.Errorf("the drawer episode's first frame came before its instruction was published (at %v, published at %v)", first.at, publishedAt)
	}
}
