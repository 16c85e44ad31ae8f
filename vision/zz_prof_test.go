package vision

import (
	"fmt"
	"os"
	"testing"
)

func TestZZProfile(t *testing.T) {
	path := os.Getenv("PROF_ONNX")
	if path == "" {
		t.Skip()
	}
	var size int
	fmt.Sscan(os.Getenv("PROF_SIZE"), &size)
	b := openTest(t, BackboneSpec{Path: path, Height: size, Width: size, Threads: 2})
	in := make([]float32, 3*size*size)
	c, h, w := b.OutputShape()
	out := make([]float32, c*h*w)
	for i := 0; i < 20; i++ {
		b.Run(in, nil, out)
	}
	for _, l := range b.LayerTimings() {
		fmt.Printf("%-40s %-14s %7.3f\n", l.Name, l.Type, float64(l.Time.Microseconds())/1000)
	}
}
