package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/onnx"
)

func TestBackboneCommand(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.onnx"), filepath.Join(dir, "b.onnx")
	for _, path := range []string{a, b} {
		code, stdout, stderr := runCmd(t, "backbone", "--variant", "b0", "--size", "64", "--film", "8", "--seed", "3", "--out", path)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if !strings.Contains(stdout, "sha256 "+hex.EncodeToString(sum[:])) || !strings.Contains(stdout, "features 1280x2x2") {
			t.Errorf("stdout %q does not report the file's digest and the 1280x2x2 map", stdout)
		}
		m, err := onnx.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Graph.Inputs) != 2 || m.Graph.Inputs[1].Name != "film" {
			t.Errorf("inputs %v, want image and film", m.Graph.Inputs)
		}
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	if string(da) != string(db) {
		t.Error("the same seed wrote different files")
	}

	code, stdout, stderr := runCmd(t, "backbone", "--check", a, "--size", "64", "--film-input", "film", "--film", "8", "--profile", "--frames", "3")
	if code != 0 {
		t.Fatalf("--check: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"output 1280x2x2", "rewrite swish-fusion", "ms per frame (median of 3 frames", "TTMDepthwise",
		"mean frame by part:\n  stem ", "\n  blocks.15 ", "\n  head "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--check output lacks %q:\n%s", want, stdout)
		}
	}

	usage := [][]string{
		{"backbone", "--out", a},
		{"backbone", "--variant", "b9", "--out", a},
		{"backbone", "--variant", "b0", "--padding", "valid", "--out", a},
		{"backbone", "--variant", "b0"},
		{"backbone", "--check", a},
		{"backbone", "--check", a, "--size", "64", "--profile", "--frames", "0"},
	}
	for _, args := range usage {
		if code, _, _ := runCmd(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
	if code, _, stderr := runCmd(t, "backbone", "--check", filepath.Join(dir, "missing.onnx"), "--size", "64"); code != 1 || !strings.Contains(stderr, "no such file") {
		t.Errorf("--check of a missing file: exit %d, %s", code, stderr)
	}
}

func TestLayerPart(t *testing.T) {
	cases := []struct{ name, want string }{
		{"onnx_node!blocks.3/expand/conv", "blocks.3"},
		{"onnx_node!stem/conv", "stem"},
		{"/features/features.1/conv", "features"},
		{"features", "features"},
		{"onnx_node!head", "head"},
	}
	for _, c := range cases {
		if got := layerPart(c.name); got != c.want {
			t.Errorf("layerPart(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
