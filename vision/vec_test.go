package vision

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ttmrobot/ttm/internal/nn"
)

// TestCKernelsEqualGoLoops: FiLM and the keypoints' backward run as C
// (internal/nn/cvec); they must give the Go loops' float32 bits exactly,
// so that training gives the same weights either way.
func TestCKernelsEqualGoLoops(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 14))
	same := func(t *testing.T, what string, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s[%d] = %g, Go loop %g", what, i, got[i], want[i])
			}
		}
	}
	for _, c := range []struct{ n, d, width, window int }{{320, 32, 20, 1}, {320, 8, 20, 0}, {12, 6, 4, 1}, {35, 3, 7, 2}} {
		t.Run(fmt.Sprintf("n=%d,d=%d,window=%d", c.n, c.d, c.window), func(t *testing.T) {
			n, d := c.n, c.d
			x, gamma, beta := randFloats(r, n*d, 2), randFloats(r, d, 0.5), randFloats(r, d, 0.5)
			got, want := make([]float32, n*d), make([]float32, n*d)
			FiLMForward(got, x, gamma, beta, n, d)
			filmForwardGo(want, x, gamma, beta, n, d)
			same(t, "FiLMForward", got, want)

			dOut, dX0, dGamma0 := randFloats(r, n*d, 1), randFloats(r, n*d, 1), randFloats(r, d, 1)
			dXc, dXg := append([]float32(nil), dX0...), append([]float32(nil), dX0...)
			dGc, dGg := append([]float32(nil), dGamma0...), append([]float32(nil), dGamma0...)
			dBeta := make([]float32, d)
			FiLMBackward(dXc, dGc, dBeta, dOut, x, gamma, n, d)
			filmBackwardGo(dXg, dGg, dOut, x, gamma, n, d)
			same(t, "FiLMBackward dX", dXc, dXg)
			same(t, "FiLMBackward dGamma", dGc, dGg)
			FiLMBackward(nil, dGc, dBeta, dOut, x, gamma, n, d)
			filmBackwardGo(nil, dGg, dOut, x, gamma, n, d)
			same(t, "FiLMBackward dGamma without dX", dGc, dGg)

			p := &KeypointParams{LogScale: randFloats(r, d, 0.5), Kernel: randFloats(r, 2*d*d, 0.3), Bias: randFloats(r, d, 0.1)}
			a := NewKeypointActs(n, d, c.width, c.window)
			tok := make([]float32, d)
			KeypointsForward(tok, a, x, p)
			labels := make([]float32, 0, 2*KeypointLabelLen)
			for range min(2, d) {
				labels = append(labels, r.Float32(), r.Float32(), 1)
			}
			SuperviseKeypoints(a, labels, 1, 0.5)
			dTok := randFloats(r, d, 1)
			gc := &KeypointParams{LogScale: randFloats(r, d, 1), Kernel: make([]float32, 2*d*d), Bias: make([]float32, d)}
			gg := &KeypointParams{LogScale: append([]float32(nil), gc.LogScale...), Kernel: make([]float32, 2*d*d), Bias: make([]float32, d)}
			dXc, dXg = append([]float32(nil), dX0...), append([]float32(nil), dX0...)
			KeypointsBackward(dXc, gc, dTok, a, x, p)
			dLogitsC := append([]float32(nil), a.dLogits...)
			clear(a.dCoords)
			nn.DenseBackward(a.dCoords, gg.Kernel, gg.Bias, dTok, a.Coords, p.Kernel, 1, 2*d, d)
			keypointsBackwardGo(dXg, gg, a, x, p)
			same(t, "KeypointsBackward dLogits", dLogitsC, a.dLogits)
			same(t, "KeypointsBackward dX", dXc, dXg)
			same(t, "KeypointsBackward dLogScale", gc.LogScale, gg.LogScale)
		})
	}
}

// keypointsBackwardGo is what KeypointsBackward does after the Dense, in
// Go: the reference for cvec's KeypointDLogits and KeypointDX.
func keypointsBackwardGo(dX []float32, g *KeypointParams, a *KeypointActs, x []float32, p *KeypointParams) {
	n, d := a.N, a.D
	for j := range d {
		dx, dy := a.dCoords[j], a.dCoords[d+j]
		cx, cy := a.Coords[j], a.Coords[d+j]
		q := a.Readout[j*n : (j+1)*n]
		row := a.dLogits[j*n : (j+1)*n]
		for i, w := range q {
			row[i] = w * (dx*(a.GX[i]-cx) + dy*(a.GY[i]-cy))
		}
	}
	if a.supervised {
		nn.Add(a.dLogits, a.dSupervised)
	}
	for j := range d {
		row := a.dLogits[j*n : (j+1)*n]
		s := float32(math.Exp(float64(p.LogScale[j])))
		var ds float64
		for i, v := range row {
			dX[i*d+j] += s * v
			ds += float64(v * x[i*d+j])
		}
		g.LogScale[j] += float32(ds) * s
	}
}
