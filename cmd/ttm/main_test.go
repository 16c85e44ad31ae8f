package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/internal/safetensors"
	"github.com/ttmrobot/ttm/ttm"
)

// runCmd runs the binary's entry point in-process and returns its exit
// code, stdout and stderr (logs included).
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &environment{stdout: &out, stderr: &errb,
		log: hclog.New(&hclog.LoggerOptions{Name: "ttm", Output: &errb, Level: hclog.Info})}
	code := run(env, args)
	return code, out.String(), errb.String()
}

func TestInitTraceBench(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.json")
	os.WriteFile(cfg, []byte(`{"memory_size":8,"process_size":4,"input_tokens":6,"dim":32,"num_layers":1,"num_heads":4,"mlp_dim":32,"summariser_hidden":16,"memory_mode":"TL-MHA","processing_unit":"mixer"}`), 0o644)
	w1, w2 := filepath.Join(dir, "a.safetensors"), filepath.Join(dir, "b.safetensors")
	for _, w := range []string{w1, w2} {
		if code, _, stderr := runCmd(t, "init", "--config", cfg, "--seed", "4", "--out", w); code != 0 {
			t.Fatalf("init: exit %d: %s", code, stderr)
		}
	}
	b1, _ := os.ReadFile(w1)
	b2, _ := os.ReadFile(w2)
	if !bytes.Equal(b1, b2) {
		t.Error("init with the same seed wrote different files")
	}
	m, err := ttm.Load(w1)
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MemoryMode != ttm.QueryAttention || m.Config.NumLayers != 1 {
		t.Errorf("config not taken from the file: %+v", m.Config)
	}

	// trace: 5 steps from a given memory, checked against the library.
	c := m.Config
	inputs := make([]float32, 5*c.InputTokens*c.Dim)
	for i := range inputs {
		inputs[i] = float32(i%11) * 0.1
	}
	start := make([]float32, c.MemorySize*c.Dim)
	start[3] = 2
	in := safetensors.New()
	in.Tensors["inputs"] = safetensors.FromFloat32(inputs, 5, c.InputTokens, c.Dim)
	in.Tensors["memory"] = safetensors.FromFloat32(start, c.MemorySize, c.Dim)
	inPath, outPath := filepath.Join(dir, "in.safetensors"), filepath.Join(dir, "out.safetensors")
	if err := safetensors.WriteFile(inPath, in); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd(t, "trace", "--weights", w1, "--inputs", inPath, "--out", outPath); code != 0 {
		t.Fatalf("trace: exit %d: %s", code, stderr)
	}
	out, err := safetensors.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	wantOut, wantMem, _ := ttm.Trace(ttm.NewMachine(m), inputs, start)
	for name, want := range map[string]struct {
		shape []int
		data  []float32
	}{
		"outputs":  {[]int{5, c.ProcessSize, c.Dim}, wantOut},
		"memories": {[]int{5, c.MemorySize, c.Dim}, wantMem},
		"memory":   {[]int{c.MemorySize, c.Dim}, wantMem[4*c.MemorySize*c.Dim:]},
	} {
		got := out.Tensors[name]
		data, _ := got.Floats()
		if !slices.Equal(got.Shape, want.shape) || !slices.Equal(data, want.data) {
			t.Errorf("%s: shape %v, want %v, or data differs", name, got.Shape, want.shape)
		}
	}

	// bench --json reports the documented fields.
	code, stdout, stderr := runCmd(t, "bench", "--weights", w1, "--steps", "30", "--json", "--bandwidth=false")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("bench --json printed %q: %v", stdout, err)
	}
	for _, k := range []string{"median_ms", "p99_ms", "max_ms", "first_ms", "last_ms", "gflops", "allocs_per_step"} {
		if _, ok := res[k]; !ok {
			t.Errorf("bench --json lacks %s", k)
		}
	}
	num := func(k string) float64 { v, _ := res[k].(float64); return v }
	if num("median_ms") <= 0 || num("p99_ms") < num("median_ms") || num("max_ms") < num("p99_ms") {
		t.Errorf("inconsistent latencies: %v", res)
	}
	// One-off runtime allocations (a worker parking for the first time) may
	// land in a 30-step run; a per-step allocation would show as >= 1.
	if num("allocs_per_step") > 0.1 {
		t.Errorf("%.2f allocations per step", num("allocs_per_step"))
	}
}

func TestCommandErrors(t *testing.T) {
	dir := t.TempDir()
	w := filepath.Join(dir, "w.safetensors")
	if code, _, stderr := runCmd(t, "init", "--preset", "small", "--out", w); code != 0 {
		t.Fatal(stderr)
	}
	bad := safetensors.New()
	bad.Tensors["inputs"] = safetensors.FromFloat32(make([]float32, 2*3*5), 2, 3, 5)
	badPath := filepath.Join(dir, "bad.safetensors")
	safetensors.WriteFile(badPath, bad)
	garbage := filepath.Join(dir, "garbage.safetensors")
	os.WriteFile(garbage, []byte("not a checkpoint at all"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"fly"}, 2, `unknown command "fly"`},
		{"missing out", []string{"init", "--preset", "small"}, 2, "--out is required"},
		{"both config and preset", []string{"init", "--preset", "small", "--config", "x.json", "--out", w}, 2, "not both"},
		{"unknown preset", []string{"init", "--preset", "huge", "--out", w}, 1, `unknown preset "huge"`},
		{"bad flag", []string{"bench", "--wieghts", w}, 2, "flag provided but not defined"},
		{"inputs of the wrong shape", []string{"trace", "--weights", w, "--inputs", badPath, "--out", filepath.Join(dir, "o")}, 1, `tensor "inputs" has shape [2 3 5], want [-1 16 64]`},
		{"weights not a checkpoint", []string{"bench", "--weights", garbage}, 1, "header length"},
		{"missing weights file", []string{"bench", "--weights", filepath.Join(dir, "nope")}, 1, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, stderr, tc.code, tc.want)
			}
		})
	}
}
