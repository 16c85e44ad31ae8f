package language

import (
	"slices"
	"testing"
	"unicode/utf8"
)

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Pick up the RED apple!!", "pick up the red apple"},
		{"  \tpick\n\nup  ", "pick up"},
		{"don't drop it", "dont drop it"},
		{"don’t", "dont"},                        // right single quotation mark
		{"rock 'n' roll", "rock n roll"},         // apostrophes go, words stay apart
		{"left-most drawer", "left most drawer"}, // hyphen separates
		{"move 3.5 cm", "move 3 5 cm"},
		{"ＰＩＣＫ ｕｐ", "pick up"},             // full-width forms (NFKC)
		{"ﬁnd the ﬂask", "find the flask"}, // ligatures (NFKC)
		{"café", "café"},                   // composed
		{"cafe\u0301", "café"},             // decomposed: NFKC composes
		{"①② go", "12 go"},                 // circled digits (NFKC): digits join
		{"Straße", "straße"},
		{"ΟΔΥΣΣΕΥΣ", "οδυσσευσ"},
		{"🍎 apple", "apple"},
		{"\xff\xfe apple", "apple"}, // invalid UTF-8 separates
		{"pick.up,the;apple", "pick up the apple"},
		{"", ""},
		{"?!  ...", ""},
		{"日本語の指示", "日本語の指示"},
	}
	for _, c := range cases {
		if got := Normalize(c.in); got != c.want {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestWords(t *testing.T) {
	if got, want := Words("Open the top-drawer, then close it."), []string{"open", "the", "top", "drawer", "then", "close", "it"}; !slices.Equal(got, want) {
		t.Errorf("Words = %q, want %q", got, want)
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"Pick up the RED apple!!", "don't", "ﬁnd", "cafe\u0301", "\xff", "①", "İstanbul", "ǅ", "ΣΑΣ", "a\u0345\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := Normalize(s)
		if !utf8.ValidString(n) {
			t.Fatalf("Normalize(%q) = %q is not valid UTF-8", s, n)
		}
		if again := Normalize(n); again != n {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, n, again)
		}
		if len(n) > 0 && (n[0] == ' ' || n[len(n)-1] == ' ') {
			t.Fatalf("Normalize(%q) = %q has outer spaces", s, n)
		}
		for _, w := range Words(s) {
			if w == "" {
				t.Fatalf("empty word in %q", s)
			}
		}
	})
}
