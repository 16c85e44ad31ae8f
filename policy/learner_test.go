package policy

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/fdcheck"

	"github.com/ttmrobot/ttm/language"
	"github.com/ttmrobot/ttm/policy/seq"
	"github.com/ttmrobot/ttm/ttm"
	"github.com/ttmrobot/ttm/vision"
)

// learnerPolicy builds a small policy without a backbone, with FiLM
// switched on (random, not the identity) so every parameter matters.
func learnerPolicy(t *testing.T, history int, blind ...bool) *Policy {
	t.Helper()
	return learnerPolicyModel(t, "", history, len(blind) > 0 && blind[0])
}

// learnerPolicyModel is learnerPolicy on the sequence model called model
// ("" for the TTM of package ttm).
func learnerPolicyModel(t *testing.T, model string, history int, blind bool) *Policy {
	t.Helper()
	return learnerPolicyWith(t, model, history, blind, nil)
}

// learnerPolicyWith is learnerPolicyModel with edit (if not nil) applied
// to the test's specification before the policy is built.
func learnerPolicyWith(t *testing.T, model string, history int, blind bool, edit func(*Spec)) *Policy {
	t.Helper()
	spec, err := Preset("small")
	if err != nil {
		t.Fatal(err)
	}
	spec.Policy.BlindActions = blind
	spec.Policy.Model = model
	spec.Vision.History = history
	spec.Vision.Head.FeatureChannels = 6
	spec.Vision.Head.Positions = 5 // the tests' feature maps
	if edit != nil {
		edit(&spec)
	}
	spec.TTM.InputTokens = history*spec.Vision.Head.Tokens + spec.Policy.ActionSpace.Len() + spec.Policy.proprioTokens() + spec.Policy.Padding
	vh, err := vision.NewHead(spec.Vision.Head)
	if err != nil {
		t.Fatal(err)
	}
	vh.Init(3)
	r := rand.New(rand.NewPCG(9, 9))
	for _, s := range vh.Specs {
		if strings.Contains(s.Name, "film/") {
			for i := s.Offset; i < s.Offset+s.Size; i++ {
				vh.Params[i] = float32(r.NormFloat64() * 0.1)
			}
		}
	}
	vocab, err := language.NewVocab(DefaultVocabulary)
	if err != nil {
		t.Fatal(err)
	}
	lang, err := language.NewModel(spec.Language, vocab)
	if err != nil {
		t.Fatal(err)
	}
	lang.Init(3)
	var m seq.Model
	if spec.Policy.usesSeq() {
		m, err = seq.New(model, SeqConfig(spec.TTM))
	} else {
		var tm *ttm.Model
		tm, err = ttm.NewModel(spec.TTM)
		m = seq.TTMOf(tm)
	}
	if err != nil {
		t.Fatal(err)
	}
	m.Init(3)
	p := assemble(spec, m, vh, lang, nil)
	p.initOwn(3)
	return p
}

// learnerSteps makes a random demonstration of T steps on n positions.
func learnerSteps(p *Policy, T, n int, seed uint64) []StepData {
	r := rand.New(rand.NewPCG(seed, 1))
	space := p.ActionSpace()
	c := p.spec.Vision.Head.FeatureChannels
	actions := make([][]float32, T+1)
	actions[0] = make([]float32, space.Len())
	for t := 1; t <= T; t++ {
		a := make([]float32, space.Len())
		for i, d := range space.Dims {
			a[i] = float32(d.Low + (d.High-d.Low)*r.Float64())
		}
		actions[t] = a
	}
	steps := make([]StepData, T)
	for t := range steps {
		f := make([]float32, c*n)
		for i := range f {
			f[i] = float32(r.NormFloat64())
		}
		steps[t] = StepData{Features: f, Prev: actions[t], Action: actions[t+1]}
		if q := len(p.spec.Policy.Proprio); q > 0 {
			steps[t].Proprio = make([]float32, q)
			for i := range steps[t].Proprio {
				steps[t].Proprio[i] = float32(r.NormFloat64())
			}
		}
	}
	return steps
}

// TestLearnerGradients checks the gradients of a whole window (frames
// through the head, the TTM over three steps with a carried-in memory and
// frame window, the action head and the loss, and the instruction
// embedding) against central finite differences of the loss.
func TestLearnerGradients(t *testing.T) {
	for _, tc := range []struct {
		name            string
		history         int
		noMemory, blind bool
		smoothGated     bool
		model           string // "" for the TTM of package ttm
		// supervised: a hidden stage and a keypoint token in the head, and
		// the keypoint supervision in the loss.
		supervised bool
		proprio    bool // a proprioception token
		memoryFiLM bool // FiLM reads the previous step's output (with proprio)
		goalProbe  bool // the goal probe's loss too (with proprio)
		// prior: the memory's keypoint prior (with proprio, memoryFiLM,
		// supervised, and target geometry read from the labels: the
		// learner does not differentiate the geometry's back-projection).
		prior bool
	}{{name: "proprio-continuous-arm", history: 2, blind: true, proprio: true},
		{name: "memory-prior", history: 1, blind: true, proprio: true, memoryFiLM: true, supervised: true, prior: true},
		{name: "memory-prior-no-memory", history: 2, blind: true, proprio: true, memoryFiLM: true, supervised: true, prior: true, noMemory: true},
		{name: "goal-probe", history: 1, blind: true, proprio: true, memoryFiLM: true, goalProbe: true},
		{name: "goal-probe-no-memory", history: 2, blind: true, proprio: true, goalProbe: true, noMemory: true},
		{name: "memory-film", history: 1, blind: true, proprio: true, memoryFiLM: true},
		{name: "memory-film-no-memory", history: 1, blind: true, proprio: true, memoryFiLM: true, noMemory: true},
		{name: "proprio-continuous-arm-gated", history: 1, blind: true, proprio: true, smoothGated: true},
		{name: "history1", history: 1}, {name: "history2", history: 2}, {name: "no-memory", history: 2, noMemory: true},
		{name: "blind-actions", history: 1, blind: true}, {name: "smoothed-gated-loss", history: 1, smoothGated: true},
		{name: "hidden-supervised-keypoints", history: 2, supervised: true},
		// Other sequence models (group "seq"), with a carried-in state.
		{name: "recurrent", history: 2, model: "recurrent"}, {name: "window", history: 2, model: "window"},
		{name: "lstm", history: 1, model: "lstm"}} {
		t.Run(tc.name, func(t *testing.T) {
			var edit func(*Spec)
			if tc.supervised {
				edit = func(s *Spec) {
					h := &s.Vision.Head
					h.Hidden, h.HiddenKernel, h.Keypoints, h.PositionGridWidth, h.Tokens = 4, 3, true, 5, 3
					s.Policy.Padding = 0
				}
			}
			if tc.proprio { // with the regressed arm of small-geometry
				edit = func(s *Spec) {
					s.Policy.Proprio, s.Policy.ActionSpace = action.ArmProprio, action.RT1ContinuousArm()
					s.Policy.MemoryFiLM, s.Policy.GoalProbe = tc.memoryFiLM, tc.goalProbe
					if tc.supervised {
						h := &s.Vision.Head
						h.Hidden, h.HiddenKernel, h.Keypoints, h.PositionGridWidth, h.Tokens = 4, 3, true, 5, 3
						s.Policy.Padding = 0
						s.Policy.TargetGeometry, s.Policy.GeometryPoints, s.Policy.GeometryRelative = &testGeometry, 2, 0.05
						s.Policy.MemoryPrior = tc.prior
					}
				}
			}
			p := learnerPolicyWith(t, tc.model, tc.history, tc.blind, edit)
			const T, n = 3, 5
			steps := learnerSteps(p, T, n, 7)
			if tc.goalProbe { // far from the probe's first estimates, so that its gradient dominates
				for i := range steps {
					steps[i].Goal = []float32{4, -3 + float32(i), 6}
				}
			}
			if tc.supervised { // the hand and a target, one out of view at step 1
				for i := range steps {
					steps[i].Keypoints = []float32{0.1 + 0.2*float32(i), 0.5, 1, 0.7, 0.5, float32(i % 2)}
				}
			}
			if tc.supervised && tc.proprio { // every point in view: the geometry comes from the labels
				for i := range steps {
					steps[i].Keypoints = []float32{0.1 + 0.2*float32(i), 0.5, 1, 0.7, 0.5, 1, 0.3, 0.5, 1}
				}
			}
			tok, err := p.Tokenize("pick up the red can")
			if err != nil {
				t.Fatal(err)
			}
			// A state carried in from earlier steps: memory and a frame.
			start := p.NewState()
			r := rand.New(rand.NewPCG(5, 5))
			if tc.model == "" {
				for i := range start.Memory().Tokens {
					start.Memory().Tokens[i] = float32(r.NormFloat64() * 0.5)
				}
			} else {
				// Two inference steps on random inputs give the model a
				// non-trivial state to carry in.
				in := make([]float32, p.spec.TTM.InputTokens*p.spec.TTM.Dim)
				out := make([]float32, p.spec.TTM.ProcessSize*p.spec.TTM.Dim)
				run := p.seq.NewRunner()
				for range 2 {
					for i := range in {
						in[i] = float32(r.NormFloat64())
					}
					run.Step(start.Seq, in, out)
				}
			}
			frame := make([]float32, p.spec.Vision.Head.Tokens*p.spec.TTM.Dim)
			for i := range frame {
				frame[i] = float32(r.NormFloat64())
			}
			start.Window.Push(frame)
			if tc.memoryFiLM { // created as zeros: make the path matter
				for i := range p.head.feedbackW {
					p.head.feedbackW[i] = float32(r.NormFloat64() * 0.3)
				}
				for i := range start.Feedback {
					start.Feedback[i] = float32(r.NormFloat64())
				}
			}
			for i := range p.head.priorW { // created as zeros too
				p.head.priorW[i] = float32(r.NormFloat64() * 0.1)
			}

			l := NewLearner(p, T, n)
			if err := l.SetNoMemory(tc.noMemory); err != nil {
				t.Fatal(err)
			}
			if tc.smoothGated {
				l.LabelSigma, l.ModeGated = 2, true
			}
			if tc.supervised {
				l.KeypointWeight, l.KeypointSigma = 0.7, 1
			}
			l.GeometryFromLabels = tc.supervised && tc.proprio
			if tc.goalProbe {
				// Weight 1: the probe's loss (about 80 here) is then about a
				// third of the total, and a gradient of the probe's path
				// 20 % off fails. At weight 2 the total of about 280 left
				// float32 rounding of about 1e-4 in it, which drowns
				// gradients of a few 1e-3 (on an Intel Xeon, model 207,
				// with either BLAS).
				l.GoalWeight = 1
			}
			lossAt := func() float64 {
				st := start.Clone()
				l.ZeroGrads()
				s, err := l.Window(st, tok, steps, 1)
				if err != nil {
					t.Fatal(err)
				}
				if tc.supervised && !(s.KeypointLoss > 0) {
					t.Fatalf("keypoint loss %v with labels", s.KeypointLoss)
				}
				if tc.goalProbe && !(s.GoalLoss > 0) {
					t.Fatalf("goal loss %v with labels", s.GoalLoss)
				}
				return s.Loss + s.KeypointLoss + s.GoalLoss
			}
			lossAt()
			var vars []fdcheck.Var
			for gi, g := range p.Groups() {
				if want := map[bool]string{true: "ttm", false: "seq"}[tc.model == ""]; gi == 0 && g.Name != want {
					t.Fatalf("first group %q, want %q", g.Name, want)
				}
				specs := p.ParamSpecs(g.Name)
				if gi == 0 && len(specs) == 0 {
					t.Fatalf("group %s lists no tensors", g.Name)
				}
				grad := slices.Clone(l.Grads[gi].Params)
				for _, spec := range specs {
					lo, hi := spec.Offset, spec.Offset+spec.Size
					if g.Name == "language" && spec.Name == "embedding" { // only the instruction's first piece's row
						lo = spec.Offset + int(tok.Pieces[0].Row)*p.spec.Language.TokenDim
						hi = lo + p.spec.Language.TokenDim
					}
					vars = append(vars, fdcheck.Var{Name: spec.Name, X: g.Params[lo:hi], Grad: grad[lo:hi]})
				}
			}
			fdcheck.Require(t, r, vars, 1, func() float64 {
				p.ParamsChanged()
				return lossAt()
			})
		})
	}
}

// TestLearnerMatchesStepTokens: the learner's forward pass is the policy's
// inference: the same memory after the window, and zero loss gradient
// bookkeeping aside, the argmax actions score as the policy acts.
func TestLearnerMatchesStepTokens(t *testing.T) {
	for _, tc := range []struct{ blind, proprio, geometry, memoryFiLM, prior bool }{{false, false, false, false, false}, {true, false, false, false, false},
		{true, true, false, false, false}, {true, true, true, false, false}, {true, true, true, true, false}, {true, true, true, true, true}} {
		testLearnerMatchesStepTokens(t, tc.blind, tc.proprio, tc.geometry, tc.memoryFiLM, tc.prior)
	}
}

// testGeometry is a camera over the tests' 1x5 feature map.
var testGeometry = vision.CameraGeometry{Mount: [3]float64{0, 0, 1.4}, Pitch: 0.7, VFOV: 1, Height: 128, Width: 160, SurfaceZ: 0.85}

func testLearnerMatchesStepTokens(t *testing.T, blind, proprio, geometry, memoryFiLM, prior bool) {
	var edit func(*Spec)
	if proprio {
		edit = func(s *Spec) { s.Policy.Proprio = action.ArmProprio }
	}
	if geometry {
		edit = func(s *Spec) {
			s.Policy.Proprio, s.Policy.TargetGeometry, s.Policy.GeometryPoints, s.Policy.GeometryRelative = action.ArmProprio, &testGeometry, 2, 0.05
			h := &s.Vision.Head
			h.Hidden, h.HiddenKernel, h.Keypoints, h.PositionGridWidth, h.Tokens = 4, 3, true, 5, 3
			s.Policy.Padding = 0
			s.Policy.MemoryFiLM = memoryFiLM
			s.Policy.GoalProbe = memoryFiLM // and with it the goal probe's loss
			s.Policy.MemoryPrior = prior
		}
	}
	p := learnerPolicyWith(t, "", 2, blind, edit)
	r := rand.New(rand.NewPCG(4, 4))
	for i := range p.head.feedbackW {
		p.head.feedbackW[i] = float32(r.NormFloat64() * 0.3)
	}
	for i := range p.head.priorW {
		p.head.priorW[i] = float32(r.NormFloat64() * 0.3)
	}
	const T, n = 4, 5
	steps := learnerSteps(p, T, n, 11)
	tok, _ := p.Tokenize("open the top drawer")
	emb := make([]float32, p.spec.Language.Width)
	p.lang.Forward(emb, make([]float32, p.spec.Language.TokenDim), tok)

	l := NewLearner(p, T, n)
	if p.spec.Policy.GoalProbe {
		l.GoalWeight = 1.5
		for i := range steps {
			steps[i].Goal = []float32{7, -2, float32(i)}
		}
	}
	st := p.NewState()
	stats, err := l.Window(st, tok, steps, 1)
	if err != nil {
		t.Fatal(err)
	}
	var goalLoss float64 // the inference's goal estimates scored as the learner scores them
	// Inference: the same frames through the head, then StepTokens with
	// the demonstrated previous actions.
	ref := p.NewState()
	acts := p.visionHd.NewActs(n)
	frame := make([]float32, p.spec.Vision.Head.Tokens*p.spec.TTM.Dim)
	action := make([]float32, p.ActionSpace().Len())
	for _, s := range steps {
		copy(ref.Prev, s.Prev)
		p.visionHd.Forward(frame, acts, s.Features, p.steerFrontEnd(acts.KP, emb, ref))
		var q []float32
		if proprio {
			q = p.proprioInput(s.Proprio, acts.KP, nil)
		}
		if err := p.StepTokens(frame, q, ref, action); err != nil {
			t.Fatal(err)
		}
		for i, y := range s.Goal {
			goalLoss += 0.5 * float64(l.GoalWeight) * sq(float64(p.GoalEstimate()[i]-y))
		}
	}
	if math.Abs(stats.GoalLoss-goalLoss) > 1e-4*(1+goalLoss) || p.spec.Policy.GoalProbe != (goalLoss > 0) {
		t.Fatalf("goal loss: learner %v, inference %v", stats.GoalLoss, goalLoss)
	}
	for i, v := range ref.Memory().Tokens {
		if d := math.Abs(float64(v - st.Memory().Tokens[i])); d > 1e-4*(1+math.Abs(float64(v))) {
			t.Fatalf("memory[%d]: learner %v, inference %v", i, st.Memory().Tokens[i], v)
		}
	}
	if !slices.Equal(st.Feedback, ref.Feedback) && !closeSlices(st.Feedback, ref.Feedback, 1e-4) {
		t.Fatalf("fed-back output: learner %v, inference %v", st.Feedback, ref.Feedback)
	}
	if memoryFiLM && !slices.ContainsFunc(st.Feedback, func(v float32) bool { return v != 0 }) {
		t.Fatal("no output fed back")
	}
	if prior && !slices.ContainsFunc(acts.KP.Prior, func(v float32) bool { return v != 0 }) {
		t.Fatal("the memory set no keypoint prior")
	}
	if st.Steps != T || st.Window.Len() != 2 {
		t.Errorf("state after the window: %d steps, %d frames; want %d, 2", st.Steps, st.Window.Len(), T)
	}
	for i, v := range steps[T-1].Action {
		if st.Prev[i] != v {
			t.Fatalf("previous action not carried: %v, want %v", st.Prev, steps[T-1].Action)
		}
	}
}

// TestLearnerMatchesStepTokensSeq: for another sequence model than the
// TTM the learner's forward pass (the model's Tape) is the policy's
// inference (its Runner): the same logits at every step, within float
// rounding, and the same number of steps in the carried seq state.
func TestLearnerMatchesStepTokensSeq(t *testing.T) {
	for _, model := range []string{"recurrent", "window", "lstm"} {
		p := learnerPolicyModel(t, model, 2, false)
		const n = 5
		tok, _ := p.Tokenize("open the top drawer")
		emb := make([]float32, p.spec.Language.Width)
		p.lang.Forward(emb, make([]float32, p.spec.Language.TokenDim), tok)
		all := learnerSteps(p, 4, n, 11)
		l := NewLearner(p, 1, n)
		st, ref := p.NewState(), p.NewState()
		acts := p.visionHd.NewActs(n)
		frame := make([]float32, p.spec.Vision.Head.Tokens*p.spec.TTM.Dim)
		action := make([]float32, p.ActionSpace().Len())
		for i, s := range all {
			// One-step windows leave the learner's last logits in l.logits.
			if _, err := l.Window(st, tok, all[i:i+1], 1); err != nil {
				t.Fatal(err)
			}
			copy(ref.Prev, s.Prev)
			p.visionHd.Forward(frame, acts, s.Features, emb)
			if err := p.StepTokens(frame, nil, ref, action); err != nil {
				t.Fatal(err)
			}
			for j, v := range p.Logits() {
				if d := math.Abs(float64(v - l.logits[j])); d > 1e-4*(1+math.Abs(float64(v))) {
					t.Fatalf("%s step %d logit %d: learner %v, inference %v", model, i, j, l.logits[j], v)
				}
			}
		}
		if st.Seq.Steps() != 4 || ref.Seq.Steps() != 4 {
			t.Errorf("%s: seq states count %d and %d steps, want 4", model, st.Seq.Steps(), ref.Seq.Steps())
		}
	}
}

func TestLearnerDoesNotAllocate(t *testing.T) {
	for _, model := range []string{"", "recurrent", "continuous-arm", "goal-probe"} {
		var p *Policy
		switch model {
		case "continuous-arm":
			p = learnerPolicyWith(t, "", 1, false, func(s *Spec) {
				s.Policy.ActionSpace = action.RT1ContinuousArm()
			})
		case "goal-probe":
			p = learnerPolicyWith(t, "", 1, false, func(s *Spec) { s.Policy.GoalProbe = true })
		default:
			p = learnerPolicyModel(t, model, 1, false)
		}
		const T, n = 4, 5
		steps := learnerSteps(p, T, n, 13)
		tok, _ := p.Tokenize("knock over the can")
		l := NewLearner(p, T, n)
		if model == "goal-probe" {
			l.GoalWeight = 1
			for i := range steps {
				steps[i].Goal = []float32{1, 2, 3}
			}
		}
		st := p.NewState()
		allocs := testing.AllocsPerRun(5, func() {
			st.Reset()
			if _, err := l.Window(st, tok, steps, 1); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("model %q: Learner.Window allocates %v times per window", model, allocs)
		}
	}
}

func TestLearnerRejectsBadWindows(t *testing.T) {
	p := learnerPolicy(t, 1)
	l := NewLearner(p, 2, 5)
	tok, _ := p.Tokenize("pick the apple")
	good := learnerSteps(p, 3, 5, 1)
	for _, tc := range []struct {
		name  string
		steps []StepData
	}{
		{"empty", nil},
		{"too long", good},
		{"short features", []StepData{{Features: good[0].Features[:7], Prev: good[0].Prev, Action: good[0].Action}}},
		{"short action", []StepData{{Features: good[0].Features, Prev: good[0].Prev, Action: good[0].Action[:3]}}},
		{"goal labels without a probe", []StepData{{Features: good[0].Features, Prev: good[0].Prev, Action: good[0].Action, Goal: []float32{1, 2, 3}}}},
	} {
		l.GoalWeight = 1
		if _, err := l.Window(p.NewState(), tok, tc.steps, 1); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	probe := learnerPolicyWith(t, "", 1, false, func(s *Spec) { s.Policy.GoalProbe = true })
	l = NewLearner(probe, 2, 5)
	l.GoalWeight = 1
	steps := learnerSteps(probe, 1, 5, 1)
	steps[0].Goal = []float32{1, 2}
	if _, err := l.Window(probe.NewState(), tok, steps, 1); err == nil || !strings.Contains(err.Error(), "goal values") {
		t.Errorf("goal labels of 2 values: %v", err)
	}
}

// TestBlindActionsIgnorePrevious: a policy with BlindActions acts the same
// whatever the previous action was; one without does not.
func TestBlindActionsIgnorePrevious(t *testing.T) {
	for _, blind := range []bool{true, false} {
		p := learnerPolicy(t, 1, blind)
		frame := make([]float32, p.spec.Vision.Head.Tokens*p.spec.TTM.Dim)
		for i := range frame {
			frame[i] = float32(i%7) * 0.1
		}
		var logits [2][]float32
		for i, prev := range []float32{0.9, -0.9} {
			st := p.NewState()
			for j := range st.Prev {
				st.Prev[j] = prev
			}
			if err := p.StepTokens(frame, nil, st, make([]float32, p.ActionSpace().Len())); err != nil {
				t.Fatal(err)
			}
			logits[i] = append([]float32(nil), p.Logits()...)
		}
		same := true
		for i := range logits[0] {
			same = same && logits[0][i] == logits[1][i]
		}
		if same != blind {
			t.Errorf("blind %v: logits equal for different previous actions: %v", blind, same)
		}
	}
}

// TestSmoothCrossEntropy checks the soft-label loss against a direct
// computation and its gradient against finite differences.
func TestSmoothCrossEntropy(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	logits := make([]float32, 32)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
	}
	const label, sigma = 5, 1.5
	loss := func(lg []float32) float64 {
		var z, sum float64
		for _, v := range lg {
			sum += math.Exp(float64(v))
		}
		q := make([]float64, len(lg))
		for b := range lg {
			if d := math.Abs(float64(b - label)); d <= 4*sigma+1 {
				q[b] = math.Exp(-0.5 * d * d / (sigma * sigma))
				z += q[b]
			}
		}
		var l float64
		for b, v := range lg {
			l -= q[b] / z * (float64(v) - math.Log(sum))
		}
		return l
	}
	d := make([]float32, len(logits))
	got := smoothCrossEntropy(d, logits, label, sigma, 1)
	if want := loss(logits); math.Abs(got-want) > 1e-5 {
		t.Errorf("loss %v, want %v", got, want)
	}
	for _, b := range []int{0, 4, 5, 6, 31} {
		old := logits[b]
		logits[b] = old + 1e-2
		up := loss(logits)
		logits[b] = old - 1e-2
		down := loss(logits)
		logits[b] = old
		if n := (up - down) / 2e-2; math.Abs(n-float64(d[b])) > 1e-3 {
			t.Errorf("d/dlogit[%d] = %v, numeric %v", b, d[b], n)
		}
	}
}

// TestLearnerGeometryFromLabels: with GeometryFromLabels the proprioception
// token reads each labelled point's back-projection (the target, the
// destination) where its label shows it, and the policy's own keypoint's
// where it does not; then, with GeometryRelative, where that lies from the
// hand.
func TestLearnerGeometryFromLabels(t *testing.T) {
	p := learnerPolicyWith(t, "", 1, true, func(s *Spec) {
		s.Policy.Proprio, s.Policy.TargetGeometry, s.Policy.GeometryPoints, s.Policy.GeometryRelative = action.ArmProprio, &testGeometry, 2, 0.1
		h := &s.Vision.Head
		h.Hidden, h.HiddenKernel, h.Keypoints, h.PositionGridWidth, h.Tokens = 4, 3, true, 5, 3
		s.Policy.Padding = 0
	})
	steps := learnerSteps(p, 2, 5, 3)
	steps[0].Keypoints = []float32{0.2, 0.5, 1, 0.6, 0.9, 1, 0, 0, 0} // the target in view, no destination
	steps[1].Keypoints = []float32{0.2, 0.5, 1, 0, 0, 0, 0.3, 0.8, 1} // the target out of view, the destination in
	tok, _ := p.Tokenize("pick the can")
	l := NewLearner(p, 2, 5)
	l.GeometryFromLabels = true
	if _, err := l.Window(p.NewState(), tok, steps, 1); err != nil {
		t.Fatal(err)
	}
	fromLabel := func(u, v float32) []float32 {
		x, y, ok := testGeometry.Backproject(u, v)
		if !ok {
			t.Fatalf("label (%v, %v) misses the surface", u, v)
		}
		return []float32{x, y, 1}
	}
	own := func(step, c int) []float32 {
		x, y, ok := testGeometry.Backproject(l.acts[step].KP.Point(c))
		if !ok {
			return []float32{0, 0, 0}
		}
		return []float32{x, y, 1}
	}
	for _, tc := range []struct {
		step, c int
		want    []float32
	}{
		{0, 1, fromLabel(0.6, 0.9)}, {0, 2, own(0, 2)},
		{1, 1, own(1, 1)}, {1, 2, fromLabel(0.3, 0.8)},
	} {
		at := 4 + 5*(tc.c-1)
		got := l.props[tc.step][at : at+5]
		if !slices.Equal(got[:3], tc.want) {
			t.Errorf("step %d point %d geometry %v, want %v", tc.step, tc.c, got[:3], tc.want)
		}
		hand := steps[tc.step].Proprio
		if rx, ry := (got[0]-hand[0])*10, (got[1]-hand[1])*10; got[3] != rx || got[4] != ry {
			t.Errorf("step %d point %d from the hand (%v, %v), want (%v, %v) decimetres", tc.step, tc.c, got[3], got[4], rx, ry)
		}
	}
	if slices.Equal(own(0, 1), fromLabel(0.6, 0.9)) || slices.Equal(own(1, 2), fromLabel(0.3, 0.8)) {
		t.Fatal("the policy's keypoints coincide with the labels: the test cannot tell them apart")
	}
	if !slices.Equal(l.props[0][:4], steps[0].Proprio) {
		t.Errorf("robot values %v, want %v", l.props[0][:4], steps[0].Proprio)
	}

	// A step marked OwnGeometry reads the policy's own keypoints even
	// where its labels show the points.
	steps[0].OwnGeometry = true
	if _, err := l.Window(p.NewState(), tok, steps, 1); err != nil {
		t.Fatal(err)
	}
	for c := 1; c <= 2; c++ {
		at := 4 + 5*(c-1)
		if got := l.props[0][at : at+3]; !slices.Equal(got, own(0, c)) {
			t.Errorf("OwnGeometry: point %d geometry %v, want the keypoint's %v", c, got, own(0, c))
		}
	}
	if got := l.props[1][9:12]; !slices.Equal(got, fromLabel(0.3, 0.8)) {
		t.Errorf("the next step, not marked: destination %v, want its label's %v", got, fromLabel(0.3, 0.8))
	}
}

// TestCensorBounds: with CensorBounds a regressed label at a bound of its
// range costs nothing, and has no gradient, once the prediction is past
// it; inside the range, and for labels inside the range, it is squared
// error as without.
func TestCensorBounds(t *testing.T) {
	p := learnerPolicyWith(t, "", 1, true, func(s *Spec) { s.Policy.Proprio, s.Policy.ActionSpace = action.ArmProprio, action.RT1ContinuousArm() })
	l := NewLearner(p, 1, 5)
	clear(p.head.kernel) // every output is its bias
	z := p.head.offsets[action.DimWorldZ]
	for _, tc := range []struct {
		name            string
		censor          bool
		predict, label  float32
		wantLoss, wantD float64 // the z output's share of the loss, its gradient
	}{
		{"past the upper bound", true, 3, 1, 0, 0},
		{"past the lower bound", true, -3, -1, 0, 0},
		{"short of the upper bound", true, 0.5, 1, 0.125, -0.5},
		{"a label inside the range", true, 3, 0.5, 3.125, 2.5},
		{"past the bound, uncensored", false, 3, 1, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l.CensorBounds = tc.censor
			lossAt := func(predict float32) float64 {
				p.head.bias[z] = predict
				a := make([]float32, p.ActionSpace().Len())
				a[action.DimMode], a[action.DimWorldZ] = action.ModeArm, tc.label
				loss, _, _ := l.lossStep(make([]float32, len(l.outputs)), a, 1)
				return loss
			}
			// The z output's share: the loss minus its value with z on the label.
			share := lossAt(tc.predict) - lossAt(tc.label)
			if math.Abs(share-tc.wantLoss) > 1e-5 {
				t.Errorf("loss share %v, want %v", share, tc.wantLoss)
			}
			lossAt(tc.predict)
			if d := float64(l.dLogits[z]); math.Abs(d-tc.wantD) > 1e-6 {
				t.Errorf("gradient %v, want %v", d, tc.wantD)
			}
		})
	}
}

// closeSlices reports whether a and b have the same length and agree
// within tol relative to 1 + |b[i]|.
func closeSlices(a, b []float32, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i, v := range b {
		if math.Abs(float64(a[i]-v)) > tol*(1+math.Abs(float64(v))) {
			return false
		}
	}
	return true
}
