package vision_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ttmrobot/ttm/vision"
)

// Generate a seeded EfficientNet-B0 with a FiLM input, write it as ONNX,
// and run a frame through it in OpenCV.
func ExampleOpenBackbone() {
	g, err := vision.GenerateEfficientNet(vision.EfficientNetConfig{Variant: "b0", Height: 64, Width: 64, FiLMDim: 8, Seed: 1})
	if err != nil {
		panic(err)
	}
	dir, _ := os.MkdirTemp("", "backbone")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "b0.onnx")
	sha, err := g.WriteONNX(path)
	if err != nil {
		panic(err)
	}
	b, err := vision.OpenBackbone(vision.BackboneSpec{
		Path: path, SHA256: sha, Height: 64, Width: 64,
		FiLMInput: vision.EfficientNetFiLMInput, FiLMDim: 8,
	}, nil)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	c, h, w := b.OutputShape()
	image := make([]float32, 3*64*64) // preprocessed, NCHW
	embedding := make([]float32, 8)   // the instruction's
	features := make([]float32, c*h*w)
	if err := b.Run(image, embedding, features); err != nil {
		panic(err)
	}
	fmt.Println("features", c, h, w)
	// Output:
	// features 1280 2 2
}
