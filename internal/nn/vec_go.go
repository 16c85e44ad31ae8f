//go:build !cgo || purego

package nn

const vecKernels = "go"

const vecMin = 0 // every length runs the Go loop

func geluForward(out, in []float32)             { geluForwardGo(out, in) }
func geluBackward(dIn, dOut, in, out []float32) { geluBackwardGo(dIn, dOut, in, out) }
func softmaxRows(x []float32, n, k int)         { softmaxRowsGo(x, n, k) }
func sumRows(out, x []float32, n, c int)        { sumRowsGo(out, x, n, c) }
func add(dst, src []float32)                    { addGo(dst, src) }
func layerNormForward(out, mean, rstd, in, scale, bias []float32, n, c int, eps float32) {
	layerNormForwardGo(out, mean, rstd, in, scale, bias, n, c, eps)
}
func layerNormBackward(dIn, dScale, dBias, dOut, in, scale, mean, rstd []float32, n, c int) {
	layerNormBackwardGo(dIn, dScale, dBias, dOut, in, scale, mean, rstd, n, c)
}
