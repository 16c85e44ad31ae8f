// Run-time choice of the project layers' kernels: the best instruction set
// the CPU runs, or one a test forces (see kernels_cv.h).
#include "kernels_cv.h"

#include <atomic>
#include <initializer_list>

namespace {

bool isa_supported(int isa) {
#ifdef TTM_X86
    __builtin_cpu_init();  // idempotent; needed if called before libgcc's constructors
#endif
    switch (isa) {
        case TTM_ISA_GENERIC:
            return true;
#ifdef TTM_X86
        // libgcc's checks include the OS's support of the AVX state (XCR0).
        case TTM_ISA_AVX2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        case TTM_ISA_AVX512:
            return __builtin_cpu_supports("avx512f");
#endif
    }
    return false;
}

int best_isa() {
    for (int isa : {TTM_ISA_AVX512, TTM_ISA_AVX2}) {
        if (isa_supported(isa)) {
            return isa;
        }
    }
    return TTM_ISA_GENERIC;
}

std::atomic<int>& current_isa() {
    static std::atomic<int> isa(best_isa());
    return isa;
}

}  // namespace

int ttm_current_isa() { return current_isa().load(std::memory_order_relaxed); }

namespace {

float dot_generic(const float* a, const float* b, int n) {
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        for (int j = 0; j < 8; j++) {
            acc[j] += a[i + j] * b[i + j];
        }
    }
    for (; i < n; i++) {
        acc[0] += a[i] * b[i];
    }
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

#ifdef TTM_X86
__attribute__((target("avx512f"))) float dot_avx512(const float* a, const float* b, int n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), a1);
    }
    for (; i < n; i += 16) {
        const __mmask16 m = lanes16(n - i);
        a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), a0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}
#endif

}  // namespace

float ttm_dot(const float* a, const float* b, int n) {
#ifdef TTM_X86
    if (ttm_current_isa() == TTM_ISA_AVX512) {
        return dot_avx512(a, b, n);
    }
#endif
    return dot_generic(a, b, n);
}

extern "C" {

int ttm_kernel_supported(int isa) { return isa_supported(isa) ? 1 : 0; }

int ttm_kernel_set_isa(int isa) {
    if (isa == TTM_ISA_BEST) {
        isa = best_isa();
    }
    if (!isa_supported(isa)) {
        return -1;
    }
    current_isa().store(isa);
    return 0;
}

int ttm_kernel_isa(void) { return current_isa().load(); }

}  // extern "C"

