package vision

import (
	"fmt"
)

// Preprocessor turns Frames into backbone input tensors as its
// PreprocessConfig says: resize (with the exact taps of cv::resize),
// channel order, scale, mean and std, planar NCHW. It keeps the resize
// tables of the last frame size it saw, so a stream of same-sized frames
// allocates nothing; a new frame size rebuilds them. A Preprocessor is not
// safe for concurrent use.
type Preprocessor struct {
	cfg     PreprocessConfig
	scale   float32
	mean    [3]float32 // per output channel
	invStd  [3]float32
	srcW    int
	srcH    int
	xt, yt  axisTaps
	rowUsed []bool    // (srcH) rows some output row reads
	rowF    []float32 // (3, srcW): one source row as float planes
	tmp     []float32 // (3, srcH, W): rows resized along x, planar
}

// NewPreprocessor validates cfg and returns a Preprocessor for it.
func NewPreprocessor(cfg PreprocessConfig) (*Preprocessor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Preprocessor{cfg: cfg, scale: cfg.Scale, mean: cfg.Mean}
	for c := range 3 {
		p.invStd[c] = 1 / cfg.Std[c]
	}
	return p, nil
}

// Config returns the configuration the Preprocessor was built with.
func (p *Preprocessor) Config() PreprocessConfig { return p.cfg }

// InputLen is the length Run's destination must have: 3·Height·Width.
func (p *Preprocessor) InputLen() int { return p.cfg.InputLen() }

// prepare builds the resize tables for a new source size.
func (p *Preprocessor) prepare(w, h int) {
	p.srcW, p.srcH = w, h
	p.xt, p.yt = resizeTaps(w, h, p.cfg.Width, p.cfg.Height, p.cfg.Interpolation)
	p.rowUsed = make([]bool, h)
	for _, s := range p.yt.idx {
		p.rowUsed[s] = true
	}
	p.rowF = make([]float32, 3*w)
	p.tmp = make([]float32, 3*h*p.cfg.Width)
}

// Run writes the input tensor for frame f into dst, which must hold
// exactly InputLen floats: dst (3, Height, Width), channel c of
// ChannelOrder in plane c. It returns an error only for a frame that fails
// Frame.Validate.
func (p *Preprocessor) Run(dst []float32, f Frame) error {
	if len(dst) != p.cfg.InputLen() {
		panic(fmt.Sprintf("vision: Preprocessor.Run: destination has %d floats, want 3x%dx%d = %d",
			len(dst), p.cfg.Height, p.cfg.Width, p.cfg.InputLen()))
	}
	if err := f.Validate(); err != nil {
		return fmt.Errorf("preprocess: %w", err)
	}
	if f.Width != p.srcW || f.Height != p.srcH {
		p.prepare(f.Width, f.Height)
	}
	// Byte offset within a source pixel of each output channel.
	rgb := f.Format.rgbOffsets()
	off := rgb
	if p.cfg.ChannelOrder == BGR {
		off = [3]int{rgb[2], rgb[1], rgb[0]}
	}
	p.resizeRows(f, off)
	p.resizeColumns(dst)
	return nil
}

// resizeRows resamples each used source row along x into tmp: the row's
// three channels are first converted to float planes (rowF), then each
// output is Σ w·rowF[idx] in tap order (the same arithmetic as OpenCV's
// horizontal pass, with a fast path for the common two-tap filters).
func (p *Preprocessor) resizeRows(f Frame, off [3]int) {
	bpp := f.Format.BytesPerPixel()
	sw, dw, sh := p.srcW, p.cfg.Width, p.srcH
	r0, r1, r2 := p.rowF[:sw], p.rowF[sw:2*sw], p.rowF[2*sw:3*sw]
	o0, o1, o2 := off[0], off[1], off[2]
	for y := range sh {
		if !p.rowUsed[y] {
			continue
		}
		row := f.Pix[y*f.Stride : y*f.Stride+sw*bpp]
		for x := range sw {
			px := row[x*bpp : x*bpp+bpp]
			r0[x], r1[x], r2[x] = float32(px[o0]), float32(px[o1]), float32(px[o2])
		}
		for c, rf := range [3][]float32{r0, r1, r2} {
			out := p.tmp[(c*sh+y)*dw : (c*sh+y)*dw+dw]
			p.xt.apply(out, rf)
		}
	}
}

// apply resamples one line: out[i] = Σ_t w[t]·src[idx[t]] over i's taps.
func (a *axisTaps) apply(out, src []float32) {
	switch a.width {
	case 1:
		idx, w := a.idx[:len(out)], a.w[:len(out)]
		for i := range out {
			out[i] = src[idx[i]] * w[i]
		}
		return
	case 2:
		idx, w := a.idx[:2*len(out)], a.w[:2*len(out)]
		for i := range out {
			out[i] = src[idx[2*i]]*w[2*i] + src[idx[2*i+1]]*w[2*i+1]
		}
		return
	}
	start, idx, w := a.start, a.idx, a.w
	for i := range out {
		var v float32
		for t := start[i]; t < start[i+1]; t++ {
			v += src[idx[t]] * w[t]
		}
		out[i] = v
	}
}

// resizeColumns resamples tmp along y and normalises into dst.
func (p *Preprocessor) resizeColumns(dst []float32) {
	dw, dh, sh := p.cfg.Width, p.cfg.Height, p.srcH
	start, idx, wts := p.yt.start, p.yt.idx, p.yt.w
	for c := range 3 {
		plane := p.tmp[c*sh*dw : (c+1)*sh*dw]
		scale, mean, inv := p.scale, p.mean[c], p.invStd[c]
		for y := range dh {
			out := dst[(c*dh+y)*dw : (c*dh+y)*dw+dw]
			t := start[y]
			s0 := plane[int(idx[t])*dw : int(idx[t])*dw+dw]
			w0 := wts[t]
			switch p.yt.width {
			case 1:
				for x, v := range s0 {
					out[x] = (v*w0*scale - mean) * inv
				}
				continue
			case 2:
				s1 := plane[int(idx[t+1])*dw : int(idx[t+1])*dw+dw]
				w1 := wts[t+1]
				for x, v := range s0 {
					out[x] = ((v*w0+s1[x]*w1)*scale - mean) * inv
				}
				continue
			}
			for x, v := range s0 {
				out[x] = v * w0
			}
			for t++; t < start[y+1]; t++ {
				src := plane[int(idx[t])*dw : int(idx[t])*dw+dw]
				w := wts[t]
				for x, v := range src {
					out[x] += v * w
				}
			}
			for x, v := range out {
				out[x] = (v*scale - mean) * inv
			}
		}
	}
}
