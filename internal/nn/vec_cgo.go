//go:build cgo && !purego

package nn

import "github.com/ttmrobot/ttm/internal/nn/cvec"

// vecMin is the length below which the Go loop runs instead (cvec.MinLen).
const vecMin = cvec.MinLen

const vecKernels = "c"

func geluForward(out, in []float32) {
	if len(in) < vecMin {
		geluForwardGo(out, in)
		return
	}
	cvec.GELUForward(out, in)
}

func geluBackward(dIn, dOut, in, out []float32) {
	if len(in) < vecMin {
		geluBackwardGo(dIn, dOut, in, out)
		return
	}
	cvec.GELUBackward(dIn, dOut, in, out)
}

func softmaxRows(x []float32, n, k int) {
	if n*k < vecMin {
		softmaxRowsGo(x, n, k)
		return
	}
	for i := 0; i < n; {
		i += cvec.SoftmaxRows(x[i*k:], n-i, k)
		if i < n { // a row with a NaN or +Inf
			softmax(x[i*k : i*k+k])
			i++
		}
	}
}

func sumRows(out, x []float32, n, c int) {
	if n*c < vecMin {
		sumRowsGo(out, x, n, c)
		return
	}
	cvec.SumRows(out, x, n, c)
}

func add(dst, src []float32) {
	if len(src) < vecMin {
		addGo(dst, src)
		return
	}
	cvec.Add(dst, src)
}

func layerNormForward(out, mean, rstd, in, scale, bias []float32, n, c int, eps float32) {
	if n*c < vecMin {
		layerNormForwardGo(out, mean, rstd, in, scale, bias, n, c, eps)
		return
	}
	cvec.LayerNormForward(out, mean, rstd, in, scale, bias, n, c, eps)
}

func layerNormBackward(dIn, dScale, dBias, dOut, in, scale, mean, rstd []float32, n, c int) {
	if n*c < vecMin {
		layerNormBackwardGo(dIn, dScale, dBias, dOut, in, scale, mean, rstd, n, c)
		return
	}
	cvec.LayerNormBackward(dIn, dScale, dBias, dOut, in, scale, mean, rstd, n, c)
}
