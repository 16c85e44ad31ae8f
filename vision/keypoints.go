package vision

import (
	"fmt"
	"math"

	"github.com/ttmrobot/ttm/internal/nn"
	"github.com/ttmrobot/ttm/internal/nn/cvec"
)

// KeypointLogScaleInit starts every channel's softmax at inverse
// temperature 3: projected features vary by about one unit across the map,
// so the few most active positions already dominate each channel's
// distribution (a keypoint, not the map's centroid) before any training.
var KeypointLogScaleInit = math.Log(3)

// Keypoints is a spatial soft-argmax (Levine et al. 2016, "End-to-end
// training of deep visuomotor policies"): each of the d channels of a
// feature map becomes a probability map over the N positions, and its
// expected (x, y) image coordinates are the channel's keypoint. A Dense
// turns the 2d coordinates into one token. TokenLearner tokens carry where
// they pooled from only through the positional embedding mixed into their
// values; a keypoint token states coordinates as values, which a policy
// reaching for an object needs precisely.

// KeypointParams are the keypoint token's tensors.
type KeypointParams struct {
	// LogScale (d) is the log of each channel's inverse softmax temperature:
	// a log so that Adam's roughly fixed step size changes the sharpness
	// by a factor, not by a fixed amount.
	LogScale []float32
	Kernel   []float32 // (2d, d): [x coordinates ; y coordinates] to the token
	Bias     []float32 // (d)
	// LyingKernel (d, 1) and LyingBias (1) are the target-lying probe's
	// (HeadConfig.LyingProbe), nil without it.
	LyingKernel, LyingBias []float32
}

// KeypointActs holds one frame's keypoint activations and scratch space.
type KeypointActs struct {
	N, D, GridWidth int
	// Window, when positive, reads each channel's point out of the
	// (2·Window+1)² cells around its most probable cell only (a local
	// soft-argmax); 0 reads it out of the whole map.
	Window int
	GX, GY []float32 // (N) each position's column and row in [-1, 1]
	Probs  []float32 // (d, N) softmax over positions, per channel
	// Readout (d, N) is the distribution the coordinates are read from:
	// Probs itself without a Window, else Probs restricted to the window
	// and renormalised (zero outside).
	Readout []float32
	Coords  []float32 // (2d) expected x of every channel, then y
	// Prior (d, N), when not nil, is added to each channel's scaled
	// logits before the softmax: a preference over the map's cells that
	// comes from elsewhere (the policy's memory, see policy.Config's
	// MemoryPrior). Its gradient is LogitGrad's.
	Prior []float32

	dCoords, dLogits []float32 // (2d), (d, N)
	scales           []float32 // (d) exp(LogScale) of the forward pass
	dSupervised      []float32 // (d, N) SuperviseKeypoints' gradient of the logits
	supervised       bool      // dSupervised holds this forward pass's gradient
	x                []float32 // (N, d) the forward pass's input, for SuperviseLying
	dLying           []float32 // (N, d) SuperviseLying's gradient of x; nil without the probe
	lying            bool      // dLying holds this forward pass's gradient
}

// NewKeypointActs allocates activations for a map of n positions, gridWidth
// per row, and d channels, read out over the whole map (window 0) or
// around each channel's peak (see KeypointActs.Window).
func NewKeypointActs(n, d, gridWidth, window int) *KeypointActs {
	a := &KeypointActs{N: n, D: d, GridWidth: gridWidth, Window: window,
		GX: make([]float32, n), GY: make([]float32, n),
		Probs: make([]float32, d*n), Coords: make([]float32, 2*d),
		dCoords: make([]float32, 2*d), dLogits: make([]float32, d*n), dSupervised: make([]float32, d*n),
		scales: make([]float32, d)}
	a.Readout = a.Probs
	if window > 0 {
		a.Readout = make([]float32, d*n)
	}
	rows := n / gridWidth
	for p := range n {
		a.GX[p] = gridCoord(p%gridWidth, gridWidth)
		a.GY[p] = gridCoord(p/gridWidth, rows)
	}
	return a
}

// gridCoord maps index i of n cells to the cell centre's coordinate in
// [-1, 1] (0 for a single cell).
func gridCoord(i, n int) float32 {
	if n < 2 {
		return 0
	}
	return float32(2*float64(i)/float64(n-1) - 1)
}

// KeypointsForward writes the keypoint token out (d) of x (N, d).
func KeypointsForward(out []float32, a *KeypointActs, x []float32, p *KeypointParams) {
	n, d := a.N, a.D
	mustHave("KeypointsForward x", x, n*d)
	mustHave("KeypointsForward out", out, d)
	for j := range d {
		row := a.Probs[j*n : (j+1)*n]
		s := float32(math.Exp(float64(p.LogScale[j])))
		a.scales[j] = s
		for i := range n {
			row[i] = s * x[i*d+j]
		}
	}
	if a.Prior != nil {
		mustHave("KeypointsForward prior", a.Prior, n*d)
		nn.Add(a.Probs, a.Prior)
	}
	nn.SoftmaxRowsForward(a.Probs, d, n)
	a.supervised, a.lying, a.x = false, false, x
	if a.Window > 0 {
		for j := range d {
			localWindow(a.Readout[j*n:(j+1)*n], a.Probs[j*n:(j+1)*n], a.GridWidth, a.Window)
		}
	}
	for j := range d {
		row := a.Readout[j*n : (j+1)*n]
		var sx, sy float32
		for i, w := range row {
			sx += w * a.GX[i]
			sy += w * a.GY[i]
		}
		a.Coords[j], a.Coords[d+j] = sx, sy
	}
	nn.Dense(out, a.Coords, p.Kernel, p.Bias, 1, 2*d, d)
}

// Point returns channel i's keypoint from the last KeypointsForward as
// fractions of the image's width and height, the convention of
// SuperviseKeypoints' labels (cell centres at (column+0.5)/width).
func (a *KeypointActs) Point(i int) (u, v float32) {
	rows := a.N / a.GridWidth
	return gridFraction(a.Coords[i], a.GridWidth), gridFraction(a.Coords[a.D+i], rows)
}

// gridFraction inverts gridCoord: coordinate c in [-1, 1] over n cells to
// a fraction of the map's extent.
func gridFraction(c float32, n int) float32 {
	return ((c+1)/2*float32(n-1) + 0.5) / float32(n)
}

// localWindow writes into q (N) the distribution p (N) over a map
// gridWidth wide restricted to the cells within radius cells (Chebyshev)
// of p's most probable cell, renormalised, and zero elsewhere.
//
// A whole-map soft-argmax is pulled toward the map's centre by the
// probability spread over far cells, a bias as large as the spread (on
// the simulator's frames, it doubled the hand's error against reading out
// only the 3x3 cells around the peak). The peak's cell is a
// piecewise-constant choice, so the gradient flows through the window's
// probabilities only, as through a max-pool's chosen input.
func localWindow(q, p []float32, gridWidth, radius int) {
	peak := 0
	for i, v := range p {
		if v > p[peak] {
			peak = i
		}
	}
	rows := len(p) / gridWidth
	pr, pc := peak/gridWidth, peak%gridWidth
	r0, r1 := max(pr-radius, 0), min(pr+radius, rows-1)
	c0, c1 := max(pc-radius, 0), min(pc+radius, gridWidth-1)
	clear(q)
	var sum float32
	for r := r0; r <= r1; r++ {
		for c := c0; c <= c1; c++ {
			sum += p[r*gridWidth+c]
		}
	}
	for r := r0; r <= r1; r++ {
		for c := c0; c <= c1; c++ {
			i := r*gridWidth + c
			q[i] = p[i] / sum // sum >= p[peak] >= 1/N
		}
	}
}

// KeypointsBackward accumulates the gradients of KeypointsForward into g
// and dX (N, d). dOut (d); a and x are the forward pass's.
func KeypointsBackward(dX []float32, g *KeypointParams, dOut []float32, a *KeypointActs, x []float32, p *KeypointParams) {
	n, d := a.N, a.D
	mustHave("KeypointsBackward dX", dX, n*d)
	clear(a.dCoords)
	nn.DenseBackward(a.dCoords, g.Kernel, g.Bias, dOut, a.Coords, p.Kernel, 1, 2*d, d)
	// Coords = Σ q·g with q the softmax of the logits over the readout's
	// cells, so d(logit i) = q_i·(dCoords·(g_i - Coords)), zero outside.
	cvec.KeypointDLogits(a.dLogits, a.Readout, a.GX, a.GY, a.Coords, a.dCoords, n, d)
	if a.supervised {
		nn.Add(a.dLogits, a.dSupervised)
	}
	mustHave("KeypointsBackward x", x, n*d)
	mustHave("KeypointsBackward LogScale gradient", g.LogScale, d)
	cvec.KeypointDX(dX, g.LogScale, a.dLogits, x, a.scales, n, d)
	if a.lying {
		nn.Add(dX, a.dLying)
	}
}

// LogitGrad is the loss's gradient (d, N) of the logits, the scaled
// features plus the Prior, from the last KeypointsBackward: the Prior's
// gradient. A view that the next KeypointsBackward overwrites.
func (a *KeypointActs) LogitGrad() []float32 { return a.dLogits }

// KeypointLabelLen is the length of one label of SuperviseKeypoints: the
// point's image coordinates as fractions of the width and the height
// (0..1, left to right, top to bottom) and its weight (0: not labelled,
// for example out of view).
const KeypointLabelLen = 3

// SuperviseKeypoints is an auxiliary loss on the keypoint distributions:
// channel i's distribution over the map (a.Probs row i) gets the
// cross-entropy against a Gaussian over the map's cells centred at label
// i, sigma cells wide, times the label's weight. It returns the summed
// loss and keeps scale·weight·(Probs - target), the loss's gradient of
// the channel's logits, for the next KeypointsBackward. Call it after
// KeypointsForward, which forgets the previous call's gradient.
//
// Behavioural cloning says where a keypoint should be only through the
// actions, a weak and late signal; naming the hand's and the target's
// image points (which the simulator knows) teaches the channels to find
// them directly.
func SuperviseKeypoints(a *KeypointActs, labels []float32, sigma float64, scale float32) float64 {
	n, gw := a.N, a.GridWidth
	rows := n / gw
	k := len(labels) / KeypointLabelLen
	if k > a.D || len(labels)%KeypointLabelLen != 0 {
		panic(fmt.Sprintf("vision: %d keypoint label values for %d channels", len(labels), a.D))
	}
	clear(a.dSupervised)
	a.supervised = true
	var loss float64
	for i := range k {
		l := labels[i*KeypointLabelLen : (i+1)*KeypointLabelLen]
		w := float64(l[2])
		if w == 0 {
			continue
		}
		col, row := float64(l[0])*float64(gw)-0.5, float64(l[1])*float64(rows)-0.5
		probs := a.Probs[i*n : (i+1)*n]
		grad := a.dSupervised[i*n : (i+1)*n]
		var z float64
		for p := range n {
			dx, dy := float64(p%gw)-col, float64(p/gw)-row
			t := math.Exp(-(dx*dx + dy*dy) / (2 * sigma * sigma))
			grad[p] = float32(t)
			z += t
		}
		if z == 0 { // the point lies far outside the map
			clear(grad)
			continue
		}
		for p, pr := range probs {
			t := float64(grad[p]) / z
			if t > 0 {
				loss -= w * t * math.Log(max(float64(pr), 1e-30))
			}
			grad[p] = scale * float32(w*(float64(pr)-t))
		}
	}
	return loss
}

// LyingChannel is the keypoint channel whose object the lying probe
// reads: the target's (channel 1, after the hand's).
const LyingChannel = 1

// SuperviseLying is the target-lying probe's auxiliary loss: the map x
// (N, d) of the last KeypointsForward pooled under channel LyingChannel's
// readout, pooled = Σ_n Readout[c, n]·x[n, :] (d), gives a logit z =
// pooled·LyingKernel + LyingBias; its loss is the binary cross-entropy
// against label (1: the target lies on its side, 0: it stands). It
// accumulates scale·∂loss/∂θ into g's probe, keeps scale·∂loss/∂x for the
// next KeypointsBackward (the readout is held constant: the probe must
// not move the keypoint) and returns the loss and the probe's
// probability.
//
// Nothing at inference reads the probe: it is there so that the map at
// the target encodes how the target lies, which a frame that shows the
// end of a grasp and one of its approach differ by.
func SuperviseLying(a *KeypointActs, p, g *KeypointParams, label, scale float32) (loss float64, prob float32) {
	n, d := a.N, a.D
	mustHave("SuperviseLying x", a.x, n*d)
	mustHave("SuperviseLying kernel", p.LyingKernel, d)
	readout := a.Readout[LyingChannel*n : (LyingChannel+1)*n]
	z := float64(p.LyingBias[0])
	for i, r := range readout {
		if r == 0 {
			continue
		}
		var dot float32
		for j, v := range a.x[i*d : (i+1)*d] {
			dot += v * p.LyingKernel[j]
		}
		z += float64(r) * float64(dot)
	}
	// -[y log σ(z) + (1-y) log(1-σ(z))] = softplus(z) - y·z, stably.
	loss = max(z, 0) + math.Log1p(math.Exp(-math.Abs(z))) - float64(label)*z
	prob = float32(1 / (1 + math.Exp(-z)))
	dz := scale * (prob - label)
	g.LyingBias[0] += dz
	for i, r := range readout {
		row := a.dLying[i*d : (i+1)*d]
		if r == 0 {
			clear(row)
			continue
		}
		for j, v := range a.x[i*d : (i+1)*d] {
			g.LyingKernel[j] += r * dz * v
			row[j] = r * dz * p.LyingKernel[j]
		}
	}
	a.lying = true
	return loss, prob
}

// DefaultKeypointSigma is the width, in cells, of SuperviseKeypoints'
// Gaussian targets that `ttm train` uses unless told otherwise. The local
// soft-argmax (KeypointActs.Window 1) reads a distribution out of the 3x3
// cells around its peak, which truncates a wide Gaussian asymmetrically
// and pulls the point toward the peak cell's centre: a channel that learns
// its target exactly is read up to 0.23 cells off at sigma 1 (1.9 px at a
// stride of 8) and under 0.03 at sigma 0.5, which still spreads each target
// over the neighbouring cells. The policy acts on these points: trained at
// 0.5 instead of 1, the small-geometry recipe gained on each of three seeds,
// from 29 % to 39 % on average on held-out scenes (README, Training).
const DefaultKeypointSigma = 0.5
