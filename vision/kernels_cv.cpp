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

