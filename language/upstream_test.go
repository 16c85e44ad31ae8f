package language

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestCheckEmbedding(t *testing.T) {
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i) / 10
		}
		return v
	}
	dim := func(label string, size, stride uint32) MultiArrayDimension {
		return MultiArrayDimension{Label: label, Size: size, Stride: stride}
	}
	ok := []struct {
		name string
		msg  Float32MultiArray
		off  int
	}{
		{"empty layout", Float32MultiArray{Data: vals(4)}, 0},
		{"one dimension", Float32MultiArray{Layout: MultiArrayLayout{Dim: []MultiArrayDimension{dim("e", 4, 4)}}, Data: vals(4)}, 0},
		{"batch of one", Float32MultiArray{Layout: MultiArrayLayout{Dim: []MultiArrayDimension{dim("batch", 1, 4), dim("e", 4, 4)}}, Data: vals(4)}, 0},
		{"zero strides", Float32MultiArray{Layout: MultiArrayLayout{Dim: []MultiArrayDimension{dim("", 2, 0), dim("", 2, 0)}}, Data: vals(4)}, 0},
		{"offset", Float32MultiArray{Layout: MultiArrayLayout{DataOffset: 2}, Data: vals(6)}, 2},
	}
	for _, c := range ok {
		got, err := CheckEmbedding(&c.msg, 4)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(got) != 4 || got[0] != c.msg.Data[c.off] {
			t.Errorf("%s: values %v", c.name, got)
		}
	}
	nan := vals(4)
	nan[3] = float32(math.NaN())
	inf := vals(4)
	inf[1] = float32(math.Inf(-1))
	bad := []struct {
		name string
		msg  Float32MultiArray
		want string
	}{
		{"short", Float32MultiArray{Data: vals(3)}, "3 values after data_offset 0, the policy takes 4"},
		{"long", Float32MultiArray{Data: vals(5)}, "5 values after data_offset 0, the policy takes 4"},
		{"empty", Float32MultiArray{}, "0 values"},
		{"offset beyond", Float32MultiArray{Layout: MultiArrayLayout{DataOffset: 9}, Data: vals(4)}, "data_offset 9 is beyond the 4 values"},
		{"layout size", Float32MultiArray{Layout: MultiArrayLayout{Dim: []MultiArrayDimension{dim("e", 8, 8)}}, Data: vals(4)}, "layout [8] holds 8 values, the policy takes 4"},
		{"layout 2d", Float32MultiArray{Layout: MultiArrayLayout{Dim: []MultiArrayDimension{dim("a", 3, 6), dim("b", 2, 2)}}, Data: vals(4)}, "layout [3 x 2] holds 6 values"},
		{"zero size", Float32MultiArray{Layout: MultiArrayLayout{Dim: []MultiArrayDimension{dim("e", 0, 0)}}, Data: vals(4)}, `dimension 0 ("e") has size 0`},
		{"bad stride", Float32MultiArray{Layout: MultiArrayLayout{Dim: []MultiArrayDimension{dim("b", 2, 2), dim("e", 2, 2)}}, Data: vals(4)}, `dimension 0 ("b") has stride 2, row-major layout needs 4`},
		{"NaN", Float32MultiArray{Data: nan}, "value 3 is NaN"},
		{"Inf", Float32MultiArray{Data: inf}, "value 1 is -Inf"},
		{"huge dims", Float32MultiArray{Layout: MultiArrayLayout{Dim: []MultiArrayDimension{dim("", math.MaxUint32, 0), dim("", math.MaxUint32, 0)}}, Data: vals(4)}, "more than 2^40"},
	}
	for _, c := range bad {
		_, err := CheckEmbedding(&c.msg, 4)
		if !errors.Is(err, ErrBadEmbedding) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want ErrBadEmbedding saying %q", c.name, err, c.want)
		}
	}
}

func FuzzCheckEmbedding(f *testing.F) {
	f.Add(uint32(0), uint32(4), uint32(4), uint32(1), uint32(0), []byte{1, 2, 3, 4})
	f.Add(uint32(1), uint32(2), uint32(0), uint32(2), uint32(0), []byte{1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, off, s0, st0, s1, st1 uint32, raw []byte) {
		data := make([]float32, len(raw))
		for i, b := range raw {
			data[i] = float32(int8(b))
		}
		msg := &Float32MultiArray{Layout: MultiArrayLayout{DataOffset: off, Dim: []MultiArrayDimension{{Size: s0, Stride: st0}, {Size: s1, Stride: st1}}}, Data: data}
		got, err := CheckEmbedding(msg, 4)
		if err != nil {
			if !errors.Is(err, ErrBadEmbedding) {
				t.Fatalf("error of another kind: %v", err)
			}
			return
		}
		if len(got) != 4 || int(s0)*int(s1) != 4 || int(off)+4 != len(data) {
			t.Fatalf("accepted %+v as %v", msg.Layout, got)
		}
	})
}
