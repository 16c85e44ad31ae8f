package vision_test

import (
	"fmt"

	"github.com/ttmrobot/ttm/vision"
)

// The Go-side head turns a backbone feature map into K tokens per frame,
// and the window keeps the last H frames' tokens.
func ExampleHead() {
	head, err := vision.NewHead(vision.HeadConfig{FeatureChannels: 1536}) // RT-1: d 512, E 512, K 8
	if err != nil {
		panic(err)
	}
	head.Init(1)
	const positions = 9 * 9 // B3 at 300x300 with Keras padding
	acts := head.NewActs(positions)
	window := vision.NewWindow(6, 8, 512)

	features := make([]float32, 1536*positions) // (C, h, w) from the backbone
	embedding := make([]float32, 512)           // from language.Encoder
	for frame := range 3 {
		features[frame] = 1
		head.Forward(window.Next(), acts, features, embedding) // only the new frame
		window.Commit()
	}
	tokens := make([]float32, window.TokenCount()*512)
	window.Tokens(tokens) // (48, 512), oldest frame first
	fmt.Println(head.NumParams(), "parameters;", window.Len(), "frames,", window.TokenCount(), "tokens")
	// Output:
	// 1346632 parameters; 3 frames, 48 tokens
}
