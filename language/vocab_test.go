package language

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestVocabRoundTrip(t *testing.T) {
	v := mustVocab(t, "pick", "up", "the", "日本", "café", "3")
	text := v.MarshalText()
	if want := "ttm-vocab 1 6\npick\nup\nthe\n日本\ncafé\n3\n"; string(text) != want {
		t.Fatalf("written as %q, want %q", text, want)
	}
	back, err := ParseVocab(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(v) {
		t.Fatalf("round trip: %q, want %q", back.Words(), v.Words())
	}
	if r, ok := back.Row("the"); !ok || r != 3 {
		t.Errorf("Row(the) = %d, %v; want 3", r, ok)
	}
	if _, ok := back.Row("apple"); ok {
		t.Error("Row(apple) found")
	}
}

func TestParseVocabAccepts(t *testing.T) {
	for _, c := range []struct {
		name, text string
		words      []string
	}{
		{"no final newline", "ttm-vocab 1 2\npick\nup", []string{"pick", "up"}},
		{"CRLF", "ttm-vocab 1 2\r\npick\r\nup\r\n", []string{"pick", "up"}},
		{"comments", "ttm-vocab 1 2\n# robot words\npick\n#\nup\n", []string{"pick", "up"}},
		{"empty", "ttm-vocab 1 0\n", nil},
	} {
		v, err := ParseVocab(strings.NewReader(c.text))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !v.Equal(mustVocab(t, c.words...)) {
			t.Errorf("%s: words %q, want %q", c.name, v.Words(), c.words)
		}
	}
}

func TestParseVocabRejects(t *testing.T) {
	for _, c := range []struct {
		name, text, want string
	}{
		{"empty file", "", "empty file"},
		{"no header", "pick\nup\n", `line 1: header "pick"`},
		{"wrong magic", "tt-vocab 1 1\npick\n", "line 1: header"},
		{"version 2", "ttm-vocab 2 1\npick\n", `line 1: format version "2"`},
		{"bad count", "ttm-vocab 1 two\npick\n", `line 1: word count "two"`},
		{"signed count", "ttm-vocab 1 +1\npick\n", `word count "+1"`},
		{"huge count", "ttm-vocab 1 99999999\n", "exceeds the limit"},
		{"double space", "ttm-vocab  1 1\npick\n", "line 1: header"},
		{"truncated", "ttm-vocab 1 3\npick\nup\n", "2 words, the header announces 3"},
		{"too many", "ttm-vocab 1 1\npick\nup\n", "line 3: more words than the 1"},
		{"empty line", "ttm-vocab 1 2\npick\n\nup\n", "line 3: empty line"},
		{"upper case", "ttm-vocab 1 1\nPick\n", `line 2: "Pick" is not in normal form; write "pick"`},
		{"two words", "ttm-vocab 1 1\npick up\n", `line 2: "pick up" is not a single word`},
		{"punctuation", "ttm-vocab 1 1\n!!\n", `line 2: "!!" is not a single word`},
		{"trailing space", "ttm-vocab 1 1\npick \n", "not in normal form"},
		{"duplicate", "ttm-vocab 1 3\npick\nup\npick\n", `word 3: "pick" repeats word 1`},
		{"invalid UTF-8", "ttm-vocab 1 1\n\xff\n", "not valid UTF-8"},
		{"long word", "ttm-vocab 1 1\n" + strings.Repeat("a", MaxWordBytes+1) + "\n", "exceeds the limit"},
		{"long line", "ttm-vocab 1 1\n#" + strings.Repeat("a", 5000) + "\n", "longer than"},
	} {
		_, err := ParseVocab(strings.NewReader(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

func TestBuildVocab(t *testing.T) {
	v, err := BuildVocab([]string{"Pick up the apple.", "pick up the cup", "open the drawer"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v.Words(), []string{"the", "pick", "up"}; !slices.Equal(got, want) {
		t.Errorf("words %q, want %q (by count, then byte order)", got, want)
	}
}

func FuzzParseVocab(f *testing.F) {
	f.Add([]byte("ttm-vocab 1 2\npick\nup\n"))
	f.Add([]byte("ttm-vocab 1 2\r\n# c\r\npick\r\nup"))
	f.Add([]byte("ttm-vocab 1 0\n"))
	f.Add([]byte("ttm-vocab 1 1\nPick\n"))
	f.Add([]byte("ttm-vocab 1 3\na\nb\na\n"))
	f.Add([]byte("ttm-vocab 2 1\nx\n"))
	f.Add([]byte("ttm-vocab 1 1\n日本\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseVocab(bytes.NewReader(data))
		if err != nil {
			return
		}
		text := v.MarshalText()
		back, err := ParseVocab(bytes.NewReader(text))
		if err != nil {
			t.Fatalf("written vocabulary does not parse: %v\n%q", err, text)
		}
		if !back.Equal(v) {
			t.Fatalf("round trip changed %q to %q", v.Words(), back.Words())
		}
		if !bytes.Equal(back.MarshalText(), text) {
			t.Fatal("writing is not deterministic")
		}
		for i := range v.Len() {
			if r, ok := v.Row(v.Word(i)); !ok || int(r) != i+1 {
				t.Fatalf("word %d %q has row %d", i, v.Word(i), r)
			}
		}
	})
}
