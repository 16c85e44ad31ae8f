package vision

import (
	"math"
	"runtime"
	"sync"

	"github.com/ttmrobot/ttm/internal/nn"
)

// A Go implementation of the EfficientNet forward pass. It calibrates the
// folded batch norms of a freshly generated network (see calibrate) and is
// the oracle the tests compare OpenCV's output against. It is written for
// clarity, not for the control loop, which runs the network in OpenCV.
//
// Shapes: N = images, C = channels, H, W = input size, OH, OW = output size,
// K = kernel size. Activations are NCHW, weights (Cout, Cin/groups, K, K).

type convAct int

const (
	actNone convAct = iota
	actSwish
	actSigmoid
)

// normKind says how calibration sets a convolution's scale and bias.
type normKind int

const (
	// normChannel: a folded batch norm; each output channel gets zero
	// mean and unit variance on the calibration batch.
	normChannel normKind = iota
	// normLayer: no batch norm (the SE convolutions); one scale for the
	// whole layer gives its output unit variance, the bias stays zero.
	normLayer
)

// convLayer is one convolution with its folded batch norm and activation:
// out = act(w ⊛ in + b).
type convLayer struct {
	name                         string
	cout, cin, k, stride, groups int // groups is 1, or cin for a depthwise convolution
	pads                         [4]int
	w                            []float32 // (Cout, Cin/groups, K, K)
	b                            []float32 // (Cout)
	act                          convAct
	norm                         normKind
	gain                         float32 // calibrated output standard deviation; 0 means 1
}

func (c *convLayer) outSize(h, w int) (int, int) {
	return (h+c.pads[0]+c.pads[2]-c.k)/c.stride + 1, (w+c.pads[1]+c.pads[3]-c.k)/c.stride + 1
}

// forward computes out (N, Cout, OH, OW) from in (N, Cin, H, W) without the
// activation, and returns OH, OW.
func (c *convLayer) forward(out, in []float32, n, h, w int) (int, int) {
	oh, ow := c.outSize(h, w)
	ohw, hw := oh*ow, h*w
	switch {
	case c.groups == c.cin && c.groups > 1:
		depthwiseForward(out, in, c.w, c.b, n, c.cin, h, w, oh, ow, c.k, c.stride, c.pads)
		return oh, ow
	case hw == 1 && c.k == 1:
		// A batch of vectors: out (N, Cout) = in (N, Cin) · wᵀ.
		nn.Gemm(false, true, n, c.cout, c.cin, 1, in, c.cin, c.w, c.cin, 0, out, c.cout)
	case c.k == 1 && c.stride == 1 && c.pads == [4]int{}:
		for i := 0; i < n; i++ {
			nn.Gemm(false, false, c.cout, hw, c.cin, 1, c.w, c.cin, in[i*c.cin*hw:], hw, 0, out[i*c.cout*hw:], hw)
		}
	default:
		kk := c.cin * c.k * c.k
		col := make([]float32, kk*ohw)
		for i := 0; i < n; i++ {
			im2col(col, in[i*c.cin*hw:(i+1)*c.cin*hw], c.cin, h, w, oh, ow, c.k, c.stride, c.pads)
			nn.Gemm(false, false, c.cout, ohw, kk, 1, c.w, kk, col, ohw, 0, out[i*c.cout*ohw:], ohw)
		}
	}
	for i := 0; i < n; i++ {
		for o := 0; o < c.cout; o++ {
			row := out[(i*c.cout+o)*ohw : (i*c.cout+o+1)*ohw]
			bo := c.b[o]
			for j := range row {
				row[j] += bo
			}
		}
	}
	return oh, ow
}

// im2col lays out the K x K patches of in (C, H, W) as col (C·K·K, OH·OW),
// zero outside the input.
func im2col(col, in []float32, c, h, w, oh, ow, k, stride int, pads [4]int) {
	for ci := 0; ci < c; ci++ {
		for ky := 0; ky < k; ky++ {
			for kx := 0; kx < k; kx++ {
				row := col[((ci*k+ky)*k+kx)*oh*ow:][:oh*ow]
				for y := 0; y < oh; y++ {
					iy := y*stride + ky - pads[0]
					for x := 0; x < ow; x++ {
						ix := x*stride + kx - pads[1]
						v := float32(0)
						if iy >= 0 && iy < h && ix >= 0 && ix < w {
							v = in[(ci*h+iy)*w+ix]
						}
						row[y*ow+x] = v
					}
				}
			}
		}
	}
}

// depthwiseForward: out (N, C, OH, OW) = per-channel K x K convolution of
// in (N, C, H, W) with w (C, 1, K, K), plus b (C). The loops run over the
// kernel taps outside and over a row of outputs inside, with the range of
// outputs whose input is inside the image worked out per tap, so the inner
// loop has no bounds tests.
func depthwiseForward(out, in, w, b []float32, n, c, h, wd, oh, ow, k, stride int, pads [4]int) {
	splitWork(n*c, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			src := in[i*h*wd : (i+1)*h*wd]
			dst := out[i*oh*ow : (i+1)*oh*ow]
			kw := w[(i%c)*k*k : (i%c+1)*k*k]
			bias := b[i%c]
			for j := range dst {
				dst[j] = bias
			}
			for kx := 0; kx < k; kx++ {
				// Outputs x with 0 <= x*stride + kx - pads[1] < wd.
				x0 := max(0, (pads[1]-kx+stride-1)/stride)
				x1 := min(ow, (wd-1+pads[1]-kx)/stride+1)
				if x0 >= x1 {
					continue
				}
				for ky := 0; ky < k; ky++ {
					kv := kw[ky*k+kx]
					for y := 0; y < oh; y++ {
						iy := y*stride + ky - pads[0]
						if iy < 0 || iy >= h {
							continue
						}
						drow := dst[y*ow+x0 : y*ow+x1]
						ix := x0*stride + kx - pads[1]
						srow := src[iy*wd+ix:]
						if stride == 1 {
							srow = srow[:len(drow)]
							for x := range drow {
								drow[x] += kv * srow[x]
							}
						} else {
							for x := range drow {
								drow[x] += kv * srow[x*stride]
							}
						}
					}
				}
			}
		}
	})
}

// splitWork runs f over [0, n) split between the available cores.
func splitWork(n int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		lo, hi := n*i/workers, n*(i+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

func refSigmoid(x float32) float32 { return 1 / (1 + nn.Exp32(-x)) }

// refActivate applies an activation in place.
func refActivate(x []float32, a convAct) {
	if a == actNone {
		return
	}
	splitWork((len(x)+4095)/4096, func(lo, hi int) {
		part := x[lo*4096 : min(hi*4096, len(x))]
		if a == actSwish {
			for i, v := range part {
				part[i] = v * refSigmoid(v)
			}
			return
		}
		for i, v := range part {
			part[i] = refSigmoid(v)
		}
	})
}

// globalAvgPool: out (N·C) = mean over H·W of in (N·C, H·W).
func globalAvgPool(out, in []float32, nc, hw int) {
	for i := 0; i < nc; i++ {
		var s float64
		for _, v := range in[i*hw : (i+1)*hw] {
			s += float64(v)
		}
		out[i] = float32(s / float64(hw))
	}
}

// calibrate sets the convolution's scale and bias from its output y
// (N, Cout, OH·OW), computed with a zero bias, and normalises y to match:
// the data-dependent initialisation of LSUV (Mishkin & Matas, "All you need
// is a good init", 2016) with batch-norm statistics. With normChannel each
// channel gets zero mean and unit variance (a batch norm in inference mode
// whose running statistics are this batch's, scale 1, offset 0, folded into
// the convolution); with normLayer the whole layer is scaled to unit
// variance.
func (c *convLayer) calibrate(y []float32, n, ohw int) {
	const eps = 1e-3 // EfficientNet's batch-norm epsilon
	gain := float64(c.gain)
	if gain == 0 {
		gain = 1
	}
	per := c.cin / c.groups * c.k * c.k
	scaleChannel := func(o int, s, shift float32) {
		ws := c.w[o*per : (o+1)*per]
		for j := range ws {
			ws[j] *= s
		}
		c.b[o] = shift
		for i := 0; i < n; i++ {
			row := y[(i*c.cout+o)*ohw : (i*c.cout+o+1)*ohw]
			for j, v := range row {
				row[j] = v*s + shift
			}
		}
	}
	if c.norm == normLayer {
		var s, ss float64
		for _, v := range y {
			s += float64(v)
			ss += float64(v) * float64(v)
		}
		m := s / float64(len(y))
		scale := float32(gain / math.Sqrt(ss/float64(len(y))-m*m+eps))
		for o := 0; o < c.cout; o++ {
			scaleChannel(o, scale, 0)
		}
		return
	}
	for o := 0; o < c.cout; o++ {
		var s, ss float64
		for i := 0; i < n; i++ {
			for _, v := range y[(i*c.cout+o)*ohw : (i*c.cout+o+1)*ohw] {
				s += float64(v)
				ss += float64(v) * float64(v)
			}
		}
		cnt := float64(n * ohw)
		m := s / cnt
		v := max(ss/cnt-m*m, 0)
		scale := gain / math.Sqrt(v+eps)
		scaleChannel(o, float32(scale), float32(-m*scale))
	}
}

// apply runs the convolution (calibrating it first if asked) and its
// activation, returning the output (N, Cout, OH, OW) and its size.
func (c *convLayer) apply(in []float32, n, h, w int, calib bool) ([]float32, int, int) {
	oh, ow := c.outSize(h, w)
	out := make([]float32, n*c.cout*oh*ow)
	if calib {
		clear(c.b)
	}
	c.forward(out, in, n, h, w)
	if calib {
		c.calibrate(out, n, oh*ow)
	}
	refActivate(out, c.act)
	return out, oh, ow
}

// forward runs the network on in (N, 3, H, W) and returns the feature map
// (N, C, FH, FW). film (N, D) is the FiLM embedding, nil if the network has
// no FiLM layers. With calib set, each convolution is calibrated on this
// batch before its output is used (one pass calibrates the whole network,
// in order, as LSUV does).
func (e *efficientNet) forward(in []float32, n int, film []float32, calib bool) []float32 {
	s := e.spec
	x, h, w := e.stem.apply(in, n, s.h, s.w, calib)
	for i := range e.blocks {
		x, h, w = e.blocks[i].forward(x, n, h, w, film, e.filmDim, calib)
	}
	x, _, _ = e.head.apply(x, n, h, w, calib)
	return x
}

// forward runs one MBConv block on x (N, Cin, H, W).
func (b *mbconv) forward(x []float32, n, h, w int, film []float32, filmDim int, calib bool) ([]float32, int, int) {
	in := x
	if b.expand != nil {
		x, _, _ = b.expand.apply(x, n, h, w, calib)
	}
	x, oh, ow := b.dw.apply(x, n, h, w, calib)
	// Squeeze and excitation: x *= refSigmoid(W2 swish(W1 mean(x) + b1) + b2).
	c, hw := b.dw.cout, oh*ow
	pooled := make([]float32, n*c)
	globalAvgPool(pooled, x, n*c, hw)
	r, _, _ := b.seReduce.apply(pooled, n, 1, 1, calib)
	g, _, _ := b.seExpand.apply(r, n, 1, 1, calib)
	for i := 0; i < n*c; i++ {
		gi := g[i]
		row := x[i*hw : (i+1)*hw]
		for j := range row {
			row[j] *= gi
		}
	}
	x, _, _ = b.project.apply(x, n, oh, ow, calib)
	if b.spec.skip {
		for i, v := range in {
			x[i] += v
		}
	}
	if b.film != nil {
		b.film.forward(x, film, n, b.spec.out, hw, filmDim)
	}
	return x, oh, ow
}

// forward applies FiLM in place to x (N, C, HW) with embedding e (N, D):
// x = x * (1 + W_m e + b_m) + (W_a e + b_a). The stored bm holds 1 + b_m.
func (f *effFiLM) forward(x, e []float32, n, c, hw, d int) {
	mul := make([]float32, n*c)
	add := make([]float32, n*c)
	nn.Dense(mul, e, f.wm, f.bm, n, d, c)
	nn.Dense(add, e, f.wa, f.ba, n, d, c)
	for i := 0; i < n*c; i++ {
		m, a := mul[i], add[i]
		row := x[i*hw : (i+1)*hw]
		for j, v := range row {
			row[j] = v*m + a
		}
	}
}
