package vision

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkBackbone measures one frame through OpenCV DNN: B0 at 224x224
// and B3 at 300x300, with 1 and 2 OpenCV threads, with swish fused into
// this package's TTMSwish layer (the default), into OpenCV's own Swish
// layer, and left as Sigmoid then Mul, with OpenCV's layer fusion off, and
// with the depthwise convolutions left to OpenCV's Convolution layer
// instead of TTMDepthwise (opencv-depthwise). Run with -benchmem: Run must
// report 0 allocs/op. Besides the mean (ns/op) it reports the fastest and
// the median frame, which move less with other load, the CPU time per
// frame summed over OpenCV's threads (cpu-ms), which measures the work
// whatever the load, and the time of the depthwise convolutions and their
// swish in the last frame's profile (dw-ms). BenchmarkBackboneDepthwise
// compares the depthwise modes frame by frame. With -v it logs where
// OpenCV spent the last frame, by layer type.
//
//	go test -run '^$' -bench Backbone -benchmem -benchtime 10x ./vision
func BenchmarkBackbone(b *testing.B) {
	nets := []struct {
		name string
		cfg  EfficientNetConfig
	}{
		{"b0-224", EfficientNetConfig{Variant: "b0", Seed: 1}},
		{"b3-300", EfficientNetConfig{Variant: "b3", Seed: 1}},
		{"b3-300-film512", EfficientNetConfig{Variant: "b3", Seed: 1, FiLMDim: 512}},
	}
	variants := []struct {
		name string
		edit func(*BackboneSpec)
	}{
		{"fast-swish", func(*BackboneSpec) {}},
		{"opencv-swish", func(s *BackboneSpec) { s.Swish = SwishOpenCV }},
		{"sigmoid-mul", func(s *BackboneSpec) { s.Swish = SwishUnfused }},
		{"no-layer-fusion", func(s *BackboneSpec) { s.NoLayerFusion = true }},
		{"opencv-depthwise", func(s *BackboneSpec) { s.Depthwise = DepthwiseOpenCV }},
	}
	defer SetOpenCVThreads(0)
	for _, n := range nets {
		g := generate(b, n.cfg)
		path := g.write(b)
		h, w := g.net.InputSize()
		img := syntheticImage(rand.New(rand.NewPCG(1, 1)), h, w)
		var film []float32
		if n.cfg.FiLMDim > 0 {
			film = randSlice32(rand.New(rand.NewPCG(2, 2)), n.cfg.FiLMDim)
		}
		for _, threads := range []int{1, 2} {
			for _, v := range variants {
				b.Run(fmt.Sprintf("%s/threads=%d/%s", n.name, threads, v.name), func(b *testing.B) {
					spec := BackboneSpec{Path: path, Height: h, Width: w, Threads: threads}
					if film != nil {
						spec.FiLMInput, spec.FiLMDim = EfficientNetFiLMInput, len(film)
					}
					v.edit(&spec)
					bb, err := OpenBackbone(spec, nil)
					if err != nil {
						b.Fatal(err)
					}
					defer bb.Close()
					c, fh, fw := bb.OutputShape()
					out := make([]float32, c*fh*fw)
					for i := 0; i < 2; i++ { // warm-up
						if err := bb.Run(img, film, out); err != nil {
							b.Fatal(err)
						}
					}
					times := make([]time.Duration, b.N)
					cpu0 := cpuTime()
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						t0 := time.Now()
						if err := bb.Run(img, film, out); err != nil {
							b.Fatal(err)
						}
						times[i] = time.Since(t0)
					}
					b.StopTimer()
					b.ReportMetric(ms(cpuTime()-cpu0)/float64(b.N), "cpu-ms")
					// On a shared machine the mean moves with other load;
					// the fastest and the median frames say more.
					slices.Sort(times)
					b.ReportMetric(ms(times[0]), "min-ms")
					b.ReportMetric(ms(times[len(times)/2]), "median-ms")
					ts := bb.LayerTimings()
					b.ReportMetric(ms(depthwiseTime(ts)), "dw-ms")
					b.Log(profileSummary(ts))
					b.Log(profileByPart(ts))
				})
			}
		}
	}
}

// profileSummary lists a frame's time by OpenCV layer type.
func profileSummary(ts []LayerTiming) string {
	by := map[string]time.Duration{}
	count := map[string]int{}
	for _, t := range ts {
		by[t.Type] += t.Time
		count[t.Type]++
	}
	types := make([]string, 0, len(by))
	for k := range by {
		types = append(types, k)
	}
	sort.Slice(types, func(i, j int) bool { return by[types[i]] > by[types[j]] })
	var s strings.Builder
	fmt.Fprintf(&s, "profile of the last frame, %.1f ms:", ms(TotalTime(ts)))
	for _, k := range types {
		fmt.Fprintf(&s, " %s %.1f ms (%d layers);", k, ms(by[k]), count[k])
	}
	return s.String()
}

// profileByPart lists a frame's time by part of a generated EfficientNet,
// from the layer names (node names of efficientnet_onnx.go).
func profileByPart(ts []LayerTiming) string {
	parts := []string{"/depthwise", "/expand", "/project", "/se/", "/film/", "stem", "head", "/add"}
	by := map[string]time.Duration{}
	for _, t := range ts {
		part := "other"
		for _, p := range parts {
			if strings.Contains(t.Name, p) {
				part = strings.Trim(p, "/")
				break
			}
		}
		by[part+" "+t.Type] += t.Time
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return by[keys[i]] > by[keys[j]] })
	var s strings.Builder
	s.WriteString("by part:")
	for _, k := range keys {
		if by[k] >= 100*time.Microsecond {
			fmt.Fprintf(&s, " %s %.1f ms;", k, ms(by[k]))
		}
	}
	return s.String()
}

// cpuTime is the process's user and system CPU time, all threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkGenerateEfficientNet measures writing a seeded backbone: drawing
// the weights, calibrating the batch norms on 4 synthetic images in Go,
// and encoding the ONNX file.
func BenchmarkGenerateEfficientNet(b *testing.B) {
	for _, v := range []string{"b0", "b3"} {
		b.Run(v, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				g, err := GenerateEfficientNet(EfficientNetConfig{Variant: v, Seed: uint64(i)})
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := g.ONNX(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
