package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"testing"

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
	f, err := os.Open(filepath.Join(dir, "cost.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("cost.png: %v", err)
	}
	if code, _, _ := runCmd(t, "cost", "--models", "nope", "--out", dir); code != 2 {
		t.Errorf("unknown model: exit %d, want 2", code)
	}
}
