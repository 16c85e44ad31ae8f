package vision

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ttmrobot/ttm/internal/layer"
)

// BenchmarkHead is the Go side after the backbone for one frame at RT-1's
// sizes: projection 1536 -> 512 over a 9x9 (B3, Keras padding) or 10x10
// map, FiLM from a 512-d embedding, TokenLearner to 8 tokens; and FiLM +
// TokenLearner alone. tokens/s counts the K tokens a frame yields.
func BenchmarkHead(b *testing.B) {
	r := rand.New(rand.NewPCG(61, 62))
	for _, s := range []struct{ c, side int }{{1536, 9}, {1536, 10}, {1280, 7}} {
		n := s.side * s.side
		h, err := NewHead(HeadConfig{FeatureChannels: s.c})
		if err != nil {
			b.Fatal(err)
		}
		h.Init(1)
		for i := range h.P.FiLM.MultKernel { // non-zero FiLM: the real cost
			h.P.FiLM.MultKernel[i] = float32(r.NormFloat64() * 0.01)
			h.P.FiLM.AddKernel[i] = float32(r.NormFloat64() * 0.01)
		}
		feat, e := randFloats(r, s.c*n, 1), randFloats(r, 512, 1)
		a := h.NewActs(n)
		out := make([]float32, 8*512)
		b.Run(fmt.Sprintf("C%d-%dx%d/all", s.c, s.side, s.side), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h.Forward(out, a, feat, e)
			}
			b.ReportMetric(float64(8*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
		b.Run(fmt.Sprintf("C%d-%dx%d/film+tokenlearner", s.c, s.side, s.side), func(b *testing.B) {
			ProjectForward(a.Proj, feat, h.P.ProjKernel, h.P.ProjBias, s.c, n, 512)
			b.ReportAllocs()
			for b.Loop() {
				FiLMCoefficients(a.Gamma, a.Beta, e, &h.P.FiLM, 512, 512)
				FiLMForward(a.FiLM, a.Proj, a.Gamma, a.Beta, n, 512)
				layer.TokenLearnerForward(out, a.TL, a.FiLM, &h.P.TokenLearner, 1e-6)
			}
			b.ReportMetric(float64(8*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkFrontEnd is one control tick's image path on a 256x320 camera
// frame: decode (raw rgb8 or JPEG), preprocess, backbone (OpenCV DNN),
// projection, FiLM, TokenLearner, window. Goals on the 2-core machine:
// B0 at 224 under 70 ms, B3 at 300 under 230 ms per frame. The backbones
// are genuine seeded EfficientNets generated into a temporary directory.
func BenchmarkFrontEnd(b *testing.B) {
	const w, h = 320, 256
	pic := testPicture(w, h)
	r := rand.New(rand.NewPCG(63, 64))
	raw := rawMessage(pic, w, h, "rgb8", 0, r)
	jpg := &CompressedImage{Format: "jpeg", Data: encodeJPEG(b, goImage(pic, w, h, false), 90)}
	e := randFloats(r, 512, 1)
	for _, v := range []struct {
		variant string
		size    int
	}{{"b0", 224}, {"b3", 300}} {
		g, err := GenerateEfficientNet(EfficientNetConfig{Variant: v.variant, Height: v.size, Width: v.size, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(b.TempDir(), v.variant+".onnx")
		sum, err := g.WriteONNX(path)
		if err != nil {
			b.Fatal(err)
		}
		c, _, _ := g.FeatureShape()
		cfg := DefaultConfig(c)
		cfg.Preprocess.Height, cfg.Preprocess.Width = v.size, v.size
		cfg.Backbone = BackboneRef{File: filepath.Base(path), SHA256: sum}
		head, err := NewHead(cfg.Head)
		if err != nil {
			b.Fatal(err)
		}
		head.Init(1)
		fe, err := OpenFrontEnd(cfg, head, path, 0, hclog.NewNullLogger())
		if err != nil {
			b.Fatal(err)
		}
		fh, fw, k := v.size, v.size, cfg.Head.Tokens
		_, mh, mw := fe.FeatureShape()
		frame, err := DecodeImage(raw)
		if err != nil {
			b.Fatal(err)
		}
		tokens := make([]float32, k*cfg.Head.Dim)
		for _, src := range []struct {
			name string
			run  func() error
		}{
			{"rgb8", func() error { return fe.EncodeImage(raw, e) }},
			{"jpeg", func() error { return fe.EncodeCompressed(jpg, e) }},
			// The parts of the rgb8 tick, to see where the time goes.
			{"part-preprocess", func() error { return fe.pre.Run(fe.input, frame) }},
			{"part-backbone", func() error { return fe.backbone.Run(fe.input, nil, fe.features) }},
			{"part-head", func() error { fe.head.Forward(tokens, fe.acts, fe.features, e); return nil }},
		} {
			b.Run(fmt.Sprintf("%s-%dx%d-map%dx%d/%s", v.variant, fh, fw, mh, mw, src.name), func(b *testing.B) {
				if err := src.run(); err != nil { // warm-up: OpenCV allocates on the first run
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := src.run(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/frame")
				b.ReportMetric(float64(k*b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
		fe.Close()
	}
}
