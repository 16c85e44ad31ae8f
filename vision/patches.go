package vision

import "fmt"

// Colour patches: a fixed, parameter-free feature appended to the
// backbone's map. Each cell of the h x w map gets the mean colour of each
// of its P x P sub-blocks of the network input. A pretrained backbone's
// features say where the objects and the hand are; the seeded random
// EfficientNets that are all this project has offline do not (measured:
// a per-cell detector on their block-5 channels places the hand 22 px off
// on 160 x 128 frames, on colour patches with a 3x3 hidden stage 6 px), so
// the simulator's presets add these.

// PatchChannels is the number of channels PatchesForward adds for P x P
// sub-blocks per cell.
func PatchChannels(p int) int { return 3 * p * p }

// CheckPatches reports whether an H x W input divides into an h x w map of
// cells of p x p equal sub-blocks.
func CheckPatches(inH, inW, h, w, p int) error {
	if p < 1 || h < 1 || w < 1 || inH%(h*p) != 0 || inW%(w*p) != 0 {
		return fmt.Errorf("vision: colour patches: a %dx%d input does not divide into %dx%d cells of %dx%d sub-blocks", inH, inW, h, w, p, p)
	}
	return nil
}

// PatchesForward writes the colour patches of in (3, H, W), the network
// input, into out (3·p·p, h·w), channel-major like a feature map: channel
// (sy·p + sx)·3 + c is the mean of input channel c over sub-block (sy, sx)
// of each cell. CheckPatches must hold. It does not allocate.
func PatchesForward(out, in []float32, inH, inW, h, w, p int) {
	mustHave("PatchesForward in", in, 3*inH*inW)
	mustHave("PatchesForward out", out, PatchChannels(p)*h*w)
	bh, bw := inH/(h*p), inW/(w*p) // sub-block size in input pixels
	inv := 1 / float32(bh*bw)
	n := h * w
	for c := range 3 {
		plane := in[c*inH*inW : (c+1)*inH*inW]
		for sy := range p {
			for sx := range p {
				dst := out[((sy*p+sx)*3+c)*n : ((sy*p+sx)*3+c+1)*n]
				for cy := range h {
					for cx := range w {
						y0, x0 := (cy*p+sy)*bh, (cx*p+sx)*bw
						var sum float32
						for y := y0; y < y0+bh; y++ {
							for _, v := range plane[y*inW+x0 : y*inW+x0+bw] {
								sum += v
							}
						}
						dst[cy*w+cx] = sum * inv
					}
				}
			}
		}
	}
}
