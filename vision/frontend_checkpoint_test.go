package vision

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/safetensors"
)

func TestFrontEndCheckpointRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	cfg := DefaultConfig(40)
	cfg.Head.Dim, cfg.Head.EmbeddingDim = 16, 8
	cfg.Preprocess.Interpolation = Area
	cfg.Backbone = BackboneRef{File: "b0.onnx", SHA256: strings.Repeat("ab", 32)}
	head := randomHead(t, cfg.Head, r)
	path := filepath.Join(t.TempDir(), "vision.safetensors")
	if err := SaveFrontEnd(path, cfg, head); err != nil {
		t.Fatal(err)
	}
	gotCfg, gotHead, err := LoadFrontEnd(path)
	if err != nil {
		t.Fatal(err)
	}
	if gotCfg != cfg {
		t.Errorf("config changed:\n got %+v\nwant %+v", gotCfg, cfg)
	}
	if !slices.Equal(gotHead.Params, head.Params) {
		t.Error("parameters changed")
	}
}

func TestFrontEndFromFileRejects(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	cfg := DefaultConfig(40)
	cfg.Head.Dim, cfg.Head.EmbeddingDim = 16, 8
	head := randomHead(t, cfg.Head, r)
	for _, c := range []struct {
		name string
		edit func(f *safetensors.File)
		want string
	}{
		{"no config", func(f *safetensors.File) { delete(f.Metadata, ConfigKey) }, `no "vision.config"`},
		{"bad JSON", func(f *safetensors.File) { f.Metadata[ConfigKey] = "{" }, "vision config"},
		{"unknown field", func(f *safetensors.File) { f.Metadata[ConfigKey] = `{"head": {"feature_channels": 40, "dmi": 3}}` }, `unknown field "dmi"`},
		{"channels changed", func(f *safetensors.File) {
			f.Metadata[ConfigKey] = strings.Replace(f.Metadata[ConfigKey], `"feature_channels":40`, `"feature_channels":41`, 1)
		}, "tensor vision/conv1x1/kernel has shape [40 16], the configuration needs [41 16]"},
		{"missing FiLM", func(f *safetensors.File) { delete(f.Tensors, Prefix+"film/add/bias") }, "missing tensor vision/film/add/bias"},
		{"FiLM moved to the backbone", func(f *safetensors.File) {
			f.Metadata[ConfigKey] = strings.Replace(f.Metadata[ConfigKey], `"film":"head"`, `"film":"backbone"`, 1)
			f.Metadata[ConfigKey] = strings.Replace(f.Metadata[ConfigKey], `"backbone":{}`, `"backbone":{"film_input":"film"}`, 1)
		}, `unexpected tensor vision/film/mult/kernel (film "backbone")`},
		{"backbone FiLM without input", func(f *safetensors.File) {
			f.Metadata[ConfigKey] = strings.Replace(f.Metadata[ConfigKey], `"film":"head"`, `"film":"backbone"`, 1)
		}, "backbone.film_input names no input"},
		{"infinity", func(f *safetensors.File) {
			b := make([]float32, 16)
			b[5] = float32(math.Inf(1))
			f.Tensors[Prefix+"conv1x1/bias"] = safetensors.FromFloat32(b, 16)
		}, "tensor vision/conv1x1/bias holds +Inf at element 5"},
		{"wrong dtype", func(f *safetensors.File) {
			f.Tensors[Prefix+"conv1x1/bias"] = safetensors.Tensor{DType: safetensors.F16, Shape: []int{16}, Data: make([]byte, 32)}
		}, "tensor vision/conv1x1/bias: dtype F16"},
	} {
		f := safetensors.New()
		if err := AddFrontEnd(f, cfg, head, Prefix); err != nil {
			t.Fatal(err)
		}
		c.edit(f)
		_, _, err := FrontEndFromFile(f, Prefix)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
	other := cfg
	other.Head.Tokens = 3
	if err := AddFrontEnd(safetensors.New(), other, head, Prefix); err == nil {
		t.Error("AddFrontEnd accepted a head of another configuration")
	}
}

func TestConfigJSON(t *testing.T) {
	c, err := ParseConfig([]byte(`{"head": {"feature_channels": 1536}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := DefaultConfig(1536); c != want {
		t.Errorf("defaults: got %+v, want %+v", c, want)
	}
	back, err := ParseConfig([]byte(c.JSON()))
	if err != nil || back != c {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	for _, bad := range []string{
		`{}`, // feature_channels is required
		`{"head": {"feature_channels": 8}, "history": -1}`,
		`{"head": {"feature_channels": 8}, "preprocess": {"width": 0}}`,
		`{"head": {"feature_channels": 8}, "backbone": {"film_input": "film"}}`,
	} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
