package vision

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// b3Pointwise lists 1x1 convolutions of EfficientNet-B3 at 300x300 (Keras
// padding): input and output channels, map side, and what is fused.
var b3Pointwise = []struct {
	k, m, side             int
	swish, scale, residual bool
}{
	{24, 144, 150, true, false, false}, // blocks.2 expansion
	{144, 32, 75, false, true, false},  // blocks.2 projection
	{136, 816, 18, true, false, false}, // blocks.16 expansion
	{816, 136, 18, false, true, true},  // blocks.16 projection
	{232, 1392, 9, true, false, false}, // blocks.20 expansion
	{1392, 232, 9, false, true, true},  // blocks.20 projection
	{384, 1536, 9, true, false, false}, // head
}

// BenchmarkPointwiseLayer runs 1x1 convolutions of B3 through the
// TTMPointwise layer (AVX-512 where the CPU has it) on one and two OpenCV
// threads. layer-ms is the layer's time by OpenCV's profile and gflop/s
// its arithmetic (2·M·K·H·W) per second of it; the test graph's other
// layers (the excitation and residual inputs) are not counted.
//
//	go test -run '^$' -bench PointwiseLayer -benchtime 200x ./vision
func BenchmarkPointwiseLayer(b *testing.B) {
	defer SetOpenCVThreads(0)
	for _, l := range b3Pointwise {
		c := pwCase{n: 1, k: l.k, m: l.m, h: l.side, w: l.side, bias: true, swish: l.swish, scale: l.scale, residual: l.residual}
		r := rand.New(rand.NewPCG(1, 2))
		p := c.weights(r)
		in := randSlice32(r, c.k*c.h*c.w)
		flops := 2 * float64(c.m*c.k*c.h*c.w)
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("k%d-m%d-%dx%d/threads=%d", l.k, l.m, l.side, l.side, threads), func(b *testing.B) {
				SetOpenCVThreads(threads)
				net, outLen := loadDepthwise(b, c.graph(p), PrepareOptions{SwishOp: "TTMSwish", PointwiseOp: PointwiseOp}, []int{1, c.k, c.h, c.w})
				defer net.close()
				out := make([]float32, outLen)
				var layer time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := net.forward(in, nil, out); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					ts, _, err := net.profile()
					if err != nil {
						b.Fatal(err)
					}
					for _, t := range ts {
						if t.Type == PointwiseOp {
							layer += t.Time
						}
					}
					b.StartTimer()
				}
				b.ReportMetric(ms(layer)/float64(b.N), "layer-ms")
				b.ReportMetric(flops*float64(b.N)/layer.Seconds()/1e9, "gflop/s")
			})
		}
	}
}
