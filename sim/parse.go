package sim

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize parses an image size "HxW" (rows x columns), for example
// "256x320". Each side must be in [8, MaxImageSide].
func ParseSize(s string) (h, w int, err error) {
	hs, ws, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	if !ok {
		return 0, 0, fmt.Errorf("image size %q: want HxW, for example 256x320", s)
	}
	h, err1 := strconv.Atoi(hs)
	w, err2 := strconv.Atoi(ws)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("image size %q: want HxW with whole numbers, for example 256x320", s)
	}
	if h < 8 || w < 8 || h > MaxImageSide || w > MaxImageSide {
		return 0, 0, fmt.Errorf("image size %q: each side must be in [8, %d]", s, MaxImageSide)
	}
	return h, w, nil
}

// SelectTasks parses a task list: "all", "families" (the five RT-1
// families), "memory" (the memory tasks), or task names separated by
// commas. Duplicates are dropped; the order is kept.
func SelectTasks(spec string) ([]*Task, error) {
	var out []*Task
	seen := map[string]bool{}
	add := func(t *Task) {
		if !seen[t.Name] {
			seen[t.Name] = true
			out = append(out, t)
		}
	}
	for _, part := range strings.Split(spec, ",") {
		name := strings.TrimSpace(part)
		switch name {
		case "":
			return nil, fmt.Errorf("task list %q: empty task name", spec)
		case "all":
			for _, t := range registry {
				add(t)
			}
		case "families", "memory":
			for _, t := range registry {
				if t.Memory == (name == "memory") {
					add(t)
				}
			}
		default:
			t, err := TaskByName(name)
			if err != nil {
				return nil, fmt.Errorf("task list %q: %w", spec, err)
			}
			add(t)
		}
	}
	return out, nil
}
