package language

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// isApostrophe reports the characters Normalize deletes inside words:
// ASCII ', right single quotation mark ’ and modifier letter apostrophe ʼ.
func isApostrophe(r rune) bool { return r == '\'' || r == '\u2019' || r == '\u02BC' }

// isWordRune reports the characters words are made of.
func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r) }

// Normalize returns text in the normal form the tokenizer works on: NFKC,
// lower case, apostrophes deleted, every run of other non-word characters
// (spaces, punctuation, symbols, controls, invalid UTF-8) replaced by one
// space, and no leading or trailing space. Normalize(Normalize(s)) ==
// Normalize(s).
func Normalize(text string) string {
	s := normalizeOnce(text)
	// Lower-casing can leave text that NFKC changes again (rare
	// compositions); repeating the pass reaches the fixed point.
	for range 4 {
		if norm.NFKC.IsNormalString(s) {
			break
		}
		s = normalizeOnce(s)
	}
	return s
}

func normalizeOnce(text string) string {
	s := norm.NFKC.String(text)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		r = unicode.ToLower(r)
		switch {
		case isApostrophe(r):
			continue
		case isWordRune(r):
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
		default:
			space = true
		}
	}
	return b.String()
}

// Words returns the words of the normalised text.
func Words(text string) []string {
	return strings.Fields(Normalize(text))
}
