package safetensors

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	good := func() *File {
		f := New()
		f.Tensors["m/a"] = FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
		f.Tensors["m/b"] = FromFloat32([]float32{7, 8}, 2)
		f.Tensors["other/c"] = FromFloat32([]float32{9}, 1)
		return f
	}
	cases := []struct {
		name  string
		edit  func(*File)
		limit int
		want  []string // substrings of the error; none: no error
	}{
		{"good", func(*File) {}, 0, nil},
		{"missing", func(f *File) { delete(f.Tensors, "m/b") }, 0, []string{"m does not match its configuration", "missing tensor m/b (F32 [2])"}},
		{"shape", func(f *File) { f.Tensors["m/a"] = FromFloat32(make([]float32, 6), 3, 2) }, 0,
			[]string{"tensor m/a has shape [3 2], the configuration needs [2 3]"}},
		{"dtype", func(f *File) { f.Tensors["m/b"] = Tensor{DType: I32, Shape: []int{2}, Data: make([]byte, 8)} }, 0,
			[]string{"tensor m/b: dtype I32, want F32"}},
		{"nan", func(f *File) { f.Tensors["m/a"] = FromFloat32([]float32{1, 2, 3, float32(math.NaN()), 5, 6}, 2, 3) }, 0,
			[]string{"tensor m/a holds NaN at element 3"}},
		{"flipped exponent bit", func(f *File) {
			f.Tensors["m/b"] = FromFloat32([]float32{-0.074, math.Float32frombits(math.Float32bits(-0.074) ^ 1<<30)}, 2)
		}, 0, []string{"tensor m/b holds -2.5", "at element 1, beyond the 10000 a weight may have"}},
		{"largest finite", func(f *File) { f.Tensors["m/a"] = FromFloat32([]float32{1, 2, 3, 4, 5, math.MaxFloat32}, 2, 3) }, 0,
			[]string{"tensor m/a holds 3.4028235e+38 at element 5"}},
		{"unexpected", func(f *File) { f.Tensors["m/z"] = FromFloat32([]float32{1}, 1) }, 0,
			[]string{"unexpected tensor m/z (why)"}},
		{"limited", func(f *File) {
			delete(f.Tensors, "m/a")
			delete(f.Tensors, "m/b")
			f.Tensors["m/z"] = FromFloat32([]float32{1}, 1)
		}, 1, []string{"missing tensor m/a", "... and 2 more"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := good()
			tc.edit(f)
			a, b := make([]float32, 6), make([]float32, 2)
			err := f.Load(Set{
				What:    "m",
				Tensors: []Want{{"m/a", []int{2, 3}, a}, {"m/b", []int{2}, b}},
				Owns:    HasPrefix("m/"),
				Explain: func(string) string { return " (why)" },
				Limit:   tc.limit,
			})
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if a[5] != 6 || b[1] != 8 {
					t.Fatalf("loaded %v %v", a, b)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tc.limit > 0 && strings.Contains(err.Error(), "m/z") {
				t.Errorf("error %q lists more than %d problems", err, tc.limit)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.safetensors")
	f := New()
	f.Tensors["a"] = FromFloat32([]float32{1, 2}, 2)
	if err := WriteFile(good, f); err != nil {
		t.Fatal(err)
	}
	count := func(f *File) (int, error) { return len(f.Tensors), nil }
	refuse := func(*File) (int, error) { return 0, errors.New("no thanks") }
	cases := []struct {
		name, path string
		from       func(*File) (int, error)
		want       string // error substring; "" for none
	}{
		{"good", good, count, ""},
		{"missing file", filepath.Join(dir, "missing"), count, "load thing: stat " + filepath.Join(dir, "missing") + ": no such file"},
		{"rejected", good, refuse, "load thing " + good + ": no thanks"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, err := LoadFile(tc.path, "thing", tc.from)
			if tc.want == "" {
				if err != nil || n != 1 {
					t.Fatalf("got %d, %v", n, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
