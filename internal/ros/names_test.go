package ros

import (
	"strings"
	"testing"
)

// The resolution table of http://wiki.ros.org/Names ("Resolving"), plus the
// empty name, canonical forms and the roscpp reading of "~/a".
func TestResolveNameWikiTable(t *testing.T) {
	for _, tc := range []struct{ node, name, want string }{
		{"/node1", "bar", "/bar"},
		{"/node1", "/bar", "/bar"},
		{"/node1", "~bar", "/node1/bar"},
		{"/wg/node2", "bar", "/wg/bar"},
		{"/wg/node2", "/bar", "/bar"},
		{"/wg/node2", "~bar", "/wg/node2/bar"},
		{"/wg/node3", "foo/bar", "/wg/foo/bar"},
		{"/wg/node3", "/foo/bar", "/foo/bar"},
		{"/wg/node3", "~foo/bar", "/wg/node3/foo/bar"},
		// the brief's example
		{"/ns/node", "a", "/ns/a"},
		{"/ns/node", "~a", "/ns/node/a"},
		{"/ns/node", "/a", "/a"},
		// empty name: the namespace; "~": the node's private namespace
		{"/ns/node", "", "/ns"},
		{"/node", "", "/"},
		{"/ns/node", "~", "/ns/node"},
		{"/ns/node", "~/a", "/ns/node/a"},
		// canonical form: trailing slash dropped
		{"/ns/node", "a/", "/ns/a"},
		{"/ns/node", "/a/b/", "/a/b"},
		{"/ns/node", "/", "/"},
		{"/a/b/c/node", "x/y_2/Z", "/a/b/c/x/y_2/Z"},
	} {
		got, err := ResolveName(tc.node, tc.name)
		if err != nil || got != tc.want {
			t.Errorf("ResolveName(%q, %q) = %q, %v; want %q", tc.node, tc.name, got, err, tc.want)
		}
	}
}

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wantErr string // "" means legal
	}{
		{"", ""},
		{"a", ""},
		{"/a/b_c/D9", ""},
		{"~a/b", ""},
		{"~", ""},
		{"/", ""},
		{"a/", ""},
		{"9a", "first character"},
		{"_a", "first character"},
		{"-a", "first character"},
		{"a//b", `"//"`},
		{"//a", `"//"`},
		{"a~b", "'~' is only allowed"},
		{"~~a", "'~' is only allowed"},
		{"a b", "character ' '"},
		{"a.b", "character '.'"},
		{"a-b", "character '-'"},
		{"a:b", "character ':'"},
		{"é", "first character"},
	} {
		err := ValidateName(tc.name)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("ValidateName(%q) = %v, want legal", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("ValidateName(%q) = %v, want an error containing %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestValidateBaseName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"node", true}, {"ttm_node2", true}, {"N", true},
		{"", false}, {"a/b", false}, {"/a", false}, {"~a", false}, {"2a", false}, {"_a", false}, {"a-b", false},
	} {
		if err := ValidateBaseName(tc.name); (err == nil) != tc.ok {
			t.Errorf("ValidateBaseName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestCanonicalNamespace(t *testing.T) {
	for _, tc := range []struct{ in, want, wantErr string }{
		{"/", "/", ""},
		{"robot", "/robot", ""},
		{"/robot/", "/robot", ""},
		{"a/b", "/a/b", ""},
		{"", "", "empty"},
		{"~x", "", "private"},
		{"/a//b", "", `"//"`},
		{"1robot", "", "first character"},
	} {
		got, err := CanonicalNamespace(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("CanonicalNamespace(%q) = %q, %v; want error containing %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("CanonicalNamespace(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// The remapping table of http://wiki.ros.org/Names ("Remapping"): both sides
// resolve before matching, and every listed matching name maps to the final
// name.
func TestRemapWikiTable(t *testing.T) {
	for _, tc := range []struct {
		node     string
		from, to string
		matching []string
		final    string
	}{
		{"/node", "foo", "bar", []string{"foo", "/foo"}, "/bar"},
		{"/baz/node", "foo", "bar", []string{"foo", "/baz/foo"}, "/baz/bar"},
		{"/node", "/foo", "bar", []string{"foo", "/foo"}, "/bar"},
		{"/baz/node", "/foo", "bar", []string{"/foo"}, "/baz/bar"},
		{"/baz/node", "/foo", "/a/b/c/bar", []string{"/foo"}, "/a/b/c/bar"},
		// private sources and targets resolve against the node
		{"/ns/node", "~in", "out", []string{"~in", "/ns/node/in"}, "/ns/out"},
		{"/ns/node", "image", "~cam", []string{"image", "/ns/image"}, "/ns/node/cam"},
	} {
		r, err := NewResolver(tc.node, []Remap{{From: tc.from, To: tc.to}})
		if err != nil {
			t.Fatalf("NewResolver(%q, %s:=%s): %v", tc.node, tc.from, tc.to, err)
		}
		for _, name := range tc.matching {
			got, err := r.Resolve(name)
			if err != nil || got != tc.final {
				t.Errorf("node %s, %s:=%s: Resolve(%q) = %q, %v; want %q", tc.node, tc.from, tc.to, name, got, err, tc.final)
			}
		}
	}
}

func TestRemapDoesNotChainOrLeak(t *testing.T) {
	r, err := NewResolver("/ns/node", []Remap{{From: "a", To: "b"}, {From: "b", To: "c"}, {From: "x", To: "y"}, {From: "x", To: "z"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, want string }{
		{"a", "/ns/b"}, // applied once: not /ns/c
		{"b", "/ns/c"},
		{"x", "/ns/z"},               // a later remap of the same name wins
		{"/a", "/a"},                 // a different resolved name does not match
		{"~a", "/ns/node/a"},         // neither does the private one
		{"a/sub", "/ns/a/sub"},       // nor a child name
		{"other", "/ns/other"},       // untouched
		{"/ns/a", "/ns/b"},           // the global spelling of the same name matches
		{"/ns/node/x", "/ns/node/x"}, // and a near-miss does not
	} {
		got, err := r.Resolve(tc.name)
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if r.NodeName() != "/ns/node" || r.Namespace() != "/ns" {
		t.Errorf("NodeName, Namespace = %q, %q; want /ns/node, /ns", r.NodeName(), r.Namespace())
	}
}

func TestNewResolverErrors(t *testing.T) {
	for _, tc := range []struct {
		node    string
		remaps  []Remap
		wantErr string
	}{
		{"node", nil, "global name"},
		{"/", nil, "global name"},
		{"/ns/2node", nil, "first character"},
		{"/ns/node", []Remap{{From: "a b", To: "c"}}, "source"},
		{"/ns/node", []Remap{{From: "a", To: "c:d"}}, "target"},
		{"/ns/node", []Remap{{From: "", To: "c"}}, "non-empty"},
	} {
		_, err := NewResolver(tc.node, tc.remaps)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("NewResolver(%q, %v) = %v, want error containing %q", tc.node, tc.remaps, err, tc.wantErr)
		}
	}
}

func TestParentAndJoin(t *testing.T) {
	for _, tc := range []struct{ in, want string }{{"/a/b", "/a"}, {"/a", "/"}, {"/", "/"}, {"/a/b/c", "/a/b"}} {
		if got := ParentNamespace(tc.in); got != tc.want {
			t.Errorf("ParentNamespace(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ ns, name, want string }{{"/", "a", "/a"}, {"/x", "a/b", "/x/a/b"}, {"/x", "", "/x"}, {"/x", "/a", "/x/a"}} {
		if got := JoinName(tc.ns, tc.name); got != tc.want {
			t.Errorf("JoinName(%q, %q) = %q, want %q", tc.ns, tc.name, got, tc.want)
		}
	}
}

// FuzzResolveName checks that every resolved name is a legal, global,
// canonical name that resolves to itself.
func FuzzResolveName(f *testing.F) {
	for _, s := range [][2]string{
		{"/ns/node", "a"}, {"/ns/node", "~a/b"}, {"/node", "/x/"}, {"/a/b/n", ""},
		{"/ns/node", "a//b"}, {"/ns/node", "~~"}, {"/n", "~/x"}, {"/n", "9"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, node, name string) {
		r, err := NewResolver(node, nil)
		if err != nil {
			return
		}
		got, err := r.Resolve(name)
		if err != nil {
			if ValidateName(name) == nil {
				t.Fatalf("Resolve(%q) failed on a legal name: %v", name, err)
			}
			return
		}
		if !IsGlobalName(got) || ValidateName(got) != nil || CanonicalName(got) != got {
			t.Fatalf("Resolve(%q) for %s = %q: not a legal global canonical name", name, node, got)
		}
		again, err := r.Resolve(got)
		if err != nil || again != got {
			t.Fatalf("Resolve(Resolve(%q)) = %q, %v; want %q", name, again, err, got)
		}
		if IsPrivateName(name) && !strings.HasPrefix(got, r.NodeName()) {
			t.Fatalf("private %q resolved to %q outside %s", name, got, r.NodeName())
		}
	})
}
