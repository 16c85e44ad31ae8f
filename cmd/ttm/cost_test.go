package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ttmrobot/ttm/internal/imagetest"
	"github.com/ttmrobot/ttm/policy/seq"
)

// TestCostCommand measures two models at the small width and checks the
// table's shape: one row per model and step, FLOPs of the TTM flat and of
// the causal Transformer growing with the episode.
func TestCostCommand(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCmd(t, "cost", "--size", "small", "--models", "ttm,causal", "--steps", "1,50", "--out", dir)
	if code != 0 {
		t.Fatalf("cost: exit %d: %s", code, stderr)
	}
	var rows []seq.CostRow
	b, err := os.ReadFile(filepath.Join(dir, "cost.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rows); err != nil || len(rows) != 4 {
		t.Fatalf("cost.json: %d rows (%v), want 4", len(rows), err)
	}
	if rows[0].Model != "ttm" || rows[0].FLOPs != rows[1].FLOPs {
		t.Errorf("ttm rows %+v %+v: want equal FLOPs at steps 1 and 50", rows[0], rows[1])
	}
	if rows[2].Model != "causal" || rows[3].FLOPs <= rows[2].FLOPs {
		t.Errorf("causal rows %+v %+v: want FLOPs growing with the step", rows[2], rows[3])
	}
	imagetest.PNG(t, filepath.Join(dir, "cost.png"))
	if code, _, _ := runCmd(t, "cost", "--models", "nope", "--out", dir); code != 2 {
		t.Errorf("unknown model: exit %d, want 2", code)
	}
}

// Commands create the folder --out names, or the folder of the file it
// names.
func TestOutCreatesFolder(t *testing.T) {
	for _, tc := range []struct {
		name string
		args func(out string) []string
		file string // what the command writes under out
	}{
		{"cost", func(out string) []string {
			return []string{"cost", "--size", "small", "--models", "ttm", "--steps", "1,10", "--out", out}
		}, "cost.json"},
		{"init", func(out string) []string {
			return []string{"init", "--preset", "small", "--out", filepath.Join(out, "w.safetensors")}
		}, "w.safetensors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "new", "dir")
			if code, _, stderr := runCmd(t, tc.args(out)...); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if _, err := os.Stat(filepath.Join(out, tc.file)); err != nil {
				t.Error(err)
			}
		})
	}
}
