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

// LayerKernel names the instruction set of the project layers' kernels
// in this process: "avx512", "avx2" or "generic" (portable C++),
// the best the CPU supports.
func LayerKernel() string { return kernelISA(C.ttm_kernel_isa()).String() }
