package vision

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"

	"github.com/ttmrobot/ttm/internal/onnx"
)

// The generated graph uses standard ONNX operators at opset 13 only (Conv,
// Sigmoid, Mul, Add, GlobalAveragePool, Gemm, Reshape): swish is
// Sigmoid then Mul, as PyTorch exports SiLU. OpenBackbone fuses the pairs
// into OpenCV's Swish layer on load.
const (
	generatedOpset = 13
	generatedIR    = 7 // the IR version that goes with opset 13
)

// graphBuilder appends nodes and initializers to a graph. A node's output
// is named after the node.
type graphBuilder struct{ g *onnx.Graph }

func (b *graphBuilder) node(op, name string, inputs []string, attrs ...*onnx.Attribute) string {
	b.g.Nodes = append(b.g.Nodes, &onnx.Node{Name: name, OpType: op, Inputs: inputs, Outputs: []string{name}, Attributes: attrs})
	return name
}

func (b *graphBuilder) floats(name string, data []float32, dims ...int64) string {
	b.g.Initializers = append(b.g.Initializers, onnx.FloatTensor(name, data, dims...))
	return name
}

func (b *graphBuilder) ints(name string, data []int64, dims ...int64) string {
	b.g.Initializers = append(b.g.Initializers, onnx.Int64Tensor(name, data, dims...))
	return name
}

// emitConv emits a convolution and its activation; the activation's output (or
// the convolution's, without one) is named out if out is not empty.
func (b *graphBuilder) emitConv(c *convLayer, in, out string) string {
	k := int64(c.k)
	s := int64(c.stride)
	attrs := []*onnx.Attribute{
		onnx.IntsAttr("kernel_shape", k, k),
		onnx.IntsAttr("strides", s, s),
		onnx.IntsAttr("pads", int64(c.pads[0]), int64(c.pads[1]), int64(c.pads[2]), int64(c.pads[3])),
		onnx.IntsAttr("dilations", 1, 1),
		onnx.IntAttr("group", int64(c.groups)),
	}
	w := b.floats(c.name+".weight", c.w, int64(c.cout), int64(c.cin/c.groups), k, k)
	bias := b.floats(c.name+".bias", c.b, int64(c.cout))
	name := c.name + "/conv"
	if c.act == actNone && out != "" {
		name = out
	}
	y := b.node("Conv", name, []string{in, w, bias}, attrs...)
	switch c.act {
	case actSwish:
		sig := b.node("Sigmoid", c.name+"/sigmoid", []string{y})
		if out == "" {
			out = c.name + "/swish"
		}
		return b.node("Mul", out, []string{y, sig})
	case actSigmoid:
		if out == "" {
			out = c.name + "/sigmoid"
		}
		return b.node("Sigmoid", out, []string{y})
	}
	return y
}

// transpose returns w (R, C) as (C, R).
func transpose(w []float32, r, c int) []float32 {
	out := make([]float32, len(w))
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out[j*r+i] = w[i*c+j]
		}
	}
	return out
}

// Model returns the network as an ONNX model: input "image" [1, 3, H, W]
// (and "film" [1, D] with FiLM), output "features" [1, C, h, w].
func (g *EfficientNet) Model() *onnx.Model {
	e, s := g.net, g.net.spec
	b := &graphBuilder{g: &onnx.Graph{Name: "efficientnet-" + s.variant.Name}}
	b.g.Inputs = append(b.g.Inputs, onnx.TensorValue(EfficientNetImageInput, onnx.Float, 1, 3, int64(s.h), int64(s.w)))
	if e.filmDim > 0 {
		b.g.Inputs = append(b.g.Inputs, onnx.TensorValue(EfficientNetFiLMInput, onnx.Float, 1, int64(e.filmDim)))
	}
	x := b.emitConv(&e.stem, EfficientNetImageInput, "")
	shapes := map[int]string{} // Reshape targets [1, C, 1, 1], one per C
	blocks := len(e.blocks)
	if n := g.cfg.Blocks; n > 0 && n < blocks {
		blocks = n
	}
	for i := range e.blocks[:blocks] {
		blk := &e.blocks[i]
		p := fmt.Sprintf("blocks.%d", i)
		in := x
		if blk.expand != nil {
			x = b.emitConv(blk.expand, x, "")
		}
		x = b.emitConv(&blk.dw, x, "")
		pooled := b.node("GlobalAveragePool", p+"/se/pool", []string{x})
		r := b.emitConv(&blk.seReduce, pooled, "")
		gate := b.emitConv(&blk.seExpand, r, "")
		x = b.node("Mul", p+"/se/scale", []string{x, gate})
		x = b.emitConv(&blk.project, x, "")
		if blk.spec.skip {
			x = b.node("Add", p+"/add", []string{x, in})
		}
		if f := blk.film; f != nil {
			c := int64(blk.spec.out)
			shape, ok := shapes[blk.spec.out]
			if !ok {
				shape = b.ints("film.shape."+strconv.Itoa(blk.spec.out), []int64{1, c, 1, 1}, 4)
				shapes[blk.spec.out] = shape
			}
			d := int64(e.filmDim)
			// Gemm computes film (1, D) · Wᵀ + bias with W stored (C, D), as
			// PyTorch exports Linear; bm holds 1 + b_m.
			trans := onnx.IntAttr("transB", 1)
			m := b.node("Gemm", p+"/film/scale", []string{EfficientNetFiLMInput, b.floats(p+"/film/scale.weight", transpose(f.wm, int(d), int(c)), c, d), b.floats(p+"/film/scale.bias", f.bm, c)}, trans)
			a := b.node("Gemm", p+"/film/shift", []string{EfficientNetFiLMInput, b.floats(p+"/film/shift.weight", transpose(f.wa, int(d), int(c)), c, d), b.floats(p+"/film/shift.bias", f.ba, c)}, trans)
			m = b.node("Reshape", p+"/film/scale4", []string{m, shape})
			a = b.node("Reshape", p+"/film/shift4", []string{a, shape})
			x = b.node("Mul", p+"/film/mul", []string{x, m})
			// The full-size operand first: OpenCV 4.6 sizes a broadcasting
			// Add by its first input.
			x = b.node("Add", p+"/film/add", []string{x, a})
		}
	}
	if blocks < len(e.blocks) {
		last := s.blocks[blocks-1]
		b.g.Outputs = []*onnx.ValueInfo{onnx.TensorValue(x, onnx.Float, 1, int64(last.out), int64(last.oh), int64(last.ow))}
	} else {
		b.emitConv(&e.head, x, EfficientNetOutput)
		b.g.Outputs = []*onnx.ValueInfo{onnx.TensorValue(EfficientNetOutput, onnx.Float, 1, int64(s.head), int64(s.fh), int64(s.fw))}
	}
	cfg := g.cfg
	return &onnx.Model{
		IRVersion:       generatedIR,
		OpsetImports:    []onnx.OperatorSetID{{Version: generatedOpset}},
		ProducerName:    "ttm",
		ProducerVersion: "efficientnet",
		DocString: fmt.Sprintf("EfficientNet-%s backbone with seeded weights (seed %d), batch norms calibrated on %d synthetic images and folded, %s padding",
			s.variant.Name, cfg.Seed, cfg.CalibrationImages, s.padding),
		Graph: b.g,
		MetadataProps: []onnx.StringStringEntry{
			{Key: "ttm.variant", Value: s.variant.Name},
			{Key: "ttm.padding", Value: s.padding.String()},
			{Key: "ttm.input", Value: fmt.Sprintf("%dx%d", s.h, s.w)},
			{Key: "ttm.film_dim", Value: strconv.Itoa(e.filmDim)},
			{Key: "ttm.seed", Value: strconv.FormatUint(cfg.Seed, 10)},
			{Key: "ttm.blocks", Value: strconv.Itoa(cfg.Blocks)},
		},
	}
}

// BlockOutput is the name of MBConv block i's output value (0-based) in a
// generated graph without FiLM: its residual add, or its projection when
// it has no skip connection.
func (g *EfficientNet) BlockOutput(i int) string {
	if g.net.spec.blocks[i].skip {
		return fmt.Sprintf("blocks.%d/add", i)
	}
	return fmt.Sprintf("blocks.%d/project/conv", i)
}

// ONNX encodes the network as an ONNX file and returns it with its SHA-256
// (hex), the digest a checkpoint records.
func (g *EfficientNet) ONNX() ([]byte, string, error) {
	b, err := onnx.Marshal(g.Model())
	if err != nil {
		return nil, "", fmt.Errorf("efficientnet: %w", err)
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:]), nil
}

// WriteONNX writes the network to an ONNX file and returns its SHA-256.
func (g *EfficientNet) WriteONNX(path string) (string, error) {
	b, sum, err := g.ONNX()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return "", fmt.Errorf("efficientnet: %w", err)
	}
	return sum, nil
}
