// Package ttm implements the Token Turing Machine (Ryoo et al., "Token Turing
// Machines", CVPR 2023, https://arxiv.org/abs/2211.09119) as the public
// reference (scenic, projects/token_turing/model.py) computes it, in float32.
//
// One step reads r tokens from the memory M (m tokens) and the step input I
// (n tokens), processes them, and writes a new memory:
//
//	Z      = Summarise_r([M ; I] (+ P_read))
//	O      = Process(Z)
//	M_next = Summarise_m([M ; I ; O] (+ P_write))
//
// The cost of a step does not depend on how many steps came before it.
//
// A Model holds the weights in one flat []float32 cut into named views, with
// the reference's Flax parameter names. A Machine runs steps on a Model with
// preallocated scratch space: Step allocates nothing. The memory is an
// explicit value (Memory) that callers reset, snapshot, restore and hash.
//
// Rows are tokens and columns channels throughout; shapes in comments use
// m (memory tokens), n (input tokens), r (read tokens), d (width).
package ttm
