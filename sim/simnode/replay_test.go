package simnode

import (
	"reflect"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/sim"
)

// ReplayFrames sends a frame shared by several steps once, at its first
// step's time from the episode's start, with that step's proprioception.
func TestReplayFrames(t *testing.T) {
	t0 := time.Unix(100, 0)
	a, b := make([]byte, 12), make([]byte, 12)
	b[0] = 1
	ep := &sim.RecordedEpisode{Info: sim.EpisodeInfo{Height: 2, Width: 2}, Steps: []sim.RecordedStep{
		{Stamp: t0, Image: a, Proprio: []float32{1}},
		{Stamp: t0.Add(100 * time.Millisecond), Image: a, Proprio: []float32{2}}, // a second action on the same frame
		{Stamp: t0.Add(300 * time.Millisecond), Image: b},
	}}
	got := ReplayFrames(ep)
	if len(got) != 2 {
		t.Fatalf("%d frames, want 2", len(got))
	}
	for i, want := range []struct {
		at      time.Duration
		first   byte
		proprio []float32
	}{{0, 0, []float32{1}}, {300 * time.Millisecond, 1, nil}} {
		f := got[i]
		if f.At != want.at || f.Height != 2 || f.Width != 2 || f.RGB[0] != want.first || !reflect.DeepEqual(f.Proprio, want.proprio) {
			t.Errorf("frame %d: %+v, want at %v, first byte %d, proprio %v", i, f, want.at, want.first, want.proprio)
		}
	}
}
