package layer

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ttmrobot/ttm/internal/safetensors"
)

// Init says how a new parameter tensor is filled, as Flax initialises it.
type Init struct {
	kind          initKind
	FanIn, FanOut int     // xavier
	Std           float64 // normal
	Value         float32 // constant
	Width, Dim    int     // sine-cosine: the grid's width and the code's
}

type initKind int

const (
	initConst initKind = iota
	initXavierUniform
	initNormal
	initSinCos2D
)

// The initialisers of the layers here: zeros (biases), ones (LayerNorm
// scales), N(0, 0.02) (positional embeddings, learned tokens, as BERT) and
// N(0, 1e-6) (scenic's MlpBlock biases).
var (
	Zeros   = Init{kind: initConst}
	Ones    = Init{kind: initConst, Value: 1}
	PosInit = Normal(0.02)
	MLPBias = Normal(1e-6)
)

// Xavier is Glorot's uniform initialiser for a kernel (fanIn, fanOut).
func Xavier(fanIn, fanOut int) Init {
	return Init{kind: initXavierUniform, FanIn: fanIn, FanOut: fanOut}
}

// Normal draws from N(0, std²).
func Normal(std float64) Init { return Init{kind: initNormal, Std: std} }

// Const fills with v.
func Const(v float32) Init { return Init{kind: initConst, Value: v} }

// SinCos2D is the fixed 2-D sine-cosine code of a grid of positions, width
// per row, each coded in dim values (see sinCos2D); it draws nothing.
func SinCos2D(width, dim int) Init { return Init{kind: initSinCos2D, Width: width, Dim: dim} }

// Fill fills dst, drawing from r.
func (in Init) Fill(dst []float32, r *rand.Rand) {
	switch in.kind {
	case initConst:
		for i := range dst {
			dst[i] = in.Value
		}
	case initXavierUniform:
		limit := math.Sqrt(6 / float64(in.FanIn+in.FanOut))
		for i := range dst {
			dst[i] = float32((2*r.Float64() - 1) * limit)
		}
	case initNormal:
		for i := range dst {
			dst[i] = float32(r.NormFloat64() * in.Std)
		}
	case initSinCos2D:
		sinCos2D(dst, in.Width, in.Dim)
	default:
		panic(fmt.Sprintf("layer: unknown initialiser %d", in.kind))
	}
}

// sinCos2D writes the 2-D sine-cosine code of a grid of positions, width
// per row, into dst (positions, d), scaled by 1/2 so that it does not drown
// the projected features: the first half of each row codes the row index,
// the second half the column, each as sin and cos pairs at frequencies from
// one radian per position down to 1/100 (a grid of tens of positions
// needs none lower).
func sinCos2D(dst []float32, width, d int) {
	const scale, lowest = 0.5, 0.01
	q := d / 4 // frequencies per axis
	for p := range len(dst) / d {
		row := dst[p*d : (p+1)*d]
		clear(row)
		for axis, x := range [2]float64{float64(p / width), float64(p % width)} {
			for k := range q {
				w := math.Pow(lowest, float64(k)/float64(max(q-1, 1)))
				row[axis*2*q+2*k] = float32(scale * math.Sin(x*w))
				row[axis*2*q+2*k+1] = float32(scale * math.Cos(x*w))
			}
		}
	}
}

// Spec names one parameter tensor: its Flax path, shape, place in the flat
// parameter slice and initialiser.
type Spec struct {
	Name   string
	Shape  []int
	Offset int
	Size   int
	Init   Init
}

// Table collects the tensors of a model in checkpoint order and the struct
// fields that view them; Allocate or Bind then cuts one flat slice into
// those views. Gradients and optimiser moments use the same layout: a
// second set of parameter groups registered in a second Table is bound to
// the gradient slice.
type Table struct {
	Specs  []Spec
	Size   int      // floats in the flat slice
	Denses []*Dense // every dense layer registered, for packing
	dests  []*[]float32
	bound  *float32 // &flat[0] of the slice the views now cut
}

// Add registers tensor name of the given shape, viewed by *dst.
func (t *Table) Add(dst *[]float32, name string, in Init, shape ...int) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	t.Specs = append(t.Specs, Spec{Name: name, Shape: shape, Offset: t.Size, Size: n, Init: in})
	t.dests = append(t.dests, dst)
	t.Size += n
}

// Allocate makes the flat slice and points the views at it.
func (t *Table) Allocate() []float32 {
	flat := make([]float32, t.Size)
	t.Bind(flat)
	return flat
}

// Bind points every view at its part of flat (Size floats), with full
// slice expressions so that no view can spill into its neighbour. Binding
// the slice already bound costs nothing.
func (t *Table) Bind(flat []float32) {
	if len(flat) != t.Size {
		panic(fmt.Sprintf("layer: binding %d floats to a table of %d", len(flat), t.Size))
	}
	if len(flat) > 0 && &flat[0] == t.bound {
		return
	}
	for i, s := range t.Specs {
		*t.dests[i] = flat[s.Offset : s.Offset+s.Size : s.Offset+s.Size]
	}
	if len(flat) > 0 {
		t.bound = &flat[0]
	}
}

// AddTensors puts each tensor of params (laid out by specs) in f, named
// prefix plus its spec's name.
func AddTensors(f *safetensors.File, prefix string, specs []Spec, params []float32) {
	for _, s := range specs {
		f.Tensors[prefix+s.Name] = safetensors.FromFloat32(params[s.Offset:s.Offset+s.Size], s.Shape...)
	}
}

// Wants lists the tensors that fill params (laid out by specs) from a
// checkpoint, each named prefix plus its spec's name, for safetensors.Set.
func Wants(prefix string, specs []Spec, params []float32) []safetensors.Want {
	w := make([]safetensors.Want, len(specs))
	for i, s := range specs {
		w[i] = safetensors.Want{Name: prefix + s.Name, Shape: s.Shape, Dst: params[s.Offset : s.Offset+s.Size]}
	}
	return w
}
