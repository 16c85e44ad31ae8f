package language

import (
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
)

func mustVocab(t testing.TB, words ...string) *Vocab {
	t.Helper()
	v, err := NewVocab(words)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fnv1a is 32-bit FNV-1a written out from its definition, the oracle for
// the tokenizer's bucket hash.
func fnv1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

func TestTokenizeKnownAndUnknownWords(t *testing.T) {
	v := mustVocab(t, "pick", "up", "the", "apple")
	tk, err := NewTokenizer(v, 1000, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Rows() != 1+4+1000 {
		t.Fatalf("%d rows", tk.Rows())
	}
	tok, err := tk.Tokenize("Pick up the CUP!")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tok.Words, []string{"pick", "up", "the", "cup"}) {
		t.Fatalf("words %q", tok.Words)
	}
	// Known words: rows 1, 2, 3, weight 1/4 each.
	for i, row := range []int32{1, 2, 3} {
		if tok.Pieces[i] != (Piece{Row: row, Weight: 0.25}) {
			t.Errorf("piece %d = %+v, want row %d weight 0.25", i, tok.Pieces[i], row)
		}
	}
	// "cup" is unknown: the n-grams of "<cup>" of 3 to 5 runes, each in its
	// FNV-1a bucket after the 5 rows of <unk> and the vocabulary.
	grams := []string{"<cu", "cup", "up>", "<cup", "cup>", "<cup>"}
	if got := tk.NGrams("cup"); !slices.Equal(got, grams) {
		t.Fatalf("n-grams %q, want %q", got, grams)
	}
	rest := tok.Pieces[3:]
	if len(rest) != len(grams) {
		t.Fatalf("%d pieces for cup, want %d", len(rest), len(grams))
	}
	for i, g := range grams {
		want := Piece{Row: int32(5 + fnv1a(g)%1000), Weight: 0.25 / 6}
		if rest[i].Row != want.Row || math.Abs(float64(rest[i].Weight-want.Weight)) > 1e-7 {
			t.Errorf("n-gram %q: piece %+v, want %+v", g, rest[i], want)
		}
	}
	var sum float64
	for _, p := range tok.Pieces {
		sum += float64(p.Weight)
	}
	if math.Abs(sum-1) > 1e-6 {
		t.Errorf("weights sum to %v", sum)
	}
}

func TestTokenizeMultiByteNGrams(t *testing.T) {
	tk, err := NewTokenizer(mustVocab(t), 97, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tk.NGrams("日本"), []string{"<日本", "日本>"}; !slices.Equal(got, want) {
		t.Errorf("n-grams %q, want %q", got, want)
	}
	if got, want := tk.NGrams("a"), []string{"<a>"}; !slices.Equal(got, want) {
		t.Errorf("n-grams %q, want %q", got, want)
	}
	tok, err := tk.Tokenize("日本")
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range []string{"<日本", "日本>"} {
		if want := int32(1 + fnv1a(g)%97); tok.Pieces[i].Row != want {
			t.Errorf("%q in row %d, want %d", g, tok.Pieces[i].Row, want)
		}
	}
	// A word shorter than the shortest n-gram hashes whole.
	tk5, _ := NewTokenizer(mustVocab(t), 97, 5, 6)
	tok, _ = tk5.Tokenize("a")
	if len(tok.Pieces) != 1 || tok.Pieces[0].Row != int32(1+fnv1a("<a>")%97) {
		t.Errorf("short word pieces %+v", tok.Pieces)
	}
}

func TestTokenizeWithoutBucketsUsesUnk(t *testing.T) {
	tk, err := NewTokenizer(mustVocab(t, "apple"), 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tk.Tokenize("apple banana")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tok.Pieces, []Piece{{1, 0.5}, {0, 0.5}}) {
		t.Errorf("pieces %+v", tok.Pieces)
	}
}

func TestTokenizeRejects(t *testing.T) {
	tk, _ := NewTokenizer(mustVocab(t), 16, 3, 5)
	for _, c := range []struct {
		text string
		want string
	}{
		{"", ErrNoWords.Error()},
		{" ?! ", ErrNoWords.Error()},
		{strings.Repeat("a ", MaxWords+1), "words exceeds"},
		{strings.Repeat("a", MaxInstructionBytes+1), "bytes exceeds"},
	} {
		_, err := tk.Tokenize(c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Tokenize(%.20q...): error %v, want %q", c.text, err, c.want)
		}
	}
	if _, err := tk.Tokenize("?"); !errors.Is(err, ErrNoWords) {
		t.Errorf("error %v is not ErrNoWords", err)
	}
	for _, b := range [][3]int{{-1, 3, 5}, {16, 0, 5}, {16, 5, 3}, {16, 3, 17}} {
		if _, err := NewTokenizer(mustVocab(t), b[0], b[1], b[2]); err == nil {
			t.Errorf("NewTokenizer(%v) accepted", b)
		}
	}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"Pick up the RED apple!!", "cup", "日本語", "", "a b c d", "\xff\xfe", "don't", "①②"} {
		f.Add(s)
	}
	v := mustVocab(f, "pick", "up", "the", "red", "apple")
	tk, err := NewTokenizer(v, 512, 3, 5)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := tk.Tokenize(s)
		if err != nil {
			return
		}
		var sum float64
		for _, p := range tok.Pieces {
			if p.Row < 0 || int(p.Row) >= tk.Rows() || !(p.Weight > 0) {
				t.Fatalf("piece %+v out of range", p)
			}
			sum += float64(p.Weight)
		}
		if math.Abs(sum-1) > 1e-4 {
			t.Fatalf("weights sum to %v", sum)
		}
		again, err := tk.Tokenize(Normalize(s))
		if err != nil || !slices.Equal(again.Pieces, tok.Pieces) {
			t.Fatalf("the normal form tokenizes differently: %v", err)
		}
	})
}

// TestWordNGrams: with word n-grams an instruction is its words and its
// runs of 2..n words, each hashed (FNV-1a of the marked, space-joined
// words) into a bucket, all weighted equally and summing to one; the two
// orders of "move A near B", one instruction as a bag of words, become two.
func TestWordNGrams(t *testing.T) {
	vocab := mustVocab(t, "move", "the", "coke", "pepsi", "can", "near")
	const buckets = 1000
	embed := func(wordNGrams int, text string) map[int32]float32 {
		m, err := NewModel(Config{Width: 4, TokenDim: 4, HashBuckets: buckets, NGramMin: 3, NGramMax: 5, WordNGrams: wordNGrams}, vocab)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := m.Tokenizer.Tokenize(text)
		if err != nil {
			t.Fatal(err)
		}
		rows := map[int32]float32{}
		var sum float32
		for _, p := range tok.Pieces {
			rows[p.Row] += p.Weight
			sum += p.Weight
		}
		if math.Abs(float64(sum-1)) > 1e-6 {
			t.Errorf("%q: weights sum to %v", text, sum)
		}
		return rows
	}
	ab, ba := "move the coke can near the pepsi can", "move the pepsi can near the coke can"
	if a, b := embed(0, ab), embed(0, ba); !maps.Equal(a, b) {
		t.Fatalf("without word n-grams the two orders differ: %v, %v", a, b)
	}
	a, b := embed(3, ab), embed(3, ba)
	if maps.Equal(a, b) {
		t.Fatal("with word 3-grams the two orders are the same instruction")
	}
	// 8 words: 8 words, 7 bigrams, 6 trigrams, each 1/21.
	want := map[int32]float32{}
	words := strings.Fields(ab)
	for _, w := range words {
		row, _ := vocab.Row(w)
		want[row] += 1.0 / 21
	}
	for n := 2; n <= 3; n++ {
		for i := 0; i+n <= len(words); i++ {
			want[int32(vocab.Len()+1)+int32(fnv1a("\x01"+strings.Join(words[i:i+n], " "))%buckets)] += 1.0 / 21
		}
	}
	if len(a) != len(want) {
		t.Fatalf("rows %v, want %v", a, want)
	}
	for r, w := range want {
		if math.Abs(float64(a[r]-w)) > 1e-6 {
			t.Errorf("row %d weight %v, want %v", r, a[r], w)
		}
	}
}
