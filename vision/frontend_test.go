package vision

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// Real backbones for the front-end tests: genuine EfficientNet-B0 graphs
// with seeded weights, generated once per test binary, written into each
// test's temporary directory and run by OpenCV.
var testBackbones struct {
	once        sync.Once
	plain, film []byte // B0 at 64x64; the same with a FiLM input of filmTestDim
	c           int    // feature channels
	err         error
}

const (
	backboneTestSize = 64
	filmTestDim      = 16
)

func testBackbone(t testing.TB) (plain, film string, channels int) {
	t.Helper()
	b := &testBackbones
	b.once.Do(func() {
		for _, x := range []struct {
			data *[]byte
			cfg  EfficientNetConfig
		}{
			{&b.plain, EfficientNetConfig{Variant: "b0", Height: backboneTestSize, Width: backboneTestSize, Seed: 1}},
			{&b.film, EfficientNetConfig{Variant: "b0", Height: backboneTestSize, Width: backboneTestSize, Seed: 2, FiLMDim: filmTestDim, FiLMInitStd: 0.05}},
		} {
			g, err := GenerateEfficientNet(x.cfg)
			if err != nil {
				b.err = err
				return
			}
			if *x.data, _, b.err = g.ONNX(); b.err != nil {
				return
			}
			b.c, _, _ = g.FeatureShape()
		}
	})
	if b.err != nil {
		t.Fatalf("generate test backbones: %v", b.err)
	}
	dir := t.TempDir()
	plain, film = filepath.Join(dir, "b0.onnx"), filepath.Join(dir, "b0-film.onnx")
	for _, f := range []struct {
		path string
		data []byte
	}{{plain, b.plain}, {film, b.film}} {
		if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return plain, film, b.c
}

// smallFrontEnd opens a front end on the B0 test backbone with a small
// random head (FiLM in the head, non-zero) or with the backbone's FiLM.
func smallFrontEnd(t testing.TB, backboneFiLM bool, seed uint64) *FrontEnd {
	t.Helper()
	plain, film, c := testBackbone(t)
	cfg := DefaultConfig(c)
	cfg.Preprocess.Height, cfg.Preprocess.Width = backboneTestSize, backboneTestSize
	cfg.Head.Dim, cfg.Head.EmbeddingDim, cfg.Head.Tokens, cfg.History = 32, filmTestDim, 4, 3
	path := plain
	if backboneFiLM {
		cfg.Head.FiLM, cfg.Backbone.FiLMInput, path = FiLMBackbone, EfficientNetFiLMInput, film
	}
	head := randomHead(t, cfg.Head, rand.New(rand.NewPCG(seed, 1)))
	fe, err := OpenFrontEnd(cfg, head, path, 1, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fe.Close() })
	return fe
}

// TestEncodingsGiveIdenticalTokens: the same pixels sent as every raw
// encoding, padded or not, and as PNG give bit-identical tokens through
// the real backbone; JPEG gives close tokens.
func TestEncodingsGiveIdenticalTokens(t *testing.T) {
	fe := smallFrontEnd(t, false, 71)
	const w, h = 80, 60
	r := rand.New(rand.NewPCG(72, 73))
	e := randFloats(r, filmTestDim, 1)
	k := fe.Config().Head.Tokens * fe.Config().Head.Dim
	encode := func(f Frame) []float32 {
		t.Helper()
		out := make([]float32, k)
		if err := fe.EncodeInto(out, f, e); err != nil {
			t.Fatal(err)
		}
		return out
	}
	var dec Decoder
	colour := testPicture(w, h)
	greyRGB := expand(grey(colour))
	for _, pic := range []struct {
		name string
		rgb  []byte
		grey bool
	}{{"colour", colour, false}, {"grey", greyRGB, true}} {
		ref := encode(Frame{Width: w, Height: h, Stride: 3 * w, Format: RGB8, Pix: pic.rgb})
		if !slices.Equal(encode(Frame{Width: w, Height: h, Stride: 3 * w, Format: RGB8, Pix: pic.rgb}), ref) {
			t.Fatal("the same frame twice gives different tokens")
		}
		encodings := []string{"rgb8", "bgr8", "rgba8", "bgra8"}
		if pic.grey {
			encodings = append(encodings, "mono8")
		}
		for _, enc := range encodings {
			for _, pad := range []int{0, 5} {
				f, err := DecodeImage(rawMessage(pic.rgb, w, h, enc, pad, r))
				if err != nil {
					t.Fatal(err)
				}
				if got := encode(f); !slices.Equal(got, ref) {
					d, at := maxAbsDiff(got, ref)
					t.Errorf("%s %s pad %d: tokens differ from rgb8 by %g at %d", pic.name, enc, pad, d, at)
				}
			}
		}
		f, err := dec.DecodeCompressed(&CompressedImage{Format: "png", Data: encodePNG(t, goImage(pic.rgb, w, h, pic.grey))})
		if err != nil {
			t.Fatal(err)
		}
		if got := encode(f); !slices.Equal(got, ref) {
			t.Errorf("%s png: tokens differ from rgb8", pic.name)
		}
		f, err = dec.DecodeCompressed(&CompressedImage{Format: "jpeg", Data: encodeJPEG(t, goImage(pic.rgb, w, h, pic.grey), 95)})
		if err != nil {
			t.Fatal(err)
		}
		// JPEG changes pixels by a few levels: tokens move by a few percent
		// of their spread. A different picture moves them by far more.
		got := encode(f)
		other := encode(Frame{Width: w, Height: h, Stride: 3 * w, Format: RGB8, Pix: testPicture(w+7, h)[:3*w*h]})
		dj, do := rms(got, ref), rms(other, ref)
		t.Logf("%s jpeg: token RMS difference %.3g, a different picture %.3g, token RMS %.3g", pic.name, dj, do, rms(ref, nil))
		if !(dj < 0.25*do) {
			t.Errorf("%s jpeg: tokens moved by %g RMS, a different picture by %g", pic.name, dj, do)
		}
	}
}

// rms is the root mean square of a - b (of a when b is nil).
func rms(a, b []float32) float64 {
	var s float64
	for i, v := range a {
		d := float64(v)
		if b != nil {
			d -= float64(b[i])
		}
		s += d * d
	}
	return math.Sqrt(s / float64(len(a)))
}

// TestFrontEndMatchesItsParts: Encode's tokens equal the head applied to
// the backbone's features of the preprocessed frame, and the window holds
// the last H frames as re-encoding them gives.
func TestFrontEndMatchesItsParts(t *testing.T) {
	for _, backboneFiLM := range []bool{false, true} {
		fe := smallFrontEnd(t, backboneFiLM, 81)
		cfg := fe.Config()
		r := rand.New(rand.NewPCG(82, 83))
		e := randFloats(r, filmTestDim, 1)
		k := cfg.Head.Tokens * cfg.Head.Dim
		var frames []Frame
		for i := range 5 {
			frames = append(frames, randomRGB(r, 70+i, 50))
			if err := fe.Encode(frames[i], e); err != nil {
				t.Fatal(err)
			}
			// The head on the features Encode left behind.
			c, h, w := fe.FeatureShape()
			want := make([]float32, k)
			fe.head.Forward(want, fe.head.NewActs(h*w), fe.Features()[:c*h*w], e)
			if !slices.Equal(fe.Window().Frame(0), want) {
				t.Fatalf("film in backbone %v, frame %d: window tokens differ from head(features)", backboneFiLM, i)
			}
		}
		got := make([]float32, cfg.History*k)
		fe.Tokens(got)
		for age := range cfg.History {
			again := make([]float32, k)
			if err := fe.EncodeInto(again, frames[len(frames)-1-age], e); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got[(cfg.History-1-age)*k:(cfg.History-age)*k], again) {
				t.Errorf("film in backbone %v: window frame of age %d differs from re-encoding it", backboneFiLM, age)
			}
		}
		// The instruction matters through either FiLM.
		a, b := make([]float32, k), make([]float32, k)
		_ = fe.EncodeInto(a, frames[0], e)
		_ = fe.EncodeInto(b, frames[0], randFloats(r, filmTestDim, 1))
		if slices.Equal(a, b) {
			t.Errorf("film in backbone %v: the embedding does not change the tokens", backboneFiLM)
		}
	}
}

func TestFrontEndRejects(t *testing.T) {
	fe := smallFrontEnd(t, false, 91)
	r := rand.New(rand.NewPCG(92, 93))
	f := randomRGB(r, 40, 30)
	if err := fe.Encode(f, make([]float32, filmTestDim+1)); err == nil {
		t.Error("an embedding of the wrong width was accepted")
	}
	if err := fe.Encode(Frame{Width: 40, Height: 30, Stride: 120, Format: RGB8, Pix: f.Pix[:100]}, nil); err == nil {
		t.Error("a short frame was accepted")
	}
	if err := fe.EncodeImage(&Image{Height: 2, Width: 2, Encoding: "16UC1", Step: 4, Data: make([]byte, 8)}, nil); err == nil {
		t.Error("a depth image was accepted")
	}
	if fe.Window().Len() != 0 {
		t.Errorf("failed frames entered the window: %d", fe.Window().Len())
	}
	// A head for another backbone is refused when the front end opens.
	plain, _, c := testBackbone(t)
	cfg := fe.Config()
	cfg.Head.FeatureChannels = c + 1
	head, _ := NewHead(cfg.Head)
	if _, err := OpenFrontEnd(cfg, head, plain, 1, hclog.NewNullLogger()); err == nil {
		t.Error("a head with the wrong channel count was accepted")
	}
}

func TestFrontEndDoesNotAllocate(t *testing.T) {
	fe := smallFrontEnd(t, false, 95)
	r := rand.New(rand.NewPCG(96, 97))
	msg := rawMessage(testPicture(80, 60), 80, 60, "bgr8", 4, r)
	e := randFloats(r, filmTestDim, 1)
	if err := fe.EncodeImage(msg, e); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(5, func() { _ = fe.EncodeImage(msg, e) }); n != 0 {
		t.Errorf("%v Go allocations per frame", n)
	}
}
