package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/imagetest"
)

func TestSimCommand(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCmd(t, "sim", "--expert", "--tasks", "pick,pointed_drawer", "--episodes", "3",
		"--seed", "4", "--size", "32x40", "--frames", "5", "--out", dir, "--noise", "0.05")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "task") {
		t.Fatalf("table:\n%s", stdout)
	}
	for i, name := range []string{"pick", "pointed_drawer", "all"} {
		f := strings.Fields(lines[i+1])
		if f[0] != name {
			t.Errorf("row %d is %q, want %s", i+1, lines[i+1], name)
		}
	}
	if f := strings.Fields(lines[1]); f[1] != "no" || f[2] != "3" || f[3] != "3" || f[4] != "100.0%" || f[5] != "44-100%" {
		// Wilson at 3 of 3: (1 + z²/6 - z·sqrt(z²/36)) / (1 + z²/3) = 0.4385.
		t.Errorf("pick row %q, want 3 of 3 episodes solved by the expert, 95 %% interval 44-100%%", lines[1])
	}
	if f := strings.Fields(lines[3]); f[1] != "6" || f[2] != "6" {
		t.Errorf("total row %q", lines[3])
	}
	if !strings.Contains(stderr, "task done") || !strings.Contains(stderr, "strip written") {
		t.Errorf("no progress logged:\n%s", stderr)
	}
	for _, name := range []string{"pick", "pointed_drawer"} {
		img := imagetest.PNG(t, filepath.Join(dir, name+".png"))
		// 3 rows of 32 pixels; a success bar and 5 frames of 40 pixels.
		if b := img.Bounds(); b.Dx() != stripMargin+5*40 || b.Dy() != 3*32 {
			t.Errorf("%s strip is %v", name, b)
		}
		// The bar of a solved episode is green.
		if r, g, _, _ := img.At(1, 1).RGBA(); g <= r {
			t.Errorf("%s: first row's bar is not green", name)
		}
	}
}

func TestSimCommandErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim"}, "--expert"},
		{[]string{"sim", "--expert", "--tasks", "fly"}, "unknown task"},
		{[]string{"sim", "--expert", "--size", "64"}, "--size"},
		{[]string{"sim", "--expert", "--episodes", "0"}, "--episodes"},
		{[]string{"sim", "--expert", "--pause", "1"}, "--pause"},
		{[]string{"sim", "--expert", "extra"}, "unexpected"},
	} {
		code, _, stderr := runCmd(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message about %s", c.args, code, stderr, c.want)
		}
	}
}
