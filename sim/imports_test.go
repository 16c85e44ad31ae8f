package sim

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports checks the dependency rule: sim imports nothing of the
// project's except policy and internal packages, and no ROS library.
func TestImports(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	if len(files) == 0 {
		t.Fatal("no Go files found")
	}
	const mod = "github.com/ttmrobot/ttm/"
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
			if own && p != mod+"policy" && p != mod+"sim" && !strings.HasPrefix(p, mod+"internal/") || strings.Contains(p, "goroslib") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}
