package safetensors

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Want is one F32 tensor a checkpoint reader expects: its name in the file,
// its shape, and the slice its values are decoded into (as many elements as
// the shape holds).
type Want struct {
	Name  string
	Shape []int
	Dst   []float32
}

// Set is the tensors one part of a checkpoint (a model under its prefix)
// must hold, and how to name its problems.
type Set struct {
	// What starts the error: "<What> does not match its configuration".
	What string
	// Tensors are read in order.
	Tensors []Want
	// Owns reports the names that belong to the set (normally a prefix
	// test): every one of them that is not wanted is an unexpected tensor.
	Owns func(name string) bool
	// Explain, if not nil, follows "unexpected tensor <name>" (for
	// example the configuration that leaves it out).
	Explain func(name string) string
	// Limit bounds the problems listed (0: all of them).
	Limit int
	// Needs names what fixes the shapes in a shape problem ("tensor t has
	// shape [..], <Needs> [..]"); it defaults to "the configuration needs".
	Needs string
}

// Load reads the set's tensors from f into their Dst. It checks each
// tensor's presence, dtype, shape and values (CheckWeights)
// and looks for unexpected tensors, and reports every problem it finds in
// one error, each naming the tensor: the wanted tensors in order, then the
// unexpected ones in name order.
func (f *File) Load(s Set) error {
	needs := s.Needs
	if needs == "" {
		needs = "the configuration needs"
	}
	var problems []string
	known := make(map[string]bool, len(s.Tensors))
	for _, w := range s.Tensors {
		known[w.Name] = true
		t, ok := f.Tensors[w.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("missing tensor %s (F32 %v)", w.Name, w.Shape))
		case !slices.Equal(t.Shape, w.Shape):
			problems = append(problems, fmt.Sprintf("tensor %s has shape %v, %s %v", w.Name, t.Shape, needs, w.Shape))
		default:
			if err := t.Float32(w.Dst); err != nil {
				problems = append(problems, fmt.Sprintf("tensor %s: %v", w.Name, err))
			} else if err := CheckWeights(w.Name, w.Dst); err != nil {
				problems = append(problems, err.Error())
			}
		}
	}
	var extra []string
	if s.Owns != nil {
		for name := range f.Tensors {
			if s.Owns(name) && !known[name] {
				extra = append(extra, name)
			}
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		p := "unexpected tensor " + name
		if s.Explain != nil {
			p += s.Explain(name)
		}
		problems = append(problems, p)
	}
	if len(problems) == 0 {
		return nil
	}
	more := ""
	if s.Limit > 0 && len(problems) > s.Limit {
		more = fmt.Sprintf("\n... and %d more", len(problems)-s.Limit)
		problems = problems[:s.Limit]
	}
	return errors.New(s.What + " does not match its configuration:\n  " + strings.Join(problems, "\n  ") + more)
}

// HasPrefix returns a Set.Owns that claims the names starting with any of
// prefixes.
func HasPrefix(prefixes ...string) func(string) bool {
	return func(name string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
}

// LoadFile reads the file at path and builds a T from it with from. Its
// errors say "load <what>" and name the file.
func LoadFile[T any](path, what string, from func(*File) (T, error)) (T, error) {
	var zero T
	f, err := ReadFile(path)
	if err != nil {
		return zero, fmt.Errorf("load %s: %w", what, err)
	}
	v, err := from(f)
	if err != nil {
		return zero, fmt.Errorf("load %s %s: %w", what, path, err)
	}
	return v, nil
}

// MaxWeight bounds the magnitude of a model's weights. Trained weights here
// stay under 5; one flipped exponent bit makes -0.074 into -2.5e37, a
// weight that loads, warms up and drives the gripper wrong.
const MaxWeight = 1e4

// CheckWeights returns an error naming tensor name and its first element
// that is NaN, Inf or larger in magnitude than MaxWeight, or nil.
func CheckWeights(name string, x []float32) error {
	if err := CheckFinite(name, x); err != nil {
		return err
	}
	for i, v := range x {
		if v > MaxWeight || v < -MaxWeight {
			return fmt.Errorf("tensor %s holds %v at element %d, beyond the %g a weight may have (a corrupt file?)", name, v, i, float64(MaxWeight))
		}
	}
	return nil
}

// CheckFinite returns an error naming tensor name and the first element of
// x that is NaN or Inf, or nil when every element is finite.
func CheckFinite(name string, x []float32) error {
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("tensor %s holds %v at element %d", name, v, i)
		}
	}
	return nil
}
