package vision

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestWindowEqualsReencoding streams frames through a head into a window,
// encoding each frame once (token reuse), and checks after every tick that
// the window equals the last H frames encoded from scratch, oldest first,
// with zeros for frames not yet seen.
func TestWindowEqualsReencoding(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	const H, n = 4, 9
	c := HeadConfig{FeatureChannels: 12, Dim: 8, EmbeddingDim: 5, Tokens: 3, TokenLearnerHidden: 6}
	h := randomHead(t, c, r)
	e := randFloats(r, 5, 1)
	var feats [][]float32
	w := NewWindow(H, c.Tokens, c.Dim)
	acts := h.NewActs(n)
	got := make([]float32, H*c.Tokens*c.Dim)
	frame := c.Tokens * c.Dim
	for tick := range 11 {
		feats = append(feats, randFloats(r, 12*n, 1))
		h.Forward(w.Next(), acts, feats[tick], e) // encode only the new frame
		w.Commit()
		w.Tokens(got)

		want := make([]float32, H*frame)
		for age := range min(H, tick+1) {
			slot := want[(H-1-age)*frame : (H-age)*frame]
			h.Forward(slot, h.NewActs(n), feats[tick-age], e) // re-encode from scratch
			if !slices.Equal(w.Frame(age), slot) {
				t.Fatalf("tick %d: Frame(%d) differs from re-encoding", tick, age)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("tick %d: window differs from re-encoding the last %d frames", tick, H)
		}
		if w.Len() != min(H, tick+1) {
			t.Fatalf("tick %d: Len %d", tick, w.Len())
		}
	}
	if w.Frame(H) != nil || w.Frame(-1) != nil {
		t.Error("Frame beyond the window is not nil")
	}
	w.Reset()
	w.Tokens(got)
	if w.Len() != 0 || slices.ContainsFunc(got, func(v float32) bool { return v != 0 }) || w.Frame(0) != nil {
		t.Error("Reset left frames behind")
	}
}

func TestWindowPushOrder(t *testing.T) {
	w := NewWindow(3, 1, 2)
	got := make([]float32, 6)
	for i, want := range [][]float32{
		{0, 0, 0, 0, 1, 1},
		{0, 0, 1, 1, 2, 2},
		{1, 1, 2, 2, 3, 3},
		{2, 2, 3, 3, 4, 4},
	} {
		v := float32(i + 1)
		w.Push([]float32{v, v})
		w.Tokens(got)
		if !slices.Equal(got, want) {
			t.Errorf("after pushing %v: %v, want %v", v, got, want)
		}
	}
	five := []float32{5, 5}
	if allocs := testing.AllocsPerRun(100, func() { w.Push(five); w.Tokens(got) }); allocs != 0 {
		t.Errorf("%v allocations per tick", allocs)
	}
}
