package layer

import "github.com/ttmrobot/ttm/internal/nn"

// Dense is Flax's Dense layer: out = in·Kernel + Bias.
type Dense struct {
	Kernel []float32 // (in, out), input-major as Flax stores it
	Bias   []float32 // (out)
	In     int
	Out    int

	// Packed is Kernel laid out for nn.MatMulPacked (see Pack); nil until
	// packed, and dropped by its owner when the parameters change.
	Packed *nn.Packed
}

// Register names the kernel and bias under path; bias is the bias's
// initialiser.
func (l *Dense) Register(t *Table, path string, in, out int, bias Init) {
	l.In, l.Out = in, out
	t.Add(&l.Kernel, path+"/kernel", Xavier(in, out), in, out)
	t.Add(&l.Bias, path+"/bias", bias, out)
	t.Denses = append(t.Denses, l)
}

// Pack lays the kernel out for nn.MatMulPacked when the output width is a
// multiple of nn.PanelWidth (allocating); other widths stay unpacked.
func (l *Dense) Pack() {
	if l.Kernel != nil && l.Out%nn.PanelWidth == 0 {
		l.Packed = nn.Pack(l.Kernel, l.In, l.Out)
	}
}

// Forward computes out (N, Out) = in (N, In)·Kernel + Bias. Given pack
// scratch (nn.PackScratchSize(In) floats) and a packed kernel, products of
// up to nn.MaxPackedRows rows take nn.MatMulPacked, which streams the
// weights once; with pack nil the kernel is read unpacked (what a
// training tape does, so that tapes on one model can run in parallel).
func (l *Dense) Forward(out, in []float32, rows int, pack []float32) {
	if pack != nil && l.Packed != nil && rows <= nn.MaxPackedRows {
		nn.SetRows(out, l.Bias, rows, l.Out)
		nn.MatMulPacked(out, in, l.Packed, rows, pack)
		return
	}
	nn.Dense(out, in, l.Kernel, l.Bias, rows, l.In, l.Out)
}

// Backward accumulates dIn (N, In; may be nil) and the gradients g of the
// kernel and bias, given dOut (N, Out) and the forward pass's input.
func (l *Dense) Backward(g *Dense, dIn, dOut, in []float32, rows int) {
	nn.DenseBackward(dIn, g.Kernel, g.Bias, dOut, in, l.Kernel, rows, l.In, l.Out)
}

// LayerNorm is Flax's LayerNorm over the channels, with a learned scale
// and bias.
type LayerNorm struct {
	Scale, Bias []float32 // (d)
}

// Register names the scale and bias under path.
func (ln *LayerNorm) Register(t *Table, path string, d int) {
	t.Add(&ln.Scale, path+"/scale", Ones, d)
	t.Add(&ln.Bias, path+"/bias", Zeros, d)
}

// Forward normalises in (N, d) into out (N, d), keeping nothing.
func (ln *LayerNorm) Forward(out, in []float32, rows, d int, eps float32) {
	nn.LayerNormForward(out, nil, nil, in, ln.Scale, ln.Bias, rows, d, eps)
}

// LayerNormRec keeps one LayerNorm pass: its input, output and statistics.
type LayerNormRec struct {
	In, Out    []float32 // (N, d)
	Mean, Rstd []float32 // (N)
}

// NewLayerNormRec allocates a record for up to rows rows.
func NewLayerNormRec(rows, d int) LayerNormRec {
	return LayerNormRec{In: make([]float32, rows*d), Out: make([]float32, rows*d), Mean: make([]float32, rows), Rstd: make([]float32, rows)}
}

// Forward normalises the first rows of x into rc.Out, keeping a copy of x.
func (rc *LayerNormRec) Forward(ln *LayerNorm, x []float32, rows, d int, eps float32) {
	copy(rc.In[:rows*d], x[:rows*d])
	nn.LayerNormForward(rc.Out, rc.Mean, rc.Rstd, rc.In[:rows*d], ln.Scale, ln.Bias, rows, d, eps)
}

// Backward accumulates dL/dx into dIn and the gradients into g, given
// dOut = dL/d(rc.Out).
func (rc *LayerNormRec) Backward(ln, g *LayerNorm, dIn, dOut []float32, rows, d int) {
	nn.LayerNormBackward(dIn, g.Scale, g.Bias, dOut, rc.In, ln.Scale, rc.Mean, rc.Rstd, rows, d)
}

// MLP is scenic's MlpBlock: Dense_0 -> gelu -> Dense_1.
type MLP struct {
	D0, D1 Dense
}

// Register names the two dense layers under path (Dense_0, Dense_1);
// bias is their biases' initialiser.
func (b *MLP) Register(t *Table, path string, in, hidden, out int, bias Init) {
	b.D0.Register(t, path+"/Dense_0", in, hidden, bias)
	b.D1.Register(t, path+"/Dense_1", hidden, out, bias)
}

// Forward computes out (N, D1.Out) = Dense_1(gelu(Dense_0(in))), keeping
// nothing: with a packed Dense_0 the gelu is fused into its product.
// hidden (N, D0.Out) is scratch; pack as for Dense.Forward.
func (b *MLP) Forward(out, hidden, in []float32, rows int, pack []float32) {
	if l := &b.D0; pack != nil && l.Packed != nil && rows <= nn.MaxPackedRows {
		nn.SetRows(hidden, l.Bias, rows, l.Out)
		nn.MatMulPackedGELU(hidden, in, l.Packed, rows, pack)
	} else {
		l.Forward(hidden, in, rows, pack)
		nn.GELUForward(hidden, hidden[:rows*l.Out])
	}
	b.D1.Forward(out, hidden, rows, pack)
}

// ForwardTokens applies the block along the token axis, keeping nothing:
// out (D1.Out, c) = MLP(inᵀ)ᵀ for in (D0.In, c). hidden (D0.Out, c) is
// scratch.
func (b *MLP) ForwardTokens(out, hidden, in []float32, c int) {
	nn.DenseTokens(hidden, in, b.D0.Kernel, b.D0.Bias, b.D0.In, c, b.D0.Out)
	nn.GELUForward(hidden, hidden[:b.D0.Out*c])
	nn.DenseTokens(out, hidden, b.D1.Kernel, b.D1.Bias, b.D1.In, c, b.D1.Out)
}

// MLPRec keeps an MLP pass's hidden layer before and after gelu.
type MLPRec struct {
	Pre, Hid []float32 // (N, h), or (h, c) along the token axis
}

// NewMLPRec allocates a record for up to rows rows of hidden width.
func NewMLPRec(rows, hidden int) MLPRec {
	return MLPRec{Pre: make([]float32, rows*hidden), Hid: make([]float32, rows*hidden)}
}

// Forward computes out (N, D1.Out) = Dense_1(gelu(Dense_0(in))); pack as
// for Dense.Forward.
func (rc *MLPRec) Forward(b *MLP, out, in []float32, rows int, pack []float32) {
	h := b.D0.Out
	b.D0.Forward(rc.Pre, in, rows, pack)
	nn.GELUForward(rc.Hid[:rows*h], rc.Pre[:rows*h])
	b.D1.Forward(out, rc.Hid, rows, pack)
}

// Backward accumulates dL/d(in) into dIn (N, D0.In) and the block's
// gradients into g, given dOut (N, D1.Out). dHid and dPre (N, h) are
// scratch.
func (rc *MLPRec) Backward(b, g *MLP, dIn, dOut, in, dHid, dPre []float32, rows int) {
	h := b.D0.Out
	clear(dHid[:rows*h])
	b.D1.Backward(&g.D1, dHid, dOut, rc.Hid, rows)
	clear(dPre[:rows*h])
	nn.GELUBackward(dPre[:rows*h], dHid[:rows*h], rc.Pre[:rows*h], rc.Hid[:rows*h])
	b.D0.Backward(&g.D0, dIn, dPre, in, rows)
}

// ForwardTokens is MLP.ForwardTokens keeping the hidden layer:
// out (D1.Out, c) for in (D0.In, c).
func (rc *MLPRec) ForwardTokens(b *MLP, out, in []float32, c int) {
	h := b.D0.Out
	nn.DenseTokens(rc.Pre, in, b.D0.Kernel, b.D0.Bias, b.D0.In, c, h)
	nn.GELUForward(rc.Hid[:h*c], rc.Pre[:h*c])
	nn.DenseTokens(out, rc.Hid, b.D1.Kernel, b.D1.Bias, h, c, b.D1.Out)
}

// BackwardTokens accumulates the gradients of ForwardTokens: dIn
// (D0.In, c) and g, given dOut (D1.Out, c). dHid and dPre (h, c) are
// scratch.
func (rc *MLPRec) BackwardTokens(b, g *MLP, dIn, dOut, in, dHid, dPre []float32, c int) {
	h := b.D0.Out
	clear(dHid[:h*c])
	nn.DenseTokensBackward(dHid, g.D1.Kernel, g.D1.Bias, dOut, rc.Hid, b.D1.Kernel, h, c, b.D1.Out)
	clear(dPre[:h*c])
	nn.GELUBackward(dPre[:h*c], dHid[:h*c], rc.Pre[:h*c], rc.Hid[:h*c])
	nn.DenseTokensBackward(dIn, g.D0.Kernel, g.D0.Bias, dPre, in, b.D0.Kernel, b.D0.In, c, h)
}
