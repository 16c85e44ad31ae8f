package eval

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/imagetest"
	"github.com/ttmrobot/ttm/sim"
)

// The outputs of an evaluation: ledger, timing, summary table, decodable
// plots and rollout GIFs with one frame per step and the final frame.
func TestOutputs(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Tasks: tasks(t, "pick,drawer,cue_pick,pointed_drawer"), Episodes: 3, Seed: 2, Height: 24, Width: 32, Workers: 2,
		Runs:   []RunSpec{ExpertRun(sim.ExpertOptions{}), customRun("quitter", func() sim.Agent { return &terminator{} })},
		Videos: 1, VideoDir: filepath.Join(dir, VideoDir)}
	led, tim, err := Evaluate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteOutputs(dir, led, tim); err != nil {
		t.Fatal(err)
	}
	back, err := ReadLedger(filepath.Join(dir, LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	wrote, _ := led.Marshal()
	if again, _ := back.Marshal(); string(again) != string(wrote) {
		t.Error("ledger.json does not read back to the same ledger")
	}
	if _, err := ReadTiming(filepath.Join(dir, TimingFile)); err != nil {
		t.Fatal(err)
	}

	md, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	sum := string(md)
	for _, want := range []string{
		"| family | expert | quitter |",
		"| pick | 100.0 [43.9, 100.0] 3/3 | 0.0 [0.0, 56.1] 0/3 |",
		"| cue_pick (memory) |",
		"| **all 2 families** |",
		"| **all 2 memory tasks** |",
		"| **overall** | 100.0 [75.8, 100.0] 12/12 | 0.0 [0.0, 24.2] 0/12 |",
		"## Timing",
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, sum)
		}
	}

	for _, name := range []string{PlotSuccess, PlotLength} {
		if b := imagetest.PNG(t, filepath.Join(dir, name)).Bounds(); b.Dx() < 300 || b.Dy() < 200 {
			t.Errorf("%s is %v", name, b)
		}
	}

	for _, run := range []string{"expert", "quitter"} {
		for _, task := range cfg.Tasks {
			path := filepath.Join(dir, VideoDir, run, task.Name+"-000.gif")
			g := imagetest.GIF(t, path)
			steps := 0
			for _, e := range led.Run(run).Episodes {
				if e.Task == task.Name && e.Index == 0 {
					steps = e.Steps
				}
			}
			if len(g.Image) != steps+1 || g.Config.Width != 32 || g.Config.Height != 24+barHeight {
				t.Errorf("%s: %d frames of %dx%d, want %d of 32x%d", path, len(g.Image), g.Config.Width, g.Config.Height, steps+1, 24+barHeight)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, VideoDir, run, "pick-001.gif")); err == nil {
			t.Errorf("%s: episode 1 recorded with --videos 1", run)
		}
	}
}
