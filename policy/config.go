package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/language"
	"github.com/ttmrobot/ttm/policy/seq"
	"github.com/ttmrobot/ttm/ttm"
	"github.com/ttmrobot/ttm/vision"
)

// ConfigKey is the checkpoint metadata key of Config, and Prefix the
// prefix of the policy's own tensors (action embeddings and head).
const (
	ConfigKey = "policy.config"
	Prefix    = "policy/"
)

// Config is the policy's own part of a checkpoint's configuration; the
// parts it composes keep theirs (ttm.config, vision.config,
// language.config).
//
// The TTM's input at each step is
//
//	I_t = [ window of the last History frames, K tokens each ; one token per action dimension ;
//	        the proprioception token, if Proprio names any values ; Padding zero rows ]
//
// so ttm.input_tokens must equal History·K + len(action_space) + (1 with
// Proprio) + Padding.
type Config struct {
	Preset      string       `json:"preset,omitempty"`
	ActionSpace action.Space `json:"action_space"`
	Padding     int          `json:"padding"`
	// BlindActions feeds the action tokens the zero action at every step
	// instead of the previous action. Behavioural cloning from smooth
	// demonstrations otherwise learns to repeat the previous action (the
	// "copycat" failure of imitation with action history: bin accuracy
	// near perfect offline, no progress closed loop); blind, the policy
	// must read the phase of the task from the frames and its memory.
	BlindActions bool `json:"blind_actions,omitempty"`
	// Model is the sequence model between the input tokens and the action
	// head, a name of seq.Names(). Empty (or "ttm") is the Token Turing
	// Machine of package ttm with its own tensors (ttm/...); any other
	// name is a seq.Model at the TTM configuration's width, depth and token
	// budget (SeqConfig), its tensors under SeqPrefix.
	Model string `json:"model,omitempty"`
	// Proprio names the robot's own measurements the policy reads at every
	// step (Observation.Proprio, in this order), embedded by a Dense layer
	// as one input token; empty: none. action.ArmProprio is the layout of the
	// simulator and the node's proprio topic.
	Proprio []string `json:"proprio,omitempty"`
	// TargetGeometry, if set, adds to the proprioception token where the
	// keypoint token's second channel (the target, under keypoint
	// supervision) lies on the work surface: the head camera's
	// calibration back-projects the policy's own keypoint
	// (vision.CameraGeometry.Backproject) to x, y in the base frame, and a
	// third value is 1 (0, with x and y, when the ray misses the surface).
	// The values are inputs, not trained through: the keypoint supervision
	// trains the keypoint.
	TargetGeometry *vision.CameraGeometry `json:"target_geometry,omitempty"`
	// GeometryPoints is how many keypoint channels, from the second on,
	// TargetGeometry back-projects (TargetGeometryLen values each): 0 or
	// 1 the target; 2 the target and its destination (sim.KeypointNames).
	GeometryPoints int `json:"geometry_points,omitempty"`
	// GeometryRelative, when positive, adds to each geometry point where
	// it lies from the hand (Proprio's hand_x and hand_y), divided by this
	// length in metres (zeros when its ray misses). The network reads a
	// centimetre's correction off values of order one instead of as the
	// difference of two inputs of order one metre.
	GeometryRelative float64 `json:"geometry_relative,omitempty"`
	// GeometrySightline, with GeometryRelative, adds to each geometry
	// point where its line of sight (the camera's ray through the
	// keypoint, vision.CameraGeometry.AtDepth) passes the hand's depth
	// (hand_x): its y and z there from the hand's (hand_y, hand_z),
	// divided by GeometryRelative (zeros when the ray does not reach that
	// depth). A drawer's handle is on the cabinet's front, not on the
	// worktop TargetGeometry back-projects onto; a hand on the handle's
	// line of sight at the handle's depth is at the handle.
	GeometrySightline bool `json:"geometry_sightline,omitempty"`
	// MemoryFiLM lets the memory steer what the policy looks for: the
	// embedding that conditions FiLM is the instruction's plus a Dense
	// layer (d to the language width, no bias, zeros when created) of the
	// previous step's pooled TTM output (zeros at an episode's start and
	// under the no-memory ablation, which cuts this path too). A memory
	// task's cue can then become what an instruction naming the object
	// would have been: the keypoint token finds the cued target in frames
	// that no longer show the cue. TTM policies only.
	MemoryFiLM bool `json:"memory_film,omitempty"`
	// MemoryPrior lets the memory say where to look: a Dense layer (d to
	// GeometryPoints x Positions, no bias, zeros when created) of the
	// previous step's pooled TTM output, the output MemoryFiLM feeds back,
	// is added to the logits of the target's and the destination's
	// keypoint channels (1 to GeometryPoints) over the map's cells. FiLM
	// scales a channel's map as a whole and cannot prefer one place to
	// another: once a cue is gone, it can tell the cued object only by its
	// look, not by where it stood. With the prior the memory says where
	// the object stood, the frame says exactly where it is. Cut, like
	// MemoryFiLM's path, under the no-memory ablation. Needs MemoryFiLM,
	// TargetGeometry and a vision head with Positions.
	MemoryPrior bool `json:"memory_prior,omitempty"`
	// GoalProbe adds a probe on the pooled output: a Dense layer (d to
	// GoalLen) that regresses, at every step, where the goal stood at the
	// episode's start in the starting base frame (StepData.Goal), as an
	// auxiliary loss (Learner.GoalWeight). It does not act. Once a memory
	// task's cue is gone only the memory knows that place: the probe gives
	// the memory a reason to keep the cue at every step, where the actions
	// that depend on it are a few steps of a long episode.
	GoalProbe bool `json:"goal_probe,omitempty"`
	// Rate is the rate, Hz, of the demonstrations the policy learnt from
	// (ttm train measures it from their frames' stamps; the simulator's
	// are at 3 Hz, sim.StepSeconds): its per-step actions
	// (action.PerStep: world_vector, rotation_delta) are displacements
	// per step at this rate, so run at another rate the arm moves faster
	// or slower by their ratio. The node runs at it unless told otherwise
	// (~rate, ~rate_mismatch). 0: not trained, no rate known.
	Rate float64 `json:"rate_hz,omitempty"`
}

// MaxRate bounds Config.Rate, Hz.
const MaxRate = 1000

// GoalLen is the goal probe's output: x, y, z in GoalUnit.
const GoalLen = 3

// GoalUnit is the goal probe's unit in metres (10 cm): the two drawers'
// handles, 20 cm apart, are two units apart.
const GoalUnit = 0.1

// TargetGeometryLen is the number of values TargetGeometry adds per point.
const TargetGeometryLen = 3

// geometryPointLen is the number of values of one geometry point.
func (c Config) geometryPointLen() int {
	n := TargetGeometryLen
	if c.GeometryRelative > 0 {
		n += 2
	}
	if c.GeometrySightline {
		n += 2
	}
	return n
}

// geometryPoints is the number of keypoints TargetGeometry back-projects.
func (c Config) geometryPoints() int {
	switch {
	case c.TargetGeometry == nil:
		return 0
	case c.GeometryPoints == 0:
		return 1
	}
	return c.GeometryPoints
}

// proprioInputs is the width of the proprioception token's input: the
// robot's values and the target geometry's.
func (c Config) proprioInputs() int {
	return len(c.Proprio) + c.geometryPointLen()*c.geometryPoints()
}

// proprioTokens is the number of input tokens the proprioception takes.
func (c Config) proprioTokens() int {
	if c.proprioInputs() == 0 {
		return 0
	}
	return 1
}

func (c Config) validate() error {
	if r := c.Rate; !(r >= 0 && r <= MaxRate) {
		return fmt.Errorf("policy: trained rate %v Hz: want 0 (unknown) up to %v", r, MaxRate)
	}
	seen := map[string]bool{}
	for _, n := range c.Proprio {
		switch {
		case n == "":
			return errors.New("policy: an empty proprioception name")
		case seen[n]:
			return fmt.Errorf("policy: proprioception value %q named twice", n)
		}
		seen[n] = true
	}
	if c.GeometryPoints < 0 || c.GeometryPoints > 0 && c.TargetGeometry == nil {
		return fmt.Errorf("policy: %d geometry points, want 0, or a positive number with a target geometry", c.GeometryPoints)
	}
	if r := c.GeometryRelative; r < 0 || math.IsInf(r, 0) || math.IsNaN(r) ||
		r > 0 && (c.TargetGeometry == nil || !slices.Contains(c.Proprio, "hand_x") || !slices.Contains(c.Proprio, "hand_y")) {
		return fmt.Errorf("policy: geometry relative to the hand by %v m: want 0, or a positive length with a target geometry and the hand_x and hand_y proprioception", r)
	}
	if c.GeometrySightline && (c.GeometryRelative <= 0 || !slices.Contains(c.Proprio, "hand_z")) {
		return errors.New("policy: the geometry's line of sight needs the geometry relative to the hand and the hand_z proprioception")
	}
	if g := c.TargetGeometry; g != nil {
		if err := g.Validate(); err != nil {
			return fmt.Errorf("policy: target geometry: %w", err)
		}
	}
	return nil
}

// ModelName is the sequence model's registry name: "ttm" when Model is
// empty.
func (c Config) ModelName() string {
	if c.Model == "" {
		return "ttm"
	}
	return c.Model
}

// usesSeq reports whether the policy's sequence model is one of package
// seq's, stored under seq/<name>/ with its own configuration, rather than
// the TTM stored under ttm/ (both run behind seq.Model).
func (c Config) usesSeq() bool { return c.Model != "" && c.Model != "ttm" }

// SeqConfig is the seq.Config of a non-TTM sequence model: the TTM
// configuration's input and output tokens, width, depth, heads and MLP
// width (the paper compares its models at equal width, depth and token
// budget), the rest at the seq defaults.
func SeqConfig(c ttm.Config) seq.Config {
	return seq.Config{
		InputTokens: c.InputTokens, OutputTokens: c.ProcessSize, Dim: c.Dim, Layers: c.NumLayers,
		Heads: c.NumHeads, MLPDim: c.MLPDim, LayerNormEps: c.LayerNormEps,
		MemoryTokens: c.MemorySize, SummariserHidden: c.SummariserHidden,
	}.WithDefaults()
}

// Spec is a whole policy's configuration: what a checkpoint's metadata
// holds, and what `ttm init --policy` builds from a preset.
type Spec struct {
	Policy   Config
	TTM      ttm.Config
	Vision   vision.Config
	Language language.Config
	// Backbone generates the seeded EfficientNet a fresh checkpoint runs on
	// when the user gives none.
	Backbone vision.EfficientNetConfig
}

// Validate checks the parts against each other.
func (s Spec) Validate() error {
	if err := s.Policy.ActionSpace.Validate(); err != nil {
		return err
	}
	if m := s.Policy.Model; m != "" && !slices.Contains(seq.Names(), m) {
		return fmt.Errorf("policy: unknown sequence model %q (have %s)", m, strings.Join(seq.Names(), ", "))
	}
	if err := s.Policy.validate(); err != nil {
		return err
	}
	if s.Policy.MemoryFiLM && s.Policy.usesSeq() {
		return fmt.Errorf("policy: memory_film feeds the TTM's output back into FiLM; sequence model %q is not the TTM", s.Policy.Model)
	}
	if s.Policy.MemoryPrior && (!s.Policy.MemoryFiLM || s.Policy.geometryPoints() == 0 || s.Vision.Head.Positions <= 0) {
		return errors.New("policy: memory_prior needs memory_film, target geometry and a vision head with positions")
	}
	if err := s.TTM.Validate(); err != nil {
		return err
	}
	if err := s.Vision.Validate(); err != nil {
		return err
	}
	if err := s.Language.Validate(); err != nil {
		return err
	}
	h := s.Vision.Head
	switch {
	case s.Policy.Padding < 0:
		return fmt.Errorf("policy: padding %d is negative", s.Policy.Padding)
	case h.Dim != s.TTM.Dim:
		return fmt.Errorf("policy: image tokens are %d wide, the TTM's %d", h.Dim, s.TTM.Dim)
	case h.EmbeddingDim != s.Language.Width:
		return fmt.Errorf("policy: FiLM takes %d-wide instruction embeddings, the language model makes %d", h.EmbeddingDim, s.Language.Width)
	}
	if n := s.Policy.geometryPoints(); n > 0 && (!h.Keypoints || h.Dim < 1+n) {
		return fmt.Errorf("policy: target geometry back-projects keypoint channels 1 to %d: it needs a vision head with that many keypoints", n)
	}
	np := s.Policy.proprioTokens()
	if n := s.Vision.History*h.Tokens + s.Policy.ActionSpace.Len() + np + s.Policy.Padding; n != s.TTM.InputTokens {
		return fmt.Errorf("policy: %d frames x %d tokens + %d action tokens + %d proprioception tokens + %d padding = %d input tokens, the TTM takes %d",
			s.Vision.History, h.Tokens, s.Policy.ActionSpace.Len(), np, s.Policy.Padding, n, s.TTM.InputTokens)
	}
	return nil
}

// Presets are the policies `ttm init --policy --preset` builds.
//
// robot: the paper's robot TTM (m 96, r 16, n 48, d 512, 8 layers) on
// EfficientNet-B0 at 224x224, which sustains 10 Hz here. The 48 input
// tokens are 4 frames x 8 TokenLearner tokens, the 11 previous-action
// tokens and 5 zero rows. RT-1's 6 frames x 8 tokens would leave no room
// for the action tokens within the paper's n = 48, and the TTM's memory,
// not the window, is what carries the episode's history: 4 frames (0.4 s
// at 10 Hz) are enough for motion.
//
// robot-b3: the robot preset's TTM, window and tokens on RT-1's own
// front end, EfficientNet-B3 at 300x300 (9x9x1536); 10 Hz on two cores.
//
// small: for tests and training in CI: d 64, one frame of 4 tokens, the 11
// action tokens and 1 zero row (n 16), on B0 at 128x160 read at block 7 of
// 16 (SmallFeatureLayer: 80 channels on an 8x10 grid, stride 16). The
// backbone's weights are seeded, not pretrained: measured with linear
// probes on expert frames, its final 4x5 map keeps much less of where
// things are than this mid-level map (held-out R² for the base-yaw action
// 0.16 against 0.62), and the truncated graph runs in a fraction of the
// time.
//
// The other small presets share the small TTM (d 64) and a perception
// stage that a seeded random backbone needs (see vision/patches.go): B0 at
// 128x160 read at MBConv block 5 (40 channels, 16x20, stride 8) with 2x2
// colour patches per cell, a 3x3 hidden stage of 32 channels with FiLM,
// and 5 tokens of which one is a keypoint token, whose first channels
// `ttm train` supervises with the simulator's hand, target and
// destination points. Their action tokens are blind (BlindActions: the
// copycat failure is what a run without it learns).
//
// small-keypoints: that stage with RT-1's binned actions (n 16).
//
// small-proprio: that stage with RT-1's binned actions and the arm's
// proprioception (action.ArmProprio) as a 17th input token.
//
// small-geometry: that stage, a regressed arm displacement
// (action.RT1ContinuousArm), and a proprioception token that also holds
// where the target and its destination stand on the worktop
// (TargetGeometry), back-projected from the keypoints through the
// simulator's headcam calibration (sim/robot.go; sim tests check these
// numbers), also relative to the hand in the arm action's unit
// (sim.ArmScale, 5 cm).
//
// small-memory-film: that stage, the regressed arm, the proprioception
// token with target geometry, FiLM that also reads the previous step's TTM
// output (MemoryFiLM), and an instruction encoder that also hashes runs of
// up to 3 words (language.Config.WordNGrams).
//
// small-goal-probe: that stage, the regressed arm, the proprioception
// token with target geometry, MemoryFiLM, and a goal probe on the TTM
// output (GoalProbe); words hashed one at a time.
//
// small-memory-prior: that stage, the regressed arm, the proprioception
// token with target geometry, MemoryFiLM, the goal probe, the memory's
// prior over where the target and destination keypoints are
// (MemoryPrior), and word 3-grams.
//
// kitchen-sightline: small-memory-prior at the design's memory, m 96 and
// r 16, with a second 3x3 stage in the vision head
// (vision.HeadConfig.HiddenDepth), so that each cell sees 5x5 cells of the
// map (sharper keypoints; docs/results.md, Perception), and each geometry
// point's line of sight at the hand's depth (GeometrySightline: a drawer's
// handle is not on the worktop; docs/results.md, Memory).
//
// kitchen-lying-probe: kitchen-sightline with a training-only probe in the
// vision head that learns whether the target lies on its side
// (vision.HeadConfig.LyingProbe), which a no-memory twin cannot recall: the
// committed kitchen policy's preset.
func Presets() map[string]Spec {
	robotTTM, _ := ttm.Preset("robot")
	robotVision := vision.DefaultConfig(1280)
	robotVision.Preprocess.Height, robotVision.Preprocess.Width = 224, 224
	robotVision.History = 4

	// RT-1's own front end: EfficientNet-B3 at 300x300 (9x9x1536).
	robotB3Vision := robotVision
	robotB3Vision.Preprocess.Height, robotB3Vision.Preprocess.Width = 300, 300
	robotB3Vision.Head.FeatureChannels = 1536

	smallTTM, _ := ttm.Preset("small")
	smallVision := vision.DefaultConfig(SmallFeatureChannels)
	smallVision.Preprocess.Height, smallVision.Preprocess.Width = 128, 160
	smallVision.Backbone.Layer = SmallFeatureLayer
	smallVision.Head.Positions = 8 * 10
	smallVision.History = 1
	smallVision.Head.Dim, smallVision.Head.EmbeddingDim, smallVision.Head.Tokens, smallVision.Head.TokenLearnerHidden = 64, 64, 4, 32
	smallLang := language.Config{Width: 64, TokenDim: 64, HashBuckets: 1024, NGramMin: 3, NGramMax: 5}
	wordsLang := smallLang
	wordsLang.WordNGrams = 3

	kpVision := smallVision
	kpVision.Backbone.Layer = SmallKeypointsFeatureLayer
	kpVision.Patches = 2
	kpVision.Head.FeatureChannels = SmallKeypointsBackboneChannels + vision.PatchChannels(2)
	kpVision.Head.Positions, kpVision.Head.PositionGridWidth = 16*20, 20
	kpVision.Head.Hidden, kpVision.Head.HiddenKernel = 32, 3
	kpVision.Head.Keypoints, kpVision.Head.Tokens, kpVision.Head.KeypointWindow = true, 5, 1

	proprioTTM := smallTTM
	proprioTTM.InputTokens++
	// The design's memory: m = 96 memory tokens, r = 16 read tokens.
	kitchenTTM := proprioTTM
	kitchenTTM.MemorySize, kitchenTTM.ProcessSize = 96, 16
	kitchenVision := kpVision
	kitchenVision.Head.HiddenDepth = 2
	lyingVision := kitchenVision
	lyingVision.Head.LyingProbe = true
	headcam := vision.CameraGeometry{Mount: [3]float64{-0.05, 0, 1.40}, Pitch: 0.72, VFOV: 0.96, Height: 128, Width: 160, SurfaceZ: 0.80}

	presets := map[string]Spec{
		"robot": {
			Policy: Config{Preset: "robot", ActionSpace: action.RT1(), Padding: 5},
			TTM:    robotTTM, Vision: robotVision, Language: language.DefaultConfig(),
			Backbone: vision.EfficientNetConfig{Variant: "b0", Height: 224, Width: 224},
		},
		"robot-b3": {
			Policy: Config{Preset: "robot-b3", ActionSpace: action.RT1(), Padding: 5},
			TTM:    robotTTM, Vision: robotB3Vision, Language: language.DefaultConfig(),
			Backbone: vision.EfficientNetConfig{Variant: "b3", Height: 300, Width: 300},
		},
		"small": {
			Policy: Config{Preset: "small", ActionSpace: action.RT1(), Padding: 1},
			TTM:    smallTTM, Vision: smallVision, Language: smallLang,
			Backbone: vision.EfficientNetConfig{Variant: "b0", Height: 128, Width: 160, Blocks: 7},
		},
		"small-keypoints": {
			Policy: Config{Preset: "small-keypoints", ActionSpace: action.RT1(), Padding: 0, BlindActions: true},
			TTM:    smallTTM, Vision: kpVision, Language: smallLang,
			Backbone: vision.EfficientNetConfig{Variant: "b0", Height: 128, Width: 160, Blocks: 5},
		},
		"small-proprio": {
			Policy: Config{Preset: "small-proprio", ActionSpace: action.RT1(), Padding: 0, BlindActions: true, Proprio: slices.Clone(action.ArmProprio)},
			TTM:    proprioTTM, Vision: kpVision, Language: smallLang,
			Backbone: vision.EfficientNetConfig{Variant: "b0", Height: 128, Width: 160, Blocks: 5},
		},
		"small-geometry": {
			Policy: Config{Preset: "small-geometry", ActionSpace: action.RT1ContinuousArm(), Padding: 0, BlindActions: true, Proprio: slices.Clone(action.ArmProprio), TargetGeometry: &headcam, GeometryPoints: 2, GeometryRelative: 0.05},
			TTM:    proprioTTM, Vision: kpVision, Language: smallLang,
			Backbone: vision.EfficientNetConfig{Variant: "b0", Height: 128, Width: 160, Blocks: 5},
		},
		"small-memory-film": {
			Policy: Config{Preset: "small-memory-film", ActionSpace: action.RT1ContinuousArm(), Padding: 0, BlindActions: true, Proprio: slices.Clone(action.ArmProprio), TargetGeometry: &headcam, GeometryPoints: 2, GeometryRelative: 0.05,
				MemoryFiLM: true},
			TTM: proprioTTM, Vision: kpVision, Language: wordsLang,
			Backbone: vision.EfficientNetConfig{Variant: "b0", Height: 128, Width: 160, Blocks: 5},
		},
		"small-goal-probe": {
			Policy: Config{Preset: "small-goal-probe", ActionSpace: action.RT1ContinuousArm(), Padding: 0, BlindActions: true, Proprio: slices.Clone(action.ArmProprio), TargetGeometry: &headcam, GeometryPoints: 2, GeometryRelative: 0.05,
				MemoryFiLM: true, GoalProbe: true},
			TTM: proprioTTM, Vision: kpVision, Language: smallLang,
			Backbone: vision.EfficientNetConfig{Variant: "b0", Height: 128, Width: 160, Blocks: 5},
		},
		"small-memory-prior": {
			Policy: Config{Preset: "small-memory-prior", ActionSpace: action.RT1ContinuousArm(), Padding: 0, BlindActions: true, Proprio: slices.Clone(action.ArmProprio), TargetGeometry: &headcam, GeometryPoints: 2, GeometryRelative: 0.05,
				MemoryFiLM: true, GoalProbe: true, MemoryPrior: true},
			TTM: proprioTTM, Vision: kpVision, Language: wordsLang,
			Backbone: vision.EfficientNetConfig{Variant: "b0", Height: 128, Width: 160, Blocks: 5},
		},
		// kitchen-sightline: a policy for all eight tasks, at the
		// design's memory (m 96, r 16) and width 64: keypoint token (hand,
		// target, destination) from a two-stage head, proprioception, the
		// geometry points with their lines of sight, a regressed arm, word
		// 3-grams, memory-steered FiLM, the goal probe and the memory prior
		// over the keypoints.
		"kitchen-sightline": {
			Policy: Config{Preset: "kitchen-sightline", ActionSpace: action.RT1ContinuousArm(), Padding: 0, BlindActions: true, Proprio: slices.Clone(action.ArmProprio), TargetGeometry: &headcam, GeometryPoints: 2, GeometryRelative: 0.05,
				GeometrySightline: true, MemoryFiLM: true, GoalProbe: true, MemoryPrior: true},
			TTM: kitchenTTM, Vision: kitchenVision, Language: wordsLang,
			Backbone: vision.EfficientNetConfig{Variant: "b0", Height: 128, Width: 160, Blocks: 5},
		},
		// kitchen-lying-probe: kitchen-sightline with the vision head's
		// training-only lying probe (vision.HeadConfig.LyingProbe); the
		// committed kitchen policy and its twin.
		"kitchen-lying-probe": {
			Policy: Config{Preset: "kitchen-lying-probe", ActionSpace: action.RT1ContinuousArm(), Padding: 0, BlindActions: true, Proprio: slices.Clone(action.ArmProprio), TargetGeometry: &headcam, GeometryPoints: 2, GeometryRelative: 0.05,
				GeometrySightline: true, MemoryFiLM: true, GoalProbe: true, MemoryPrior: true},
			TTM: kitchenTTM, Vision: lyingVision, Language: wordsLang,
			Backbone: vision.EfficientNetConfig{Variant: "b0", Height: 128, Width: 160, Blocks: 5},
		},
	}
	return presets
}

// The small-keypoints preset's backbone map: the output of MBConv block 5
// of B0, stride 8.
const (
	SmallKeypointsFeatureLayer     = "blocks.4/add"
	SmallKeypointsBackboneChannels = 40
)

// The small preset's feature map: the output of MBConv block 7 of B0.
const (
	SmallFeatureLayer    = "blocks.6/add"
	SmallFeatureChannels = 80
)

// Preset returns the named preset, validated.
func Preset(name string) (Spec, error) {
	s, ok := Presets()[name]
	if !ok {
		return Spec{}, fmt.Errorf("unknown policy preset %q (have %s)", name, strings.Join(PresetNames(), ", "))
	}
	return s, s.Validate()
}

// PresetNames lists the presets' names, sorted.
func PresetNames() []string {
	names := slices.Collect(maps.Keys(Presets()))
	sort.Strings(names)
	return names
}

// JSON returns c as stored in a checkpoint.
func (c Config) JSON() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic("policy: " + err.Error())
	}
	return string(b)
}

// ParseConfig reads a Config; unknown fields are an error.
func ParseConfig(b []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("policy config: %w", err)
	}
	if c.Model != "" && !slices.Contains(seq.Names(), c.Model) {
		return Config{}, fmt.Errorf("policy config: unknown sequence model %q (have %s)", c.Model, strings.Join(seq.Names(), ", "))
	}
	if err := c.validate(); err != nil {
		return Config{}, fmt.Errorf("policy config: %w", err)
	}
	if err := c.ActionSpace.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}
