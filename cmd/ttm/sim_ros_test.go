package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/internal/imagetest"
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/internal/rostest"
	"github.com/ttmrobot/ttm/node"
	"github.com/ttmrobot/ttm/sim"
)

func TestWantsROS(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"--ros"}, true},
		{[]string{"--tasks", "pick", "-ros", "__name:=x"}, true},
		{[]string{"--ros=true"}, true},
		{[]string{"--ros=false", "--expert"}, false},
		{[]string{"--ros=maybe"}, true}, // the flag parser reports the value
		{[]string{"--expert"}, false},
		{[]string{"--roster"}, false},
		{[]string{"ros"}, false},
		{[]string{"--", "--ros"}, false},
	} {
		if got := wantsROS(tc.args); got != tc.want {
			t.Errorf("wantsROS(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestSimROSUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--ros", "--expert"}, "drop --expert and --policy"},
		{[]string{"sim", "--ros", "--policy", "p.safetensors"}, "drop --expert and --policy"},
		{[]string{"sim", "--ros", "--tasks", "fly"}, "unknown task"},
		{[]string{"sim", "--ros", "--episodes", "0"}, "--episodes 0"},
		{[]string{"sim", "--ros", "--size", "3x3"}, "--size"},
		{[]string{"sim", "--ros", "--max-steps", "-1"}, "--max-steps -1"},
		{[]string{"sim", "--ros", "--action-timeout", "5s", "--episode-timeout", "1s"}, "--action-timeout"},
		{[]string{"sim", "--ros", "__name:=a/b"}, "__name:=a/b"},
		{[]string{"sim", "--ros", "--ros=maybe"}, "invalid boolean"},
		{[]string{"sim", "--ros", "stray"}, "unexpected arguments stray"},
		{[]string{"sim", "--expert", "__name:=x"}, "unexpected arguments __name:=x"},
	} {
		code, _, stderr := runCmd(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message about %s", c.args, code, stderr, c.want)
		}
	}
}

// TestSimROSDrivenByNode runs the whole loop over a real roscore: the policy
// node (node.Start, on a fresh small checkpoint) and `ttm sim --ros` in this
// process. While episodes run, rostopic sees the headcam at the requested
// size and the latched instruction; at the end the success table counts
// every episode at its step cap, the policy node started a new episode for
// each, and each episode's strip (PNG) and rollout (GIF) decode.
func TestSimROSDrivenByNode(t *testing.T) {
	m := rostest.StartMaster(t)
	ckpt := smallPolicy(t) // biased to arm mode: it never terminates, so every episode runs to --max-steps
	const ns = "/it"
	pn := startTestPolicyNode(t, m, ckpt, "__ns:="+ns, "_rate:=2", "_follow_camera:=false", "_warmup_steps:=100", "_max_image_age:=1.0")
	rostest.WaitFor(t, 10*time.Second, "the policy node's registration", func() error {
		if !pn.Status().Connected {
			return fmt.Errorf("not registered")
		}
		return nil
	})

	out := filepath.Join(t.TempDir(), "episodes")
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := runCmd(t, "sim", "--ros", "--tasks", "pick,cue_pick", "--episodes", "2", "--seed", "3",
			"--size", "64x80", "--max-steps", "6", "--out", out, "--start-timeout", "60s", "__master:="+m.URI, "__ns:="+ns)
		done <- result{code, stdout, stderr}
	}()

	var instructions []string
	for _, name := range []string{"pick", "cue_pick"} {
		task, _ := sim.TaskByName(name)
		for i := range 2 {
			ep, err := sim.NewEpisode(task, 3+uint64(i), sim.Options{Height: 64, Width: 80})
			if err != nil {
				t.Fatal(err)
			}
			instructions = append(instructions, ep.Instruction())
			ep.Close()
		}
	}
	res := m.RunParallel(20*time.Second,
		[]string{"rostopic", "echo", "--noarr", "-n", "1", ns + "/headcam/image_raw"},
		[]string{"rostopic", "echo", "-n", "1", ns + "/instruction"},
	)
	for _, r := range res {
		if r.Err != nil {
			t.Error(r.Err)
		}
	}
	for _, want := range []string{"height: 64", "width: 80", `encoding: "rgb8"`, "length: 15360>"} {
		if !strings.Contains(res[0].Out, want) {
			t.Errorf("headcam message lacks %q:\n%s", want, res[0].Out)
		}
	}
	found := false
	for _, ins := range instructions {
		found = found || strings.Contains(res[1].Out, fmt.Sprintf("data: %q", ins))
	}
	if !found {
		t.Errorf("instruction topic holds %q, none of %q", res[1].Out, instructions)
	}

	var r result
	select {
	case r = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("ttm sim --ros did not finish 4 episodes of 6 steps within 90 s")
	}
	if r.code != 0 {
		t.Fatalf("ttm sim --ros: exit %d\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 4 {
		t.Fatalf("no success table:\n%s", r.stdout)
	}
	for i, name := range []string{"pick", "cue_pick"} {
		f := strings.Fields(lines[i+1])
		// task memory episodes success rate "95 % interval" "mean steps" terminated
		if f[0] != name || f[2] != "2" || f[6] != "6.0" || f[7] != "0" {
			t.Errorf("row %q: want %s, 2 episodes of 6 steps, none terminated", lines[i+1], name)
		}
	}
	if n := strings.Count(r.stderr, "episode done"); n != 4 {
		t.Errorf("%d episodes logged, want 4:\n%s", n, r.stderr)
	}
	st := pn.Stats()
	if st.Episodes < 4 || st.Acted < 8 {
		t.Errorf("policy node: %d episodes, %d actions; want a new episode per simulated one and a third of the 24 steps acted at least", st.Episodes, st.Acted)
	}
	t.Logf("policy node: %d ticks, %d acted, %d stopped, %d deadline misses, %d episodes", st.Ticks, st.Acted, st.Stopped, st.DeadlineMisses, st.Episodes)

	for _, name := range []string{"01-pick-seed3", "02-pick-seed4", "03-cue_pick-seed3", "04-cue_pick-seed4"} {
		if b := imagetest.PNG(t, filepath.Join(out, name+".png")).Bounds(); b.Dx() != stripMargin+10*80 || b.Dy() != 64 {
			t.Errorf("%s.png is %v", name, b)
		}
		a := imagetest.GIF(t, filepath.Join(out, name+".gif"))
		if len(a.Image) != 7 || a.Image[0].Bounds().Dx() != 80 || a.Image[0].Bounds().Dy() != 64 {
			t.Errorf("%s.gif: %d frames of %v, want 7 of 80x64", name, len(a.Image), a.Image[0].Bounds())
		}
	}
}

// TestSimROSDrivesProprioPolicy: `ttm sim --ros` publishes the robot's
// state with every frame, as a robot (/tf, /joint_states) and on our
// labelled proprio topic, and a policy node that reads it (the
// small-proprio preset), from either, drives the simulator over a real
// roscore.
func TestSimROSDrivesProprioPolicy(t *testing.T) {
	for _, source := range []string{"tf", "topic"} {
		t.Run(source, func(t *testing.T) {
			m := rostest.StartMaster(t)
			ckpt := armPolicy(t, "small-proprio")
			const ns = "/prop"
			pn := startTestPolicyNode(t, m, ckpt, "__ns:="+ns, "_rate:=2", "_follow_camera:=false", "_warmup_steps:=100", "_max_image_age:=1.0", "_max_proprio_age:=1.0",
				"_proprio_source:="+source)
			done := make(chan int, 1)
			var stdout, stderr string
			go func() {
				var code int
				code, stdout, stderr = runCmd(t, "sim", "--ros", "--tasks", "pick", "--episodes", "1", "--seed", "3",
					"--size", "128x160", "--max-steps", "4", "--out", t.TempDir(), "--start-timeout", "60s", "__master:="+m.URI, "__ns:="+ns)
				done <- code
			}()
			out := m.MustRun(20*time.Second, "rostopic", "echo", "-n", "1", ns+"/proprio")
			if !strings.Contains(out, `label: "hand_x;hand_y;hand_z;gripper"`) || !strings.Contains(out, "size: 4") {
				t.Errorf("proprio message:\n%s", out)
			}
			select {
			case code := <-done:
				if code != 0 {
					t.Fatalf("ttm sim --ros: exit %d\n%s", code, stderr)
				}
			case <-time.After(90 * time.Second):
				t.Fatal("ttm sim --ros did not finish an episode of 4 steps within 90 s")
			}
			if f := strings.Fields(strings.Split(strings.TrimSpace(stdout), "\n")[1]); f[0] != "pick" || f[6] != "4.0" {
				t.Errorf("success table row %q: want pick at 4 steps", f)
			}
			st := pn.Stats()
			readIn, refused := st.ProprioIn, st.ProprioBad
			if source == "tf" {
				readIn, refused = st.JointStatesIn, st.JointStatesBad+st.TransformsBad
			}
			if readIn < 4 || refused != 0 || st.Acted < 4 {
				t.Errorf("policy node: %d readings in, %d refused, %d actions; want a reading per frame, none refused, an action per step", readIn, refused, st.Acted)
			}
		})
	}
}

// startTestPolicyNode starts the policy node on ckpt against m with the
// given ROS arguments; it closes when the test ends, and its log is shown
// if the test failed.
func startTestPolicyNode(t *testing.T, m *rostest.Master, ckpt string, rosArgs ...string) *node.Node {
	t.Helper()
	args, err := ros.ParseArgs("ttm_node", rosArgs, func(k string) (string, bool) {
		if k == "ROS_MASTER_URI" {
			return m.URI, true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	var nodeLog lockedBuffer
	pn, err := node.Start(context.Background(), node.Config{Args: args, Policy: ckpt, Threads: 2, PollInterval: 200 * time.Millisecond,
		Log: hclog.New(&hclog.LoggerOptions{Output: &nodeLog, Level: hclog.Info})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pn.Close()
		if t.Failed() {
			t.Logf("policy node log:\n%s", nodeLog.String())
		}
	})
	return pn
}
