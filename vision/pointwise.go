package vision

import "fmt"

// PointwiseOp is the op type the backbone turns 1x1 convolutions into:
// this package's pointwise layer, registered with OpenCV by the shim
// (pointwise_cv.cpp). A node of this type reads the input (N, K, H, W),
// the initializers weights (M, K, 1, 1) and bias (M, optional), then the
// computed scale (N, K, 1, 1) if the attribute scale is 1, the residual
// (N, M, H, W) if the attribute residual is 1 and FiLM's multiplier and
// shift (N, M, 1, 1 each) if the attribute film is 1, and has the
// attribute activation ("swish" or "none"/absent).
const PointwiseOp = "TTMPointwise"

// ExcitationOp is the op type the backbone turns the gates of
// squeeze-excitation blocks into: this package's excitation layer
// (excitation_cv.cpp). A node of this type reads the channel means (N, C,
// 1, 1) and the initializers W1 (R, C, 1, 1), B1 (R), W2 (C, R, 1, 1), B2
// (C), and outputs sigmoid(W2 · swish(W1 · m + B1) + B2), (N, C, 1, 1).
const ExcitationOp = "TTMExcitation"

// ConvOp is the op type the backbone turns a stem convolution into (see
// PrepareOptions.ConvOp): the pointwise layer's matrix product over the
// pixels' receptive fields. A node of this type reads the input (N, C, H,
// W), the initializers weights (M, C, kh, kw) and bias (M, optional), and
// has the attributes kernel [kh kw], strides [sh sw], pads [top left
// bottom right] and activation.
const ConvOp = "TTMConv"

// PointwiseMode says how the backbone runs 1x1 convolutions.
type PointwiseMode int

const (
	// PointwiseFast turns each 1x1 Conv over more than one pixel into a
	// TTMPointwise layer, with the excitation scale before it and the
	// swish and residual addition after it fused in, and each
	// squeeze-excitation gate (two 1x1 Convs over one pixel) into a
	// TTMExcitation layer, and the stem convolution into a TTMConv layer,
	// where the layers' AVX-512 kernels run; elsewhere it is
	// PointwiseOpenCV.
	PointwiseFast PointwiseMode = iota
	// PointwiseOpenCV leaves them to OpenCV's Convolution, Scale and
	// Eltwise layers, and the gates to its Convolutions.
	PointwiseOpenCV
)

func (m PointwiseMode) String() string {
	switch m {
	case PointwiseFast:
		return "fast"
	case PointwiseOpenCV:
		return "opencv"
	}
	return fmt.Sprintf("PointwiseMode(%d)", int(m))
}

// prepare sets the rewrite options of the mode.
func (m PointwiseMode) prepare(o *PrepareOptions) {
	if m == PointwiseFast && kernelAVX512.supported() {
		o.PointwiseOp = PointwiseOp
		o.ExcitationOp = ExcitationOp
		o.ConvOp = ConvOp
	}
}

func (m PointwiseMode) check() error {
	if m < PointwiseFast || m > PointwiseOpenCV {
		return fmt.Errorf("backbone: unknown pointwise mode %d", int(m))
	}
	return nil
}
