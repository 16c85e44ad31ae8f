package vision

import (
	"fmt"
	"math"

	"github.com/ttmrobot/ttm/internal/nn"
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
}

// KeypointActs holds one frame's keypoint activations and scratch space.
type KeypointActs struct {
	N, D, GridWidth int
	GX, GY          []float32 // (N) each position's column and row in [-1, 1]
	Probs           []float32 // (d, N) softmax over positions, per channel
	Coords          []float32 // (2d) expected x of every channel, then y

	dCoords, dProbs []float32 // (2d), (d, N)
	dSupervised     []float32 // (d, N) SuperviseKeypoints' gradient of the logits
	supervised      bool      // dSupervised holds this forward pass's gradient
}

// NewKeypointActs allocates activations for a map of n positions, gridWidth
// per row, and d channels.
func NewKeypointActs(n, d, gridWidth int) *KeypointActs {
	a := &KeypointActs{N: n, D: d, GridWidth: gridWidth,
		GX: make([]float32, n), GY: make([]float32, n),
		Probs: make([]float32, d*n), Coords: make([]float32, 2*d),
		dCoords: make([]float32, 2*d), dProbs: make([]float32, d*n), dSupervised: make([]float32, d*n)}
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
		for i := range n {
			row[i] = s * x[i*d+j]
		}
	}
	nn.SoftmaxRowsForward(a.Probs, d, n)
	a.supervised = false
	for j := range d {
		row := a.Probs[j*n : (j+1)*n]
		var sx, sy float32
		for i, w := range row {
			sx += w * a.GX[i]
			sy += w * a.GY[i]
		}
		a.Coords[j], a.Coords[d+j] = sx, sy
	}
	nn.Dense(out, a.Coords, p.Kernel, p.Bias, 1, 2*d, d)
}

// KeypointsBackward accumulates the gradients of KeypointsForward into g
// and dX (N, d). dOut (d); a and x are the forward pass's.
func KeypointsBackward(dX []float32, g *KeypointParams, dOut []float32, a *KeypointActs, x []float32, p *KeypointParams) {
	n, d := a.N, a.D
	mustHave("KeypointsBackward dX", dX, n*d)
	clear(a.dCoords)
	nn.DenseBackward(a.dCoords, g.Kernel, g.Bias, dOut, a.Coords, p.Kernel, 1, 2*d, d)
	for j := range d {
		dx, dy := a.dCoords[j], a.dCoords[d+j]
		row := a.dProbs[j*n : (j+1)*n]
		for i := range n {
			row[i] = dx*a.GX[i] + dy*a.GY[i]
		}
	}
	nn.SoftmaxRowsBackward(a.dProbs, a.Probs, d, n) // now d(logits)
	if a.supervised {
		nn.Add(a.dProbs, a.dSupervised)
	}
	for j := range d {
		row := a.dProbs[j*n : (j+1)*n]
		s := float32(math.Exp(float64(p.LogScale[j])))
		var ds float64
		for i, v := range row {
			dX[i*d+j] += s * v
			ds += float64(v * x[i*d+j])
		}
		g.LogScale[j] += float32(ds) * s
	}
}

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
