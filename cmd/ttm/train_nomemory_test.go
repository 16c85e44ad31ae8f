package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/policy"
)

// --no-memory is recorded in the checkpoint (ttm.config no_memory), so
// that it runs without memory wherever it is loaded; a resumed run goes on
// without memory with no flag, and a checkpoint trained with memory does
// not become a no-memory one.
func TestTrainNoMemory(t *testing.T) {
	data, out := t.TempDir(), t.TempDir()
	recordTinyDataset(t, data, 1)
	common := []string{"train", "--data", data, "--batch", "1", "--window", "2", "--workers", "1", "--log-every", "1"}
	train := func(ckpt string, args ...string) (int, string) {
		code, _, stderr := runCmd(t, append(append(common, "--out", ckpt), args...)...)
		return code, stderr
	}
	recorded := func(ckpt string) (checkpoint, log bool) {
		t.Helper()
		p, err := policy.Load(ckpt, policy.Options{NoBackbone: true})
		if err != nil {
			t.Fatal(err)
		}
		var lg trainLog
		b, _ := os.ReadFile(newTrainFiles(ckpt).log)
		if err := json.Unmarshal(b, &lg); err != nil {
			t.Fatalf("JSON log: %v", err)
		}
		return p.Spec().TTM.NoMemory, lg.Config.NoMemory
	}

	nomem, mem := filepath.Join(out, "nomem.safetensors"), filepath.Join(out, "mem.safetensors")
	for _, tc := range []struct {
		name string
		ckpt string
		args []string
		want bool
	}{
		{"fresh --no-memory", nomem, []string{"--no-memory", "--steps", "1"}, true},
		{"resumed without the flag", nomem, []string{"--steps", "2"}, true},
		{"fresh with memory", mem, []string{"--steps", "1"}, false},
	} {
		if code, stderr := train(tc.ckpt, tc.args...); code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, stderr)
		}
		if ckpt, log := recorded(tc.ckpt); ckpt != tc.want || log != tc.want {
			t.Errorf("%s: the checkpoint's no_memory is %v, the log's %v; want %v", tc.name, ckpt, log, tc.want)
		}
	}
	code, stderr := train(filepath.Join(out, "from-mem.safetensors"), "--init", mem, "--no-memory", "--steps", "1")
	if code != 2 || !strings.Contains(stderr, "was trained with memory") {
		t.Errorf("--no-memory from a memory checkpoint: exit %d: %s", code, stderr)
	}
}
