package vision

import (
	"fmt"
	"math"
)

// EfficientNet B0-B3 (Tan & Le, "EfficientNet: Rethinking Model Scaling for
// Convolutional Neural Networks", ICML 2019, https://arxiv.org/abs/1905.11946),
// as in the reference TF/Keras implementation: a 3x3/2 stem convolution,
// seven stages of MBConv blocks (1x1 expansion, k x k depthwise convolution,
// squeeze-and-excitation with ratio 0.25 of the block's input channels,
// 1x1 projection, identity skip when stride is 1 and channels match), a
// 1x1 head convolution, swish everywhere, batch norm after every
// non-SE convolution (here folded into the convolution). Compound scaling
// multiplies channels by the width coefficient (rounded to multiples of 8)
// and block repeats by the depth coefficient (rounded up).

// EfficientNetVariant is one member of the family.
type EfficientNetVariant struct {
	Name       string
	Width      float64 // channel multiplier
	Depth      float64 // repeat multiplier
	Resolution int     // input height and width
}

// The published coefficients of B0-B3.
var efficientNetVariants = []EfficientNetVariant{
	{"b0", 1.0, 1.0, 224},
	{"b1", 1.0, 1.1, 240},
	{"b2", 1.1, 1.2, 260},
	{"b3", 1.2, 1.4, 300},
}

// LookupEfficientNet returns the variant named "b0".."b3".
func LookupEfficientNet(name string) (EfficientNetVariant, error) {
	for _, v := range efficientNetVariants {
		if v.Name == name {
			return v, nil
		}
	}
	return EfficientNetVariant{}, fmt.Errorf("efficientnet: unknown variant %q (have b0, b1, b2, b3)", name)
}

// Padding says how stride-2 convolutions pad their input.
type Padding int

const (
	// PaddingKeras is Keras' "correct padding" for stride-2 convolutions:
	// explicit zero padding of k/2-1 rows/columns before and k/2 after,
	// then a VALID convolution. This is what keras.applications'
	// correct_pad returns when the spatial size is unknown when the model
	// is built (with a known odd size it pads k/2 before instead); it gives
	// the 9x9 map RT-1 reports for B3 at 300x300.
	PaddingKeras Padding = iota
	// PaddingSame is TensorFlow's SAME padding: the output has ceil(n/s)
	// positions, and the extra padding row/column goes at the end. B3 at
	// 300x300 gives a 10x10 map.
	PaddingSame
)

func (p Padding) String() string {
	switch p {
	case PaddingKeras:
		return "keras"
	case PaddingSame:
		return "same"
	}
	return fmt.Sprintf("Padding(%d)", int(p))
}

// ParsePadding parses "keras" or "same".
func ParsePadding(s string) (Padding, error) {
	switch s {
	case "keras":
		return PaddingKeras, nil
	case "same":
		return PaddingSame, nil
	}
	return 0, fmt.Errorf("efficientnet: unknown padding %q (have keras, same)", s)
}

// pads returns the (before, after) padding of one spatial axis of size n for
// a k-wide convolution with this stride.
func (p Padding) pads(n, k, stride int) (int, int) {
	if stride == 1 {
		return k / 2, k / 2 // odd k: symmetric, output size n
	}
	if p == PaddingKeras {
		return k/2 - 1, k / 2
	}
	out := (n + stride - 1) / stride
	total := max((out-1)*stride+k-n, 0)
	return total / 2, total - total/2
}

// Base B0 stages: repeats, kernel, stride, expansion ratio, in and out
// channels (before width scaling).
var efficientNetStages = []struct{ repeats, kernel, stride, expand, in, out int }{
	{1, 3, 1, 1, 32, 16},
	{2, 3, 2, 6, 16, 24},
	{2, 5, 2, 6, 24, 40},
	{3, 3, 2, 6, 40, 80},
	{3, 5, 1, 6, 80, 112},
	{4, 5, 2, 6, 112, 192},
	{1, 3, 1, 6, 192, 320},
}

const (
	seRatio       = 0.25
	stemChannels  = 32
	headChannels  = 1280
	imagenetClass = 1000
)

// roundFilters scales a channel count by the width coefficient and rounds
// it to a multiple of 8, never down by more than 10% (the reference's
// round_filters).
func roundFilters(c int, width float64) int {
	const divisor = 8
	f := float64(c) * width
	n := max(divisor, int(f+divisor/2)/divisor*divisor)
	if float64(n) < 0.9*f {
		n += divisor
	}
	return n
}

// roundRepeats scales a repeat count by the depth coefficient, rounding up.
func roundRepeats(r int, depth float64) int { return int(math.Ceil(depth * float64(r))) }

// mbconvSpec is the shape of one MBConv block.
type mbconvSpec struct {
	in, out, expanded, squeezed int // channels: block input, output, after expansion, SE bottleneck
	kernel, stride              int
	h, w, oh, ow                int    // input and output spatial size
	pads                        [4]int // depthwise padding: top, left, bottom, right
	skip                        bool   // identity skip connection
}

// efficientNetSpec is the architecture of a variant at an input size.
type efficientNetSpec struct {
	variant    EfficientNetVariant
	padding    Padding
	h, w       int    // input size
	stem       int    // stem output channels
	stemPads   [4]int // stem padding
	sh, sw     int    // stem output size
	blocks     []mbconvSpec
	head       int // head channels
	fh, fw     int // feature map size
	lastOutput int // channels entering the head
}

func convPads(p Padding, h, w, k, stride int) (pads [4]int, oh, ow int) {
	t, b := p.pads(h, k, stride)
	l, r := p.pads(w, k, stride)
	oh = (h+t+b-k)/stride + 1
	ow = (w+l+r-k)/stride + 1
	return [4]int{t, l, b, r}, oh, ow
}

func newEfficientNetSpec(v EfficientNetVariant, p Padding, h, w int) (*efficientNetSpec, error) {
	if h < 32 || w < 32 || h > 4096 || w > 4096 {
		return nil, fmt.Errorf("efficientnet: input %dx%d outside 32..4096", h, w)
	}
	s := &efficientNetSpec{variant: v, padding: p, h: h, w: w}
	s.stem = roundFilters(stemChannels, v.Width)
	s.stemPads, s.sh, s.sw = convPads(p, h, w, 3, 2)
	ch, cw := s.sh, s.sw
	for _, st := range efficientNetStages {
		in, out := roundFilters(st.in, v.Width), roundFilters(st.out, v.Width)
		for r := 0; r < roundRepeats(st.repeats, v.Depth); r++ {
			b := mbconvSpec{in: in, out: out, kernel: st.kernel, stride: st.stride, h: ch, w: cw}
			if r > 0 {
				b.in, b.stride = out, 1
			}
			b.expanded = b.in * st.expand
			b.squeezed = max(1, int(float64(b.in)*seRatio))
			b.pads, b.oh, b.ow = convPads(p, ch, cw, b.kernel, b.stride)
			b.skip = b.stride == 1 && b.in == b.out
			s.blocks = append(s.blocks, b)
			ch, cw = b.oh, b.ow
		}
	}
	s.lastOutput = s.blocks[len(s.blocks)-1].out
	s.head = roundFilters(headChannels, v.Width)
	s.fh, s.fw = ch, cw
	return s, nil
}

// efficientNetParams counts the parameters of the published architecture:
// convolution weights, two per channel for every batch norm (scale and
// offset; the running statistics are not parameters), the SE convolutions'
// biases, and with classifier the 1000-way dense layer. This is the count
// torchvision and keras.applications report (B0: 5,288,548).
func (s *efficientNetSpec) params(classifier bool) int {
	bn := 2
	n := 3*3*3*s.stem + bn*s.stem
	for _, b := range s.blocks {
		if b.expanded != b.in {
			n += b.in*b.expanded + bn*b.expanded
		}
		n += b.kernel*b.kernel*b.expanded + bn*b.expanded
		n += b.expanded*b.squeezed + b.squeezed + b.squeezed*b.expanded + b.expanded
		n += b.expanded*b.out + bn*b.out
	}
	n += s.lastOutput*s.head + bn*s.head
	if classifier {
		n += s.head*imagenetClass + imagenetClass
	}
	return n
}

// bnChannels counts the channels that pass through a batch norm; folding
// each norm into its convolution leaves one bias per channel instead of a
// scale and an offset.
func (s *efficientNetSpec) bnChannels() int {
	n := s.stem
	for _, b := range s.blocks {
		if b.expanded != b.in {
			n += b.expanded
		}
		n += b.expanded + b.out
	}
	return n + s.head
}

// filmChannels lists the channels FiLM modulates: one entry per block.
func (s *efficientNetSpec) filmChannels() []int {
	c := make([]int, len(s.blocks))
	for i, b := range s.blocks {
		c[i] = b.out
	}
	return c
}
