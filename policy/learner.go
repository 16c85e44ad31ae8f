package policy

import (
	"errors"
	"fmt"
	"math"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/internal/nn"
	"github.com/ttmrobot/ttm/language"
	"github.com/ttmrobot/ttm/policy/seq"
	"github.com/ttmrobot/ttm/vision"
)

// Training support: the forward and backward passes of whole policy steps
// above the frozen backbone, over windows of consecutive steps
// (truncated backpropagation through time). policy/train drives it.
//
// One step, as Policy.StepTokens computes it, with what flows back:
//
//	e        = Language(instruction)                       (E)     once per window
//	F_t      = Head(features_t, e)                         (K, d)  projection, FiLM, TokenLearner
//	I_t      = [F_{t-h+1} .. F_t ; ActionTokens(a_{t-1}) ; q_t·P + c ; 0]   (n, d)  q_t: proprioception, if any
//	O_t, M_t+1 = TTM(M_t, I_t)
//	logits_t = mean_r(O_t)·W + b                           (Σ width)
//	loss_t   = Σ_i CE(logits_t,i, bin(a_t,i))  (0.5·(logit - a)² for a continuous dimension)
//
// For another sequence model than the TTM (Config.Model) its seq.Tape takes
// the TTM's place: O_t, S_t+1 = Model(S_t, I_t), gradients into the "seq"
// group.
//
// Frames older than the window come from the carried State (their tokens
// are constants); within the window each frame's tokens get the gradient
// of every step whose input holds them.

// Group is one block of trainable parameters: a part's flat parameter
// slice, or a gradient or optimiser moment of the same layout.
type Group struct {
	Name   string
	Params []float32
}

// Groups lists the policy's trainable parameters: the sequence model (the
// TTM, group "ttm", or another seq.Model, group "seq"), the vision head
// (above the frozen backbone), the language model and the policy's own
// action embeddings and head, in that order. The slices are the live
// parameters: after changing them call ParamsChanged.
func (p *Policy) Groups() []Group {
	return []Group{
		{p.seqGroup(), p.seq.Params()},
		{"vision", p.visionHd.Params},
		{"language", p.lang.Params},
		{"policy", p.params},
	}
}

// TensorSpec names one tensor of a Group: where it lies in the group's
// flat slice.
type TensorSpec struct {
	Name         string
	Shape        []int
	Offset, Size int
}

// ParamSpecs lists the tensors of the named group (see Groups).
func (p *Policy) ParamSpecs(group string) []TensorSpec {
	var out []TensorSpec
	switch group {
	case p.seqGroup():
		for _, s := range p.seq.Specs() {
			out = append(out, TensorSpec{s.Name, s.Shape, s.Offset, s.Size})
		}
	case "vision":
		for _, s := range p.visionHd.Specs {
			out = append(out, TensorSpec{s.Name, s.Shape, s.Offset, s.Size})
		}
	case "language":
		for _, s := range p.lang.Specs {
			out = append(out, TensorSpec{s.Name, s.Shape, s.Offset, s.Size})
		}
	case "policy":
		off := 0
		for _, s := range p.specs {
			n := numElements(s.shape)
			out = append(out, TensorSpec{s.name, s.shape, off, n})
			off += n
		}
	}
	return out
}

// ParamsChanged must follow any change to the parameters of Groups: it
// drops cached packed weights and instruction embeddings.
func (p *Policy) ParamsChanged() {
	p.seq.ParamsChanged()
	p.head.packed = nil
	p.encoder.Invalidate()
}

// seqGroup is the name of the sequence model's group: "ttm" for the TTM,
// "seq" for another model.
func (p *Policy) seqGroup() string {
	if p.spec.Policy.usesSeq() {
		return "seq"
	}
	return "ttm"
}

// Tokenize tokenizes an instruction for the learner.
func (p *Policy) Tokenize(instruction string) (language.Tokens, error) {
	return p.lang.Tokenizer.Tokenize(instruction)
}

// FeatureShape is the backbone's feature map: channels and positions
// (h·w). It needs the backbone.
func (p *Policy) FeatureShape() (c, n int, err error) {
	if p.front == nil {
		return 0, 0, errors.New("policy: loaded without a backbone")
	}
	c, h, w := p.front.FeatureShape()
	return c, h * w, nil
}

// Features runs frame through the frozen backbone and writes its feature
// map (C, N) into dst: training caches these.
func (p *Policy) Features(dst []float32, frame vision.Frame) error {
	if p.front == nil {
		return errors.New("policy: loaded without a backbone")
	}
	return p.front.EncodeFeatures(dst, frame)
}

// StepData is one step of a demonstration, as the learner consumes it.
type StepData struct {
	Features []float32 // (C, N) the backbone's feature map of the step's frame
	Prev     []float32 // the previous action (A); zeros at the start of an episode
	Action   []float32 // the demonstrated action (A): the label
	Proprio  []float32 // the proprioception (Q) for a policy that reads it; nil otherwise
	// Keypoints, optional, labels the keypoint token's first channels
	// with image points (vision.SuperviseKeypoints' layout: u, v, weight
	// per point); used when the Learner's KeypointWeight is positive.
	Keypoints []float32
	// OwnGeometry makes a Learner with GeometryFromLabels read this step's
	// target geometry from the policy's own keypoints, as it acts, instead
	// of from the labels.
	OwnGeometry bool
	// Goal, optional, labels the goal probe (Config.GoalProbe): where the
	// episode's goal stood at its start, in the starting base frame, in
	// GoalUnit (GoalLen values); used when the Learner's GoalWeight is
	// positive.
	Goal []float32
	// Lying, optional, labels the vision head's lying probe
	// (vision.SuperviseLying): one value, 1 when the target lies on its
	// side, 0 when it stands, negative unlabelled; used when the Learner's
	// LyingWeight is positive.
	Lying []float32
}

// WindowStats sums a window's loss and accuracy.
type WindowStats struct {
	Loss    float64 // Σ over steps of the per-step loss (Σ over dimensions)
	Correct int     // discrete dimensions whose argmax is the demonstrated bin
	Labels  int     // discrete dimensions scored
	Steps   int
	// KeypointLoss sums the keypoint supervision's loss (times
	// KeypointWeight); it is not part of Loss.
	KeypointLoss float64
	// GoalLoss sums the goal probe's loss, ½‖estimate - StepData.Goal‖²
	// times GoalWeight; it is not part of Loss.
	GoalLoss float64
	// LyingLoss sums the lying probe's loss (times LyingWeight) over the
	// LyingLabels labelled steps, of which LyingCorrect it got right; not
	// part of Loss.
	LyingLoss                 float64
	LyingCorrect, LyingLabels int
}

// Learner computes one window's loss and gradients. Each worker goroutine
// owns one; Learners share the Policy, whose parameters must not change
// while they run. It allocates nothing after NewLearner.
type Learner struct {
	// ModeGated leaves out of the loss the dimensions the demonstrated
	// action's mode gates out (action.Space.Gated): their demonstrated
	// values (zeros) are never executed, and learning them would pull the
	// policy's velocities toward zero in the mode that uses them.
	ModeGated bool
	// LabelSigma, when positive, replaces each discrete label by a
	// Gaussian over the bins with this standard deviation (in bins), so
	// that neighbouring bins of a continuous quantity share evidence; the
	// mode and other categorical dimensions (< 8 bins) stay one-hot.
	LabelSigma float64
	// CensorBounds treats a regressed dimension's label at a bound of its
	// range as censored: the demonstrator's command was clipped there (an
	// expert asking for a 20 cm rise commands +1, 5 cm), so it asked for
	// at least that much, and a prediction beyond the bound costs
	// nothing (the action is clipped to the bound when it runs). Squared
	// error against the bound itself pulls the prediction inside it, and
	// a lift meant to be a full step falls a few millimetres short.
	CensorBounds bool
	// KeypointWeight, when positive, adds the keypoint supervision of
	// StepData.Keypoints (vision.SuperviseKeypoints, Gaussian targets
	// KeypointSigma cells wide) to the loss with this weight: an
	// auxiliary task that teaches the vision head where the hand and the
	// target are.
	KeypointWeight float32
	KeypointSigma  float64
	// GeometryFromLabels, for a policy with TargetGeometry, back-projects
	// the step's labelled points (the target, and the destination with
	// two GeometryPoints: StepData.Keypoints' second and third points)
	// instead of the policy's own keypoints wherever the labels show them:
	// the policy learns to trust the geometry while its keypoint is still
	// learning, and acts on its own keypoint at inference.
	GeometryFromLabels bool
	// GoalWeight, when positive, adds the goal probe's loss on
	// StepData.Goal to the loss with this weight (a policy with
	// Config.GoalProbe).
	GoalWeight float32
	// LyingWeight, when positive, adds the vision head's lying probe's
	// loss on StepData.Lying with this weight (a head with
	// vision.HeadConfig.LyingProbe): an auxiliary task that teaches the
	// map how the target lies. Nothing at inference reads the probe.
	LyingWeight float32

	p          *Policy
	maxSteps   int
	tape       seq.Tape // the sequence model's
	Grads      []Group  // same layout as Policy.Groups; accumulated by Window
	gHead      vision.HeadParams
	gLang      language.Params
	gOwn       *actionHead // views of the policy group's gradient
	featN      int         // feature-map positions
	emb        []float32   // (E) the instruction embedding
	langPooled []float32
	langDiff   []float32
	dEmb       []float32

	acts     []*vision.HeadActs // per step
	frames   [][]float32        // per step (K, d)
	dFrames  [][]float32        // per step (K, d)
	inputs   [][]float32        // per step (n, d)
	outputs  []float32          // (r, d) scratch: outputs are not kept, the loss is taken at once
	dOutputs [][]float32        // per step (r, d)
	pooled   []float32          // (d)
	logits   []float32          // (Σ width)
	dLogits  []float32          // (Σ width)
	dPooled  []float32          // (d)
	dInput   []float32          // (n, d)
	feats    [][]float32        // per step, the caller's feature maps
	prevs    [][]float32        // per step, the caller's previous actions
	props    [][]float32        // per step, the proprioception token's input (the caller's values, the target geometry's)
	// With MemoryFiLM:
	filmEmb  [][]float32 // per step (E), FiLM's conditioning
	feedback [][]float32 // per step (d), the pooled output it read (nil: none)
	pooledAt [][]float32 // per step (d), the step's pooled output
	dFilm    []float32   // (E)
	dFb      []float32   // (d)
	carried  []float32   // (d) the state's feedback at the window's start
	// With GoalProbe:
	goal  []float32 // (GoalLen) the probe's estimate
	dGoal []float32 // (GoalLen)
}

// NewLearner prepares a learner for windows of up to steps steps on
// feature maps of featN positions (h·w of the backbone's output).
func NewLearner(p *Policy, steps, featN int) *Learner {
	c, v := p.spec.TTM, p.spec.Vision
	d, k := c.Dim, v.Head.Tokens
	l := &Learner{
		p: p, maxSteps: steps, featN: featN,
		emb: make([]float32, p.spec.Language.Width), langPooled: make([]float32, p.spec.Language.TokenDim),
		langDiff: make([]float32, p.spec.Language.TokenDim), dEmb: make([]float32, p.spec.Language.Width),
		outputs: make([]float32, c.ProcessSize*d), pooled: make([]float32, d),
		logits: make([]float32, p.head.width), dLogits: make([]float32, p.head.width), dPooled: make([]float32, d),
		dInput: make([]float32, c.InputTokens*d),
		feats:  make([][]float32, steps), prevs: make([][]float32, steps),
	}
	l.tape = p.seq.NewTape(steps)
	for _, g := range p.Groups() {
		l.Grads = append(l.Grads, Group{g.Name, make([]float32, len(g.Params))})
	}
	l.gHead = p.visionHd.View(l.Grads[1].Params)
	l.gLang = p.lang.View(l.Grads[2].Params)
	l.gOwn = newActionHead(p.spec.Policy, d, p.spec.Language.Width, v.Head.Positions)
	off := 0
	for _, s := range l.gOwn.specs("") {
		n := numElements(s.shape)
		*s.dst = l.Grads[3].Params[off : off+n : off+n]
		off += n
	}
	for range steps {
		l.acts = append(l.acts, p.visionHd.NewActs(featN))
		l.frames = append(l.frames, make([]float32, k*d))
		l.dFrames = append(l.dFrames, make([]float32, k*d))
		l.inputs = append(l.inputs, make([]float32, c.InputTokens*d))
		l.dOutputs = append(l.dOutputs, make([]float32, c.ProcessSize*d))
		l.props = append(l.props, make([]float32, p.spec.Policy.proprioInputs()))
		if p.spec.Policy.MemoryFiLM {
			l.filmEmb = append(l.filmEmb, make([]float32, p.spec.Language.Width))
			l.pooledAt = append(l.pooledAt, make([]float32, d))
		}
	}
	if p.spec.Policy.GoalProbe {
		l.goal, l.dGoal = make([]float32, GoalLen), make([]float32, GoalLen)
	}
	if p.spec.Policy.MemoryFiLM {
		l.feedback = make([][]float32, steps)
		l.dFilm, l.dFb, l.carried = make([]float32, p.spec.Language.Width), make([]float32, d), make([]float32, d)
	}
	return l
}

// SetNoMemory trains the paper's ablation: memory zeroed before every step.
// It is the TTM's switch (seq.NoMemorySwitch); for another sequence model
// switching it on is an error (train the "ttm-nomem" model instead).
func (l *Learner) SetNoMemory(on bool) error {
	return setNoMemory(l.tape, on, "trains", l.p.ModelName())
}

// noMemory reports whether the learner trains the no-memory ablation.
func (l *Learner) noMemory() bool { return noMemoryOn(l.tape) }

// ZeroGrads clears the accumulated gradients.
func (l *Learner) ZeroGrads() {
	for _, g := range l.Grads {
		clear(g.Params)
	}
}

// Window runs steps (at most the learner's window length) of one episode
// forward from st, which it advances (memory, frame window, previous
// action: the state to carry into the episode's next window), and
// backward, accumulating scale·∂loss/∂θ into Grads. tok is the episode's
// tokenized instruction.
func (l *Learner) Window(st *State, tok language.Tokens, steps []StepData, scale float32) (WindowStats, error) {
	p := l.p
	c, v := p.spec.TTM, p.spec.Vision
	d, k, h := c.Dim, v.Head.Tokens, v.History
	T := len(steps)
	if T == 0 || T > l.maxSteps {
		return WindowStats{}, fmt.Errorf("policy: learner window of %d steps (1..%d)", T, l.maxSteps)
	}
	C := v.Head.FeatureChannels
	na, nq := p.ActionSpace().Len(), len(p.spec.Policy.Proprio)
	for i, s := range steps {
		if len(s.Features) != C*l.featN || len(s.Prev) != na || len(s.Action) != na || len(s.Proprio) != nq {
			return WindowStats{}, fmt.Errorf("policy: learner step %d: %d features, %d previous and %d demonstrated action values, %d proprioception values; want %d, %d, %d, %d",
				i, len(s.Features), len(s.Prev), len(s.Action), len(s.Proprio), C*l.featN, na, na, nq)
		}
		if l.KeypointWeight > 0 && len(s.Keypoints) > 0 {
			if !v.Head.Keypoints {
				return WindowStats{}, errors.New("policy: keypoint labels, but the vision head has no keypoint token")
			}
			if len(s.Keypoints)%vision.KeypointLabelLen != 0 || len(s.Keypoints)/vision.KeypointLabelLen > v.Head.Dim {
				return WindowStats{}, fmt.Errorf("policy: learner step %d: %d keypoint label values (%d per point, at most %d points)",
					i, len(s.Keypoints), vision.KeypointLabelLen, v.Head.Dim)
			}
		}
		if l.LyingWeight > 0 && s.Lying != nil {
			if !v.Head.LyingProbe {
				return WindowStats{}, errors.New("policy: target-lying labels, but the vision head has no lying probe")
			}
			if len(s.Lying) != 1 {
				return WindowStats{}, fmt.Errorf("policy: learner step %d: %d target-lying values, want 1", i, len(s.Lying))
			}
		}
		if l.GoalWeight > 0 && s.Goal != nil {
			if l.goal == nil {
				return WindowStats{}, errors.New("policy: goal labels, but the policy has no goal probe")
			}
			if len(s.Goal) != GoalLen {
				return WindowStats{}, fmt.Errorf("policy: learner step %d: %d goal values, want %d", i, len(s.Goal), GoalLen)
			}
		}
	}
	p.lang.Forward(l.emb, l.langPooled, tok)

	// Forward, keeping what backward needs.
	var stats WindowStats
	l.tape.Reset()
	win := h * k * d
	for t, s := range steps {
		l.feats[t], l.prevs[t] = s.Features, s.Prev
		film := l.filmEmbedding(t, st)
		if p.head.nPrior > 0 {
			p.head.keypointPrior(l.acts[t].KP, l.feedback[t])
		}
		p.visionHd.Forward(l.frames[t], l.acts[t], s.Features, film)
		if l.KeypointWeight > 0 && len(s.Keypoints) > 0 {
			kl := vision.SuperviseKeypoints(l.acts[t].KP, s.Keypoints, l.KeypointSigma, scale*l.KeypointWeight)
			stats.KeypointLoss += float64(l.KeypointWeight) * kl
		}
		if l.LyingWeight > 0 && s.Lying != nil && s.Lying[0] >= 0 {
			ll, prob := vision.SuperviseLying(l.acts[t].KP, &p.visionHd.P.Keypoints, &l.gHead.Keypoints, s.Lying[0], scale*l.LyingWeight)
			stats.LyingLoss += float64(l.LyingWeight) * ll
			stats.LyingLabels++
			if (prob > 0.5) == (s.Lying[0] == 1) {
				stats.LyingCorrect++
			}
		}
		in := l.inputs[t]
		for slot := range h { // slot h-1 is the newest frame
			age := h - 1 - slot
			dst := in[slot*k*d : (slot+1)*k*d]
			switch {
			case age <= t:
				copy(dst, l.frames[t-age])
			case st.Window.Frame(age-t-1) != nil:
				copy(dst, st.Window.Frame(age-t-1))
			default:
				clear(dst)
			}
		}
		p.head.actionTokens(in[win:win+na*d], p.actionInput(s.Prev))
		end := win + na*d
		if p.head.nProp > 0 {
			copy(l.props[t], s.Proprio)
			if pc := &p.spec.Policy; pc.TargetGeometry != nil {
				var labels []float32
				if l.GeometryFromLabels && !s.OwnGeometry {
					labels = s.Keypoints
				}
				pc.geometryInputs(l.props[t][nq:], s.Proprio, l.acts[t].KP, labels, pc.TargetGeometry)
			}
			p.head.proprioToken(in[end:end+d], l.props[t])
			end += d
		}
		clear(in[end:])
		l.tape.Forward(st.Seq, in, l.outputs)
		loss, correct, labels := l.lossStep(l.dOutputs[t], s.Action, scale)
		if l.GoalWeight > 0 && s.Goal != nil {
			stats.GoalLoss += l.goalStep(l.dOutputs[t], s.Goal, scale)
		}
		if math.IsNaN(loss) || math.IsInf(loss, 0) || math.IsNaN(stats.GoalLoss) || math.IsInf(stats.GoalLoss, 0) {
			return stats, ErrNonFinite
		}
		if l.pooledAt != nil {
			copy(l.pooledAt[t], l.pooled)
		}
		stats.Loss += loss
		stats.Correct += correct
		stats.Labels += labels
	}
	stats.Steps = T
	for t := range T {
		st.Window.Push(l.frames[t])
	}
	copy(st.Prev, steps[T-1].Action)
	if l.pooledAt != nil {
		copy(st.Feedback, l.pooledAt[T-1])
	}
	st.Steps += T

	// Backward through time.
	clear(l.dEmb)
	for t := range T {
		clear(l.dFrames[t])
	}
	for t := T - 1; t >= 0; t-- {
		l.tape.Backward(l.dOutputs[t], l.dInput, l.Grads[0].Params)
		for slot := range h {
			if age := h - 1 - slot; age <= t {
				nn.Add(l.dFrames[t-age], l.dInput[slot*k*d:(slot+1)*k*d])
			}
		}
		l.actionTokensBackward(l.dInput[win:win+na*d], p.actionInput(l.prevs[t]))
		if p.head.nProp > 0 {
			end := win + na*d
			p.head.proprioTokenBackward(l.gOwn, l.dInput[end:end+d], l.props[t])
		}
		if l.filmEmb == nil {
			p.visionHd.Backward(&l.gHead, l.dEmb, nil, l.dFrames[t], l.acts[t], l.feats[t], l.emb)
			continue
		}
		clear(l.dFilm)
		p.visionHd.Backward(&l.gHead, l.dFilm, nil, l.dFrames[t], l.acts[t], l.feats[t], l.filmEmb[t])
		nn.Add(l.dEmb, l.dFilm)
		if fb := l.feedback[t]; fb != nil {
			var dFb []float32
			if t > 0 { // the carried-in output of an earlier window is a constant
				dFb = l.dFb
				clear(dFb)
			}
			p.head.filmEmbeddingBackward(l.gOwn, dFb, l.dFilm, fb)
			if p.head.nPrior > 0 {
				p.head.keypointPriorBackward(l.gOwn, dFb, l.acts[t].KP, fb)
			}
			if dFb != nil {
				addMeanBackward(l.dOutputs[t-1], dFb, p.spec.TTM.ProcessSize)
			}
		}
	}
	p.lang.Backward(&l.gLang, l.dEmb, l.langPooled, l.langDiff, tok)
	return stats, nil
}

// filmEmbedding computes FiLM's conditioning at window step t: the
// instruction embedding, plus with MemoryFiLM the feedback of the previous
// step's pooled output (the carried state's for t = 0; none under the
// no-memory ablation).
func (l *Learner) filmEmbedding(t int, st *State) []float32 {
	if l.filmEmb == nil {
		return l.emb
	}
	var fb []float32
	switch {
	case l.noMemory():
	case t > 0:
		fb = l.pooledAt[t-1]
	case l.p.feedbackOf(st, false) != nil:
		fb = l.carried // Window advances st before the backward pass reads fb
		copy(fb, st.Feedback)
	}
	l.feedback[t] = fb
	l.p.head.filmEmbedding(l.filmEmb[t], l.emb, fb)
	return l.filmEmb[t]
}

// addMeanBackward adds the gradient of pooled = mean of out's r rows,
// dPooled (d), into dOut (r, d).
func addMeanBackward(dOut, dPooled []float32, r int) {
	d := len(dPooled)
	inv := 1 / float32(r)
	for t := range r {
		row := dOut[t*d : (t+1)*d]
		for j, v := range dPooled {
			row[j] += v * inv
		}
	}
}

// lossStep decodes the TTM output in l.outputs, scores it against the
// demonstrated action a, accumulates the head's gradients (times scale)
// and writes scale·∂loss/∂O into dOut (r, d).
func (l *Learner) lossStep(dOut, a []float32, scale float32) (loss float64, correct, labels int) {
	hd, g := l.p.head, l.gOwn
	r, d := l.p.spec.TTM.ProcessSize, hd.dim
	mode := int(math.Round(float64(a[action.DimMode])))
	hd.logitsOf(l.logits, l.pooled, l.outputs, r)
	for i, dm := range hd.space.Dims {
		lg := l.logits[hd.offsets[i] : hd.offsets[i]+outputWidth(dm)]
		dl := l.dLogits[hd.offsets[i] : hd.offsets[i]+outputWidth(dm)]
		if l.ModeGated && hd.space.Gated(i, mode) {
			clear(dl)
			continue
		}
		if dm.Bins == 0 {
			y := dm.Clamp(a[i])
			diff := lg[0] - y
			if l.CensorBounds && (float64(y) >= dm.High && diff > 0 || float64(y) <= dm.Low && diff < 0) {
				diff = 0
			}
			loss += 0.5 * float64(diff) * float64(diff)
			dl[0] = scale * diff
			continue
		}
		if l.LabelSigma > 0 && dm.Bins >= 8 {
			loss += smoothCrossEntropy(dl, lg, dm.Bin(a[i]), l.LabelSigma, scale)
		} else {
			loss += crossEntropy(dl, lg, dm.Bin(a[i]), scale)
		}
		labels++
		if argmax(lg) == dm.Bin(a[i]) {
			correct++
		}
	}
	clear(l.dPooled)
	nn.DenseBackward(l.dPooled, g.kernel, g.bias, l.dLogits, l.pooled, hd.kernel, 1, d, hd.width)
	clear(dOut)
	addMeanBackward(dOut, l.dPooled, r)
	return loss, correct, labels
}

// goalStep scores the goal probe on the step's pooled output against goal
// (GoalLen), accumulates the probe's gradients (times scale·GoalWeight)
// and adds scale·∂loss/∂O into dOut (r, d). It returns the loss,
// GoalWeight·½‖estimate - goal‖².
func (l *Learner) goalStep(dOut, goal []float32, scale float32) float64 {
	hd := l.p.head
	hd.goalProbe(l.goal, l.pooled)
	var loss float64
	for i, y := range goal {
		diff := l.goal[i] - y
		loss += 0.5 * float64(diff) * float64(diff)
		l.dGoal[i] = scale * l.GoalWeight * diff
	}
	clear(l.dPooled)
	hd.goalProbeBackward(l.gOwn, l.dPooled, l.dGoal, l.pooled)
	addMeanBackward(dOut, l.dPooled, l.p.spec.TTM.ProcessSize)
	return float64(l.GoalWeight) * loss
}

// crossEntropy returns -log softmax(logits)[label] and writes its gradient,
// scale·(softmax - onehot), into dLogits.
func crossEntropy(dLogits, logits []float32, label int, scale float32) float64 {
	mx := logits[0]
	for _, v := range logits {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range logits {
		e := math.Exp(float64(v - mx))
		dLogits[i] = float32(e)
		sum += e
	}
	for i := range dLogits {
		dLogits[i] = scale * float32(float64(dLogits[i])/sum)
	}
	dLogits[label] -= scale
	return math.Log(sum) - float64(logits[label]-mx)
}

// smoothCrossEntropy is crossEntropy against a Gaussian over the bins
// centred on label with standard deviation sigma (normalised over the
// bins): -Σ_b q_b log softmax(logits)_b, gradient scale·(softmax - q).
func smoothCrossEntropy(dLogits, logits []float32, label int, sigma float64, scale float32) float64 {
	mx := logits[0]
	for _, v := range logits {
		mx = max(mx, v)
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - mx))
	}
	logSum := math.Log(sum)
	lo, hi := max(0, label-int(4*sigma)-1), min(len(logits)-1, label+int(4*sigma)+1)
	var z float64
	for b := lo; b <= hi; b++ {
		z += math.Exp(-0.5 * sq(float64(b-label)/sigma))
	}
	var loss float64
	for b, v := range logits {
		p := math.Exp(float64(v-mx)) / sum
		var q float64
		if b >= lo && b <= hi {
			q = math.Exp(-0.5*sq(float64(b-label)/sigma)) / z
			loss -= q * (float64(v-mx) - logSum)
		}
		dLogits[b] = scale * float32(p-q)
	}
	return loss
}

func sq(x float64) float64 { return x * x }

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// actionTokensBackward scatters the gradient of the action tokens (A, d)
// into the embedding rows the previous action a selected.
func (l *Learner) actionTokensBackward(dTokens, a []float32) {
	hd, g := l.p.head, l.gOwn
	d := hd.dim
	for i, dm := range hd.space.Dims {
		src := dTokens[i*d : (i+1)*d]
		if dm.Bins > 0 {
			b := dm.Bin(a[i])
			nn.Add(g.embed[i][b*d:(b+1)*d], src)
			continue
		}
		t := float32((float64(dm.Clamp(a[i])) - dm.Low) / (dm.High - dm.Low))
		lo, hi := g.embed[i][:d], g.embed[i][d:2*d]
		for j, v := range src {
			lo[j] += (1 - t) * v
			hi[j] += t * v
		}
	}
}
