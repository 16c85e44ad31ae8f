#include "peak.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("avx512f"))) static double loop_avx512(long iters, float* sink) {
    __m512 a[24];
    const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 24; i++) {
        a[i] = _mm512_set1_ps((float)i);
    }
    for (long k = 0; k < iters; k++) {
#pragma GCC unroll 24
        for (int i = 0; i < 24; i++) {
            a[i] = _mm512_fmadd_ps(a[i], b, c);
        }
    }
    float s = 0;
    for (int i = 0; i < 24; i++) {
        s += _mm512_reduce_add_ps(a[i]);
    }
    *sink = s;
    return (double)iters * 24 * 16 * 2;
}

__attribute__((target("avx2,fma"))) static double loop_avx2(long iters, float* sink) {
    __m256 a[12];
    const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++) {
        a[i] = _mm256_set1_ps((float)i);
    }
    for (long k = 0; k < iters; k++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) {
            a[i] = _mm256_fmadd_ps(a[i], b, c);
        }
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) {
            a[i] = _mm256_fmadd_ps(a[i], b, c);
        }
    }
    float lanes[8], s = 0;
    for (int i = 0; i < 12; i++) {
        _mm256_storeu_ps(lanes, a[i]);
        for (int j = 0; j < 8; j++) {
            s += lanes[j];
        }
    }
    *sink = s;
    return (double)iters * 24 * 8 * 2;
}
#endif

static double loop_scalar(long iters, float* sink) {
    float a[24];
    for (int i = 0; i < 24; i++) {
        a[i] = (float)i;
    }
    for (long k = 0; k < iters; k++) {
        for (int i = 0; i < 24; i++) {
            a[i] = a[i] * 0.999999f + 1e-7f;
        }
    }
    float s = 0;
    for (int i = 0; i < 24; i++) {
        s += a[i];
    }
    *sink = s;
    return (double)iters * 24 * 2;
}

double ttm_fma_loop(long iters, float* sink) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        return loop_avx512(iters, sink);
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        return loop_avx2(iters, sink);
    }
#endif
    return loop_scalar(iters, sink);
}
