package language

import (
	"errors"
	"fmt"
	"math"
)

// MultiArrayDimension mirrors std_msgs/MultiArrayDimension.
type MultiArrayDimension struct {
	Label  string
	Size   uint32
	Stride uint32
}

// MultiArrayLayout mirrors std_msgs/MultiArrayLayout.
type MultiArrayLayout struct {
	Dim        []MultiArrayDimension
	DataOffset uint32
}

// Float32MultiArray mirrors std_msgs/Float32MultiArray: how a planner
// upstream publishes an instruction embedding it computed itself.
type Float32MultiArray struct {
	Layout MultiArrayLayout
	Data   []float32
}

// ErrBadEmbedding marks an upstream embedding that CheckEmbedding refuses.
var ErrBadEmbedding = errors.New("bad instruction embedding")

// CheckEmbedding validates an upstream embedding of the given width and
// returns its values, a view of msg.Data (copy it to keep it beyond the
// message's life).
//
// The layout may be empty (the common case from Python:
// Float32MultiArray(data=[...])); otherwise the product of the dimension
// sizes must be width (e.g. [512] or [1, 512]), and the strides must be
// either all zero or the row-major strides ROS documents
// (dim[i].stride = Π_{j >= i} dim[j].size). After data_offset, exactly
// width values must follow, all finite.
func CheckEmbedding(msg *Float32MultiArray, width int) ([]float32, error) {
	if width <= 0 {
		panic(fmt.Sprintf("language: CheckEmbedding width %d", width))
	}
	off := int(msg.Layout.DataOffset)
	if off > len(msg.Data) {
		return nil, fmt.Errorf("%w: data_offset %d is beyond the %d values", ErrBadEmbedding, off, len(msg.Data))
	}
	if dims := msg.Layout.Dim; len(dims) > 0 {
		if len(dims) > 8 {
			return nil, fmt.Errorf("%w: %d dimensions", ErrBadEmbedding, len(dims))
		}
		total := 1
		for i, d := range dims {
			if d.Size == 0 {
				return nil, fmt.Errorf("%w: dimension %d (%q) has size 0", ErrBadEmbedding, i, d.Label)
			}
			total *= int(d.Size)
			if total > width {
				break
			}
		}
		if total != width {
			return nil, fmt.Errorf("%w: layout %s holds %s values, the policy takes %d", ErrBadEmbedding, layoutString(dims), countString(dims), width)
		}
		if err := checkStrides(dims); err != nil {
			return nil, err
		}
	}
	data := msg.Data[off:]
	if len(data) != width {
		return nil, fmt.Errorf("%w: %d values after data_offset %d, the policy takes %d", ErrBadEmbedding, len(data), off, width)
	}
	for i, v := range data {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("%w: value %d is %v", ErrBadEmbedding, i, v)
		}
	}
	return data, nil
}

// checkStrides accepts all-zero strides or ROS's row-major strides.
func checkStrides(dims []MultiArrayDimension) error {
	zero := true
	for _, d := range dims {
		zero = zero && d.Stride == 0
	}
	if zero {
		return nil
	}
	want := uint64(1)
	for i := len(dims) - 1; i >= 0; i-- {
		want *= uint64(dims[i].Size)
		if uint64(dims[i].Stride) != want {
			return fmt.Errorf("%w: dimension %d (%q) has stride %d, row-major layout needs %d", ErrBadEmbedding, i, dims[i].Label, dims[i].Stride, want)
		}
	}
	return nil
}

func layoutString(dims []MultiArrayDimension) string {
	s := "["
	for i, d := range dims {
		if i > 0 {
			s += " x "
		}
		s += fmt.Sprint(d.Size)
	}
	return s + "]"
}

func countString(dims []MultiArrayDimension) string {
	total := uint64(1)
	for _, d := range dims {
		total *= uint64(d.Size)
		if total > 1<<40 {
			return "more than 2^40"
		}
	}
	return fmt.Sprint(total)
}
