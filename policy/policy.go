package policy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/nn"
	"github.com/ttmrobot/ttm/language"
	"github.com/ttmrobot/ttm/policy/seq"
	"github.com/ttmrobot/ttm/ttm"
	"github.com/ttmrobot/ttm/vision"
)

// Observation is what the policy sees at one step.
type Observation struct {
	Frame       vision.Frame // the headcam image, decoded (vision.DecodeImage)
	Instruction string       // encoded by the policy's language model (cached)
	// Embedding, if not nil, is an instruction embedding computed upstream;
	// it replaces Instruction. It is checked for width and finite values.
	Embedding []float32
	// Proprio is the robot's proprioception in the layout the policy names
	// (Config.Proprio); ignored by a policy without proprioception. It is
	// checked for length and finite values.
	Proprio []float32
	// Camera, if not nil, is the head camera's calibration read from the
	// robot (camera_info and /tf), which a policy with
	// Config.TargetGeometry back-projects its keypoints through in place
	// of the one it was trained with. Its size must be the trained one's
	// (the network's input).
	Camera *vision.CameraGeometry
}

// State is everything a policy carries from one step to the next: the
// sequence model's state (for the TTM its memory), the window of recent
// frames' tokens and the previous action. It is an explicit value: reset
// it at the start of an episode, snapshot it with Clone, restore it with
// CopyFrom.
type State struct {
	Seq    seq.State // the sequence model's state
	Window *vision.Window
	Prev   []float32 // the previous action; zeros at the start
	// Feedback is the previous step's pooled TTM output, which FiLM reads
	// with Config.MemoryFiLM (zeros at the start); nil without.
	Feedback []float32
	Steps    int
}

// Memory is the TTM's memory inside s, or nil when the policy runs
// another sequence model.
func (s *State) Memory() *ttm.Memory { return seq.TTMMemory(s.Seq) }

// Reset starts a new episode.
func (s *State) Reset() {
	s.ResetMemory()
	s.Window.Reset()
	clear(s.Prev)
	s.Steps = 0
}

// ResetMemory resets the sequence model's state only (and the output FiLM
// reads back): what a memory knock-out does.
func (s *State) ResetMemory() {
	s.Seq.Reset()
	clear(s.Feedback)
}

// Vector is one flat vector a State carries from step to step besides the
// sequence model's state and the frame window.
type Vector struct {
	Name string     // its name in a saved training state
	V    *[]float32 // points at a nil slice when the policy has none
}

// Vectors lists the vectors s carries. Clone, CopyFrom and the trainer's
// saved state go through it, so a vector listed here is cloned, restored and
// saved (a test fails for a []float32 field of State left out).
func (s *State) Vectors() [2]Vector {
	return [...]Vector{{"prev", &s.Prev}, {"feedback", &s.Feedback}}
}

// Clone returns an independent copy of s.
func (s *State) Clone() *State {
	c := &State{Seq: s.Seq.Clone(), Window: s.Window.Clone(), Steps: s.Steps}
	cv := c.Vectors()
	for i, v := range s.Vectors() {
		*cv[i].V = slices.Clone(*v.V)
	}
	return c
}

// CopyFrom restores s from a snapshot of the same policy without allocating
// (a causal or concat model's state allocates when o holds more steps than
// s has room for).
func (s *State) CopyFrom(o *State) {
	s.Seq.CopyFrom(o.Seq)
	s.Window.CopyFrom(o.Window)
	sv := s.Vectors()
	for i, v := range o.Vectors() {
		copy(*sv[i].V, *v.V)
	}
	s.Steps = o.Steps
}

// Hash is the sequence model's state hash (for the TTM the memory's,
// ttm.Memory.Hash). Equal hashes mean bit-identical states.
func (s *State) Hash() uint64 { return s.Seq.Hash() }

// ErrNonFinite reports that the model produced NaN or Inf: the state is
// left as it was before the step and no action is given.
var ErrNonFinite = errors.New("policy: the model produced a non-finite value")

// Policy runs the whole model: front end, sequence model (the TTM or
// another, behind seq.Model) and action head. It is not safe for
// concurrent use; its Step allocates nothing in steady state.
type Policy struct {
	spec     Spec
	seq      seq.Model        // the TTM (seq.TTMOf) or spec.Policy.Model
	runner   seq.Runner       // runs seq
	saved    seq.State        // the state before the step, restored on a non-finite output
	front    *vision.FrontEnd // nil for a policy without a backbone (tokens given directly)
	lang     *language.Model
	encoder  *language.Encoder
	head     *actionHead
	params   []float32 // the policy's own parameters (action embeddings, head)
	specs    []paramSpec
	visionHd *vision.Head
	// digest is the SHA-256 of the loaded checkpoint's tensors.
	digest string
	// backbonePath is the backbone file opened by Load ("" without one).
	backbonePath string

	frame  []float32 // (K, d) the new frame's tokens
	input  []float32 // (n, d) the TTM's input
	output []float32 // (r, d)
	pooled []float32 // (d)
	// logits (the head's paddedWidth; Logits is its first Σ width) and
	// pack (nn.PackScratchSize(d)) are the packed head product's output
	// and scratch.
	logits, pack []float32
	action       []float32
	// zeroAction is the action tokens' input with BlindActions.
	zeroAction []float32
	proprio    []float32 // the proprioception token's input: the robot's values, then the target geometry's
	filmEmb    []float32 // (E) FiLM's conditioning with MemoryFiLM
	goal       []float32 // (GoalLen) the goal probe's last estimate; nil without
}

// assemble builds the policy around its parts: m is the sequence model,
// the TTM (seq.TTMOf) or spec.Policy.Model; front may be nil.
func assemble(spec Spec, m seq.Model, vhead *vision.Head, lang *language.Model, front *vision.FrontEnd) *Policy {
	c := spec.TTM
	p := &Policy{
		spec: spec, seq: m, runner: m.NewRunner(), saved: m.NewState(), front: front, lang: lang,
		encoder: language.NewEncoder(lang, 64), visionHd: vhead,
		head:  newActionHead(spec.Policy, c.Dim, spec.Language.Width, spec.Vision.Head.Positions),
		frame: make([]float32, spec.Vision.Head.Tokens*c.Dim),
		input: make([]float32, c.InputTokens*c.Dim), output: make([]float32, c.ProcessSize*c.Dim),
		pooled: make([]float32, c.Dim),
		action: make([]float32, spec.Policy.ActionSpace.Len()), zeroAction: make([]float32, spec.Policy.ActionSpace.Len()),
		proprio: make([]float32, spec.Policy.proprioInputs()), filmEmb: make([]float32, spec.Language.Width),
	}
	if spec.Policy.GoalProbe {
		p.goal = make([]float32, GoalLen)
	}
	p.specs = p.head.specs(Prefix)
	size := 0
	for _, s := range p.specs {
		size += numElements(s.shape)
	}
	p.params = make([]float32, size)
	off := 0
	for _, s := range p.specs {
		n := numElements(s.shape)
		*s.dst = p.params[off : off+n : off+n]
		off += n
	}
	p.logits = make([]float32, p.head.paddedWidth())
	p.pack = make([]float32, nn.PackScratchSize(c.Dim))
	return p
}

func numElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// initOwn fills the policy's own parameters: action embeddings N(0, 0.02),
// xavier-uniform head and proprioception kernels and zero biases.
func (p *Policy) initOwn(seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x706f6c696379)) // "policy"
	for _, e := range p.head.embed {
		for i := range e {
			e[i] = float32(r.NormFloat64() * 0.02)
		}
	}
	limit := math.Sqrt(6 / float64(p.head.dim+p.head.width))
	for i := range p.head.kernel {
		p.head.kernel[i] = float32((2*r.Float64() - 1) * limit)
	}
	clear(p.head.bias)
	if q := p.head.nProp; q > 0 {
		limit := math.Sqrt(6 / float64(q+p.head.dim))
		for i := range p.head.propW {
			p.head.propW[i] = float32((2*r.Float64() - 1) * limit)
		}
		clear(p.head.propB)
	}
	if n := p.head.nGoal; n > 0 {
		limit := math.Sqrt(6 / float64(n+p.head.dim))
		for i := range p.head.goalW {
			p.head.goalW[i] = float32((2*r.Float64() - 1) * limit)
		}
		clear(p.head.goalB)
	}
}

// Proprio returns the names of the proprioception values the policy reads
// (Config.Proprio); nil for a policy without.
func (p *Policy) Proprio() []string { return p.spec.Policy.Proprio }

// checkProprio checks an observation's proprioception against the policy's
// layout; it returns nil for a policy without proprioception.
func (p *Policy) checkProprio(q []float32) ([]float32, error) {
	want := p.spec.Policy.Proprio
	if len(want) == 0 {
		return nil, nil
	}
	if len(q) != len(want) {
		return nil, fmt.Errorf("policy: proprioception has %d values, the policy reads %d (%s)", len(q), len(want), strings.Join(want, ", "))
	}
	if !finite(q) {
		return nil, errors.New("policy: proprioception holds NaN or Inf")
	}
	return q, nil
}

// Spec returns the policy's configuration.
func (p *Policy) Spec() Spec { return p.spec }

// ActionSpace is the layout of the actions Step writes.
func (p *Policy) ActionSpace() action.Space { return p.spec.Policy.ActionSpace }

// NewState returns the state at the start of an episode.
func (p *Policy) NewState() *State {
	v := p.spec.Vision
	st := &State{
		Seq:    p.seq.NewState(),
		Window: vision.NewWindow(v.History, v.Head.Tokens, v.Head.Dim),
		Prev:   make([]float32, p.ActionSpace().Len()),
	}
	if p.spec.Policy.MemoryFiLM {
		st.Feedback = make([]float32, p.spec.TTM.Dim)
	}
	return st
}

// Rate is the rate, Hz, the policy learnt its per-step actions at
// (Config.Rate); 0 when unknown.
func (p *Policy) Rate() float64 { return p.spec.Policy.Rate }

// SetRate records the rate, Hz, of the demonstrations the policy learns
// from (Config.Rate); Save writes it.
func (p *Policy) SetRate(hz float64) error {
	if !(hz > 0 && hz <= MaxRate) {
		return fmt.Errorf("policy: trained rate %v Hz: want (0, %v]", hz, MaxRate)
	}
	p.spec.Policy.Rate = hz
	return nil
}

// ModelName is the sequence model's registry name ("ttm", "recurrent", ...).
func (p *Policy) ModelName() string { return p.spec.Policy.ModelName() }

// SetNoMemory switches the paper's ablation on or off: the memory is zeroed
// before every step, with the same computation. It is the TTM's switch
// (seq.NoMemorySwitch): for another sequence model switching it on is an
// error (the ablation of the seq package is a model of its own,
// "ttm-nomem").
func (p *Policy) SetNoMemory(on bool) error { return setNoMemory(p.runner, on, "runs", p.ModelName()) }

// noMemory reports whether the no-memory ablation is on.
func (p *Policy) noMemory() bool { return noMemoryOn(p.runner) }

// setNoMemory switches the no-memory ablation of x, a seq.Runner or
// seq.Tape; the policy runs (or trains: verb) the model called name.
func setNoMemory(x any, on bool, verb, name string) error {
	sw, ok := x.(seq.NoMemorySwitch)
	if !ok {
		if on {
			return fmt.Errorf("policy: the no-memory ablation is a switch of the ttm model, this policy %s %q (train the ttm-nomem model instead)", verb, name)
		}
		return nil
	}
	sw.SetNoMemory(on)
	return nil
}

// noMemoryOn reports whether x, a seq.Runner or seq.Tape, runs the
// no-memory ablation.
func noMemoryOn(x any) bool {
	sw, ok := x.(seq.NoMemorySwitch)
	return ok && sw.NoMemory()
}

// Close releases the backbone.
func (p *Policy) Close() error {
	if p.front == nil {
		return nil
	}
	return p.front.Close()
}

// Embed returns the instruction embedding the policy uses for obs.
func (p *Policy) Embed(obs *Observation) ([]float32, error) {
	if obs.Embedding != nil {
		if w := p.spec.Language.Width; len(obs.Embedding) != w {
			return nil, fmt.Errorf("policy: instruction embedding has %d values, the policy takes %d", len(obs.Embedding), w)
		}
		if !finite(obs.Embedding) {
			return nil, errors.New("policy: instruction embedding holds NaN or Inf")
		}
		return obs.Embedding, nil
	}
	return p.encoder.Encode(obs.Instruction)
}

// Step runs one control step: it encodes obs.Frame into tokens, runs the
// TTM on the window, the previous action and the memory, and writes the
// action into action (the action space's length). On an error (a bad
// frame or embedding, a non-finite model output) st is left as it was.
func (p *Policy) Step(obs *Observation, st *State, action []float32) error {
	if p.front == nil {
		return errors.New("policy: no backbone: use StepTokens")
	}
	film, q, err := p.frontEndInputs(obs, st)
	if err != nil {
		return err
	}
	if err := p.front.EncodeInto(p.frame, obs.Frame, film); err != nil {
		return err
	}
	return p.StepTokens(p.frame, p.proprioInput(q, p.front.Keypoints(), obs.Camera), st, action)
}

// StepFeatures is Step from the frame's backbone feature map (C, N), as
// Features wrote it: the head, the TTM and the action head run, the
// backbone does not (replays of cached episodes, diagnostics).
func (p *Policy) StepFeatures(features []float32, obs *Observation, st *State, action []float32) error {
	if p.front == nil {
		return errors.New("policy: no front end: use StepTokens")
	}
	film, q, err := p.frontEndInputs(obs, st)
	if err != nil {
		return err
	}
	if err := p.front.EncodeFromFeatures(p.frame, features, film); err != nil {
		return err
	}
	return p.StepTokens(p.frame, p.proprioInput(q, p.front.Keypoints(), obs.Camera), st, action)
}

// frontEndInputs checks obs's instruction and proprioception and returns
// what conditions FiLM at this step and the robot's proprioception (nil
// for a policy without); with MemoryPrior it steers the front end's next
// pass (steerFrontEnd).
func (p *Policy) frontEndInputs(obs *Observation, st *State) (film, q []float32, err error) {
	emb, err := p.Embed(obs)
	if err != nil {
		return nil, nil, err
	}
	if q, err = p.checkProprio(obs.Proprio); err != nil {
		return nil, nil, err
	}
	if g, t := obs.Camera, p.spec.Policy.TargetGeometry; g != nil && t != nil && (g.Height != t.Height || g.Width != t.Width) {
		return nil, nil, fmt.Errorf("policy: camera geometry for %dx%d images, the policy's is %dx%d", g.Height, g.Width, t.Height, t.Width)
	}
	return p.steerFrontEnd(p.front.Keypoints(), emb, st), q, nil
}

// steerFrontEnd returns what conditions FiLM at this step (filmEmbedding)
// and, with MemoryPrior, writes the memory's prior into kp, the keypoint
// activations the front end's next pass uses.
func (p *Policy) steerFrontEnd(kp *vision.KeypointActs, emb []float32, st *State) []float32 {
	if p.head.nPrior > 0 {
		p.head.keypointPrior(kp, p.feedbackOf(st, p.noMemory()))
	}
	return p.filmEmbedding(emb, st)
}

// filmEmbedding is what conditions FiLM at this step: the instruction
// embedding emb, plus with MemoryFiLM the feedback of st's previous output
// (none under the no-memory ablation).
func (p *Policy) filmEmbedding(emb []float32, st *State) []float32 {
	if !p.spec.Policy.MemoryFiLM {
		return emb
	}
	p.head.filmEmbedding(p.filmEmb, emb, p.feedbackOf(st, p.noMemory()))
	return p.filmEmb
}

// feedbackOf is the output st feeds back into FiLM: nil under the
// no-memory ablation or for a state without one.
func (p *Policy) feedbackOf(st *State, noMemory bool) []float32 {
	if noMemory || len(st.Feedback) != p.spec.TTM.Dim {
		return nil
	}
	return st.Feedback
}

// proprioInput returns the proprioception token's input for the robot's
// reading q and the frame's keypoints kp: q, then with TargetGeometry
// where the target (and its destination) stand on the work surface,
// through camera (nil: TargetGeometry's calibration); nil for a policy
// without the token.
func (p *Policy) proprioInput(q []float32, kp *vision.KeypointActs, camera *vision.CameraGeometry) []float32 {
	if len(p.proprio) == 0 {
		return nil
	}
	copy(p.proprio, q)
	if c := &p.spec.Policy; c.TargetGeometry != nil {
		c.geometryInputs(p.proprio[len(q):], q, kp, nil, cmp.Or(camera, c.TargetGeometry))
	}
	return p.proprio
}

// geometryInputs writes TargetGeometry's values for the robot's reading q
// into dst: for each point (geometryPoint), keypoint channel 1+i of kp, or
// its label wherever labels (the keypoint supervision's layout: u, v,
// weight per point; nil for none) show it; all through the calibration g.
// Step and the Learner both call it, so inference and training read the
// same.
func (c *Config) geometryInputs(dst, q []float32, kp *vision.KeypointActs, labels []float32, g *vision.CameraGeometry) {
	const per = vision.KeypointLabelLen
	n := c.geometryPointLen()
	for i := range c.geometryPoints() {
		ch := 1 + i
		var u, v float32
		if len(labels) >= (ch+1)*per && labels[ch*per+2] > 0 {
			u, v = labels[ch*per], labels[ch*per+1]
		} else {
			u, v = kp.Point(ch)
		}
		c.geometryPoint(dst[i*n:(i+1)*n], q, g, u, v)
	}
}

// geometryPoint writes the values of the geometry point at image point
// (u, v) into dst (geometryPointLen): where it lies on the work surface,
// x, y, 1 (zeros when its ray misses the surface); with GeometryRelative,
// that x and y from the hand of reading q; with GeometrySightline, where
// its line of sight passes the hand's depth, y and z from the hand (zeros
// when it does not reach it).
func (c *Config) geometryPoint(dst, q []float32, g *vision.CameraGeometry, u, v float32) {
	clear(dst)
	x, y, onSurface := g.Backproject(u, v)
	if onSurface {
		dst[0], dst[1], dst[2] = x, y, 1
	}
	if c.GeometryRelative <= 0 {
		return
	}
	hx, hy := q[slices.Index(c.Proprio, "hand_x")], q[slices.Index(c.Proprio, "hand_y")]
	scale := float32(1 / c.GeometryRelative)
	if onSurface {
		dst[3], dst[4] = (x-hx)*scale, (y-hy)*scale
	}
	if !c.GeometrySightline {
		return
	}
	hz := q[slices.Index(c.Proprio, "hand_z")]
	if y, z, ok := g.AtDepth(u, v, hx); ok {
		dst[5], dst[6] = (y-hy)*scale, (z-hz)*scale
	}
}

// StepTokens is Step from a frame's tokens (K, d), already computed by the
// front end, and the proprioception token's input (nil for a policy
// without; with TargetGeometry the robot's values followed by the
// geometry's): the same computation for cached features (training, replay
// of encoded episodes).
func (p *Policy) StepTokens(frame, proprio []float32, st *State, action []float32) error {
	c, v := p.spec.TTM, p.spec.Vision
	d, k := c.Dim, v.Head.Tokens
	if len(frame) != k*d || len(action) != p.ActionSpace().Len() || len(proprio) != p.head.nProp {
		panic(fmt.Sprintf("policy: StepTokens: %d frame, %d proprioception and %d action values, want %d, %d and %d",
			len(frame), len(proprio), len(action), k*d, p.head.nProp, p.ActionSpace().Len()))
	}
	// I_t = [window with the new frame as the newest ; action tokens ; proprioception ; zeros].
	win := v.History * k * d
	st.Window.Tokens(p.input[:win])
	copy(p.input, p.input[k*d:win])
	copy(p.input[win-k*d:win], frame)
	na := p.ActionSpace().Len()
	p.head.actionTokens(p.input[win:win+na*d], p.actionInput(st.Prev))
	end := win + na*d
	if p.head.nProp > 0 {
		p.head.proprioToken(p.input[end:end+d], proprio)
		end += d
	}
	clear(p.input[end:])

	p.saved.CopyFrom(st.Seq)
	p.runner.Step(st.Seq, p.input, p.output)
	p.head.decode(p.action, p.logits, p.pooled, p.output, c.ProcessSize, p.pack)
	if p.goal != nil {
		p.head.goalProbe(p.goal, p.pooled)
	}
	if !finite(p.Logits()) || !finite(p.output) {
		st.Seq.CopyFrom(p.saved)
		return ErrNonFinite
	}
	st.Window.Push(frame)
	copy(st.Prev, p.action)
	copy(st.Feedback, p.pooled)
	st.Steps++
	copy(action, p.action)
	return nil
}

// GoalEstimate returns the goal probe's estimate after the last step
// (Config.GoalProbe): where the goal stood at the episode's start, in the
// starting base frame, in GoalUnit (x, y, z). It is a view that the next
// step overwrites; nil for a policy without the probe.
func (p *Policy) GoalEstimate() []float32 { return p.goal }

// actionInput is the action the action tokens encode: the previous one,
// or zeros for a policy with BlindActions.
func (p *Policy) actionInput(prev []float32) []float32 {
	if p.spec.Policy.BlindActions {
		return p.zeroAction
	}
	return prev
}

// Keypoint returns keypoint i of the frame the last Step or StepFeatures
// encoded, as fractions of the image's width and height (the convention
// of the keypoint labels, sim.KeypointLabels); ok is false for a policy
// without a keypoint token or without a front end, or i out of range.
// Under keypoint supervision the first channels name the labelled points
// (the hand, the target).
func (p *Policy) Keypoint(i int) (u, v float32, ok bool) {
	if p.front == nil {
		return 0, 0, false
	}
	kp := p.front.Keypoints()
	if kp == nil || i < 0 || i >= kp.D {
		return 0, 0, false
	}
	u, v = kp.Point(i)
	return u, v, true
}

// Logits is the last step's head output (Σ width), a view.
func (p *Policy) Logits() []float32 { return p.logits[:p.head.width] }

func finite(x []float32) bool {
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return false
		}
	}
	return true
}
