package vision_test

import (
	"errors"
	"fmt"

	"github.com/ttmrobot/ttm/vision"
)

// A camera frame, as a ROS driver sends it, becomes the backbone input.
func ExamplePreprocessor() {
	// A 4x2 bgr8 frame with 2 bytes of padding per row.
	msg := &vision.Image{Height: 2, Width: 4, Encoding: "bgr8", Step: 14, Data: make([]byte, 28)}
	frame, err := vision.DecodeImage(msg)
	if err != nil {
		panic(err)
	}
	cfg := vision.DefaultPreprocess() // 300x300, bilinear, RGB, ImageNet mean/std
	cfg.Height, cfg.Width = 3, 3
	pre, err := vision.NewPreprocessor(cfg)
	if err != nil {
		panic(err)
	}
	input := make([]float32, pre.InputLen()) // (3, 3, 3), reused for every frame
	if err := pre.Run(input, frame); err != nil {
		panic(err)
	}
	fmt.Printf("%d values, black red channel = %.4f = -0.485/0.229\n", len(input), input[0])

	msg.Data = msg.Data[:27]
	_, err = vision.DecodeImage(msg)
	fmt.Println(errors.Is(err, vision.ErrBadSize), err)
	// Output:
	// 27 values, black red channel = -2.1179 = -0.485/0.229
	// true inconsistent image size: bgr8 image: data has 27 bytes, height 2 x step 14 = 28
}
