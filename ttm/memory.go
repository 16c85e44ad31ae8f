package ttm

import (
	"fmt"
	"math"
)

// Memory is a TTM's state between steps: m tokens of width d, all zero at
// the start of an episode (the reference does not learn an initial memory),
// and the number of steps taken since the last Reset.
type Memory struct {
	Tokens []float32 // (m, d)
	M, D   int
	Steps  int64
}

// NewMemory returns a zero memory for c.
func NewMemory(c Config) *Memory {
	return &Memory{Tokens: make([]float32, c.MemorySize*c.Dim), M: c.MemorySize, D: c.Dim}
}

// Reset zeroes the memory for a new episode.
func (s *Memory) Reset() {
	clear(s.Tokens)
	s.Steps = 0
}

// Clone returns an independent copy (a snapshot).
func (s *Memory) Clone() *Memory {
	c := *s
	c.Tokens = append([]float32(nil), s.Tokens...)
	return &c
}

// CopyFrom restores s from a snapshot of the same shape, without allocating.
func (s *Memory) CopyFrom(o *Memory) {
	if o.M != s.M || o.D != s.D {
		panic(fmt.Sprintf("ttm: restoring a %dx%d memory into a %dx%d one", o.M, o.D, s.M, s.D))
	}
	copy(s.Tokens, o.Tokens)
	s.Steps = o.Steps
}

// Hash is a stable 64-bit digest of the memory's contents: FNV-1a over the
// little-endian bytes of the float32 tokens, row-major. It depends only on
// the bits of the tokens (not on Steps), so equal hashes across runs,
// machines and builds mean bit-identical memories (0 and -0 differ).
func (s *Memory) Hash() uint64 {
	return HashFloats(s.Tokens)
}

// HashOffset is the FNV-1a 64 offset basis: the digest of no bytes.
const HashOffset uint64 = 14695981039346656037

// HashFloats is the FNV-1a 64 digest of the little-endian bytes of x.
func HashFloats(x []float32) uint64 { return HashFloatsFrom(HashOffset, x) }

// HashFloatsFrom continues the FNV-1a 64 digest h over the little-endian
// bytes of x, so that several slices can be hashed as one.
func HashFloatsFrom(h uint64, x []float32) uint64 {
	const prime = 1099511628211
	for _, v := range x {
		b := math.Float32bits(v)
		h = (h ^ uint64(b&0xff)) * prime
		h = (h ^ uint64(b>>8&0xff)) * prime
		h = (h ^ uint64(b>>16&0xff)) * prime
		h = (h ^ uint64(b>>24)) * prime
	}
	return h
}
