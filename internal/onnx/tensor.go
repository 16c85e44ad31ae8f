package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
)

// maxElements bounds a tensor's element count (OpenCV indexes with int).
const maxElements = math.MaxInt32

// FloatTensor returns a FLOAT tensor holding a copy of data in RawData.
// dims must multiply to len(data); no dims means a scalar.
func FloatTensor(name string, data []float32, dims ...int64) *Tensor {
	raw := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return &Tensor{Name: name, DataType: Float, Dims: append([]int64(nil), dims...), RawData: raw}
}

// Int64Tensor returns an INT64 tensor holding a copy of data in RawData.
func Int64Tensor(name string, data []int64, dims ...int64) *Tensor {
	raw := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
	}
	return &Tensor{Name: name, DataType: Int64, Dims: append([]int64(nil), dims...), RawData: raw}
}

// NumElements is the product of the dims (1 for a scalar), or an error if a
// dim is negative or the product exceeds maxElements.
func (t *Tensor) NumElements() (int64, error) {
	n := int64(1)
	for i, d := range t.Dims {
		if d < 0 {
			return 0, fmt.Errorf("tensor %q: dim %d is %d", t.Name, i, d)
		}
		if d != 0 && n > maxElements/d {
			return 0, fmt.Errorf("tensor %q: dims %v have more than %d elements", t.Name, t.Dims, maxElements)
		}
		n *= d
	}
	return n, nil
}

// Check verifies that the tensor's data is self-consistent: a known element
// type, the data stored inline (not in an external file), and exactly as
// many elements in the data field in use as the dims say. A reader that
// trusts dims (OpenCV does) would otherwise read past the data.
func (t *Tensor) Check() error {
	n, err := t.NumElements()
	if err != nil {
		return err
	}
	if t.DataLocation != 0 || len(t.ExternalData) > 0 {
		return fmt.Errorf("tensor %q: data stored in an external file is not supported", t.Name)
	}
	if t.DataType == String {
		if int64(len(t.StringData)) != n {
			return fmt.Errorf("tensor %q: %d strings for dims %v", t.Name, len(t.StringData), t.Dims)
		}
		return nil
	}
	es := t.DataType.elemSize()
	if es == 0 {
		return fmt.Errorf("tensor %q: unsupported data type %v", t.Name, t.DataType)
	}
	var have int64
	var field string
	used := 0
	if t.RawData != nil {
		used++
		field = "raw_data"
		if len(t.RawData)%es != 0 {
			return fmt.Errorf("tensor %q: raw_data of %d bytes is not a whole number of %v elements", t.Name, len(t.RawData), t.DataType)
		}
		have = int64(len(t.RawData) / es)
	}
	typed := []struct {
		name  string
		n     int
		types []DataType
	}{
		{"float_data", len(t.FloatData), []DataType{Float, Complex64}},
		{"int32_data", len(t.Int32Data), []DataType{Int32, Int16, Int8, Uint16, Uint8, Bool, Float16, BFloat16}},
		{"int64_data", len(t.Int64Data), []DataType{Int64}},
		{"double_data", len(t.DoubleData), []DataType{Double, Complex128}},
		{"uint64_data", len(t.Uint64Data), []DataType{Uint64, Uint32}},
	}
	for _, f := range typed {
		if f.n == 0 {
			continue
		}
		ok := false
		for _, dt := range f.types {
			ok = ok || dt == t.DataType
		}
		if !ok {
			return fmt.Errorf("tensor %q: %s holds data for a %v tensor", t.Name, f.name, t.DataType)
		}
		used++
		field = f.name
		have = int64(f.n)
		if t.DataType == Complex64 || t.DataType == Complex128 {
			have /= 2
		}
	}
	if used > 1 {
		return fmt.Errorf("tensor %q: data in more than one field", t.Name)
	}
	if have != n {
		if used == 0 {
			field = "data"
		}
		return fmt.Errorf("tensor %q: dims %v need %d elements, %s has %d", t.Name, t.Dims, n, field, have)
	}
	return nil
}

// Floats returns the elements of a FLOAT, FLOAT16 or DOUBLE tensor as
// float32, after Check.
func (t *Tensor) Floats() ([]float32, error) {
	if err := t.Check(); err != nil {
		return nil, err
	}
	n, _ := t.NumElements()
	out := make([]float32, n)
	switch t.DataType {
	case Float:
		if t.RawData != nil {
			for i := range out {
				out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.RawData[4*i:]))
			}
		} else {
			copy(out, t.FloatData)
		}
	case Double:
		if t.RawData != nil {
			for i := range out {
				out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(t.RawData[8*i:])))
			}
		} else {
			for i, v := range t.DoubleData {
				out[i] = float32(v)
			}
		}
	case Float16:
		for i := range out {
			var h uint16
			if t.RawData != nil {
				h = binary.LittleEndian.Uint16(t.RawData[2*i:])
			} else {
				h = uint16(t.Int32Data[i])
			}
			out[i] = halfToFloat(h)
		}
	default:
		return nil, fmt.Errorf("tensor %q: %v elements are not floating point", t.Name, t.DataType)
	}
	return out, nil
}

// Int64s returns the elements of an integer tensor as int64, after Check.
func (t *Tensor) Int64s() ([]int64, error) {
	if err := t.Check(); err != nil {
		return nil, err
	}
	n, _ := t.NumElements()
	out := make([]int64, n)
	es := t.DataType.elemSize()
	switch t.DataType {
	case Int64, Int32, Int16, Int8, Uint8, Uint16, Uint32, Uint64, Bool:
	default:
		return nil, fmt.Errorf("tensor %q: %v elements are not integers", t.Name, t.DataType)
	}
	for i := range out {
		switch {
		case t.RawData != nil:
			b := t.RawData[es*i:]
			switch t.DataType {
			case Int64, Uint64:
				out[i] = int64(binary.LittleEndian.Uint64(b))
			case Int32:
				out[i] = int64(int32(binary.LittleEndian.Uint32(b)))
			case Uint32:
				out[i] = int64(binary.LittleEndian.Uint32(b))
			case Int16:
				out[i] = int64(int16(binary.LittleEndian.Uint16(b)))
			case Uint16:
				out[i] = int64(binary.LittleEndian.Uint16(b))
			case Int8:
				out[i] = int64(int8(b[0]))
			default: // Uint8, Bool
				out[i] = int64(b[0])
			}
		case len(t.Int64Data) > 0:
			out[i] = t.Int64Data[i]
		case len(t.Uint64Data) > 0:
			out[i] = int64(t.Uint64Data[i])
		default:
			out[i] = int64(t.Int32Data[i])
		}
	}
	return out, nil
}

// halfToFloat converts an IEEE 754 half-precision value.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for frac&0x400 == 0 {
			frac <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (frac&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}
