package vision

// Go side of kernels_cv.cpp's kernel selection.

/*
#cgo pkg-config: opencv4
#cgo CXXFLAGS: -std=c++11
#include "kernels_cv.h"
*/
import "C"

import "fmt"

// kernelISA names an instruction set the project's OpenCV layers
// (TTMDepthwise, TTMPointwise) have kernels for.
type kernelISA int

const (
	kernelBest    kernelISA = C.TTM_ISA_BEST
	kernelGeneric kernelISA = C.TTM_ISA_GENERIC
	kernelAVX2    kernelISA = C.TTM_ISA_AVX2
	kernelAVX512  kernelISA = C.TTM_ISA_AVX512
)

var kernelISAs = []kernelISA{kernelGeneric, kernelAVX2, kernelAVX512}

func (i kernelISA) String() string {
	switch i {
	case kernelBest:
		return "best"
	case kernelGeneric:
		return "generic"
	case kernelAVX2:
		return "avx2"
	case kernelAVX512:
		return "avx512"
	}
	return fmt.Sprintf("kernelISA(%d)", int(i))
}

func (i kernelISA) supported() bool { return C.ttm_kernel_supported(C.int(i)) == 1 }

// setKernelISA selects the kernels of every project layer in the
// process (the best one is selected at start-up); for tests.
func setKernelISA(i kernelISA) error {
	if C.ttm_kernel_set_isa(C.int(i)) != 0 {
		return fmt.Errorf("layer kernels %s: this CPU cannot run it", i)
	}
	return nil
}

// swishFast computes dst = swish(src) with the fused swish of the
// project's layers (ttm_swish_fast), in the selected kernel set; for tests.
func swishFast(dst, src []float32) {
	if len(dst) != len(src) {
		panic("vision: swishFast: dst and src differ in length")
	}
	if len(src) == 0 {
		return
	}
	C.ttm_swish_fast((*C.float)(&src[0]), (*C.float)(&dst[0]), C.int(len(src)))
}

// layerRounding counts the changes to how the project layers' kernels
// round (2: swish16's exp as a polynomial of 2^f instead of Cephes').
const layerRounding = 2

// LayerArithmetic names what a backbone's output depends on besides its
// file and input: the kernel set in use (LayerKernel) and the revision of
// its rounding. Features computed under two names differ in their last
// bits, so caches of features are keyed by it.
func LayerArithmetic() string { return fmt.Sprintf("%s.r%d", LayerKernel(), layerRounding) }

// LayerKernel names the instruction set of the project layers' kernels
// in this process: "avx512", "avx2" or "generic" (portable C++),
// the best the CPU supports.
func LayerKernel() string { return kernelISA(C.ttm_kernel_isa()).String() }
