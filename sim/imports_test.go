package sim

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const mod = "github.com/ttmrobot/ttm/"

// TestImports checks the dependency rule: sim imports nothing of the
// project's except internal packages, and no ROS library.
func TestImports(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	if len(files) == 0 {
		t.Fatal("no Go files found")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			own := strings.HasPrefix(p, mod)
			if own && p != mod+"sim" && !strings.HasPrefix(p, mod+"internal/") || strings.Contains(p, "goroslib") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}

// TestDependencies checks the arrows around the simulator over everything
// the packages and their tests pull in (go list -deps -test): the
// simulator and its ROS node need none of the policy stack, the simulator
// no ROS library, and the policy node not the simulator.
func TestDependencies(t *testing.T) {
	stack := []string{"policy", "ttm", "vision", "language"}
	for _, tc := range []struct {
		pkg      string   // relative to this directory
		banned   []string // the module's packages, each with its subpackages
		external string   // a library outside the module, by a part of its path ("" none)
	}{
		{".", append(stack, "sim/simnode", "node"), "/goroslib/"},
		{"./simnode", append(stack, "node"), ""},
		{"../node", []string{"sim"}, ""},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "-test", tc.pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps -test %s: %v", tc.pkg, err)
			}
			deps := strings.Fields(string(out))
			if len(deps) < 10 {
				t.Fatalf("go list -deps -test %s lists only %v", tc.pkg, deps)
			}
			for _, d := range deps {
				d, _, _ = strings.Cut(d, " ") // a test variant: "p [p.test]"
				if tc.external != "" && strings.Contains(d, tc.external) {
					t.Errorf("%s depends on %s", tc.pkg, d)
				}
				rel, own := strings.CutPrefix(d, mod)
				for _, b := range tc.banned {
					if own && (rel == b || strings.HasPrefix(rel, b+"/")) {
						t.Errorf("%s depends on %s", tc.pkg, d)
					}
				}
			}
		})
	}
}
