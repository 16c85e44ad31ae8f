// The TTMDepthwise layer: depthwise 2-D convolution for OpenCV's DNN module,
// registered by backbone_cv.cpp's register_layers. See depthwise_cv.cpp.
#ifndef TTM_DEPTHWISE_CV_H
#define TTM_DEPTHWISE_CV_H

#ifdef __cplusplus
extern "C" {
#endif

// Kernels of the layer, by instruction set. TTM_DW_BEST picks the best the
// CPU supports, which is what the layer uses unless told otherwise.
enum {
    TTM_DW_BEST = -1,
    TTM_DW_GENERIC = 0,  // portable C++, any CPU
    TTM_DW_AVX2 = 1,     // x86-64 AVX2 + FMA
    TTM_DW_AVX512 = 2,   // x86-64 AVX-512F
};

// ttm_depthwise_supported reports whether this CPU (and OS) can run a kernel.
int ttm_depthwise_supported(int isa);
// ttm_depthwise_set_isa selects the kernel every TTMDepthwise layer of the
// process uses from then on; -1 if the CPU cannot run it (nothing changes).
int ttm_depthwise_set_isa(int isa);
// ttm_depthwise_isa reports the kernel in use.
int ttm_depthwise_isa(void);

#ifdef __cplusplus
}

// ttm_register_depthwise registers the layer type "TTMDepthwise" with
// OpenCV's layer factory (backbone_cv.cpp calls it once).
void ttm_register_depthwise();
// ttm_swish computes dst = src * sigmoid(src) over n floats, in place if
// dst == src (backbone_cv.cpp's TTMSwish arithmetic).
void ttm_swish(const float* src, float* dst, int n);
// ttm_swish_fast is the same with the fused swish of the depthwise layer:
// vectorised exp, about 1 ulp, with the kernel set the layer uses
// (ttm_swish itself on CPUs without AVX2).
void ttm_swish_fast(const float* src, float* dst, int n);
#endif

#endif
