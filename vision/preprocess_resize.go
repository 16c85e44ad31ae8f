package vision

import "math"

// axisTaps is a 1-D resampling: output i is Σ_t w[t]·src[idx[t]] over
// t in [start[i], start[i+1]). A 2-D resize is one axisTaps per axis,
// applied one after the other (every OpenCV filter used here is separable).
type axisTaps struct {
	width int       // taps of every output when they all have the same number, else 0
	start []int32   // (dst+1)
	idx   []int32   // source index of each tap
	w     []float32 // weight of each tap
}

func (a *axisTaps) add(i int, wt float32) {
	a.idx = append(a.idx, int32(i))
	a.w = append(a.w, wt)
}

func (a *axisTaps) close() { a.start = append(a.start, int32(len(a.idx))) }

// setWidth records the common number of taps, if there is one.
func (a *axisTaps) setWidth() *axisTaps {
	a.width = 0
	if len(a.start) < 2 {
		return a
	}
	w := a.start[1] - a.start[0]
	for i := 1; i+1 < len(a.start); i++ {
		if a.start[i+1]-a.start[i] != w {
			return a
		}
	}
	a.width = int(w)
	return a
}

// resizeTaps returns the taps of both axes for resizing src to dst with
// the given interpolation, reproducing cv::resize (OpenCV 4.6, imgproc/
// resize.cpp) for float images: the scale factors, the coordinate
// formulas, the float32 weights and the edge clamping are OpenCV's.
func resizeTaps(srcW, srcH, dstW, dstH int, interp Interpolation) (x, y axisTaps) {
	x, y = resizeTapsFor(srcW, srcH, dstW, dstH, interp)
	x.setWidth()
	y.setWidth()
	return x, y
}

func resizeTapsFor(srcW, srcH, dstW, dstH int, interp Interpolation) (x, y axisTaps) {
	// OpenCV: inv_scale = dst/src, scale = 1/inv_scale, in double.
	invX, invY := float64(dstW)/float64(srcW), float64(dstH)/float64(srcH)
	scaleX, scaleY := 1/invX, 1/invY
	switch interp {
	case Nearest:
		return nearestTaps(srcW, dstW, scaleX), nearestTaps(srcH, dstH, scaleY)
	case Area:
		if scaleX >= 1 && scaleY >= 1 {
			return boxTaps(srcW, dstW, scaleX), boxTaps(srcH, dstH, scaleY)
		}
		return linearTaps(srcW, dstW, scaleX, invX, true, true), linearTaps(srcH, dstH, scaleY, invY, true, false)
	}
	return linearTaps(srcW, dstW, scaleX, invX, false, true), linearTaps(srcH, dstH, scaleY, invY, false, false)
}

// nearestTaps is resizeNN: sx = min(floor(dx·scale), src-1).
func nearestTaps(src, dst int, scale float64) axisTaps {
	var a axisTaps
	a.start = append(make([]int32, 0, dst+1), 0)
	for d := range dst {
		s := min(int(math.Floor(float64(d)*scale)), src-1)
		a.add(s, 1)
		a.close()
	}
	return a
}

// linearTaps is the two-tap table of resizeGeneric. For INTER_LINEAR,
// fx = (dx+0.5)·scale - 0.5; for INTER_AREA when enlarging (areaMode),
// sx = floor(dx·scale) and fx = frac((dx+1) - (sx+1)·inv) when positive.
// Beyond the first or last source pixel the edge is replicated. OpenCV
// does that differently per axis, and so does this (the results differ by
// rounding only): along x (clampWeights) the position is moved onto the
// edge pixel, which then gets weight 1; along y the weights stay and both
// taps read the edge row.
func linearTaps(src, dst int, scale, inv float64, areaMode, clampWeights bool) axisTaps {
	var a axisTaps
	a.start = append(make([]int32, 0, dst+1), 0)
	for d := range dst {
		var s int
		var f float32
		if areaMode {
			s = int(math.Floor(float64(d) * scale))
			f = float32(float64(d+1) - float64(s+1)*inv)
			if f <= 0 {
				f = 0
			} else {
				f -= float32(math.Floor(float64(f)))
			}
		} else {
			f = float32((float64(d)+0.5)*scale - 0.5)
			fl := float32(math.Floor(float64(f)))
			s = int(fl)
			f -= fl
		}
		if clampWeights {
			if s < 0 {
				s, f = 0, 0
			}
			if s >= src-1 {
				s, f = src-1, 0
			}
		}
		a.add(min(max(s, 0), src-1), 1-f)
		a.add(min(max(s+1, 0), src-1), f)
		a.close()
	}
	return a
}

// boxTaps is computeResizeAreaTab: output d averages the source interval
// [d·scale, (d+1)·scale), each source pixel weighted by the part of it
// inside, normalised by the interval's length.
func boxTaps(src, dst int, scale float64) axisTaps {
	var a axisTaps
	a.start = append(make([]int32, 0, dst+1), 0)
	for d := range dst {
		fs1 := float64(d) * scale
		fs2 := fs1 + scale
		cell := min(scale, float64(src)-fs1)
		s1, s2 := int(math.Ceil(fs1)), int(math.Floor(fs2))
		s2 = min(s2, src-1)
		s1 = min(s1, s2)
		if float64(s1)-fs1 > 1e-3 {
			a.add(s1-1, float32((float64(s1)-fs1)/cell))
		}
		for s := s1; s < s2; s++ {
			a.add(s, float32(1/cell))
		}
		if fs2-float64(s2) > 1e-3 {
			a.add(s2, float32(min(fs2-float64(s2), 1, cell)/cell))
		}
		a.close()
	}
	return a
}
