package nn

import "math"

// LayerNormForward normalises each row of in over its C channels, as Flax's
// nn.LayerNorm does: mean = E[x], var = max(0, E[x²] - mean²),
// out = (x - mean) / sqrt(var + eps) * scale + bias.
// It stores each row's mean and reciprocal standard deviation for the
// backward pass; mean and rstd may be nil at inference.
// in, out (N, C); scale, bias (C); mean, rstd (N).
func LayerNormForward(out, mean, rstd, in, scale, bias []float32, n, c int, eps float32) {
	checkLen("LayerNormForward in", in, n*c)
	checkLen("LayerNormForward out", out, n*c)
	checkLen("LayerNormForward scale", scale, c)
	checkLen("LayerNormForward bias", bias, c)
	if mean != nil {
		checkLen("LayerNormForward mean", mean, n)
		checkLen("LayerNormForward rstd", rstd, n)
	}
	layerNormForward(out, mean, rstd, in, scale, bias, n, c, eps)
}

// layerNormForwardGo is LayerNormForward's loop in Go (see geluForwardGo).
func layerNormForwardGo(out, mean, rstd, in, scale, bias []float32, n, c int, eps float32) {
	scale, bias = scale[:c], bias[:c]
	for i := 0; i < n; i++ {
		x := in[i*c : i*c+c]
		y := out[i*c : i*c+c]
		s, sq := sums(x)
		mu := s / float64(c)
		variance := max(0, sq/float64(c)-mu*mu)
		rs := float32(1 / math.Sqrt(variance+float64(eps)))
		m := float32(mu)
		y = y[:len(x)]
		for j, v := range x {
			y[j] = (v-m)*rs*scale[j] + bias[j]
		}
		if mean != nil {
			mean[i] = m
			rstd[i] = rs
		}
	}
}

// sums returns Σx and Σx² in float64, accumulated as four float32 partial
// sums over blocks of 64 (short enough that float32 loses nothing that
// matters, independent enough to keep the adders busy).
func sums(x []float32) (s, sq float64) {
	for len(x) > 0 {
		blk := x[:min(64, len(x))]
		x = x[len(blk):]
		var s0, s1, s2, s3, q0, q1, q2, q3 float32
		j := 0
		for ; j+4 <= len(blk); j += 4 {
			v := (*[4]float32)(blk[j:])
			s0 += v[0]
			s1 += v[1]
			s2 += v[2]
			s3 += v[3]
			q0 += v[0] * v[0]
			q1 += v[1] * v[1]
			q2 += v[2] * v[2]
			q3 += v[3] * v[3]
		}
		for ; j < len(blk); j++ {
			s0 += blk[j]
			q0 += blk[j] * blk[j]
		}
		s += float64(s0+s1) + float64(s2+s3)
		sq += float64(q0+q1) + float64(q2+q3)
	}
	return s, sq
}

// LayerNormBackward accumulates the gradients of LayerNormForward into dIn,
// dScale and dBias (dScale and dBias may be nil).
// dOut, in, dIn (N, C); scale (C); mean, rstd (N) as saved by the forward.
func LayerNormBackward(dIn, dScale, dBias, dOut, in, scale, mean, rstd []float32, n, c int) {
	checkLen("LayerNormBackward dIn", dIn, n*c)
	checkLen("LayerNormBackward dOut", dOut, n*c)
	checkLen("LayerNormBackward in", in, n*c)
	checkLen("LayerNormBackward scale", scale, c)
	checkLen("LayerNormBackward mean", mean, n)
	checkLen("LayerNormBackward rstd", rstd, n)
	if dScale != nil {
		checkLen("LayerNormBackward dScale", dScale, c)
	}
	if dBias != nil {
		checkLen("LayerNormBackward dBias", dBias, c)
	}
	layerNormBackward(dIn, dScale, dBias, dOut, in, scale, mean, rstd, n, c)
}

// layerNormBackwardGo is LayerNormBackward's loop in Go (see geluForwardGo).
func layerNormBackwardGo(dIn, dScale, dBias, dOut, in, scale, mean, rstd []float32, n, c int) {
	for i := 0; i < n; i++ {
		x := in[i*c : i*c+c]
		dy := dOut[i*c : i*c+c]
		dx := dIn[i*c : i*c+c]
		m, rs := mean[i], rstd[i]
		var dnormMean, dnormXhatMean float32
		for j, v := range x {
			xhat := (v - m) * rs
			dnorm := dy[j] * scale[j]
			dnormMean += dnorm
			dnormXhatMean += dnorm * xhat
		}
		dnormMean /= float32(c)
		dnormXhatMean /= float32(c)
		for j, v := range x {
			xhat := (v - m) * rs
			if dScale != nil {
				dScale[j] += dy[j] * xhat
			}
			if dBias != nil {
				dBias[j] += dy[j]
			}
			dnorm := dy[j] * scale[j]
			dx[j] += (dnorm - dnormMean - xhat*dnormXhatMean) * rs
		}
	}
}

const geluScale = 0.7978845608028654 // sqrt(2/pi)

// GELUForward applies the tanh approximation of GELU (Flax's nn.gelu default):
// out = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x³).
// It is evaluated as x·sigmoid(2u) = x / (1 + exp(-2u)), the same function
// without tanh's cancellation near zero and with one float32 exp.
// out may alias in.
func GELUForward(out, in []float32) {
	checkLen("GELUForward out", out, len(in))
	geluForward(out[:len(in)], in)
}

// geluForwardGo is GELUForward's loop in Go: the reference for vec.h's, and
// what runs without cgo or on short slices.
func geluForwardGo(out, in []float32) {
	out = out[:len(in)]
	for i, x := range in {
		out[i] = gelu(x)
	}
}

// gelu is GELUForward for one value, with Exp32's fast path written out so
// that the loop calling it stays free of function calls. Clamping the
// exponent changes nothing representable: beyond it gelu(x) rounds to ±0
// or to x.
func gelu(x float32) float32 {
	const (
		log2e = 1.4426950408889634
		ln2hi = 0.693145751953125
		ln2lo = 1.4286068203094172e-06
	)
	a := -2 * geluScale * (x + 0.044715*x*x*x)
	a = min(max(a, -87), 87)
	n := float32(int32(a*log2e+128.5)) - 128
	f := a - n*ln2hi - n*ln2lo
	p := 1 + f*(1+f*(1.0/2+f*(1.0/6+f*(1.0/24+f*(1.0/120+f*(1.0/720+f*(1.0/5040)))))))
	return x / (1 + p*math.Float32frombits(uint32(int32(n)+127)<<23))
}

// GELUBackward accumulates dIn += dOut * gelu'(in), with
// gelu'(x) = s + 2 x s (1 - s) u'(x), s = sigmoid(2u). out is
// GELUForward's output for in (not aliased): s = out / x saves the exp
// that dominated this kernel. Near x = 0, where the quotient loses its
// digits, s is its limit 1/2 (its error there is below float32's).
func GELUBackward(dIn, dOut, in, out []float32) {
	checkLen("GELUBackward dIn", dIn, len(in))
	checkLen("GELUBackward dOut", dOut, len(in))
	checkLen("GELUBackward out", out, len(in))
	geluBackward(dIn[:len(in)], dOut[:len(in)], in, out[:len(in)])
}

// geluBackwardGo is GELUBackward's loop in Go (see geluForwardGo).
func geluBackwardGo(dIn, dOut, in, out []float32) {
	dIn, dOut, out = dIn[:len(in)], dOut[:len(in)], out[:len(in)]
	for i, x := range in {
		s := float32(0.5)
		if x > 1e-30 || x < -1e-30 {
			s = out[i] / x
		}
		du := geluScale * (1 + 3*0.044715*x*x)
		dIn[i] += dOut[i] * (s + 2*x*s*(1-s)*du)
	}
}

// SoftmaxRowsForward applies a softmax to each row of x in place.
// x (N, K).
func SoftmaxRowsForward(x []float32, n, k int) {
	checkLen("SoftmaxRowsForward x", x, n*k)
	if k > 0 {
		softmaxRows(x, n, k)
	}
}

// softmaxRowsGo is SoftmaxRowsForward's loop in Go (see geluForwardGo).
func softmaxRowsGo(x []float32, n, k int) {
	for i := 0; i < n; i++ {
		softmax(x[i*k : i*k+k])
	}
}

// SoftmaxRowsBackward turns dX, the gradient with respect to the softmax
// output y, into the gradient with respect to its input, in place:
// dx_j = y_j (dy_j - Σ_i y_i dy_i). y, dX (N, K).
func SoftmaxRowsBackward(dX, y []float32, n, k int) {
	checkLen("SoftmaxRowsBackward dX", dX, n*k)
	checkLen("SoftmaxRowsBackward y", y, n*k)
	for i := 0; i < n; i++ {
		yr := y[i*k : i*k+k]
		dr := dX[i*k : i*k+k]
		var dot float32
		for j, v := range yr {
			dot += v * dr[j]
		}
		for j, v := range yr {
			dr[j] = v * (dr[j] - dot)
		}
	}
}

func softmax(x []float32) {
	mx := x[0]
	for _, v := range x[1:] {
		mx = max(mx, v)
	}
	var sum float32
	for j, v := range x {
		e := Exp32(v - mx)
		x[j] = e
		sum += e
	}
	inv := 1 / sum
	for j := range x {
		x[j] *= inv
	}
}

// ExpZeroBelow is where exp's float32 result becomes 0: e^-104 is below
// half the smallest subnormal (e^-103.97), so it rounds to 0. A trained
// policy's sharp softmaxes (keypoint maps) put many logits there.
const ExpZeroBelow = -104

// Exp32 is exp(x) in float32 to within 2 ulps, several times faster than
// math.Exp: x = n·ln2 + f with |f| <= ln2/2, exp(f) by its Taylor series to
// degree 7 (truncation error below 1e-8), and 2^n by building the exponent
// bits. Arguments whose result would overflow or be subnormal take math.Exp,
// except those below ExpZeroBelow, whose float32 result is 0.
func Exp32(x float32) float32 {
	if x > 88 || x < -87 || x != x {
		if x < ExpZeroBelow {
			return 0
		}
		return float32(math.Exp(float64(x)))
	}
	const (
		log2e = 1.4426950408889634
		ln2hi = 0.693145751953125 // ln 2 split so n·ln2hi is exact in float32
		ln2lo = 1.4286068203094172e-06
	)
	// round(x·log2e) by truncating a positive number: x·log2e is in (-126, 127).
	n := float32(int32(x*log2e+128.5)) - 128
	f := x - n*ln2hi - n*ln2lo
	p := 1 + f*(1+f*(1.0/2+f*(1.0/6+f*(1.0/24+f*(1.0/120+f*(1.0/720+f*(1.0/5040)))))))
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// Transpose writes out = inᵀ. in (N, K), out (K, N).
func Transpose(out, in []float32, n, k int) {
	checkLen("Transpose in", in, n*k)
	checkLen("Transpose out", out, n*k)
	for i := 0; i < n; i++ {
		row := in[i*k : i*k+k]
		for j, v := range row {
			out[j*n+i] = v
		}
	}
}

// SetRows fills each of the N rows of out with bias. out (N, C), bias (C).
func SetRows(out, bias []float32, n, c int) {
	checkLen("SetRows out", out, n*c)
	checkLen("SetRows bias", bias, c)
	for i := 0; i < n; i++ {
		copy(out[i*c:i*c+c], bias[:c])
	}
}

// SetColumns sets every element of row i of out to bias[i]. out (N, C), bias (N).
func SetColumns(out, bias []float32, n, c int) {
	checkLen("SetColumns out", out, n*c)
	checkLen("SetColumns bias", bias, n)
	for i := 0; i < n; i++ {
		row := out[i*c : i*c+c]
		b := bias[i]
		for j := range row {
			row[j] = b
		}
	}
}

// SumRows accumulates the column sums of x into out: out[j] += Σ_i x[i, j].
// This is the bias gradient of SetRows. x (N, C), out (C).
func SumRows(out, x []float32, n, c int) {
	checkLen("SumRows x", x, n*c)
	checkLen("SumRows out", out, c)
	sumRows(out[:c], x, n, c)
}

// sumRowsGo is SumRows' loop in Go (see geluForwardGo).
func sumRowsGo(out, x []float32, n, c int) {
	out = out[:c]
	for i := 0; i < n; i++ {
		row := x[i*c : i*c+c]
		for j, v := range row {
			out[j] += v
		}
	}
}

// SumColumns accumulates the row sums of x into out: out[i] += Σ_j x[i, j].
// This is the bias gradient of SetColumns. x (N, C), out (N).
func SumColumns(out, x []float32, n, c int) {
	checkLen("SumColumns x", x, n*c)
	checkLen("SumColumns out", out, n)
	for i := 0; i < n; i++ {
		var s float32
		for _, v := range x[i*c : i*c+c] {
			s += v
		}
		out[i] += s
	}
}

// Add accumulates dst += src element-wise.
func Add(dst, src []float32) {
	checkLen("Add dst", dst, len(src))
	add(dst[:len(src)], src)
}

// addGo is Add's loop in Go (see geluForwardGo).
func addGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] += v
	}
}

// Dense computes out = in·w + b: the Flax Dense layer.
// in (N, C), w (C, K), b (K), out (N, K).
func Dense(out, in, w, b []float32, n, c, k int) {
	SetRows(out, b, n, k)
	MatMul(out, in, w, n, c, k, true)
}

// DenseBackward accumulates the gradients of Dense; any destination may be nil.
func DenseBackward(dIn, dW, dB, dOut, in, w []float32, n, c, k int) {
	if dB != nil {
		SumRows(dB, dOut, n, k)
	}
	MatMulBackward(dIn, dW, dOut, in, w, n, c, k)
}

// DenseTokens applies a Dense layer along the token axis instead of the
// channel axis: out = (inᵀ·w + b)ᵀ, that is out[j, c] = Σ_i w[i, j] in[i, c] + b[j].
// MLP-Mixer's token mixing and the TTM's add/erase write use it; writing it
// this way avoids two transposes.
// in (N, C), w (N, K), b (K), out (K, C).
func DenseTokens(out, in, w, b []float32, n, c, k int) {
	checkLen("DenseTokens in", in, n*c)
	checkLen("DenseTokens w", w, n*k)
	checkLen("DenseTokens out", out, k*c)
	SetColumns(out, b, k, c)
	Gemm(true, false, k, c, n, 1, w, k, in, c, 1, out, c)
}

// DenseTokensBackward accumulates the gradients of DenseTokens; any
// destination may be nil. dOut (K, C).
func DenseTokensBackward(dIn, dW, dB, dOut, in, w []float32, n, c, k int) {
	if dB != nil {
		SumColumns(dB, dOut, k, c)
	}
	if dIn != nil {
		// dIn (N, C) += w (N, K) · dOut (K, C)
		Gemm(false, false, n, c, k, 1, w, k, dOut, c, 1, dIn, c)
	}
	if dW != nil {
		// dW (N, K) += in (N, C) · dOutᵀ (C, K)
		Gemm(false, true, n, k, c, 1, in, c, dOut, c, 1, dW, k)
	}
}
