package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/rostest"
)

// TestSimLaunch starts launch/sim.launch with the real roslaunch: it brings
// up the policy node (launch/ttm_node) and the simulator node
// (launch/ttm_sim, `ttm sim --ros`), both this test binary acting as ttm,
// in /sim. The simulator drives its episodes with the policy node's actions;
// when they are done it exits, and roslaunch (required="true") stops
// everything and exits by itself. The policy reads proprioception
// (small-proprio), which the policy node takes from the simulator's /tf and
// /joint_states: without them it would never act.
func TestSimLaunch(t *testing.T) {
	m := rostest.StartMaster(t)
	ckpt := armPolicy(t, "small-proprio") // never terminates: every episode runs to max_steps
	out := filepath.Join(t.TempDir(), "episodes")
	l := startLaunch(t, m, nil, "sim.launch", "policy:="+ckpt, "threads:=2", "rate:=2",
		"tasks:=pick,drawer", "max_steps:=10", "size:=64x80", "out:="+out)

	rostest.WaitFor(t, 60*time.Second, "the policy node acting on the simulator's frames", func() error {
		if err := l.running(); err != nil {
			return err
		}
		o, err := m.Run(5*time.Second, "rostopic", "echo", "-n", "1", "/sim/status")
		if err != nil {
			return err
		}
		if !strings.Contains(o, `data: "acting"`) {
			return fmt.Errorf("status %q", o)
		}
		return nil
	})
	res := m.RunParallel(20*time.Second, []string{"rosnode", "list"}, []string{"rostopic", "info", "/sim/camera/image_raw"},
		[]string{"rostopic", "info", "/tf"}, []string{"rostopic", "info", "/joint_states"})
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	for _, n := range []string{"/sim/ttm_node", "/sim/ttm_sim"} {
		if !rostest.Contains(res[0].Out, n) {
			t.Errorf("rosnode list lacks %s:\n%s", n, res[0].Out)
		}
	}
	for i, topic := range []string{"camera", "tf", "joint states"} {
		if info := res[1+i].Out; !strings.Contains(info, "Publishers: \n * /sim/ttm_sim") || !strings.Contains(info[strings.Index(info, "Subscribers:"):], "/sim/ttm_node") {
			t.Errorf("the simulator does not publish the %s topic the policy node reads:\n%s", topic, info)
		}
	}

	if err := l.wait(t, 90*time.Second); err != nil {
		t.Errorf("roslaunch: %v", err)
	}
	o := l.log.String()
	for _, want := range []string{"all episodes done", "process has finished cleanly", "node stopped"} {
		if !strings.Contains(o, want) {
			t.Errorf("roslaunch output lacks %q", want)
		}
	}
	if n := strings.Count(o, "ttm.sim: episode done"); n != 2 {
		t.Errorf("%d episodes reported, want 2", n)
	}
	checkEpisodeFiles(t, out, []string{"01-pick-seed1", "02-drawer-seed1"}, 11) // 10 steps
}
