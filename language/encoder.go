package language

import (
	"container/list"
	"fmt"
	"sync"
)

// DefaultCacheSize is the number of cache entries an Encoder keeps when
// asked for 0.
const DefaultCacheSize = 256

// Encoder maps instructions to embeddings through a bounded LRU cache.
// The same instruction — the same string, or any string with the same
// normal form — returns the same slice, which callers must not modify. A
// hit does not allocate. Encoder is safe for concurrent use.
type Encoder struct {
	model *Model

	mu       sync.Mutex               // mu guards everything below
	capacity int                      // entries kept, >= 2
	entries  map[string]*list.Element // raw and normalised keys -> *cacheEntry
	order    list.List                // front: most recently used
	pooled   []float32                // (TokenDim) scratch of Forward
	hits     uint64
	misses   uint64
}

type cacheEntry struct {
	key string
	vec []float32 // (Width)
}

// NewEncoder returns an Encoder over m keeping up to cacheSize entries
// (0: DefaultCacheSize). A new instruction takes two entries when its raw
// form differs from its normal form.
func NewEncoder(m *Model, cacheSize int) *Encoder {
	if cacheSize == 0 {
		cacheSize = DefaultCacheSize
	}
	e := &Encoder{model: m, capacity: max(cacheSize, 2), entries: map[string]*list.Element{}, pooled: make([]float32, m.Config.TokenDim)}
	e.order.Init()
	return e
}

// Width is the embedding width.
func (e *Encoder) Width() int { return e.model.Config.Width }

// Encode returns the embedding (Width) of an instruction. The slice is
// shared with every other caller asking for the same instruction: read
// it, copy it, never write to it.
func (e *Encoder) Encode(instruction string) ([]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if el, ok := e.entries[instruction]; ok {
		e.order.MoveToFront(el)
		e.hits++
		return el.Value.(*cacheEntry).vec, nil
	}
	e.misses++
	normal := Normalize(instruction)
	if el, ok := e.entries[normal]; ok {
		e.order.MoveToFront(el)
		vec := el.Value.(*cacheEntry).vec
		e.insert(instruction, vec)
		return vec, nil
	}
	tok, err := e.model.Tokenizer.Tokenize(normal)
	if err != nil {
		return nil, fmt.Errorf("encode instruction %q: %w", clip(instruction), err)
	}
	vec := make([]float32, e.model.Config.Width)
	e.model.Forward(vec, e.pooled, tok)
	e.insert(normal, vec)
	if instruction != normal {
		e.insert(instruction, vec)
	}
	return vec, nil
}

// insert adds key at the front, evicting the least recently used entries.
func (e *Encoder) insert(key string, vec []float32) {
	for e.order.Len() >= e.capacity {
		last := e.order.Back()
		delete(e.entries, last.Value.(*cacheEntry).key)
		e.order.Remove(last)
	}
	e.entries[key] = e.order.PushFront(&cacheEntry{key: key, vec: vec})
}

// Invalidate empties the cache; call it after the model's parameters
// change (training). Slices returned before keep their old values.
func (e *Encoder) Invalidate() {
	e.mu.Lock()
	defer e.mu.Unlock()
	clear(e.entries)
	e.order.Init()
}

// CacheStats reports the cache's size and its hits and misses so far.
func (e *Encoder) CacheStats() (entries int, hits, misses uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.order.Len(), e.hits, e.misses
}
