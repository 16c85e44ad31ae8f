// Package language turns a robot's instruction ("pick up the red apple")
// into the fixed-width embedding e that conditions the vision front end
// through FiLM (RT-1 uses a 512-d sentence embedding).
//
//	text ──Normalize──> words ──Tokenizer──> pieces (row, weight)
//	pieces ──Model.Forward──> mean of token embeddings (TokenDim) ──Dense──> e (Width)
//
// Encoder caches e per instruction: the control loop asks for the current
// instruction every tick and gets the same slice back without work.
// An embedding computed upstream (a planner publishing
// std_msgs/Float32MultiArray) is checked by CheckEmbedding instead.
//
// # Normalisation
//
// Normalize applies Unicode NFKC, lower-cases, deletes apostrophes
// (' ’ ʼ: "don't" becomes "dont"), and treats every other character that is
// not a letter, digit or combining mark as a word separator, so
// " Pick up the RED apple!! " becomes "pick up the red apple".
//
// # Tokens
//
// Row 0 of the embedding table is <unk>, rows 1..V are the vocabulary's
// words in file order, rows V+1..V+B are B hash buckets (Config.HashBuckets).
// A word in the vocabulary is its own row. Any other word is the mean of
// the buckets of its character n-grams (fastText's sub-words): the word is
// wrapped as "<word>", every run of ngram_min..ngram_max runes is hashed
// with 32-bit FNV-1a over its UTF-8 bytes, and the bucket is hash mod B.
// A word too short for any n-gram uses the whole "<word>". With B = 0 an
// unknown word is <unk>. With Config.WordNGrams = n > 1, every run of 2..n
// consecutive words is one more piece, hashed the same way (FNV-1a of the
// words joined by spaces after a \x01 mark): fastText's word n-grams, so
// that word order can tell "move A near B" from "move B near A". The
// instruction's vector is the mean over its words (and word n-grams), then
// a Dense layer maps it to Width.
//
// # Vocabulary file format (version 1)
//
// A UTF-8 text file, lines separated by "\n" (a "\r" before it is ignored):
//
//	ttm-vocab 1 <count>
//	# optional comment lines start with '#'
//	pick
//	up
//	...
//
// The first line is the magic "ttm-vocab", the format version 1 and the
// number of words that follow, separated by single spaces. Every other
// line is a comment (first character '#') or one word. A word must be in
// normal form — Normalize(word) == word, a single word without spaces —
// at most MaxWordBytes bytes, and appear once. Empty lines are errors, as
// is a word count that differs from the header's. The file may end with
// or without a final newline. Word i (from 1, in file order, comments not
// counted) is row i of the embedding table. WriteTo writes this format
// without comments.
//
// # Parameters
//
// Parameters follow llm.c: one flat []float32 cut into named views
// (Model.Specs, Model.P), a seeded Init, Forward keeping what Backward
// needs, Backward accumulating into a gradient slice of the same layout
// (Model.View). In a checkpoint they live under "language/" with the
// configuration (JSON) and the vocabulary (the file above) in the metadata
// keys "language.config" and "language.vocab".
package language
