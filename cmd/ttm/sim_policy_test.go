package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The policy drives the simulator through the same Step the node runs; an
// untrained one must still play whole episodes and report them.
func TestSimWithPolicy(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "small.safetensors")
	if code, _, stderr := runCmd(t, "init", "--policy", "--preset", "small", "--seed", "3", "--out", ckpt); code != 0 {
		t.Fatalf("init: %s", stderr)
	}
	code, stdout, stderr := runCmd(t, "sim", "--policy", ckpt, "--tasks", "pick,cue_pick", "--episodes", "2", "--size", "64x80",
		"--out", filepath.Join(dir, "strips"))
	if code != 0 {
		t.Fatalf("sim --policy: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"pick", "cue_pick", "all"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("success table lacks %q:\n%s", want, stdout)
		}
	}
	if code, _, stderr := runCmd(t, "sim", "--expert", "--policy", ckpt); code != 2 || !strings.Contains(stderr, "exactly one") {
		t.Errorf("--expert with --policy: exit %d, %s", code, stderr)
	}
}
