package language

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"unicode/utf8"
)

// Limits on one instruction.
const (
	MaxInstructionBytes = 8192
	MaxWords            = 256
)

// ErrNoWords is returned for an instruction without any word (empty, or
// only punctuation and spaces).
var ErrNoWords = errors.New("instruction has no words")

// Piece is one row of the embedding table and its weight in the
// instruction's mean vector.
type Piece struct {
	Row    int32
	Weight float32
}

// Tokens is a tokenized instruction: its words, and the pieces whose
// weighted sum Σ Weight·table[Row] is the mean of its word vectors
// (the weights add up to one).
type Tokens struct {
	Words  []string
	Pieces []Piece
}

// Tokenizer maps normalised words to embedding rows: vocabulary words to
// their own row, other words to hashed character n-grams (see the
// package doc), or to <unk> (row 0) without hash buckets.
type Tokenizer struct {
	vocab          *Vocab
	buckets        int
	nMin, nMax     int
	firstBucketRow int32 // V + 1
	wordNGrams     int   // Config.WordNGrams
}

// NewTokenizer returns a tokenizer over vocab with the given hash buckets
// and n-gram lengths (runes).
func NewTokenizer(vocab *Vocab, buckets, nMin, nMax int) (*Tokenizer, error) {
	if buckets < 0 {
		return nil, fmt.Errorf("tokenizer: %d hash buckets", buckets)
	}
	if buckets > 0 && (nMin < 1 || nMax < nMin || nMax > 16) {
		return nil, fmt.Errorf("tokenizer: n-gram lengths %d..%d (want 1 <= min <= max <= 16)", nMin, nMax)
	}
	return &Tokenizer{vocab: vocab, buckets: buckets, nMin: nMin, nMax: nMax, firstBucketRow: int32(vocab.Len() + 1)}, nil
}

// Rows is the number of embedding rows the tokenizer addresses:
// 1 (<unk>) + V + buckets.
func (t *Tokenizer) Rows() int { return 1 + t.vocab.Len() + t.buckets }

// Tokenize normalises text and returns its pieces. It fails for text over
// MaxInstructionBytes or MaxWords, and with ErrNoWords for text without
// words.
func (t *Tokenizer) Tokenize(text string) (Tokens, error) {
	if len(text) > MaxInstructionBytes {
		return Tokens{}, fmt.Errorf("instruction of %d bytes exceeds the limit of %d", len(text), MaxInstructionBytes)
	}
	words := Words(text)
	if len(words) == 0 {
		return Tokens{}, ErrNoWords
	}
	if len(words) > MaxWords {
		return Tokens{}, fmt.Errorf("instruction of %d words exceeds the limit of %d", len(words), MaxWords)
	}
	tok := Tokens{Words: words}
	perWord := 1 / float32(len(words)+t.wordGramCount(len(words)))
	var grams []int32
	for _, w := range words {
		if row, ok := t.vocab.Row(w); ok {
			tok.Pieces = append(tok.Pieces, Piece{Row: row, Weight: perWord})
			continue
		}
		if t.buckets == 0 {
			tok.Pieces = append(tok.Pieces, Piece{Row: 0, Weight: perWord})
			continue
		}
		grams = t.ngramBuckets(grams[:0], w)
		wt := perWord / float32(len(grams))
		for _, b := range grams {
			tok.Pieces = append(tok.Pieces, Piece{Row: t.firstBucketRow + b, Weight: wt})
		}
	}
	for n := 2; n <= t.wordNGrams; n++ {
		for i := 0; i+n <= len(words); i++ {
			tok.Pieces = append(tok.Pieces, Piece{Row: t.firstBucketRow + t.bucket(wordGram(words[i:i+n])), Weight: perWord})
		}
	}
	return tok, nil
}

// wordGramCount is the number of word n-grams (2..wordNGrams) of an
// instruction of n words.
func (t *Tokenizer) wordGramCount(n int) int {
	c := 0
	for k := 2; k <= t.wordNGrams; k++ {
		c += max(n-k+1, 0)
	}
	return c
}

// wordGram is the string a run of words is hashed as: the words between
// spaces, after a mark no character n-gram holds (a normalised word has no
// control characters), so a word n-gram and a character n-gram of the same
// text do not share a bucket by construction.
func wordGram(words []string) string { return "\x01" + strings.Join(words, " ") }

// ngramBuckets appends the bucket of each character n-gram of "<word>".
func (t *Tokenizer) ngramBuckets(dst []int32, word string) []int32 {
	s := "<" + word + ">"
	// Byte offsets of each rune start, and the end.
	offs := make([]int, 0, utf8.RuneCountInString(s)+1)
	for i := range s {
		offs = append(offs, i)
	}
	offs = append(offs, len(s))
	runes := len(offs) - 1
	for n := t.nMin; n <= t.nMax && n <= runes; n++ {
		for i := 0; i+n <= runes; i++ {
			dst = append(dst, t.bucket(s[offs[i]:offs[i+n]]))
		}
	}
	if len(dst) == 0 { // shorter than nMin runes
		dst = append(dst, t.bucket(s))
	}
	return dst
}

// bucket is FNV-1a (32 bit) of the n-gram's UTF-8 bytes, mod buckets.
func (t *Tokenizer) bucket(gram string) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(gram))
	return int32(h.Sum32() % uint32(t.buckets))
}

// NGrams returns the character n-grams an unknown word is split into, in
// the order their buckets are used (for documentation and tests).
func (t *Tokenizer) NGrams(word string) []string {
	s := "<" + word + ">"
	r := []rune(s)
	var out []string
	for n := t.nMin; n <= t.nMax && n <= len(r); n++ {
		for i := 0; i+n <= len(r); i++ {
			out = append(out, string(r[i:i+n]))
		}
	}
	if len(out) == 0 {
		out = append(out, s)
	}
	return out
}

// String describes the tokenizer.
func (t *Tokenizer) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d words + %d hash buckets", t.vocab.Len(), t.buckets)
	if t.buckets > 0 {
		fmt.Fprintf(&b, " (%d..%d-grams)", t.nMin, t.nMax)
	}
	return b.String()
}
