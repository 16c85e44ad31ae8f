package ros

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestOnlyImporterOfGoroslib checks that no package of the module but this
// one and its test helper imports goroslib's node API (its root package),
// in code or in tests; its message packages may be used anywhere.
func TestOnlyImporterOfGoroslib(t *testing.T) {
	const goroslib = "github.com/bluenviron/goroslib/v2"
	const mod = "github.com/ttmrobot/ttm/"
	allowed := []string{mod + "internal/ros", mod + "internal/rostest"}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	found := false
	for _, l := range lines {
		f := strings.Fields(l)
		if !slices.Contains(f[1:], goroslib) {
			continue
		}
		if f[0] == mod+"internal/ros" {
			found = true
		}
		if !slices.Contains(allowed, f[0]) {
			t.Errorf("%s imports %s: use internal/ros", f[0], goroslib)
		}
	}
	if len(lines) < 20 || !found {
		t.Fatalf("go list saw %d packages and internal/ros importing goroslib: %v; the check sees nothing", len(lines), found)
	}
}
