// Kernel selection and vector math shared by the project's OpenCV DNN
// layers (depthwise_cv.cpp, pointwise_cv.cpp).
#ifndef TTM_KERNELS_CV_H
#define TTM_KERNELS_CV_H

#ifdef __cplusplus
extern "C" {
#endif

// The layers' kernels, by instruction set. TTM_ISA_BEST picks the best the
// CPU supports, which is what the layers use unless told otherwise.
enum {
    TTM_ISA_BEST = -1,
    TTM_ISA_GENERIC = 0,  // portable C++, any CPU
    TTM_ISA_AVX2 = 1,     // x86-64 AVX2 + FMA
    TTM_ISA_AVX512 = 2,   // x86-64 AVX-512F
};

// ttm_kernel_supported reports whether this CPU (and OS) can run a kernel.
int ttm_kernel_supported(int isa);
// ttm_kernel_set_isa selects the kernels every project layer of the process
// uses from then on; -1 if the CPU cannot run them (nothing changes).
int ttm_kernel_set_isa(int isa);
// ttm_kernel_isa reports the kernels in use.
int ttm_kernel_isa(void);
// ttm_swish_fast computes dst = src * sigmoid(src) over n floats, in place
// if dst == src, as the layers' fused swish does: vectorised exp (swish8,
// about 1 ulp, or swish16, under 2e-6 relative for |x| <= 20) with the
// kernel set the layers use, ttm_swish on CPUs without AVX2.
void ttm_swish_fast(const float* src, float* dst, int n);

#ifdef __cplusplus
}

// ttm_current_isa is ttm_kernel_isa for the layers' hot paths.
int ttm_current_isa();
// ttm_dot is sum_i a[i] * b[i] over n floats, with the kernel set the
// layers use (the excitation's gates, FiLM's coefficients).
float ttm_dot(const float* a, const float* b, int n);
// ttm_swish computes dst = src * sigmoid(src) over n floats, in place if
// dst == src (backbone_cv.cpp's TTMSwish arithmetic).
void ttm_swish(const float* src, float* dst, int n);

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TTM_X86 1

// Constants of expf as in Cephes (also OpenCV's and Eigen's): exp(x) =
// 2^n · p(r) with n = round(x·log2 e), r = x - n·ln 2 in two parts, p a
// degree-7 polynomial; about 1 ulp.
static const float exp_hi = 88.3762626647949f, exp_lo = -87.3365447505531f, log2e = 1.44269504088896341f,
            ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
static const float exp_p[6] = {1.9875691500E-4f, 1.3981999507E-3f, 8.3334519073E-3f,
                        4.1665795894E-2f, 1.6666665459E-1f, 5.0000001201E-1f};

// swish8 is x / (1 + exp(-x)); a NaN stays NaN.
static inline __attribute__((target("avx2,fma"), always_inline)) __m256 swish8(__m256 x) {
    // max/min return their second operand when one is NaN.
    __m256 z = _mm256_min_ps(_mm256_set1_ps(exp_hi), _mm256_max_ps(_mm256_set1_ps(exp_lo), _mm256_sub_ps(_mm256_setzero_ps(), x)));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(z, _mm256_set1_ps(log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(ln2_hi), z);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(ln2_lo), r);
    __m256 p = _mm256_set1_ps(exp_p[0]);
    for (int k = 1; k < 6; k++) {
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(exp_p[k]));
    }
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
    // 2^n by the exponent bits: n is within -127..128 after the clamp.
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    p = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    // x / d as x * (1/d), the reciprocal's 12 bits refined by one Newton
    // step (twice the bits); d = 1 + exp(-x) >= 1.
    const __m256 d = _mm256_add_ps(_mm256_set1_ps(1.f), p);
    __m256 q = _mm256_rcp_ps(d);
    q = _mm256_mul_ps(q, _mm256_fnmadd_ps(d, q, _mm256_set1_ps(2.f)));
    return _mm256_mul_ps(x, q);
}

// 2^f for |f| <= 1/2, highest degree first: minimax in relative error
// (Lawson's iteration on 400 Chebyshev points), 2^0 exactly 1.
static const float exp2_p[6] = {1.3264724e-3f, 9.6715130e-3f, 5.5507336e-2f, 2.4022242e-1f, 6.9314700e-1f, 1.f};

// lanes16 is the mask of the first n of 16 lanes (none for n <= 0, all for
// n >= 16): the tail of a row in masked loads and stores.
static inline __attribute__((target("avx512f"), always_inline)) __mmask16 lanes16(int n) {
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

// sigmoid16 is 1 / (1 + exp(-x)) on 16 lanes; a NaN stays NaN. Fewer
// operations than swish8's Cephes exp (it runs after every expansion and
// depthwise convolution): exp(-x) = 2^t with t = -x·log2 e in one
// rounding, t = n + f with n an integer and |f| <= 1/2, 2^f by a degree-5
// minimax polynomial (relative error 9e-8) and 2^n by scalef. The
// rounding of t bounds the result's relative error: under 2e-6 for |x| <=
// 20, where swish's outputs are not negligible.
static inline __attribute__((target("avx512f"), always_inline)) __m512 sigmoid16(__m512 x) {
    // max/min return their second operand when one is NaN. Beyond ±127,
    // 2^t is 0 or overflows 1 + 2^t's reciprocal.
    __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(-log2e));
    t = _mm512_min_ps(_mm512_set1_ps(127.f), _mm512_max_ps(_mm512_set1_ps(-127.f), t));
    const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(t, n);
    __m512 p = _mm512_set1_ps(exp2_p[0]);
#pragma GCC unroll 5
    for (int k = 1; k < 6; k++) {
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(exp2_p[k]));
    }
    // 1/d, the reciprocal's 14 bits refined by one Newton step; d = 1 +
    // exp(-x) >= 1.
    const __m512 d = _mm512_add_ps(_mm512_set1_ps(1.f), _mm512_scalef_ps(p, n));
    const __m512 q = _mm512_rcp14_ps(d);
    return _mm512_mul_ps(q, _mm512_fnmadd_ps(d, q, _mm512_set1_ps(2.f)));
}

// swish16 is x * sigmoid16(x): swish8 on 16 lanes.
static inline __attribute__((target("avx512f"), always_inline)) __m512 swish16(__m512 x) {
    return _mm512_mul_ps(x, sigmoid16(x));
}
#endif  // x86
#endif  // __cplusplus

#endif
