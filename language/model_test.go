package language

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/safetensors"
)

func smallModel(t testing.TB, seed uint64) *Model {
	t.Helper()
	m, err := NewModel(Config{Width: 6, TokenDim: 4, HashBuckets: 10, NGramMin: 3, NGramMax: 4}, mustVocab(t, "pick", "up", "apple"))
	if err != nil {
		t.Fatal(err)
	}
	m.Init(seed)
	return m
}

func TestForwardHandComputed(t *testing.T) {
	// Width 2, TokenDim 2, no buckets: rows <unk>, "a", "b".
	m, err := NewModel(Config{Width: 2, TokenDim: 2}, mustVocab(t, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	copy(m.P.Embedding, []float32{10, 20, 1, 2, 3, 4}) // <unk>, a, b
	copy(m.P.Kernel, []float32{1, 0, 1, -1})           // (2, 2)
	copy(m.P.Bias, []float32{0.5, 0})
	tok, err := m.Tokenizer.Tokenize("a b zzz")
	if err != nil {
		t.Fatal(err)
	}
	out, pooled := make([]float32, 2), make([]float32, 2)
	m.Forward(out, pooled, tok)
	// pooled = ((1,2) + (3,4) + (10,20)) / 3 = (14/3, 26/3)
	// out = (p0 + p1 + 0.5, -p1) = (40/3 + 0.5, -26/3)
	for i, want := range []float64{40.0/3 + 0.5, -26.0 / 3} {
		if math.Abs(float64(out[i])-want) > 1e-5 {
			t.Errorf("out[%d] = %v, want %v", i, out[i], want)
		}
	}
}

func TestBackwardMatchesFiniteDifferences(t *testing.T) {
	m := smallModel(t, 1)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range m.Params {
		m.Params[i] = float32(r.NormFloat64())
	}
	tok, err := m.Tokenizer.Tokenize("pick up the apple")
	if err != nil {
		t.Fatal(err)
	}
	dOut := make([]float32, 6)
	for i := range dOut {
		dOut[i] = float32(r.NormFloat64())
	}
	out, pooled := make([]float32, 6), make([]float32, 4)
	loss := func() float64 {
		m.Forward(out, pooled, tok)
		var s float64
		for i := range out {
			s += float64(out[i]) * float64(dOut[i])
		}
		return s
	}
	loss()
	grads := make([]float32, m.NumParams())
	g := m.View(grads)
	m.Backward(&g, dOut, pooled, make([]float32, 4), tok)
	// The loss is linear in each parameter, so central differences are
	// exact up to float32 rounding.
	for i := range m.Params {
		old := m.Params[i]
		m.Params[i] = old + 0.5
		up := loss()
		m.Params[i] = old - 0.5
		down := loss()
		m.Params[i] = old
		if num := up - down; math.Abs(num-float64(grads[i])) > 1e-3*(1+math.Abs(num)) {
			t.Fatalf("parameter %d: analytic %v, numeric %v", i, grads[i], num)
		}
	}
	// Rows no piece touches get no gradient.
	used := map[int32]bool{}
	for _, p := range tok.Pieces {
		used[p.Row] = true
	}
	for row := range m.Rows() {
		g := grads[row*4 : row*4+4]
		if !used[int32(row)] && slices.ContainsFunc(g, func(v float32) bool { return v != 0 }) {
			t.Errorf("row %d is not used but has gradient %v", row, g)
		}
	}
}

func TestInitDeterministic(t *testing.T) {
	a, b, c := smallModel(t, 5), smallModel(t, 5), smallModel(t, 6)
	if !slices.Equal(a.Params, b.Params) {
		t.Error("same seed, different parameters")
	}
	if slices.Equal(a.Params, c.Params) {
		t.Error("different seeds, same parameters")
	}
	if slices.ContainsFunc(a.P.Bias, func(v float32) bool { return v != 0 }) {
		t.Error("bias not zero")
	}
}

func TestForwardDoesNotAllocate(t *testing.T) {
	m := smallModel(t, 1)
	tok, _ := m.Tokenizer.Tokenize("pick up the banana")
	out, pooled, scratch := make([]float32, 6), make([]float32, 4), make([]float32, 4)
	grads := make([]float32, m.NumParams())
	g := m.View(grads)
	if n := testing.AllocsPerRun(50, func() { m.Forward(out, pooled, tok) }); n != 0 {
		t.Errorf("Forward: %v allocations", n)
	}
	if n := testing.AllocsPerRun(50, func() { m.Backward(&g, out, pooled, scratch, tok) }); n != 0 {
		t.Errorf("Backward: %v allocations", n)
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	m := smallModel(t, 3)
	path := filepath.Join(t.TempDir(), "lang.safetensors")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Config != m.Config || !back.Vocab.Equal(m.Vocab) || !slices.Equal(back.Params, m.Params) {
		t.Fatal("round trip changed the model")
	}
	want, _ := m.Embed("pick up the banana")
	got, _ := back.Embed("pick up the banana")
	if !slices.Equal(got, want) {
		t.Error("loaded model embeds differently")
	}
}

func TestFromFileRejects(t *testing.T) {
	m := smallModel(t, 3)
	for _, c := range []struct {
		name string
		edit func(f *safetensors.File)
		want string
	}{
		{"no config", func(f *safetensors.File) { delete(f.Metadata, ConfigKey) }, "no \"language.config\""},
		{"no vocab", func(f *safetensors.File) { delete(f.Metadata, VocabKey) }, "no \"language.vocab\""},
		{"bad vocab", func(f *safetensors.File) { f.Metadata[VocabKey] = "ttm-vocab 1 9\n" }, "header announces 9"},
		{"vocab changed size", func(f *safetensors.File) { f.Metadata[VocabKey] = "ttm-vocab 1 1\npick\n" }, "shape [14 4], the configuration and vocabulary need [12 4]"},
		{"missing tensor", func(f *safetensors.File) { delete(f.Tensors, Prefix+"proj/bias") }, "missing tensor language/proj/bias"},
		{"NaN", func(f *safetensors.File) {
			bias := make([]float32, 6)
			bias[2] = float32(math.NaN())
			f.Tensors[Prefix+"proj/bias"] = safetensors.FromFloat32(bias, 6)
		}, "holds NaN at element 2"},
		{"extra tensor", func(f *safetensors.File) { f.Tensors[Prefix+"extra"] = safetensors.FromFloat32([]float32{1}, 1) }, "unexpected tensor language/extra"},
		{"bad config", func(f *safetensors.File) { f.Metadata[ConfigKey] = `{"width": -1}` }, "width -1"},
	} {
		f := safetensors.New()
		m.AddTo(f, Prefix)
		c.edit(f)
		_, err := FromFile(f, Prefix)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"width": 128}`))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.Width = 128
	if c != want {
		t.Errorf("got %+v, want %+v", c, want)
	}
	if c, err := ParseConfig([]byte(`{"hash_buckets": 0}`)); err != nil || c.HashBuckets != 0 {
		t.Errorf("hash_buckets 0: %+v, %v", c, err)
	}
	if c, err := ParseConfig([]byte(`{"word_ngrams": 3}`)); err != nil || c.WordNGrams != 3 {
		t.Errorf("word_ngrams 3: %+v, %v", c, err)
	}
	for _, bad := range []string{`{"widht": 3}`, `{"token_dim": 0}`, `{"ngram_min": 4, "ngram_max": 3}`, `{} {}`, `nope`,
		`{"word_ngrams": -1}`, `{"word_ngrams": 9}`, `{"word_ngrams": 2, "hash_buckets": 0}`} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
