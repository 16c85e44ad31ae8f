package vision_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ttmrobot/ttm/vision"
)

// Open the same backbone with the depthwise convolutions in this package's
// TTMDepthwise layers (the default) and in OpenCV's own, and count the
// layers of each kind in OpenCV's network (1x1 convolutions left to
// OpenCV too).
func ExampleDepthwiseMode() {
	g, err := vision.GenerateEfficientNet(vision.EfficientNetConfig{Variant: "b0", Height: 64, Width: 64, Seed: 1})
	if err != nil {
		panic(err)
	}
	dir, _ := os.MkdirTemp("", "backbone")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "b0.onnx")
	if _, err := g.WriteONNX(path); err != nil {
		panic(err)
	}
	for _, mode := range []vision.DepthwiseMode{vision.DepthwiseFast, vision.DepthwiseOpenCV} {
		b, err := vision.OpenBackbone(vision.BackboneSpec{Path: path, Height: 64, Width: 64, Depthwise: mode, Pointwise: vision.PointwiseOpenCV}, nil)
		if err != nil {
			panic(err)
		}
		types := map[string]int{}
		for _, l := range b.LayerTimings() {
			types[l.Type]++
		}
		fmt.Printf("%s: %d TTMDepthwise, %d Convolution, %d TTMSwish layers\n", mode, types[vision.DepthwiseOp], types["Convolution"], types["TTMSwish"])
		b.Close()
	}
	// Output:
	// fast: 16 TTMDepthwise, 65 Convolution, 33 TTMSwish layers
	// opencv: 0 TTMDepthwise, 81 Convolution, 49 TTMSwish layers
}
