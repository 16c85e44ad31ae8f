package vision

import (
	"math"
	"math/rand/v2"
)

// ImageNet normalisation, per RGB channel.
var (
	imagenetMean = [3]float32{0.485, 0.456, 0.406}
	imagenetStd  = [3]float32{0.229, 0.224, 0.225}
)

// syntheticImage draws an image-like picture (3, H, W), ImageNet-normalised:
// a smooth colour gradient, a few flat-coloured rectangles and discs with
// sharp edges, a low-frequency texture and a little pixel noise. Natural
// images have this mix of large smooth regions, edges and fine detail; the
// calibration of the batch norms needs inputs with that structure, not
// white noise.
func syntheticImage(rng *rand.Rand, h, w int) []float32 {
	img := make([]float32, 3*h*w)
	var corner [4][3]float32
	for i := range corner {
		for c := range corner[i] {
			corner[i][c] = rng.Float32()
		}
	}
	for y := 0; y < h; y++ {
		fy := float32(y) / float32(max(h-1, 1))
		for x := 0; x < w; x++ {
			fx := float32(x) / float32(max(w-1, 1))
			for c := 0; c < 3; c++ {
				top := corner[0][c]*(1-fx) + corner[1][c]*fx
				bot := corner[2][c]*(1-fx) + corner[3][c]*fx
				img[(c*h+y)*w+x] = top*(1-fy) + bot*fy
			}
		}
	}
	shapes := 3 + rng.IntN(6)
	for s := 0; s < shapes; s++ {
		col := [3]float32{rng.Float32(), rng.Float32(), rng.Float32()}
		cy, cx := rng.Float64()*float64(h), rng.Float64()*float64(w)
		ry := (0.05 + 0.3*rng.Float64()) * float64(h)
		rx := (0.05 + 0.3*rng.Float64()) * float64(w)
		disc := rng.IntN(2) == 0
		for y := max(0, int(cy-ry)); y < min(h, int(cy+ry)+1); y++ {
			for x := max(0, int(cx-rx)); x < min(w, int(cx+rx)+1); x++ {
				dy, dx := (float64(y)-cy)/ry, (float64(x)-cx)/rx
				if disc && dy*dy+dx*dx > 1 {
					continue
				}
				for c := 0; c < 3; c++ {
					img[(c*h+y)*w+x] = col[c]
				}
			}
		}
	}
	// Texture: a sum of a few random plane waves, then pixel noise.
	type wave struct{ ky, kx, phase, amp float64 }
	waves := make([]wave, 4)
	for i := range waves {
		waves[i] = wave{rng.NormFloat64() * 0.3, rng.NormFloat64() * 0.3, rng.Float64() * 2 * math.Pi, 0.03 + 0.05*rng.Float64()}
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			t := 0.0
			for _, wv := range waves {
				t += wv.amp * math.Sin(wv.ky*float64(y)+wv.kx*float64(x)+wv.phase)
			}
			for c := 0; c < 3; c++ {
				i := (c*h+y)*w + x
				v := img[i] + float32(t) + 0.02*float32(rng.NormFloat64())
				v = min(max(v, 0), 1)
				img[i] = (v - imagenetMean[c]) / imagenetStd[c]
			}
		}
	}
	return img
}
