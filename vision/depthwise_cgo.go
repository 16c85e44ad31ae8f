package vision

// Go side of depthwise_cv.cpp's kernel selection.

/*
#cgo pkg-config: opencv4
#cgo CXXFLAGS: -std=c++11
#include "depthwise_cv.h"
*/
import "C"

import "fmt"

// depthwiseISA names an instruction set the TTMDepthwise layer has a
// kernel for.
type depthwiseISA int

const (
	depthwiseBest    depthwiseISA = C.TTM_DW_BEST
	depthwiseGeneric depthwiseISA = C.TTM_DW_GENERIC
	depthwiseAVX2    depthwiseISA = C.TTM_DW_AVX2
	depthwiseAVX512  depthwiseISA = C.TTM_DW_AVX512
)

var depthwiseISAs = []depthwiseISA{depthwiseGeneric, depthwiseAVX2, depthwiseAVX512}

func (i depthwiseISA) String() string {
	switch i {
	case depthwiseBest:
		return "best"
	case depthwiseGeneric:
		return "generic"
	case depthwiseAVX2:
		return "avx2"
	case depthwiseAVX512:
		return "avx512"
	}
	return fmt.Sprintf("depthwiseISA(%d)", int(i))
}

func (i depthwiseISA) supported() bool { return C.ttm_depthwise_supported(C.int(i)) == 1 }

// setDepthwiseISA selects the kernel of every TTMDepthwise layer in the
// process (the best one is selected at start-up); for tests.
func setDepthwiseISA(i depthwiseISA) error {
	if C.ttm_depthwise_set_isa(C.int(i)) != 0 {
		return fmt.Errorf("depthwise kernel %s: this CPU cannot run it", i)
	}
	return nil
}

// DepthwiseKernel names the instruction set of the TTMDepthwise layer's
// kernel in this process: "avx512", "avx2" or "generic" (portable C++),
// the best the CPU supports.
func DepthwiseKernel() string { return depthwiseISA(C.ttm_depthwise_isa()).String() }
