package language

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Vocabulary file limits.
const (
	VocabMagic    = "ttm-vocab"
	VocabVersion  = 1
	MaxWordBytes  = 256
	MaxVocabWords = 1 << 22

	maxVocabLine = 4096 // comments included
)

// Vocab is an ordered list of distinct words in normal form. Word i (from
// 0) is row i+1 of the embedding table; row 0 is <unk>. A Vocab is
// immutable once made.
type Vocab struct {
	words []string
	index map[string]int32 // word -> row (i+1)
}

// NewVocab checks words (normal form, single words, no duplicates) and
// returns them as a Vocab in the given order.
func NewVocab(words []string) (*Vocab, error) {
	if len(words) > MaxVocabWords {
		return nil, fmt.Errorf("vocabulary of %d words exceeds the limit of %d", len(words), MaxVocabWords)
	}
	v := &Vocab{words: make([]string, len(words)), index: make(map[string]int32, len(words))}
	for i, w := range words {
		if err := checkWord(w); err != nil {
			return nil, fmt.Errorf("vocabulary word %d: %w", i+1, err)
		}
		if prev, dup := v.index[w]; dup {
			return nil, fmt.Errorf("vocabulary word %d: %q repeats word %d", i+1, w, prev)
		}
		v.words[i] = w
		v.index[w] = int32(i + 1)
	}
	return v, nil
}

// checkWord reports why w cannot be a vocabulary word.
func checkWord(w string) error {
	switch {
	case w == "":
		return errors.New("empty word")
	case len(w) > MaxWordBytes:
		return fmt.Errorf("word of %d bytes exceeds the limit of %d", len(w), MaxWordBytes)
	case !utf8.ValidString(w):
		return fmt.Errorf("%q is not valid UTF-8", w)
	}
	if n := Normalize(w); n != w || strings.ContainsRune(n, ' ') {
		if strings.ContainsRune(n, ' ') || n == "" {
			return fmt.Errorf("%q is not a single word in normal form (normalises to %q)", w, n)
		}
		return fmt.Errorf("%q is not in normal form; write %q", w, n)
	}
	return nil
}

// Len is the number of words V.
func (v *Vocab) Len() int { return len(v.words) }

// Word returns word i, 0 <= i < Len (row i+1).
func (v *Vocab) Word(i int) string { return v.words[i] }

// Row returns the embedding row of a normalised word, or 0 and false.
func (v *Vocab) Row(word string) (int32, bool) {
	r, ok := v.index[word]
	return r, ok
}

// Words returns a copy of the words in order.
func (v *Vocab) Words() []string { return append([]string(nil), v.words...) }

// Equal reports whether two vocabularies hold the same words in the same order.
func (v *Vocab) Equal(o *Vocab) bool {
	if len(v.words) != len(o.words) {
		return false
	}
	for i, w := range v.words {
		if o.words[i] != w {
			return false
		}
	}
	return true
}

// WriteTo writes the vocabulary in the file format of the package doc.
func (v *Vocab) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	var n int64
	k, _ := fmt.Fprintf(bw, "%s %d %d\n", VocabMagic, VocabVersion, len(v.words))
	n += int64(k)
	for _, word := range v.words {
		k, _ = bw.WriteString(word)
		n += int64(k)
		_ = bw.WriteByte('\n')
		n++
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("write vocabulary: %w", err)
	}
	return n, nil
}

// MarshalText returns the vocabulary file as bytes.
func (v *Vocab) MarshalText() []byte {
	var b bytes.Buffer
	_, _ = v.WriteTo(&b)
	return b.Bytes()
}

// ParseVocab reads a vocabulary file (format in the package doc). Errors
// name the line.
func ParseVocab(r io.Reader) (*Vocab, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxVocabLine)
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return strings.TrimSuffix(sc.Text(), "\r"), true
	}
	header, ok := next()
	if !ok {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("vocabulary line 1: %w", err)
		}
		return nil, errors.New("vocabulary: empty file, want the header line \"ttm-vocab 1 <count>\"")
	}
	count, err := parseVocabHeader(header)
	if err != nil {
		return nil, fmt.Errorf("vocabulary line 1: %w", err)
	}
	words := make([]string, 0, min(count, 1<<16))
	for {
		text, ok := next()
		if !ok {
			break
		}
		switch {
		case text == "":
			return nil, fmt.Errorf("vocabulary line %d: empty line", line)
		case text[0] == '#':
			continue
		}
		if len(words) == count {
			return nil, fmt.Errorf("vocabulary line %d: more words than the %d the header announces", line, count)
		}
		if err := checkWord(text); err != nil {
			return nil, fmt.Errorf("vocabulary line %d: %w", line, err)
		}
		words = append(words, text)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("vocabulary line %d: longer than %d bytes", line+1, maxVocabLine)
		}
		return nil, fmt.Errorf("vocabulary line %d: %w", line+1, err)
	}
	if len(words) != count {
		return nil, fmt.Errorf("vocabulary: %d words, the header announces %d (truncated file?)", len(words), count)
	}
	v, err := NewVocab(words)
	if err != nil {
		return nil, fmt.Errorf("vocabulary: %w", err)
	}
	return v, nil
}

// parseVocabHeader reads "ttm-vocab 1 <count>".
func parseVocabHeader(h string) (int, error) {
	f := strings.Split(h, " ")
	if len(f) != 3 || f[0] != VocabMagic {
		return 0, fmt.Errorf("header %q, want \"%s %d <count>\"", clip(h), VocabMagic, VocabVersion)
	}
	if f[1] != strconv.Itoa(VocabVersion) {
		return 0, fmt.Errorf("format version %q; this program reads version %d", clip(f[1]), VocabVersion)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n < 0 || f[2] != strconv.Itoa(n) {
		return 0, fmt.Errorf("word count %q is not a non-negative decimal number", clip(f[2]))
	}
	if n > MaxVocabWords {
		return 0, fmt.Errorf("word count %d exceeds the limit of %d", n, MaxVocabWords)
	}
	return n, nil
}

// clip shortens text quoted in an error.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// BuildVocab collects the words of texts that occur at least minCount
// times, most frequent first (ties in byte order): a vocabulary for
// training from a set of instructions.
func BuildVocab(texts []string, minCount int) (*Vocab, error) {
	counts := map[string]int{}
	for _, t := range texts {
		for _, w := range Words(t) {
			counts[w]++
		}
	}
	var words []string
	for w, c := range counts {
		if c >= minCount && checkWord(w) == nil {
			words = append(words, w)
		}
	}
	sort.Slice(words, func(i, j int) bool {
		ci, cj := counts[words[i]], counts[words[j]]
		if ci != cj {
			return ci > cj
		}
		return words[i] < words[j]
	})
	return NewVocab(words)
}
