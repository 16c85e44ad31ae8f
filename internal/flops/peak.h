// The FMA loop behind package flops.
#ifndef TTM_FLOPS_PEAK_H
#define TTM_FLOPS_PEAK_H

// ttm_fma_loop runs iters rounds of 24 independent float32 fused
// multiply-adds on the widest vectors the CPU runs and returns the
// floating-point operations done (2 per lane per multiply-add). The
// result it computes goes to *sink so that nothing is optimised away.
double ttm_fma_loop(long iters, float* sink);

#endif
