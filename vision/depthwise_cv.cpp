// TTMDepthwise: depthwise 2-D convolution (every channel convolved with its
// own kh x kw kernel) as an OpenCV DNN layer, optionally followed by swish.
// OpenCV 4.6 runs EfficientNet's depthwise convolutions at about 0.5-2
// GMAC/s; this layer is what the backbone rewrites them into (see
// depthwiseConvs in onnxcheck_rewrite.go).
//
// Shapes: input (N, C, H, W) float32, weights (C, 1, kh, kw), bias (C),
// output (N, C, Ho, Wo) with Ho = (H + pt + pb - kh) / sh + 1 and
// Wo = (W + pl + pr - kw) / sw + 1 (pads top, left, bottom, right; any
// kernel size, any stride, dilation 1). With the attribute mean = 1 a
// second output (N, C, 1, 1) holds each output channel's mean: the global
// average pooling of a squeeze-excitation, taken while the channel is in
// cache. With the attribute expand = 1 the layer also computes its input:
// it reads an MBConv block's input (N, K, H, W) and two more constants,
// the expansion's weights (C, K, 1, 1) and bias (C) (the depthwise bias is
// then required), and convolves swish(expansion · x + bias), which with
// AVX-512 and C a multiple of 16 it computes a few rows at a time (see
// expand_group) and never stores whole.
//
// Method, per channel (channels are split across OpenCV's thread pool):
//  1. The channel is copied, zero-padded, into sh x sw "phase planes":
//     plane (ry, cx) holds the padded pixels (r*sh + ry, j*sw + cx), for
//     Hr = Ho + (kh-1)/sh rows and L = Wo + (kw-1)/sw columns. Then output
//     (oy, ox) reads tap (ky, kx) at plane (ky%sh, kx%sw), position
//     (oy + ky/sh, ox + kx/sw): with stride 2 as with stride 1, each tap
//     reads a contiguous run of memory.
//  2. Numbering the outputs i = oy*L + ox (L - Wo columns per row computed
//     and thrown away), each tap t reads plane[off[t] + i]: the whole
//     channel is one long loop out[i] = bias + sum_t w[t] * src[off[t]+i],
//     vectorised across i, with the accumulators in registers over all
//     taps. Small maps (7x7) keep their vectors full this way.
//  3. The rows are copied to the output, and swish applied if fused.
// The loops of steps 1-3 exist for AVX-512F, AVX2+FMA and portable C++
// (compiled with the package's flags, -O2 and no -m options): the best
// set the CPU runs is picked at run time (ttm_kernel_set_isa can force
// another, for tests), so one binary runs on any x86-64.
#include "depthwise_cv.h"

#include "kernels_cv.h"
#include "layer_params_cv.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>


namespace {

// The inner loops, one set per instruction set:
//   taps:   out[i] = bias + sum_{t < ntaps} w[t] * src[off[t] + i] for
//           0 <= i < n, n a multiple of 16;
//   split2: even[j] = src[2j], odd[j] = src[2j+1] for j < n;
//   swish:  dst[i] = src[i] / (1 + exp(-src[i])) for i < n.
struct dw_ops {
    void (*taps)(float* out, const float* src, const int* off, const float* w, int ntaps, float bias, int n);
    void (*split2)(const float* src, float* even, float* odd, int n);
    void (*swish)(const float* src, float* dst, int n);
    float (*sum)(const float* src, int n);
};

void taps_generic(float* out, const float* src, const int* off, const float* w, int ntaps, float bias, int n) {
    for (int i = 0; i < n; i += 16) {
        float acc[16];
        for (int j = 0; j < 16; j++) {
            acc[j] = bias;
        }
        for (int t = 0; t < ntaps; t++) {
            const float* s = src + off[t] + i;
            const float wt = w[t];
            for (int j = 0; j < 16; j++) {
                acc[j] += wt * s[j];
            }
        }
        std::memcpy(out + i, acc, sizeof acc);
    }
}

void split2_generic(const float* src, float* even, float* odd, int n) {
    for (int j = 0; j < n; j++) {
        even[j] = src[2 * j];
        odd[j] = src[2 * j + 1];
    }
}

// The generic swish is TTMSwish's (cv::hal::exp32f).
void swish_generic(const float* src, float* dst, int n) { ttm_swish(src, dst, n); }

float sum_generic(const float* src, int n) {
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        for (int j = 0; j < 8; j++) {
            acc[j] += src[i + j];
        }
    }
    for (; i < n; i++) {
        acc[0] += src[i];
    }
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

#ifdef TTM_X86

// U accumulators of 8 floats over all taps.
template <int U>
__attribute__((target("avx2,fma"), always_inline)) inline void taps_block_avx2(float* out, const float* src,
                                                                               const int* off, const float* w,
                                                                               int ntaps, float bias) {
    __m256 acc[U];
#pragma GCC unroll 16
    for (int u = 0; u < U; u++) {
        acc[u] = _mm256_set1_ps(bias);
    }
    for (int t = 0; t < ntaps; t++) {
        const float* s = src + off[t];
        const __m256 wt = _mm256_set1_ps(w[t]);
#pragma GCC unroll 16
        for (int u = 0; u < U; u++) {
            acc[u] = _mm256_fmadd_ps(wt, _mm256_loadu_ps(s + 8 * u), acc[u]);
        }
    }
#pragma GCC unroll 16
    for (int u = 0; u < U; u++) {
        _mm256_storeu_ps(out + 8 * u, acc[u]);
    }
}

__attribute__((target("avx2,fma"))) void taps_avx2(float* out, const float* src, const int* off, const float* w,
                                                  int ntaps, float bias, int n) {
    int i = 0;
    for (; i + 64 <= n; i += 64) {
        taps_block_avx2<8>(out + i, src + i, off, w, ntaps, bias);
    }
    for (; i + 32 <= n; i += 32) {
        taps_block_avx2<4>(out + i, src + i, off, w, ntaps, bias);
    }
    for (; i < n; i += 16) {
        taps_block_avx2<2>(out + i, src + i, off, w, ntaps, bias);
    }
}

__attribute__((target("avx2,fma"))) void split2_avx2(const float* src, float* even, float* odd, int n) {
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256 a = _mm256_loadu_ps(src + 2 * j), b = _mm256_loadu_ps(src + 2 * j + 8);
        // [a0 a2 b0 b2 | a4 a6 b4 b6] and [a1 a3 b1 b3 | a5 a7 b5 b7], then
        // the 64-bit pairs in order 0 2 1 3.
        const __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
        const __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
        _mm256_storeu_ps(even + j, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0))));
        _mm256_storeu_ps(odd + j, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0))));
    }
    split2_generic(src + 2 * j, even + j, odd + j, n - j);
}


__attribute__((target("avx2,fma"))) float sum_avx2(const float* src, int n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(src + i));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(src + i + 8));
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, _mm256_add_ps(a0, a1));
    return sum_generic(lanes, 8) + sum_generic(src + i, n - i);
}

__attribute__((target("avx2,fma"))) void swish_avx2(const float* src, float* dst, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(dst + i, swish8(_mm256_loadu_ps(src + i)));
    }
    if (i < n) {
        float tmp[8] = {0};
        std::memcpy(tmp, src + i, sizeof(float) * (n - i));
        _mm256_storeu_ps(tmp, swish8(_mm256_loadu_ps(tmp)));
        std::memcpy(dst + i, tmp, sizeof(float) * (n - i));
    }
}

// U accumulators of 16 floats over all taps.
template <int U>
__attribute__((target("avx512f"), always_inline)) inline void taps_block_avx512(float* out, const float* src,
                                                                               const int* off, const float* w,
                                                                               int ntaps, float bias) {
    __m512 acc[U];
#pragma GCC unroll 16
    for (int u = 0; u < U; u++) {
        acc[u] = _mm512_set1_ps(bias);
    }
    for (int t = 0; t < ntaps; t++) {
        const float* s = src + off[t];
        const __m512 wt = _mm512_set1_ps(w[t]);
#pragma GCC unroll 16
        for (int u = 0; u < U; u++) {
            acc[u] = _mm512_fmadd_ps(wt, _mm512_loadu_ps(s + 16 * u), acc[u]);
        }
    }
#pragma GCC unroll 16
    for (int u = 0; u < U; u++) {
        _mm512_storeu_ps(out + 16 * u, acc[u]);
    }
}

__attribute__((target("avx512f"))) void taps_avx512(float* out, const float* src, const int* off, const float* w,
                                                   int ntaps, float bias, int n) {
    int i = 0;
    for (; i + 128 <= n; i += 128) {
        taps_block_avx512<8>(out + i, src + i, off, w, ntaps, bias);
    }
    for (; i + 64 <= n; i += 64) {
        taps_block_avx512<4>(out + i, src + i, off, w, ntaps, bias);
    }
    for (; i + 32 <= n; i += 32) {
        taps_block_avx512<2>(out + i, src + i, off, w, ntaps, bias);
    }
    for (; i < n; i += 16) {
        taps_block_avx512<1>(out + i, src + i, off, w, ntaps, bias);
    }
}

__attribute__((target("avx512f"))) void split2_avx512(const float* src, float* even, float* odd, int n) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        const __m512 a = _mm512_loadu_ps(src + 2 * j), b = _mm512_loadu_ps(src + 2 * j + 16);
        _mm512_storeu_ps(even + j, _mm512_permutex2var_ps(a, ie, b));
        _mm512_storeu_ps(odd + j, _mm512_permutex2var_ps(a, io, b));
    }
    if (j < n) {
        // m < 16 outputs from 2m inputs, through masks.
        const int m = n - j;
        const __mmask16 lo = (__mmask16)(m >= 8 ? 0xffffu : (1u << (2 * m)) - 1);
        const __mmask16 hi = (__mmask16)(m > 8 ? (1u << (2 * m - 16)) - 1 : 0u);
        const __mmask16 out = (__mmask16)((1u << m) - 1);
        const __m512 a = _mm512_maskz_loadu_ps(lo, src + 2 * j), b = _mm512_maskz_loadu_ps(hi, src + 2 * j + 16);
        _mm512_mask_storeu_ps(even + j, out, _mm512_permutex2var_ps(a, ie, b));
        _mm512_mask_storeu_ps(odd + j, out, _mm512_permutex2var_ps(a, io, b));
    }
}


__attribute__((target("avx512f"))) float sum_avx512(const float* src, int n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(src + i));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(src + i + 16));
    }
    for (; i < n; i += 16) {
        const __mmask16 m = lanes16(n - i);
        a0 = _mm512_add_ps(a0, _mm512_maskz_loadu_ps(m, src + i));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

__attribute__((target("avx512f"))) void swish_avx512(const float* src, float* dst, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(dst + i, swish16(_mm512_loadu_ps(src + i)));
    }
    if (i < n) {
        const __mmask16 m = lanes16(n - i);
        _mm512_mask_storeu_ps(dst + i, m, swish16(_mm512_maskz_loadu_ps(m, src + i)));
    }
}
#endif


dw_ops ops_for(int isa) {
    switch (isa) {
#ifdef TTM_X86
        case TTM_ISA_AVX2:
            return dw_ops{taps_avx2, split2_avx2, swish_avx2, sum_avx2};
        case TTM_ISA_AVX512:
            return dw_ops{taps_avx512, split2_avx512, swish_avx512, sum_avx512};
#endif
    }
    return dw_ops{taps_generic, split2_generic, swish_generic, sum_generic};
}

// Largest kernel side, stride and padding the layer accepts.
const int max_kernel = 64, max_stride = 64, max_pad = 1 << 12;

// The blocked path: 16 channels at a time, interleaved (NCHW16c) in work
// memory, so that one vector holds one pixel of 16 channels and every
// multiply-add of a tap is useful, whatever the map's width. Used for
// maps of up to blocked_max_padded padded pixels with channels a multiple
// of 16 (EfficientNet's later stages), with AVX-512, and by the fused
// expansion (expand_group) on maps of any size.
struct blocked_geometry {
    int h, w, ho, wo, kh, kw, sh, sw, pt, pl;
    int hp, wp;  // padded input rows and columns held in work memory
};

#ifdef TTM_X86

// transpose16 transposes the 16 x 16 floats in r.
__attribute__((target("avx512f"), always_inline)) inline void transpose16(__m512 r[16]) {
    __m512 t[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 4; j++) {
            t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
            t[8 * i + 4 + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0xdd);
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
    }
}

// blocked_outputs computes R outputs of an output row from column ox on,
// 16 channels each, into orow; rows[ky] is the interleaved padded input
// row that kernel row ky reads. It returns sum plus the outputs. With the
// kernel width KW and stride SW known (KW 0: any), each kernel row's
// inputs are loaded once into registers and shared by the R outputs and KW
// taps that read them.
template <int R, int KW, int SW>
__attribute__((target("avx512f"), always_inline)) inline __m512 blocked_outputs(const float* const* rows,
                                                                              const blocked_geometry& g,
                                                                              const float* wt, __m512 b,
                                                                              bool swish, int ox, float* orow,
                                                                              __m512 sum) {
    __m512 acc[R];
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
        acc[i] = b;
    }
    for (int ky = 0; ky < g.kh; ky++) {
        const float* row = rows[ky] + (size_t)ox * g.sw * 16;
        const float* w = wt + ky * g.kw * 16;
        if (KW > 0) {
            constexpr int n = SW * (R - 1) + (KW > 0 ? KW : 1);
            __m512 in[n];
#pragma GCC unroll 32
            for (int j = 0; j < n; j++) {
                in[j] = _mm512_load_ps(row + j * 16);
            }
#pragma GCC unroll 8
            for (int kx = 0; kx < KW; kx++) {
                const __m512 wv = _mm512_loadu_ps(w + kx * 16);
#pragma GCC unroll 8
                for (int i = 0; i < R; i++) {
                    acc[i] = _mm512_fmadd_ps(wv, in[i * SW + kx], acc[i]);
                }
            }
            continue;
        }
        for (int kx = 0; kx < g.kw; kx++) {
            const __m512 wv = _mm512_loadu_ps(w + kx * 16);
            const float* q = row + kx * 16;
#pragma GCC unroll 8
            for (int i = 0; i < R; i++) {
                acc[i] = _mm512_fmadd_ps(wv, _mm512_load_ps(q + i * g.sw * 16), acc[i]);
            }
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
        const __m512 v = swish ? swish16(acc[i]) : acc[i];
        sum = _mm512_add_ps(sum, v);
        _mm512_store_ps(orow + (size_t)(ox + i) * 16, v);
    }
    return sum;
}

// blocked_row_outputs computes an output row from the input rows it reads
// (see blocked_outputs): chunks of 8 outputs, then the rest, for a kernel
// width KW and stride SW.
template <int KW, int SW>
__attribute__((target("avx512f"))) __m512 blocked_row_outputs(const float* const* rows, const blocked_geometry& g,
                                                             const float* wt, __m512 b, bool swish, float* orow,
                                                             __m512 sum) {
    int ox = 0;
    for (; ox + 8 <= g.wo; ox += 8) {
        sum = blocked_outputs<8, KW, SW>(rows, g, wt, b, swish, ox, orow, sum);
    }
    switch (g.wo - ox) {
        case 7: return blocked_outputs<7, KW, SW>(rows, g, wt, b, swish, ox, orow, sum);
        case 6: return blocked_outputs<6, KW, SW>(rows, g, wt, b, swish, ox, orow, sum);
        case 5: return blocked_outputs<5, KW, SW>(rows, g, wt, b, swish, ox, orow, sum);
        case 4: return blocked_outputs<4, KW, SW>(rows, g, wt, b, swish, ox, orow, sum);
        case 3: return blocked_outputs<3, KW, SW>(rows, g, wt, b, swish, ox, orow, sum);
        case 2: return blocked_outputs<2, KW, SW>(rows, g, wt, b, swish, ox, orow, sum);
        case 1: return blocked_outputs<1, KW, SW>(rows, g, wt, b, swish, ox, orow, sum);
    }
    return sum;
}

// blocked_output_row computes output row oy of 16 channels from the input
// rows it reads (rows[ky] for kernel row ky) and stores it, transposed back
// to planes, into y (ho x wo per channel); orow is work memory of (wo
// rounded up to 16)*16 floats. It returns sum plus the outputs.
__attribute__((target("avx512f"))) __m512 blocked_output_row(const float* const* rows, const blocked_geometry& g,
                                                            const float* wt, __m512 b, bool swish, int oy,
                                                            float* orow, float* y, __m512 sum) {
    if (g.kw == 3 && g.sw == 1) {
        sum = blocked_row_outputs<3, 1>(rows, g, wt, b, swish, orow, sum);
    } else if (g.kw == 5 && g.sw == 1) {
        sum = blocked_row_outputs<5, 1>(rows, g, wt, b, swish, orow, sum);
    } else if (g.kw == 3 && g.sw == 2) {
        sum = blocked_row_outputs<3, 2>(rows, g, wt, b, swish, orow, sum);
    } else if (g.kw == 5 && g.sw == 2) {
        sum = blocked_row_outputs<5, 2>(rows, g, wt, b, swish, orow, sum);
    } else {
        sum = blocked_row_outputs<0, 1>(rows, g, wt, b, swish, orow, sum);
    }
    const size_t oplane = (size_t)g.ho * g.wo;
    __m512 r[16];
    for (int ox = 0; ox < g.wo; ox += 16) {
        const int n = std::min(16, g.wo - ox);
        const __mmask16 m = lanes16(n);
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++) {
            r[j] = _mm512_load_ps(orow + (size_t)(ox + j) * 16);
        }
        transpose16(r);
#pragma GCC unroll 16
        for (int c = 0; c < 16; c++) {
            _mm512_mask_storeu_ps(y + c * oplane + (size_t)oy * g.wo + ox, m, r[c]);
        }
    }
    return sum;
}

// blocked_group convolves the 16 channel planes at x (h x w each) into
// those at y (ho x wo each). wt holds the taps' weights, 16 per tap, and
// bias 16 values; mean, if not null, gets the 16 output means. p is work
// memory of hp*wp*16 floats, orow of (wo rounded up to 16)*16.
__attribute__((target("avx512f"))) void blocked_group(const float* x, float* y, const blocked_geometry& g,
                                                     const float* wt, const float* bias, bool swish,
                                                     float* mean, float* p, float* orow) {
    const size_t plane = (size_t)g.h * g.w, oplane = (size_t)g.ho * g.wo;
    std::memset(p, 0, sizeof(float) * (size_t)g.hp * g.wp * 16);
    __m512 r[16];
    for (int iy = 0; iy < g.h && iy + g.pt < g.hp; iy++) {
        float* prow = p + ((size_t)(iy + g.pt) * g.wp + g.pl) * 16;
        for (int ix = 0; ix < g.w; ix += 16) {
            const int n = std::min(16, std::min(g.w, g.wp - g.pl) - ix);
            if (n <= 0) {
                break;
            }
            const __mmask16 m = lanes16(n);
#pragma GCC unroll 16
            for (int c = 0; c < 16; c++) {
                r[c] = _mm512_maskz_loadu_ps(m, x + c * plane + (size_t)iy * g.w + ix);
            }
            transpose16(r);
            for (int j = 0; j < n; j++) {
                _mm512_store_ps(prow + (size_t)(ix + j) * 16, r[j]);
            }
        }
    }
    const __m512 b = _mm512_loadu_ps(bias);
    __m512 sum = _mm512_setzero_ps();
    const float* rows[max_kernel];
    for (int oy = 0; oy < g.ho; oy++) {
        for (int ky = 0; ky < g.kh; ky++) {
            rows[ky] = p + (size_t)(oy * g.sh + ky) * g.wp * 16;
        }
        sum = blocked_output_row(rows, g, wt, b, swish, oy, orow, y, sum);
    }
    if (mean) {
        _mm512_storeu_ps(mean, _mm512_div_ps(sum, _mm512_set1_ps((float)oplane)));
    }
}

// expand_row fills prow (wp*16 floats) with padded row pr of 16 channels
// of the expansion swish(we · x + eb): x holds k input planes of h x w, we
// the 16 channels' weights [k][16], eb their bias. The padding is zero.
__attribute__((target("avx512f"))) void expand_row(float* prow, const float* x, const blocked_geometry& g, int k,
                                                  const float* we, const float* eb, int pr) {
    const int iy = pr - g.pt;
    const int n = std::min(g.w, g.wp - g.pl);  // input columns the taps read
    if (iy < 0 || iy >= g.h || n <= 0) {
        std::memset(prow, 0, sizeof(float) * (size_t)g.wp * 16);
        return;
    }
    std::memset(prow, 0, sizeof(float) * (size_t)g.pl * 16);
    if (g.pl + n < g.wp) {
        std::memset(prow + (size_t)(g.pl + n) * 16, 0, sizeof(float) * (size_t)(g.wp - g.pl - n) * 16);
    }
    const size_t plane = (size_t)g.h * g.w;
    const float* xr = x + (size_t)iy * g.w;
    float* out = prow + (size_t)g.pl * 16;
    const __m512 b = _mm512_loadu_ps(eb);
    int ix = 0;
    for (; ix + 8 <= n; ix += 8) {
        __m512 acc[8];
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            acc[j] = b;
        }
        for (int c = 0; c < k; c++) {
            const __m512 wv = _mm512_loadu_ps(we + (size_t)c * 16);
            const float* xs = xr + c * plane + ix;
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++) {
                acc[j] = _mm512_fmadd_ps(wv, _mm512_set1_ps(xs[j]), acc[j]);
            }
        }
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            _mm512_store_ps(out + (size_t)(ix + j) * 16, swish16(acc[j]));
        }
    }
    for (; ix < n; ix++) {
        __m512 acc = b;
        for (int c = 0; c < k; c++) {
            acc = _mm512_fmadd_ps(_mm512_loadu_ps(we + (size_t)c * 16), _mm512_set1_ps(xr[c * plane + ix]), acc);
        }
        _mm512_store_ps(out + (size_t)ix * 16, swish16(acc));
    }
}

// expand_group is blocked_group over the expansion of x (k planes of h x
// w; we [k][16] and eb, see expand_row) instead of 16 planes of x: each
// padded input row is computed once, when the first output row that reads
// it comes, into ring, kh rows of wp*16 floats used in turn. The expanded
// map never leaves the cache.
__attribute__((target("avx512f"))) void expand_group(const float* x, int k, const float* we, const float* eb,
                                                    float* y, const blocked_geometry& g, const float* wt,
                                                    const float* bias, bool swish, float* mean, float* ring,
                                                    float* orow) {
    const size_t rowlen = (size_t)g.wp * 16;
    const __m512 b = _mm512_loadu_ps(bias);
    __m512 sum = _mm512_setzero_ps();
    const float* rows[max_kernel];
    int next = 0;  // next padded row to compute
    for (int oy = 0; oy < g.ho; oy++) {
        // Row next goes where row next - kh was, which output row oy no
        // longer reads.
        for (; next < oy * g.sh + g.kh; next++) {
            expand_row(ring + (size_t)(next % g.kh) * rowlen, x, g, k, we, eb, next);
        }
        for (int ky = 0; ky < g.kh; ky++) {
            rows[ky] = ring + (size_t)((oy * g.sh + ky) % g.kh) * rowlen;
        }
        sum = blocked_output_row(rows, g, wt, b, swish, oy, orow, y, sum);
    }
    if (mean) {
        _mm512_storeu_ps(mean, _mm512_div_ps(sum, _mm512_set1_ps((float)g.ho * g.wo)));
    }
}
#endif

// align64 rounds p up to a multiple of 64 bytes (p has 16 floats to spare).
float* align64(float* p) { return (float*)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

// Per-thread work memory, grown as needed and kept: the layer allocates
// nothing once every thread has seen the largest layer.
struct scratch {
    std::vector<float> planes, out, row;
};
thread_local scratch tls;


class DepthwiseLayer CV_FINAL : public cv::dnn::Layer {
public:
    explicit DepthwiseLayer(const cv::dnn::LayerParams& p) {
        setParamsFrom(p);
        expand_ = p.get<int>("expand", 0) != 0;
        if (expand_ ? blobs.size() != 4 : blobs.size() != 1 && blobs.size() != 2) {
            TTM_LAYER_FAIL("has " << blobs.size() << " constant inputs; it needs the weights (C, 1, kh, kw) and "
                           << (expand_ ? "the bias (C), then the expansion's weights (C, K, 1, 1) and bias (C)"
                                       : "optionally the bias (C)"));
        }
        const cv::Mat& wt = blobs[0];
        if (wt.dims != 4 || wt.type() != CV_32F || wt.size[1] != 1 || wt.size[0] < 1) {
            TTM_LAYER_FAIL("weights are " << describe(wt) << ", want float32 (C, 1, kh, kw)");
        }
        channels_ = wt.size[0];
        kh_ = wt.size[2];
        kw_ = wt.size[3];
        if (kh_ < 1 || kw_ < 1 || kh_ > max_kernel || kw_ > max_kernel) {
            TTM_LAYER_FAIL("kernel " << kh_ << "x" << kw_ << " outside 1.." << max_kernel);
        }
        if (blobs.size() >= 2) {
            const cv::Mat& b = blobs[1];
            if (b.type() != CV_32F || (int)b.total() != channels_) {
                TTM_LAYER_FAIL("bias has " << b.total() << (b.type() == CV_32F ? "" : " non-float32") << " values, want "
                                    << channels_);
            }
        }
        std::vector<int> k = ints(p, "kernel", nullptr, 2, kh_);
        if (k[0] != kh_ || k[1] != kw_) {
            TTM_LAYER_FAIL("attribute kernel " << k[0] << "x" << k[1] << " does not match the weights' " << kh_ << "x"
                                        << kw_);
        }
        std::vector<int> s = ints(p, "strides", "stride", 2, 1);
        std::vector<int> pads = ints(p, "pads", "pad", 4, 0);
        sh_ = s[0];
        sw_ = s[1];
        if (sh_ < 1 || sw_ < 1 || sh_ > max_stride || sw_ > max_stride) {
            TTM_LAYER_FAIL("strides " << sh_ << "," << sw_ << " outside 1.." << max_stride);
        }
        for (int v : pads) {
            if (v < 0 || v > max_pad) {
                TTM_LAYER_FAIL("pads " << pads[0] << "," << pads[1] << "," << pads[2] << "," << pads[3] << " outside 0.."
                                << max_pad);
            }
        }
        pt_ = pads[0];
        pl_ = pads[1];
        pb_ = pads[2];
        pr_ = pads[3];
        if (p.has("activation") && !p.get("activation").isString()) {
            TTM_LAYER_FAIL("attribute activation must be a string");
        }
        std::string act = p.get<cv::String>("activation", "");
        if (act == "swish") {
            swish_ = true;
        } else if (act != "" && act != "none") {
            TTM_LAYER_FAIL("activation \"" << act << "\"; have \"swish\" and \"none\"");
        }
        mean_ = p.get<int>("mean", 0) != 0;
        if (expand_) {
            expansion(p);
        }
    }

    static cv::Ptr<cv::dnn::Layer> create(cv::dnn::LayerParams& p) {
        return cv::Ptr<cv::dnn::Layer>(new DepthwiseLayer(p));
    }

    bool supportBackend(int backendId) CV_OVERRIDE { return backendId == cv::dnn::DNN_BACKEND_OPENCV; }

    bool getMemoryShapes(const std::vector<cv::dnn::MatShape>& inputs, const int,
                         std::vector<cv::dnn::MatShape>& outputs,
                         std::vector<cv::dnn::MatShape>&) const CV_OVERRIDE {
        if (inputs.size() != 1) {
            TTM_LAYER_FAIL("has " << inputs.size() << " computed inputs, want 1");
        }
        const cv::dnn::MatShape& in = inputs[0];
        if (in.size() != 4) {
            TTM_LAYER_FAIL("input has " << in.size() << " dimensions, want 4 (N, C, H, W)");
        }
        if (in[1] != in_channels()) {
            TTM_LAYER_FAIL("input has " << in[1] << " channels, the weights " << in_channels());
        }
        int ho = out_size(in[2], kh_, sh_, pt_, pb_), wo = out_size(in[3], kw_, sw_, pl_, pr_);
        if (ho < 1 || wo < 1) {
            TTM_LAYER_FAIL("input " << in[2] << "x" << in[3] << " with pads " << pt_ << "," << pl_ << "," << pb_ << ","
                             << pr_ << " is smaller than the kernel " << kh_ << "x" << kw_);
        }
        if ((double)sh_ * sw_ * (ho + kh_) * (wo + kw_) > (double)(1 << 30)) {
            TTM_LAYER_FAIL("input " << in[2] << "x" << in[3] << " is too large");
        }
        outputs.assign(1, cv::dnn::MatShape{in[0], channels_, ho, wo});
        if (mean_) {
            outputs.push_back(cv::dnn::MatShape{in[0], channels_, 1, 1});
        }
        return false;
    }

    void forward(cv::InputArrayOfArrays in_arr, cv::OutputArrayOfArrays out_arr,
                 cv::OutputArrayOfArrays) CV_OVERRIDE {
        std::vector<cv::Mat> inputs, outputs;
        in_arr.getMatVector(inputs);
        out_arr.getMatVector(outputs);
        CV_Assert(inputs.size() == 1 && outputs.size() == (mean_ ? 2u : 1u));
        const cv::Mat& src = inputs[0];
        cv::Mat& dst = outputs[0];
        CV_Assert(src.type() == CV_32F && dst.type() == CV_32F && src.isContinuous() && dst.isContinuous() &&
                  src.dims == 4 && dst.dims == 4 && src.size[1] == in_channels());
        geometry(src.size[2], src.size[3]);
        CV_Assert(dst.size[0] == src.size[0] && dst.size[1] == channels_ && dst.size[2] == ho_ &&
                  dst.size[3] == wo_);
        const dw_ops ops = ops_for(ttm_current_isa());
        const float* x = src.ptr<float>();
        float* y = dst.ptr<float>();
        const float* w = blobs[0].ptr<float>();
        const float* bias = blobs.size() >= 2 ? blobs[1].ptr<float>() : nullptr;
        float* mean = mean_ ? outputs[1].ptr<float>() : nullptr;
        if (expand_) {
#ifdef TTM_X86
            if (channels_ % 16 == 0 && ttm_current_isa() == TTM_ISA_AVX512) {
                forward_fused(x, y, mean, src.size[0]);
                return;
            }
#endif
            x = expand(ops, x, src.size[0]);
        }
#ifdef TTM_X86
        if (blocked_ && ttm_current_isa() == TTM_ISA_AVX512) {
            forward_blocked(x, y, mean, src.size[0]);
            return;
        }
#endif
        const int planes = src.size[0] * channels_;
        const int stripes = std::min(planes, 4 * std::max(1, cv::getNumThreads()));
        cv::parallel_for_(
            cv::Range(0, planes),
            [&](const cv::Range& r) {
                scratch& s = tls;
                if (s.planes.size() < planes_len_) {
                    s.planes.resize(planes_len_);
                }
                if (s.out.size() < (size_t)n_) {
                    s.out.resize(n_);
                }
                if (s.row.size() < (size_t)row_len_) {
                    s.row.resize(row_len_);
                }
                // The padding of the row buffer stays zero for all rows.
                std::memset(s.row.data(), 0, sizeof(float) * row_len_);
                for (int p = r.start; p < r.end; p++) {
                    const int c = p % channels_;
                    float* yp = y + (size_t)p * ho_ * wo_;
                    channel(ops, s.planes.data(), s.out.data(), s.row.data(), x + (size_t)p * h_ * w_, yp,
                            w + (size_t)c * kh_ * kw_, bias ? bias[c] : 0.f);
                    if (mean) {
                        // The plane is still in cache.
                        mean[p] = ops.sum(yp, ho_ * wo_) / (float)(ho_ * wo_);
                    }
                }
            },
            stripes);
    }

private:
    int in_channels() const { return expand_ ? k_ : channels_; }

    // expansion checks the expansion's weights (C, K, 1, 1) and bias (C)
    // and its activation, and lays them out for the fused path.
    void expansion(const cv::dnn::LayerParams& p) {
        const cv::Mat &ew = blobs[2], &eb = blobs[3];
        if (ew.dims != 4 || ew.type() != CV_32F || ew.size[0] != channels_ || ew.size[1] < 1 || ew.size[2] != 1 ||
            ew.size[3] != 1) {
            TTM_LAYER_FAIL("expansion weights are " << describe(ew) << ", want float32 (" << channels_
                                                   << ", K, 1, 1)");
        }
        if (eb.type() != CV_32F || (int)eb.total() != channels_) {
            TTM_LAYER_FAIL("expansion bias is " << describe(eb) << ", want float32 (" << channels_ << ")");
        }
        if (!p.has("expand_activation") || !p.get("expand_activation").isString() ||
            p.get<cv::String>("expand_activation") != "swish") {
            TTM_LAYER_FAIL("attribute expand_activation must be \"swish\", the one expansion activation it has");
        }
        k_ = ew.size[1];
        if (channels_ % 16 == 0) {
            // By 16-channel group: weights [C/16][K][16], bias [C].
            we16_.assign((size_t)channels_ * k_, 0.f);
            for (int c = 0; c < channels_; c++) {
                for (int k = 0; k < k_; k++) {
                    we16_[((size_t)(c / 16) * k_ + k) * 16 + c % 16] = ew.ptr<float>()[(size_t)c * k_ + k];
                }
            }
        }
    }

    // expand computes the expansion swish(we · x + eb) of the batch's input
    // x (N, K, H, W) into the layer's buffer, which it returns.
    const float* expand(const dw_ops& ops, const float* x, int batch) {
        const size_t plane = (size_t)h_ * w_;
        expanded_.resize((size_t)batch * channels_ * plane);
        const float* ew = blobs[2].ptr<float>();
        const float* eb = blobs[3].ptr<float>();
        cv::parallel_for_(cv::Range(0, batch * channels_), [&](const cv::Range& r) {
            for (int p = r.start; p < r.end; p++) {
                const int n = p / channels_, c = p % channels_;
                float* o = expanded_.data() + (size_t)p * plane;
                std::fill(o, o + plane, eb[c]);
                for (int k = 0; k < k_; k++) {
                    const float wk = ew[(size_t)c * k_ + k];
                    const float* xk = x + ((size_t)n * k_ + k) * plane;
                    for (size_t i = 0; i < plane; i++) {
                        o[i] += wk * xk[i];
                    }
                }
                ops.swish(o, o, (int)plane);
            }
        });
        return expanded_.data();
    }

#ifdef TTM_X86
    // forward_fused runs expand_group over the batch's channel groups.
    void forward_fused(const float* x, float* y, float* mean, int batch) {
        const int per = channels_ / 16;
        const size_t rlen = (size_t)kh_ * bg_.wp * 16, olen = (size_t)(bg_.wo + 15) / 16 * 16 * 16;
        cv::parallel_for_(
            cv::Range(0, batch * per),
            [&](const cv::Range& r) {
                scratch& s = tls;
                if (s.planes.size() < rlen + 16) {
                    s.planes.resize(rlen + 16);
                }
                if (s.out.size() < olen + 16) {
                    s.out.resize(olen + 16);
                }
                const size_t oplane = (size_t)ho_ * wo_;
                for (int gi = r.start; gi < r.end; gi++) {
                    const int g = gi % per;
                    float* yg = y + (size_t)gi * 16 * oplane;
                    // The means are summed as the unfused layer sums them
                    // (by output row on maps the blocked path takes, over
                    // each plane on larger ones), so that fusing the
                    // expansion changes no bit of the output.
                    expand_group(x + (size_t)(gi / per) * k_ * h_ * w_, k_, we16_.data() + (size_t)g * k_ * 16,
                                 blobs[3].ptr<float>() + (size_t)g * 16, yg, bg_,
                                 wt16_.data() + (size_t)g * 16 * kh_ * kw_, bias16_.data() + g * 16, swish_,
                                 mean && blocked_ ? mean + (size_t)gi * 16 : nullptr, align64(s.planes.data()),
                                 align64(s.out.data()));
                    if (mean && !blocked_) {
                        for (int c = 0; c < 16; c++) {
                            mean[(size_t)gi * 16 + c] = sum_avx512(yg + c * oplane, (int)oplane) / (float)oplane;
                        }
                    }
                }
            },
            batch * per);
    }

    // forward_blocked runs the blocked path over the batch's channel groups.
    void forward_blocked(const float* x, float* y, float* mean, int batch) {
        const int groups = batch * channels_ / 16;
        const size_t plen = (size_t)bg_.hp * bg_.wp * 16, olen = (size_t)(bg_.wo + 15) / 16 * 16 * 16;
        cv::parallel_for_(
            cv::Range(0, groups),
            [&](const cv::Range& r) {
                scratch& s = tls;
                // 64-byte aligned: every vector of the blocked layout is one
                // cache line.
                if (s.planes.size() < plen + 16) {
                    s.planes.resize(plen + 16);
                }
                if (s.out.size() < olen + 16) {
                    s.out.resize(olen + 16);
                }
                for (int gi = r.start; gi < r.end; gi++) {
                    const int c0 = (gi * 16) % channels_;
                    blocked_group(x + (size_t)gi * 16 * h_ * w_, y + (size_t)gi * 16 * ho_ * wo_, bg_,
                                  wt16_.data() + (size_t)c0 * kh_ * kw_, bias16_.data() + c0, swish_,
                                  mean ? mean + (size_t)gi * 16 : nullptr, align64(s.planes.data()),
                                  align64(s.out.data()));
                }
            },
            groups);
    }
#endif

    static int out_size(int n, int k, int s, int before, int after) {
        int span = n + before + after - k;
        return span < 0 ? 0 : span / s + 1;
    }

    // geometry sets the sizes and tap offsets for an input of h x w.
    void geometry(int h, int w) {
        if (h == h_ && w == w_) {
            return;
        }
        h_ = h;
        w_ = w;
        ho_ = out_size(h, kh_, sh_, pt_, pb_);
        wo_ = out_size(w, kw_, sw_, pl_, pr_);
        CV_Assert(ho_ >= 1 && wo_ >= 1);
        hr_ = ho_ + (kh_ - 1) / sh_;
        l_ = wo_ + (kw_ - 1) / sw_;
        n_ = (ho_ * l_ + 15) / 16 * 16;
        // Reads reach at most (kw-1)/sw + 15 past the last plane.
        planes_len_ = (size_t)sh_ * sw_ * hr_ * l_ + l_ + 16;
        // A padded input row: columns -pl .. sw*L - pl - 1.
        row_len_ = std::max(sw_ * l_, pl_ + w_) + 16;
        // The blocked path holds the rows and columns the taps read.
        bg_ = blocked_geometry{h, w, ho_, wo_, kh_, kw_, sh_, sw_, pt_, pl_, (ho_ - 1) * sh_ + kh_, (wo_ - 1) * sw_ + kw_};
        blocked_ = channels_ % 16 == 0 && (size_t)bg_.hp * bg_.wp <= blocked_max_padded;
        if ((blocked_ || (expand_ && channels_ % 16 == 0)) && wt16_.empty()) {
            // Weights and bias by 16-channel group: [group][tap][16].
            const int taps = kh_ * kw_;
            const float* wsrc = blobs[0].ptr<float>();
            wt16_.assign((size_t)channels_ * taps, 0.f);
            bias16_.assign(channels_, 0.f);
            for (int c = 0; c < channels_; c++) {
                for (int t = 0; t < taps; t++) {
                    wt16_[((size_t)(c / 16) * taps + t) * 16 + c % 16] = wsrc[(size_t)c * taps + t];
                }
                if (blobs.size() >= 2) {
                    bias16_[c] = blobs[1].ptr<float>()[c];
                }
            }
        }
        off_.resize((size_t)kh_ * kw_);
        for (int ky = 0; ky < kh_; ky++) {
            for (int kx = 0; kx < kw_; kx++) {
                off_[ky * kw_ + kx] = ((ky % sh_) * sw_ + kx % sw_) * hr_ * l_ + (ky / sh_) * l_ + kx / sw_;
            }
        }
    }

    // channel convolves one (H, W) plane x into y (Ho, Wo) with the kernel
    // w (kh, kw) and bias b. planes, out and row are work memory of
    // planes_len_, n_ and row_len_ floats, row zero outside columns
    // pl..pl+W-1.
    void channel(const dw_ops& ops, float* planes, float* out, float* row, const float* x, float* y,
                 const float* w, float b) const {
        const size_t plane = (size_t)hr_ * l_;
        // Padded row R = r*sh + ry of the input (row R - pt) goes to row r of
        // the planes (ry, 0..sw-1); rows in the padding are zero. With
        // stride 1 across, the padding columns are zero too, from the
        // memset; with a larger stride the split rows are whole.
        const int rlo = std::max(0, pt_), rhi = std::min(hr_ * sh_, pt_ + h_);
        if (sw_ == 1) {
            std::memset(planes, 0, sizeof(float) * sh_ * plane);
        } else {
            for (int rr = 0; rr < hr_ * sh_; rr++) {
                if (rr < rlo || rr >= rhi) {
                    for (int cx = 0; cx < sw_; cx++) {
                        std::memset(planes + (size_t)((rr % sh_) * sw_ + cx) * plane + (size_t)(rr / sh_) * l_, 0,
                                    sizeof(float) * l_);
                    }
                }
            }
        }
        const int cols = std::min(w_, sw_ * l_ - pl_);  // input columns any tap reads
        for (int rr = rlo; rr < rhi; rr++) {
            const int r = rr / sh_, ry = rr % sh_;
            const float* xr = x + (size_t)(rr - pt_) * w_;
            float* dst = planes + (size_t)ry * sw_ * plane + (size_t)r * l_;
            if (sw_ == 1) {
                // Columns pl.. of the plane row are the input's.
                const int n = std::min(cols, l_ - pl_);
                if (n > 0) {
                    std::memcpy(dst + pl_, xr, sizeof(float) * n);
                }
                continue;
            }
            if (cols > 0) {
                std::memcpy(row + pl_, xr, sizeof(float) * cols);
            }
            if (sw_ == 2) {
                ops.split2(row, dst, dst + plane, l_);
            } else {
                for (int cx = 0; cx < sw_; cx++) {
                    for (int j = 0; j < l_; j++) {
                        dst[cx * plane + j] = row[j * sw_ + cx];
                    }
                }
            }
        }
        ops.taps(out, planes, off_.data(), w, kh_ * kw_, b, n_);
        // The rows' first Wo values are the output. Swish goes with the
        // copy of long rows; short rows (one call each would cost more
        // than the work) take it in place over all of out, the L - Wo
        // extra values of each row included.
        const bool rowwise = swish_ && wo_ >= 32;
        if (swish_ && !rowwise) {
            ops.swish(out, out, n_);
        }
        for (int oy = 0; oy < ho_; oy++) {
            if (rowwise) {
                ops.swish(out + (size_t)oy * l_, y + (size_t)oy * wo_, wo_);
            } else {
                std::memcpy(y + (size_t)oy * wo_, out + (size_t)oy * l_, sizeof(float) * wo_);
            }
        }
    }

    std::vector<int> ints(const cv::dnn::LayerParams& p, const char* attr, const char* alt, int want,
                          int def) const {
        return ttm_layer_ints(p, "TTMDepthwise layer " + name, attr, alt, want, def);
    }

    static std::string describe(const cv::Mat& m) {
        std::ostringstream s;
        s << (m.type() == CV_32F ? "float32 " : "non-float32 ") << "(";
        for (int i = 0; i < m.dims; i++) {
            s << (i ? ", " : "") << m.size[i];
        }
        s << ")";
        return s.str();
    }

    int channels_ = 0, kh_ = 0, kw_ = 0, sh_ = 1, sw_ = 1, pt_ = 0, pl_ = 0, pb_ = 0, pr_ = 0;
    bool swish_ = false, mean_ = false;
    // With the attribute expand = 1 the input is (N, K, H, W) and the layer
    // first expands it to C channels, swish(we · x + eb) (a 1x1
    // convolution and its swish), blobs 2 and 3.
    bool expand_ = false;
    int k_ = 0;
    std::vector<float> we16_;     // expansion weights [C/16][K][16] (C a multiple of 16)
    std::vector<float> expanded_;  // the expansion, where the fused path does not run
    // Set by geometry for the input size h_ x w_.
    int h_ = -1, w_ = -1, ho_ = 0, wo_ = 0, hr_ = 0, l_ = 0, n_ = 0;
    size_t planes_len_ = 0;
    int row_len_ = 0;
    std::vector<int> off_;
    // The blocked path is taken for maps of at most this many padded
    // pixels: up to B3's 37x37. From 56x56 (B0) its transposes cost more
    // than the per-channel path's copies (BenchmarkDepthwiseLayer).
    static constexpr size_t blocked_max_padded = 42 * 42;
    bool blocked_ = false;
    blocked_geometry bg_{};
    std::vector<float> wt16_, bias16_;  // weights [C/16][taps][16], bias
};

}  // namespace

void ttm_swish_fast(const float* src, float* dst, int n) {
    ops_for(ttm_current_isa()).swish(src, dst, n);
}

void ttm_register_depthwise() { cv::dnn::LayerFactory::registerLayer("TTMDepthwise", DepthwiseLayer::create); }
