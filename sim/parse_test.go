package sim

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		h, w int
		bad  bool
	}{
		{in: "256x320", h: 256, w: 320},
		{in: " 64X80 ", h: 64, w: 80},
		{in: "8x8", h: 8, w: 8},
		{in: "256", bad: true},
		{in: "256x", bad: true},
		{in: "x320", bad: true},
		{in: "7x80", bad: true},
		{in: "64x-80", bad: true},
		{in: "64x5000", bad: true},
		{in: "64x80x3", bad: true},
		{in: "1e2x80", bad: true},
		{in: "", bad: true},
	} {
		h, w, err := ParseSize(c.in)
		if c.bad != (err != nil) || !c.bad && (h != c.h || w != c.w) {
			t.Errorf("ParseSize(%q) = %d, %d, %v", c.in, h, w, err)
		}
	}
}

func TestSelectTasks(t *testing.T) {
	names := func(ts []*Task) string {
		var s []string
		for _, t := range ts {
			s = append(s, t.Name)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct{ in, want string }{
		{"all", "pick,knock,upright,move,drawer,cue_pick,put_back,pointed_drawer"},
		{"families", "pick,knock,upright,move,drawer"},
		{"memory", "cue_pick,put_back,pointed_drawer"},
		{"drawer, pick,drawer", "drawer,pick"},
		{"memory,pick", "cue_pick,put_back,pointed_drawer,pick"},
	} {
		ts, err := SelectTasks(c.in)
		if err != nil || names(ts) != c.want {
			t.Errorf("SelectTasks(%q) = %s, %v; want %s", c.in, names(ts), err, c.want)
		}
	}
	for _, in := range []string{"", "pick,", "pick,,knock", "Pick", "fly"} {
		if _, err := SelectTasks(in); err == nil {
			t.Errorf("SelectTasks(%q) succeeded", in)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"256x320", "64x80", "8x8", "x", "4096x4096", "4097x1", "-1x5", "0x0", "1x2x3", " 12x34 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, w, err := ParseSize(s)
		if err != nil {
			return
		}
		if h < 8 || w < 8 || h > MaxImageSide || w > MaxImageSide {
			t.Fatalf("ParseSize(%q) accepted %dx%d", s, h, w)
		}
		// Whatever it accepts, a renderer accepts.
		if _, err := NewEpisode(registry[0], 0, Options{Height: h, Width: w}); err != nil {
			t.Fatalf("ParseSize(%q) = %dx%d, but NewEpisode refuses it: %v", s, h, w, err)
		}
	})
}

func FuzzSelectTasks(f *testing.F) {
	for _, s := range []string{"all", "families", "memory", "pick,knock", "pick,,", "", " drawer ", "x,all"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := SelectTasks(s)
		if err != nil {
			return
		}
		if len(ts) == 0 {
			t.Fatalf("SelectTasks(%q) returned no tasks and no error", s)
		}
		seen := map[string]bool{}
		for _, task := range ts {
			if task == nil || seen[task.Name] {
				t.Fatalf("SelectTasks(%q) returned %v", s, ts)
			}
			seen[task.Name] = true
		}
	})
}
