package ros

import (
	"fmt"
	"strings"
)

// Graph resource names, following http://wiki.ros.org/Names and the reference
// implementations (rosgraph.names for Python, ros::names for C++).
//
// A legal name starts with a letter, '/' or '~' and continues with letters,
// digits, '_' and '/'; it never holds "//", and '~' may only come first.
// The empty name is legal and resolves to the namespace. A base name (a node
// name) is a letter followed by letters, digits and '_'.
//
// Resolution, for a node whose full name is /ns/node:
//
//	name      resolves to      kind
//	a         /ns/a            relative to the namespace /ns
//	a/b       /ns/a/b
//	/a        /a               global
//	~a        /ns/node/a       private to the node
//	""        /ns              the namespace itself
//
// A trailing '/' is dropped (canonical form). Remappings are resolved the same
// way before they are matched, and applied once to the resolved name (they do
// not chain).

// ValidateName returns an error naming the first offending character when
// name is not a legal graph resource name. The empty name is legal.
func ValidateName(name string) error {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case isLetter(c):
		case c == '/':
			if i > 0 && name[i-1] == '/' {
				return fmt.Errorf("name %q: \"//\" at offset %d is not allowed", name, i-1)
			}
		case c == '~':
			if i != 0 {
				return fmt.Errorf("name %q: '~' is only allowed as the first character", name)
			}
		case i == 0:
			return fmt.Errorf("name %q: first character %q must be a letter, '/' or '~'", name, c)
		case isDigit(c) || c == '_':
		default:
			return fmt.Errorf("name %q: character %q at offset %d is not allowed (letters, digits, '_' and '/' only)", name, c, i)
		}
	}
	return nil
}

// ValidateBaseName returns an error when name is not a legal base name: a
// letter followed by letters, digits and '_' (no namespace, no '~').
func ValidateBaseName(name string) error {
	if name == "" {
		return fmt.Errorf("base name is empty")
	}
	if !isLetter(name[0]) {
		return fmt.Errorf("base name %q: first character %q must be a letter", name, name[0])
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !isLetter(c) && !isDigit(c) && c != '_' {
			return fmt.Errorf("base name %q: character %q at offset %d is not allowed (letters, digits and '_' only)", name, c, i)
		}
	}
	return nil
}

// CanonicalName drops a trailing '/' from a legal name ("/" stays "/").
func CanonicalName(name string) string {
	if len(name) > 1 && name[len(name)-1] == '/' {
		return name[:len(name)-1]
	}
	return name
}

// IsGlobalName reports whether name starts with '/'.
func IsGlobalName(name string) bool { return strings.HasPrefix(name, "/") }

// IsPrivateName reports whether name starts with '~'.
func IsPrivateName(name string) bool { return strings.HasPrefix(name, "~") }

// ParentNamespace returns the namespace holding a global name:
// "/a/b" -> "/a", "/a" -> "/", "/" -> "/".
func ParentNamespace(global string) string {
	i := strings.LastIndexByte(global, '/')
	if i <= 0 {
		return "/"
	}
	return global[:i]
}

// JoinName appends a relative name to a global namespace: ("/a", "b") ->
// "/a/b", ("/", "b") -> "/b". An empty name returns the namespace.
func JoinName(ns, name string) string {
	name = strings.TrimPrefix(name, "/")
	switch {
	case name == "":
		return ns
	case ns == "/" || ns == "":
		return "/" + name
	default:
		return ns + "/" + name
	}
}

// ResolveName resolves name for the node whose full (global, canonical) name
// is nodeFullName, without remapping. It returns a global canonical name.
func ResolveName(nodeFullName, name string) (string, error) {
	if err := ValidateName(name); err != nil {
		return "", err
	}
	name = CanonicalName(name)
	switch {
	case name == "":
		return ParentNamespace(nodeFullName), nil
	case IsGlobalName(name):
		return name, nil
	case IsPrivateName(name):
		// "~a" and "~/a" both name nodeFullName/a (ros::names::resolve).
		return JoinName(nodeFullName, name[1:]), nil
	default:
		return JoinName(ParentNamespace(nodeFullName), name), nil
	}
}

// CanonicalNamespace turns a namespace as given by __ns:= or ROS_NAMESPACE
// into a global canonical namespace: "robot" -> "/robot", "/robot/" ->
// "/robot", "/" -> "/". Private and empty namespaces are rejected.
func CanonicalNamespace(ns string) (string, error) {
	if ns == "" {
		return "", fmt.Errorf("namespace is empty")
	}
	if err := ValidateName(ns); err != nil {
		return "", fmt.Errorf("namespace: %w", err)
	}
	if IsPrivateName(ns) {
		return "", fmt.Errorf("namespace %q: a namespace cannot be private ('~')", ns)
	}
	if !IsGlobalName(ns) {
		ns = "/" + ns
	}
	return CanonicalName(ns), nil
}

// Remap is one remapping argument from:=to of the command line.
type Remap struct {
	From, To string // as written
	// ResolvedFrom and ResolvedTo are global canonical names, resolved for
	// the node before matching (rospy initialize_mappings).
	ResolvedFrom, ResolvedTo string
}

// Resolver resolves names for one node and applies its remappings.
// It is immutable after NewResolver and safe for concurrent use.
type Resolver struct {
	node   string            // full node name, e.g. /ns/node
	remaps map[string]string // resolved from -> resolved to
}

// NewResolver builds the resolver of the node with full name nodeFullName
// (e.g. "/ns/node"). Each Remap is resolved for that node; a later remap of
// the same resolved name replaces an earlier one, as in rospy and roscpp.
// The Resolved fields of remaps are filled in place.
func NewResolver(nodeFullName string, remaps []Remap) (*Resolver, error) {
	if !IsGlobalName(nodeFullName) || nodeFullName == "/" {
		return nil, fmt.Errorf("node name %q must be a global name such as /ns/node", nodeFullName)
	}
	if err := ValidateName(nodeFullName); err != nil {
		return nil, fmt.Errorf("node name: %w", err)
	}
	if err := ValidateBaseName(nodeFullName[strings.LastIndexByte(nodeFullName, '/')+1:]); err != nil {
		return nil, fmt.Errorf("node name %q: %w", nodeFullName, err)
	}
	r := &Resolver{node: CanonicalName(nodeFullName), remaps: make(map[string]string, len(remaps))}
	for i := range remaps {
		m := &remaps[i]
		if m.From == "" || m.To == "" {
			return nil, fmt.Errorf("remap %q:=%q: both sides must be non-empty names", m.From, m.To)
		}
		from, err := ResolveName(r.node, m.From)
		if err != nil {
			return nil, fmt.Errorf("remap %s:=%s: source: %w", m.From, m.To, err)
		}
		to, err := ResolveName(r.node, m.To)
		if err != nil {
			return nil, fmt.Errorf("remap %s:=%s: target: %w", m.From, m.To, err)
		}
		m.ResolvedFrom, m.ResolvedTo = from, to
		r.remaps[from] = to
	}
	return r, nil
}

// NodeName returns the full name of the node, e.g. "/ns/node".
func (r *Resolver) NodeName() string { return r.node }

// Namespace returns the namespace of the node, e.g. "/ns".
func (r *Resolver) Namespace() string { return ParentNamespace(r.node) }

// Resolve resolves name for the node and applies the remappings: the result
// is the global name to use on the ROS graph.
func (r *Resolver) Resolve(name string) (string, error) {
	res, err := ResolveName(r.node, name)
	if err != nil {
		return "", err
	}
	if to, ok := r.remaps[res]; ok {
		return to, nil
	}
	return res, nil
}

// Remapped returns the remap target of a resolved global name, if any.
func (r *Resolver) Remapped(resolved string) (string, bool) {
	to, ok := r.remaps[resolved]
	return to, ok
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
