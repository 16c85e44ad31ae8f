package vision

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ttmrobot/ttm/internal/onnx"
)

// b0Depthwise lists the depthwise convolutions of EfficientNet-B0 at
// 224x224 (Keras padding): channels, input side, kernel, stride, and how
// many blocks have that shape.
var b0Depthwise = []struct{ c, side, k, s, blocks int }{
	{32, 112, 3, 1, 1},
	{96, 112, 3, 2, 1},
	{144, 56, 3, 1, 1},
	{144, 56, 5, 2, 1},
	{240, 28, 5, 1, 1},
	{240, 28, 3, 2, 1},
	{480, 14, 3, 1, 2},
	{480, 14, 5, 1, 1},
	{672, 14, 5, 1, 2},
	{672, 14, 5, 2, 1},
	{1152, 7, 5, 1, 3},
	{1152, 7, 3, 1, 1},
}

// BenchmarkDepthwiseLayer runs each depthwise convolution shape of B0 on
// its own (bias and swish included), in OpenCV's Convolution layer and in
// the TTMDepthwise layer with each kernel the CPU supports, on one OpenCV
// thread. gmac/s counts the multiply-adds, C·Ho·Wo·k², per second the
// layers took by OpenCV's profile (layer-ms: the convolution, its swish,
// and for OpenCV the Padding layer it adds for asymmetric pads);
// cpu-gmac/s per second the thread was on a CPU for the whole forward
// pass, the copies of the input and output (ns/op) included, which other
// load on the machine does not change.
//
//	go test -run '^$' -bench DepthwiseLayer -benchtime 200x ./vision
func BenchmarkDepthwiseLayer(b *testing.B) {
	defer setKernelISA(kernelBest)
	defer SetOpenCVThreads(0)
	SetOpenCVThreads(1)
	for _, l := range b0Depthwise {
		pads := [4]int{l.k / 2, l.k / 2, l.k / 2, l.k / 2}
		if l.s == 2 {
			pads = [4]int{l.k/2 - 1, l.k/2 - 1, l.k / 2, l.k / 2}
		}
		c := dwCase{n: 1, c: l.c, h: l.side, w: l.side, kh: l.k, kw: l.k, sh: l.s, sw: l.s, pads: pads, bias: true, swish: true}
		r := rand.New(rand.NewPCG(1, 2))
		wt, bias := c.weights(r)
		in := randSlice32(r, c.c*c.h*c.w)
		ho, wo := (c.h+pads[0]+pads[2]-c.kh)/c.sh+1, (c.w+pads[1]+pads[3]-c.kw)/c.sw+1
		macs := float64(c.c * ho * wo * c.kh * c.kw)
		impls := []struct {
			name string
			isa  kernelISA
			opts PrepareOptions
		}{{"opencv", kernelBest, PrepareOptions{SwishOp: "TTMSwish"}}}
		for _, isa := range kernelISAs {
			if isa.supported() {
				impls = append(impls, struct {
					name string
					isa  kernelISA
					opts PrepareOptions
				}{"ttm-" + isa.String(), isa, PrepareOptions{SwishOp: "TTMSwish", DepthwiseOp: DepthwiseOp}})
			}
		}
		for _, impl := range impls {
			b.Run(fmt.Sprintf("c%d-%dx%d-k%d-s%d/%s", l.c, l.side, l.side, l.k, l.s, impl.name), func(b *testing.B) {
				if err := setKernelISA(impl.isa); err != nil {
					b.Fatal(err)
				}
				// With one OpenCV thread the layer runs on the calling
				// thread, whose CPU time threadCPUTime reads.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				net, outLen := loadDepthwise(b, c.graphOf(wt, bias), impl.opts, []int{1, c.c, c.h, c.w})
				defer net.close()
				out := make([]float32, outLen)
				var layers, cpu time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					cpu0 := threadCPUTime()
					if err := net.forward(in, nil, out); err != nil {
						b.Fatal(err)
					}
					cpu += threadCPUTime() - cpu0
					b.StopTimer()
					_, total, err := net.profile()
					if err != nil {
						b.Fatal(err)
					}
					layers += total
					b.StartTimer()
				}
				b.ReportMetric(ms(layers)/float64(b.N), "layer-ms")
				b.ReportMetric(macs*float64(b.N)/layers.Seconds()/1e9, "gmac/s")
				b.ReportMetric(macs*float64(b.N)/cpu.Seconds()/1e9, "cpu-gmac/s")
			})
		}
	}
}

// loadDepthwise prepares and loads a graph of dwCase into OpenCV and runs
// it once; it returns the net and its output length.
func loadDepthwise(b *testing.B, m *onnx.Model, opts PrepareOptions, inShape []int) (*cvNet, int) {
	b.Helper()
	opts.Inputs = map[string][]int64{"x": {int64(inShape[0]), int64(inShape[1]), int64(inShape[2]), int64(inShape[3])}}
	opts.ImageInput, opts.Output = "x", "y"
	if _, err := PrepareONNX(m, opts); err != nil {
		b.Fatal(err)
	}
	buf, err := onnx.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	net, err := readONNX(buf)
	if err != nil {
		b.Fatal(err)
	}
	if err := net.configure(netConfig{inName: "x", inShape: inShape, outName: "y"}); err != nil {
		b.Fatal(err)
	}
	in := make([]float32, inShape[0]*inShape[1]*inShape[2]*inShape[3])
	if err := net.forward(in, nil, nil); err != nil {
		b.Fatal(err)
	}
	n := 1
	for _, d := range net.lastShape() {
		n *= d
	}
	return net, n
}

// BenchmarkBackboneDepthwise compares whole backbones with and without the
// depthwise rewrite on a shared machine: every iteration runs one frame
// through each variant in turn, so load from elsewhere hits them alike.
// It reports each variant's median frame (<variant>-ms) and the median
// time its depthwise layers took by OpenCV's profile (<variant>-dw-ms:
// the layers named .../depthwise..., with the swish where it is a layer
// of its own); ns/op is the sum over the variants.
//
//	go test -run '^$' -bench BackboneDepthwise -benchtime 20x ./vision
func BenchmarkBackboneDepthwise(b *testing.B) {
	nets := []struct {
		name string
		cfg  EfficientNetConfig
	}{
		{"b0-224", EfficientNetConfig{Variant: "b0", Seed: 1}},
		{"b3-300", EfficientNetConfig{Variant: "b3", Seed: 1, Padding: PaddingKeras}},
	}
	modes := []DepthwiseMode{DepthwiseFast, DepthwiseSeparateSwish, DepthwiseOpenCV}
	defer SetOpenCVThreads(0)
	for _, n := range nets {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", n.name, threads), func(b *testing.B) {
				g := generate(b, n.cfg)
				path := g.write(b)
				h, w := g.net.InputSize()
				img := syntheticImage(rand.New(rand.NewPCG(1, 1)), h, w)
				bbs := make([]*Backbone, len(modes))
				var out []float32
				for i, m := range modes {
					bbs[i] = openTest(b, BackboneSpec{Path: path, Height: h, Width: w, Threads: threads, Depthwise: m})
					c, fh, fw := bbs[i].OutputShape()
					out = make([]float32, c*fh*fw)
					for j := 0; j < 2; j++ { // warm-up
						if err := bbs[i].Run(img, nil, out); err != nil {
							b.Fatal(err)
						}
					}
				}
				frame := make([][]time.Duration, len(modes))
				dw := make([][]time.Duration, len(modes))
				b.ReportAllocs()
				b.ResetTimer()
				for it := 0; it < b.N; it++ {
					for i, bb := range bbs {
						t0 := time.Now()
						if err := bb.Run(img, nil, out); err != nil {
							b.Fatal(err)
						}
						frame[i] = append(frame[i], time.Since(t0))
						b.StopTimer()
						dw[i] = append(dw[i], depthwiseTime(bb.LayerTimings()))
						b.StartTimer()
					}
				}
				b.StopTimer()
				for i, m := range modes {
					b.ReportMetric(ms(median(frame[i])), m.String()+"-ms")
					b.ReportMetric(ms(median(dw[i])), m.String()+"-dw-ms")
					b.Logf("%s: %s", m, profileByPart(bbs[i].LayerTimings()))
				}
			})
		}
	}
}

// depthwiseTime sums the layers of the depthwise convolutions and their
// activations: the layers whose names contain "/depthwise".
func depthwiseTime(ts []LayerTiming) time.Duration {
	var d time.Duration
	for _, t := range ts {
		if strings.Contains(t.Name, "/depthwise") {
			d += t.Time
		}
	}
	return d
}

// threadCPUTime is the calling OS thread's CPU time.
func threadCPUTime() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
