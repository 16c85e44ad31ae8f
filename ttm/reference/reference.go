// Package reference carries an independent PyTorch implementation of the
// reference Token Turing Machine (ttm_reference.py), used as the oracle of
// the parity tests and as the PyTorch baseline of `ttm bench --pytorch`.
// It needs Debian's python3-torch and python3-numpy.
package reference

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Script is the source of ttm_reference.py.
//
//go:embed ttm_reference.py
var Script []byte

// Python is the interpreter with PyTorch: Debian's, since a python3 earlier
// on PATH (pyenv) may not have it.
const Python = "/usr/bin/python3"

// Command returns a command running the script with args. The script is
// written to dir first.
func Command(dir string, args ...string) (*exec.Cmd, error) {
	if out, err := exec.Command(Python, "-c", "import torch, numpy").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("the PyTorch reference needs %s with torch and numpy (make setup installs python3-torch): %v: %s", Python, err, out)
	}
	path := filepath.Join(dir, "ttm_reference.py")
	if err := os.WriteFile(path, Script, 0o644); err != nil {
		return nil, err
	}
	return exec.Command(Python, append([]string{path}, args...)...), nil
}
