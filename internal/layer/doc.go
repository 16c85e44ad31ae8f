// Package layer is the layer toolkit every model of this project is built
// from: dense, LayerNorm, MLP block, multi-head attention and TokenLearner.
// Each layer is a parameter group (views into its model's one flat
// []float32, registered by Flax name in a Table) with its forward pass and
// its backward pass side by side. A Spec names one tensor of the flat
// slice (the ttm, vision and language models all use it); AddTensors and
// Wants store and load the slice in a checkpoint under a prefix.
//
// The style is llm.c's, over the nn kernels: plain row-major float32
// slices, outputs first, then inputs, then sizes. A forward pass that a
// backward pass will follow keeps what it needs in a record (LayerNormRec,
// MLPRec, AttentionRec, TokenLearnerRec); backward passes accumulate (+=)
// into the input gradient and into a gradient group of the same layout
// (the layer's views rebound to a gradient slice), which callers zero.
// Nothing here allocates after construction.
//
// Shape letters: N = rows (tokens), d = channels, h = hidden width,
// K = output tokens, H = heads.
package layer
