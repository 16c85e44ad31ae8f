package vision

import "fmt"

// DepthwiseOp is the op type the backbone turns depthwise convolutions into:
// this package's depthwise layer, registered with OpenCV by the shim
// (depthwise_cv.cpp). A node of this type reads the input (N, C, H, W) and
// the initializers weights (C, 1, kh, kw) and bias (C, optional), and has
// the attributes kernel [kh kw], strides [sh sw], pads [top left bottom
// right] and activation ("swish" or "none"/absent). With the attribute
// expand 1 (and expand_activation "swish") it reads an MBConv block's
// input (N, K, H, W) instead, and after the bias the expansion's weights
// (C, K, 1, 1) and bias (C): see PrepareOptions.DepthwiseExpansion.
const DepthwiseOp = "TTMDepthwise"

// DepthwiseMode says how the backbone runs depthwise convolutions (Conv
// with group = input channels = output channels: EfficientNet's k x k
// convolutions), which OpenCV 4.6 runs at about 0.5-2 GMAC/s.
type DepthwiseMode int

const (
	// DepthwiseFast turns each depthwise Conv into a TTMDepthwise layer
	// (vectorised across the output, channels split across OpenCV's
	// threads) and fuses the TTMSwish that follows it into the layer, and
	// a narrow expansion before a strided one (where the pointwise layer
	// runs it).
	DepthwiseFast DepthwiseMode = iota
	// DepthwiseSeparateSwish is DepthwiseFast with the swish left as its
	// own layer.
	DepthwiseSeparateSwish
	// DepthwiseOpenCV leaves the Convs to OpenCV's Convolution layer.
	DepthwiseOpenCV
)

func (m DepthwiseMode) String() string {
	switch m {
	case DepthwiseFast:
		return "fast"
	case DepthwiseSeparateSwish:
		return "fast-separate-swish"
	case DepthwiseOpenCV:
		return "opencv"
	}
	return fmt.Sprintf("DepthwiseMode(%d)", int(m))
}

// prepare sets the rewrite options of the mode.
func (m DepthwiseMode) prepare(o *PrepareOptions) {
	if m == DepthwiseFast || m == DepthwiseSeparateSwish {
		o.DepthwiseOp = DepthwiseOp
	}
	o.DepthwiseExpansion = m == DepthwiseFast
	o.DepthwiseSeparateSwish = m == DepthwiseSeparateSwish
}

func (m DepthwiseMode) check() error {
	if m < DepthwiseFast || m > DepthwiseOpenCV {
		return fmt.Errorf("backbone: unknown depthwise mode %d", int(m))
	}
	return nil
}
