package vision

// Go side of backbone_cv.cpp, a small C++ shim over the same OpenCV DNN
// library gocv links. gocv v0.31 does not catch C++ exceptions (an OpenCV
// error aborts the process), does not expose per-layer timings
// (gocv.Net.GetPerfProfile returns only the total) and returns a fresh Mat
// from every Forward; the shim catches every exception, reports per-layer
// times and copies the output straight into a caller's slice.

/*
#cgo pkg-config: opencv4
#cgo CXXFLAGS: -std=c++11
#include <stdlib.h>
#include "backbone_cv.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"gocv.io/x/gocv"
)

// cvNet is an OpenCV network owned through the shim.
type cvNet struct {
	p *C.ttm_net
	// outDims and outShape receive the output's shape on every forward.
	outDims  C.int
	outShape [8]C.int
	// err receives forward's error message; a field, not a local, because
	// a local whose address goes to C escapes to the heap on every call.
	err *C.char
}

// takeError converts and frees a message from the shim.
func takeError(e *C.char) error {
	if e == nil {
		return errors.New("opencv: unknown error")
	}
	s := C.GoString(e)
	C.free(unsafe.Pointer(e))
	return errors.New(strings.TrimSpace(s))
}

// readONNX imports a model from memory. OpenCV errors come back as errors.
func readONNX(b []byte) (*cvNet, error) {
	if len(b) == 0 {
		return nil, errors.New("opencv: empty model")
	}
	var e *C.char
	p := C.ttm_net_read_onnx((*C.char)(unsafe.Pointer(&b[0])), C.size_t(len(b)), &e)
	if p == nil {
		return nil, fmt.Errorf("opencv import: %w", takeError(e))
	}
	return &cvNet{p: p}, nil
}

func (n *cvNet) close() {
	if n.p != nil {
		C.ttm_net_free(n.p)
		n.p = nil
	}
}

// netConfig is what configure sets.
type netConfig struct {
	backend  gocv.NetBackendType
	target   gocv.NetTargetType
	noFusion bool
	inName   string
	inShape  []int
	filmName string
	filmLen  int
	outName  string
}

func (n *cvNet) configure(c netConfig) error {
	shape := make([]C.int, len(c.inShape))
	for i, d := range c.inShape {
		shape[i] = C.int(d)
	}
	in, film, out := C.CString(c.inName), C.CString(c.filmName), C.CString(c.outName)
	defer C.free(unsafe.Pointer(in))
	defer C.free(unsafe.Pointer(film))
	defer C.free(unsafe.Pointer(out))
	fusion := C.int(1)
	if c.noFusion {
		fusion = 0
	}
	var e *C.char
	if C.ttm_net_configure(n.p, C.int(c.backend), C.int(c.target), fusion, in, C.int(len(shape)), &shape[0],
		film, C.int(c.filmLen), out, &e) != 0 {
		return fmt.Errorf("opencv configure: %w", takeError(e))
	}
	return nil
}

// forward runs the network on in (and film, nil if the network has no FiLM
// input) and copies the output into out; out nil only reads the output's
// shape. The shapes were checked by the caller; OpenCV errors still come
// back as errors. It allocates nothing on the Go heap.
func (n *cvNet) forward(in, film, out []float32) error {
	var filmPtr, outPtr *C.float
	if len(film) > 0 {
		filmPtr = (*C.float)(unsafe.Pointer(&film[0]))
	}
	if len(out) > 0 {
		outPtr = (*C.float)(unsafe.Pointer(&out[0]))
	}
	n.err = nil
	if C.ttm_net_forward(n.p, (*C.float)(unsafe.Pointer(&in[0])), filmPtr, outPtr, C.size_t(len(out)),
		&n.outDims, &n.outShape[0], &n.err) != 0 {
		return fmt.Errorf("opencv forward: %w", takeError(n.err))
	}
	return nil
}

// lastShape is the output shape seen by the last forward.
func (n *cvNet) lastShape() []int {
	s := make([]int, min(int(n.outDims), len(n.outShape)))
	for i := range s {
		s[i] = int(n.outShape[i])
	}
	return s
}

// LayerTiming is one layer's share of the last forward pass, from OpenCV's
// Net::getPerfProfile. Layers fused into a neighbour report zero.
type LayerTiming struct {
	Name string // OpenCV's layer name (the ONNX node's first output)
	Type string // OpenCV's layer type: Convolution, Sigmoid, Eltwise, ...
	Time time.Duration
}

func (n *cvNet) profile() ([]LayerTiming, time.Duration, error) {
	var e *C.char
	var total C.double
	s := C.ttm_net_profile(n.p, &total, &e)
	if s == nil {
		return nil, 0, fmt.Errorf("opencv profile: %w", takeError(e))
	}
	text := C.GoString(s)
	C.free(unsafe.Pointer(s))
	var out []LayerTiming
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			continue
		}
		ms, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			return nil, 0, fmt.Errorf("opencv profile line %q: %w", line, err)
		}
		out = append(out, LayerTiming{Name: f[0], Type: f[1], Time: time.Duration(ms * float64(time.Millisecond))})
	}
	return out, time.Duration(float64(total) * float64(time.Millisecond)), nil
}

// layerTypeRegistered reports whether OpenCV's layer factory has a layer
// type of that name (the importer falls back to it for ops it does not
// parse itself).
func layerTypeRegistered(typ string) bool {
	c := C.CString(typ)
	defer C.free(unsafe.Pointer(c))
	return C.ttm_layer_registered(c) == 1
}

// SetOpenCVThreads sets the number of threads OpenCV uses (cv::setNumThreads,
// process-wide: it affects every network). n <= 0 restores OpenCV's default.
func SetOpenCVThreads(n int) {
	if n <= 0 {
		n = -1
	}
	C.ttm_set_num_threads(C.int(n))
}

// OpenCVThreads reports cv::getNumThreads.
func OpenCVThreads() int { return int(C.ttm_get_num_threads()) }

// OpenCVVersion is the version of the OpenCV headers the shim was built
// against (gocv.OpenCVVersion reports the library's).
func OpenCVVersion() string { return C.GoString(C.ttm_opencv_version()) }
