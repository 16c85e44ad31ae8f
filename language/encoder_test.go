package language

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"unsafe"
)

func sameSlice(a, b []float32) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

func TestEncoderCachesPerInstruction(t *testing.T) {
	m := smallModel(t, 1)
	e := NewEncoder(m, 16)
	a, err := e.Encode("Pick up the apple")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := e.Encode("Pick up the apple")
	c, _ := e.Encode("  pick UP the apple!! ") // same normal form
	d, _ := e.Encode("pick up the banana")
	if !sameSlice(a, b) || !sameSlice(a, c) {
		t.Error("the same instruction returned different slices")
	}
	if sameSlice(a, d) || slices.Equal(a, d) {
		t.Error("different instructions share an embedding")
	}
	want, _ := m.Embed("pick up the apple")
	if !slices.Equal(a, want) {
		t.Errorf("cached embedding %v, model gives %v", a, want)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = e.Encode("Pick up the apple") }); n != 0 {
		t.Errorf("a cache hit allocates %v times", n)
	}
	_, hits, misses := e.CacheStats()
	if hits < 100 || misses != 3 {
		t.Errorf("hits %d misses %d", hits, misses)
	}
}

func TestEncoderCacheIsBounded(t *testing.T) {
	e := NewEncoder(smallModel(t, 1), 8)
	first, _ := e.Encode("pick up item 0")
	for i := range 100 {
		if _, err := e.Encode(fmt.Sprintf("pick up item %d", i)); err != nil {
			t.Fatal(err)
		}
		if n, _, _ := e.CacheStats(); n > 8 {
			t.Fatalf("cache holds %d entries, limit 8", n)
		}
	}
	again, _ := e.Encode("pick up item 0") // evicted: computed afresh, same values
	if sameSlice(first, again) || !slices.Equal(first, again) {
		t.Error("an evicted instruction should come back with equal values in a new slice")
	}
	// Recently used entries survive: keep one hot while others stream by.
	hot, _ := e.Encode("hot instruction")
	for i := range 20 {
		_, _ = e.Encode(fmt.Sprintf("cold %d", i))
		if h, _ := e.Encode("hot instruction"); !sameSlice(h, hot) {
			t.Fatalf("hot instruction evicted after %d others", i)
		}
	}
}

func TestEncoderInvalidate(t *testing.T) {
	m := smallModel(t, 1)
	e := NewEncoder(m, 0)
	before, _ := e.Encode("pick up")
	m.P.Bias[0] += 1
	e.Invalidate()
	after, _ := e.Encode("pick up")
	if math.Abs(float64(after[0]-before[0]-1)) > 1e-5 {
		t.Errorf("after Invalidate: %v, want %v", after[0], before[0]+1)
	}
}

func TestEncoderErrors(t *testing.T) {
	e := NewEncoder(smallModel(t, 1), 4)
	if _, err := e.Encode("?!"); !errors.Is(err, ErrNoWords) {
		t.Errorf("error %v, want ErrNoWords", err)
	}
	if n, _, _ := e.CacheStats(); n != 0 {
		t.Errorf("a failed instruction left %d cache entries", n)
	}
}

func TestEncoderConcurrent(t *testing.T) {
	e := NewEncoder(smallModel(t, 1), 4)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				text := fmt.Sprintf("pick up %d", (g+i)%6)
				v, err := e.Encode(text)
				if err != nil || len(v) != 6 {
					t.Errorf("Encode(%q): %v", text, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkEncode: a cache hit (every control tick) and a miss (a new
// instruction: normalise, tokenize, embed) at the default sizes.
func BenchmarkEncode(b *testing.B) {
	vocab, err := BuildVocab([]string{"pick up the red apple and place it in the top drawer of the cabinet"}, 1)
	if err != nil {
		b.Fatal(err)
	}
	m, err := NewModel(DefaultConfig(), vocab)
	if err != nil {
		b.Fatal(err)
	}
	m.Init(1)
	b.Run("hit", func(b *testing.B) {
		e := NewEncoder(m, 0)
		_, _ = e.Encode("Pick up the red apple")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Encode("Pick up the red apple"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		e := NewEncoder(m, 2)
		texts := []string{"Pick up the red apple", "open the top drawer", "place the sponge in the cabinet"}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Encode(texts[i%3]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
