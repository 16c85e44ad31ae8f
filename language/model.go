package language

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ttmrobot/ttm/internal/layer"
	"github.com/ttmrobot/ttm/internal/nn"
)

// Config describes the instruction encoder. It is stored in a checkpoint
// as JSON under ConfigKey; ParseConfig fills omitted fields from
// DefaultConfig.
type Config struct {
	Width       int `json:"width"`        // output embedding width E; 512 (RT-1)
	TokenDim    int `json:"token_dim"`    // width of the embedding table; 256
	HashBuckets int `json:"hash_buckets"` // sub-word buckets for unknown words; 4096, 0 = all unknown words are <unk>
	NGramMin    int `json:"ngram_min"`    // shortest character n-gram (runes, with the < > marks); 3
	NGramMax    int `json:"ngram_max"`    // longest; 5
	// WordNGrams is the longest run of consecutive words that is one more
	// piece of the instruction (fastText's word n-grams), hashed into the
	// buckets: a mean of word vectors does not know their order, and "move
	// the coke can near the pepsi can" would be the same instruction as
	// "move the pepsi can near the coke can". 0 or 1: words only.
	WordNGrams int `json:"word_ngrams,omitempty"`
}

// DefaultConfig is a 512-wide encoder with 256-wide token vectors and
// 4096 hash buckets of 3- to 5-grams.
func DefaultConfig() Config {
	return Config{Width: 512, TokenDim: 256, HashBuckets: 4096, NGramMin: 3, NGramMax: 5}
}

// Limits on the widths, against absurd configurations.
const (
	maxWidth   = 1 << 16
	maxBuckets = 1 << 22
	// maxWordNGrams bounds Config.WordNGrams: longer runs of words add
	// pieces without telling instructions apart.
	maxWordNGrams = 8
)

// Validate reports the first field that makes c unusable.
func (c Config) Validate() error {
	switch {
	case c.Width <= 0 || c.Width > maxWidth:
		return fmt.Errorf("language: width %d must be within 1..%d", c.Width, maxWidth)
	case c.TokenDim <= 0 || c.TokenDim > maxWidth:
		return fmt.Errorf("language: token_dim %d must be within 1..%d", c.TokenDim, maxWidth)
	case c.HashBuckets < 0 || c.HashBuckets > maxBuckets:
		return fmt.Errorf("language: hash_buckets %d must be within 0..%d", c.HashBuckets, maxBuckets)
	case c.HashBuckets > 0 && (c.NGramMin < 1 || c.NGramMax < c.NGramMin || c.NGramMax > 16):
		return fmt.Errorf("language: n-gram lengths %d..%d (want 1 <= ngram_min <= ngram_max <= 16)", c.NGramMin, c.NGramMax)
	case c.WordNGrams < 0 || c.WordNGrams > maxWordNGrams || c.WordNGrams > 1 && c.HashBuckets == 0:
		return fmt.Errorf("language: word_ngrams %d (want 0..%d, and hash buckets for more than 1)", c.WordNGrams, maxWordNGrams)
	}
	return nil
}

// JSON returns c as stored in a checkpoint.
func (c Config) JSON() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic("language: " + err.Error())
	}
	return string(b)
}

// ParseConfig reads a Config from JSON over DefaultConfig; unknown fields
// are an error.
func ParseConfig(b []byte) (Config, error) {
	c := DefaultConfig()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("language config: %w", err)
	}
	if dec.More() {
		return Config{}, fmt.Errorf("language config: data after the JSON object")
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// ParamSpec names one parameter tensor: its name under the checkpoint
// prefix, its shape, and its place in the flat slice.
type ParamSpec = layer.Spec

// Params are the model's tensors as views of one flat slice (parameters,
// or gradients of the same layout).
type Params struct {
	Embedding []float32 // (rows, TokenDim): <unk>, the vocabulary, the hash buckets
	Kernel    []float32 // (TokenDim, Width)
	Bias      []float32 // (Width)
}

// Model is the instruction encoder's weights with its vocabulary. It is
// read-only while Encoders use it.
type Model struct {
	Config    Config
	Vocab     *Vocab
	Tokenizer *Tokenizer
	Params    []float32
	Specs     []ParamSpec
	P         Params // views of Params
}

// NewModel allocates a model with all parameters zero.
func NewModel(c Config, vocab *Vocab) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	tok, err := NewTokenizer(vocab, c.HashBuckets, c.NGramMin, c.NGramMax)
	if err != nil {
		return nil, err
	}
	tok.wordNGrams = c.WordNGrams
	rows := tok.Rows()
	m := &Model{Config: c, Vocab: vocab, Tokenizer: tok}
	m.Specs = []ParamSpec{
		{Name: "embedding", Shape: []int{rows, c.TokenDim}, Offset: 0, Size: rows * c.TokenDim},
		{Name: "proj/kernel", Shape: []int{c.TokenDim, c.Width}, Offset: rows * c.TokenDim, Size: c.TokenDim * c.Width},
		{Name: "proj/bias", Shape: []int{c.Width}, Offset: rows*c.TokenDim + c.TokenDim*c.Width, Size: c.Width},
	}
	m.Params = make([]float32, rows*c.TokenDim+c.TokenDim*c.Width+c.Width)
	m.P = m.View(m.Params)
	return m, nil
}

// View cuts flat (NumParams floats) into the model's tensors.
func (m *Model) View(flat []float32) Params {
	if len(flat) != len(m.Params) {
		panic(fmt.Sprintf("language: Model.View of %d floats, the model has %d", len(flat), len(m.Params)))
	}
	cut := func(s ParamSpec) []float32 { return flat[s.Offset : s.Offset+s.Size : s.Offset+s.Size] }
	return Params{Embedding: cut(m.Specs[0]), Kernel: cut(m.Specs[1]), Bias: cut(m.Specs[2])}
}

// NumParams is the number of float32 parameters.
func (m *Model) NumParams() int { return len(m.Params) }

// Rows is the number of embedding rows: 1 + V + HashBuckets.
func (m *Model) Rows() int { return m.Tokenizer.Rows() }

// Init fills the parameters deterministically for a seed: token vectors
// N(0, 1) (PyTorch's nn.Embedding), a xavier-uniform kernel, zero bias.
func (m *Model) Init(seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x6c61_6e67_7561_6765)) // "language"
	for i := range m.P.Embedding {
		m.P.Embedding[i] = float32(r.NormFloat64())
	}
	limit := math.Sqrt(6 / float64(m.Config.TokenDim+m.Config.Width))
	for i := range m.P.Kernel {
		m.P.Kernel[i] = float32((2*r.Float64() - 1) * limit)
	}
	clear(m.P.Bias)
}

// Forward computes the embedding out (Width) of a tokenized instruction,
// keeping the mean token vector in pooled (TokenDim) for Backward:
//
//	pooled = Σ_pieces Weight·Embedding[Row],  out = pooled·Kernel + Bias
//
// It does not allocate.
func (m *Model) Forward(out, pooled []float32, tok Tokens) {
	c := m.Config
	m.checkPieces(tok)
	pooled = pooled[:c.TokenDim]
	clear(pooled)
	for _, p := range tok.Pieces {
		row := m.P.Embedding[int(p.Row)*c.TokenDim : int(p.Row+1)*c.TokenDim]
		for j, v := range row {
			pooled[j] += p.Weight * v
		}
	}
	nn.Dense(out, pooled, m.P.Kernel, m.P.Bias, 1, c.TokenDim, c.Width)
}

// Backward accumulates the gradients of Forward into g (a View of a
// gradient slice): dKernel += pooledᵀ·dOut, dBias += dOut, and each
// piece's row of dEmbedding += Weight·(dOut·Kernelᵀ). pooled is the
// forward pass's; scratch holds TokenDim floats. It does not allocate.
func (m *Model) Backward(g *Params, dOut, pooled, scratch []float32, tok Tokens) {
	c := m.Config
	m.checkPieces(tok)
	dPooled := scratch[:c.TokenDim]
	clear(dPooled)
	nn.DenseBackward(dPooled, g.Kernel, g.Bias, dOut, pooled, m.P.Kernel, 1, c.TokenDim, c.Width)
	for _, p := range tok.Pieces {
		row := g.Embedding[int(p.Row)*c.TokenDim : int(p.Row+1)*c.TokenDim]
		for j, v := range dPooled {
			row[j] += p.Weight * v
		}
	}
}

// checkPieces panics on rows outside the table: tokens from another model.
func (m *Model) checkPieces(tok Tokens) {
	rows := int32(m.Rows())
	for _, p := range tok.Pieces {
		if p.Row < 0 || p.Row >= rows {
			panic(fmt.Sprintf("language: piece row %d outside the %d-row table (tokens from another model?)", p.Row, rows))
		}
	}
}

// Embed tokenizes text and returns its embedding in a new slice.
func (m *Model) Embed(text string) ([]float32, error) {
	tok, err := m.Tokenizer.Tokenize(text)
	if err != nil {
		return nil, err
	}
	out := make([]float32, m.Config.Width)
	m.Forward(out, make([]float32, m.Config.TokenDim), tok)
	return out, nil
}
