package train

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ttmrobot/ttm/internal/safetensors"
	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/vision"
)

// Episode is one demonstration as training consumes it: the backbone's
// feature map of every frame and the demonstrated actions.
type Episode struct {
	Name        string // the episode's file name without extension
	Task        string
	Instruction string
	Steps       int
	FeatureLen  int       // C·N
	Features    []float32 // (Steps, C·N)
	Actions     []float32 // (Steps, A)
	// KeypointLen, when positive, is the length of each step's keypoint
	// labels in Keypoints (Steps, KeypointLen): image points for the
	// keypoint supervision (vision.SuperviseKeypoints' layout).
	KeypointLen int
	Keypoints   []float32
	// Lying, optional, is per step whether the target lies on its side
	// (Steps): 1 lies, 0 stands, negative unlabelled (sim.TargetLying),
	// the vision head's lying probe's label.
	Lying []float32
	// ProprioLen, when positive, is the length of each step's
	// proprioception in Proprio (Steps, ProprioLen).
	ProprioLen int
	Proprio    []float32
	// Goal, optional, is where the episode's goal stood at its start in
	// the starting base frame, in policy.GoalUnit (policy.GoalLen values):
	// the goal probe's label at every step. Simulated episodes have it
	// (sim.StartGoal); it is not cached with the features.
	Goal []float32
}

// ProprioAt returns step t's proprioception, a view; nil without.
func (e *Episode) ProprioAt(t int) []float32 {
	if e.ProprioLen == 0 {
		return nil
	}
	q := e.ProprioLen
	return e.Proprio[t*q : (t+1)*q : (t+1)*q]
}

// KeypointLabels returns step t's keypoint labels, a view; nil without
// labels.
func (e *Episode) KeypointLabels(t int) []float32 {
	if e.KeypointLen == 0 {
		return nil
	}
	k := e.KeypointLen
	return e.Keypoints[t*k : (t+1)*k : (t+1)*k]
}

// LyingLabel returns step t's target-lying label, a view of one value;
// nil without labels.
func (e *Episode) LyingLabel(t int) []float32 {
	if e.Lying == nil {
		return nil
	}
	return e.Lying[t : t+1 : t+1]
}

// Step returns step t's feature map and action, views.
func (e *Episode) Step(t, actionLen int) (features, action []float32) {
	f := e.Features[t*e.FeatureLen : (t+1)*e.FeatureLen : (t+1)*e.FeatureLen]
	a := e.Actions[t*actionLen : (t+1)*actionLen : (t+1)*actionLen]
	return f, a
}

// Frames is a demonstration before encoding: RGB frames and actions.
type Frames struct {
	Name, Task, Instruction string
	Height, Width           int
	Images                  [][]byte    // per step (Height, Width, 3) rgb8
	Actions                 [][]float32 // per step (A)
	// Keypoints, optional, are per step keypoint labels (all of one
	// length, a multiple of vision.KeypointLabelLen; see
	// Episode.Keypoints).
	Keypoints [][]float32
	// Lying, optional, are per step target-lying labels (Episode.Lying).
	Lying []float32
	// Proprio, optional, is per step the robot's proprioception (all of
	// one length).
	Proprio [][]float32
}

// Cache keeps episodes' feature maps on disk, in a folder named for the
// backbone (its SHA-256 and output layer), the input size and the layers'
// arithmetic (vision.LayerArithmetic), so epochs and later runs never
// rerun the backbone, and features of another backbone, or of the same
// one rounded otherwise, are never mixed in.
type Cache struct {
	Dir string
}

// NewCache returns the cache of p's backbone under root.
func NewCache(root string, spec policy.Spec) (*Cache, error) {
	v := spec.Vision
	sha := v.Backbone.SHA256
	if len(sha) < 16 {
		return nil, errors.New("train: the policy names no backbone SHA-256; cannot key its feature cache")
	}
	layer := strings.NewReplacer("/", "_", ".", "_").Replace(v.Backbone.Layer)
	if layer == "" {
		layer = "output"
	}
	if v.Patches > 0 { // colour patches are part of the cached map
		layer += fmt.Sprintf("+patches%d", v.Patches)
	}
	dir := filepath.Join(root, fmt.Sprintf("%s-%s-%dx%d-%s", sha[:16], layer, v.Preprocess.Height, v.Preprocess.Width, vision.LayerArithmetic()))
	return &Cache{Dir: dir}, nil
}

func (c *Cache) path(name string) string { return filepath.Join(c.Dir, name+".safetensors") }

// Load returns the cached episode name, or (nil, nil) if it is not cached
// (or cached before episodes carried keypoint labels and proprioception,
// so that what its bag holds is not silently lost).
// A damaged or mismatched cache file is an error naming it.
func (c *Cache) Load(name string, featureLen, actionLen int) (*Episode, error) {
	path := c.path(name)
	f, err := safetensors.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("feature cache %s: %w (delete it to recompute)", path, err)
	}
	for _, key := range []string{"keypoint_len", "proprio_len", "lying_labels"} {
		if _, ok := f.Metadata[key]; !ok {
			return nil, nil // written before episodes carried these labels and proprioception: recompute
		}
	}
	ep := &Episode{Name: name, Task: f.Metadata["task"], Instruction: f.Metadata["instruction"], FeatureLen: featureLen}
	if ep.Steps, err = strconv.Atoi(f.Metadata["steps"]); err != nil || ep.Steps < 1 {
		return nil, fmt.Errorf("feature cache %s: bad steps %q", path, f.Metadata["steps"])
	}
	for _, t := range []struct {
		name  string
		width int
		dst   *[]float32
	}{{"features", featureLen, &ep.Features}, {"actions", actionLen, &ep.Actions}} {
		tn, ok := f.Tensors[t.name]
		if !ok {
			return nil, fmt.Errorf("feature cache %s: no %q tensor", path, t.name)
		}
		if len(tn.Shape) != 2 || tn.Shape[0] != ep.Steps || tn.Shape[1] != t.width {
			return nil, fmt.Errorf("feature cache %s: %s has shape %v, want [%d %d]", path, t.name, tn.Shape, ep.Steps, t.width)
		}
		if *t.dst, err = tn.Floats(); err != nil {
			return nil, fmt.Errorf("feature cache %s: %s: %w", path, t.name, err)
		}
		if !allFinite(*t.dst) {
			return nil, fmt.Errorf("feature cache %s: %s holds NaN or Inf", path, t.name)
		}
	}
	if tn, ok := f.Tensors["keypoints"]; ok {
		if len(tn.Shape) != 2 || tn.Shape[0] != ep.Steps || tn.Shape[1] < 1 || tn.Shape[1]%vision.KeypointLabelLen != 0 {
			return nil, fmt.Errorf("feature cache %s: keypoints have shape %v, want [%d, a multiple of %d]", path, tn.Shape, ep.Steps, vision.KeypointLabelLen)
		}
		if ep.Keypoints, err = tn.Floats(); err != nil {
			return nil, fmt.Errorf("feature cache %s: keypoints: %w", path, err)
		}
		if !allFinite(ep.Keypoints) {
			return nil, fmt.Errorf("feature cache %s: keypoints hold NaN or Inf", path)
		}
		ep.KeypointLen = tn.Shape[1]
	}
	if tn, ok := f.Tensors["target_lying"]; ok {
		if len(tn.Shape) != 1 || tn.Shape[0] != ep.Steps {
			return nil, fmt.Errorf("feature cache %s: target_lying has shape %v, want [%d]", path, tn.Shape, ep.Steps)
		}
		if ep.Lying, err = tn.Floats(); err != nil {
			return nil, fmt.Errorf("feature cache %s: target_lying: %w", path, err)
		}
		if !validLying(ep.Lying) {
			return nil, fmt.Errorf("feature cache %s: target_lying holds values other than 0, 1 and negative", path)
		}
	}
	if tn, ok := f.Tensors["proprio"]; ok {
		if len(tn.Shape) != 2 || tn.Shape[0] != ep.Steps || tn.Shape[1] < 1 {
			return nil, fmt.Errorf("feature cache %s: proprio has shape %v, want [%d, positive]", path, tn.Shape, ep.Steps)
		}
		if ep.Proprio, err = tn.Floats(); err != nil {
			return nil, fmt.Errorf("feature cache %s: proprio: %w", path, err)
		}
		if !allFinite(ep.Proprio) {
			return nil, fmt.Errorf("feature cache %s: proprio holds NaN or Inf", path)
		}
		ep.ProprioLen = tn.Shape[1]
	}
	return ep, nil
}

// Store writes ep into the cache (atomically).
func (c *Cache) Store(ep *Episode, actionLen int) error {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	f := safetensors.New()
	f.Metadata["task"], f.Metadata["instruction"], f.Metadata["steps"] = ep.Task, ep.Instruction, strconv.Itoa(ep.Steps)
	f.Metadata["keypoint_len"] = strconv.Itoa(ep.KeypointLen)
	f.Metadata["proprio_len"] = strconv.Itoa(ep.ProprioLen)
	f.Metadata["lying_labels"] = strconv.FormatBool(ep.Lying != nil)
	f.Tensors["features"] = safetensors.FromFloat32(ep.Features, ep.Steps, ep.FeatureLen)
	f.Tensors["actions"] = safetensors.FromFloat32(ep.Actions, ep.Steps, actionLen)
	if ep.KeypointLen > 0 {
		f.Tensors["keypoints"] = safetensors.FromFloat32(ep.Keypoints, ep.Steps, ep.KeypointLen)
	}
	if ep.Lying != nil {
		f.Tensors["target_lying"] = safetensors.FromFloat32(ep.Lying, ep.Steps)
	}
	if ep.ProprioLen > 0 {
		f.Tensors["proprio"] = safetensors.FromFloat32(ep.Proprio, ep.Steps, ep.ProprioLen)
	}
	return safetensors.WriteFile(c.path(ep.Name), f)
}

// Encode runs a demonstration's frames through p's backbone.
func Encode(p *policy.Policy, fr *Frames) (*Episode, error) {
	c, n, err := p.FeatureShape()
	if err != nil {
		return nil, err
	}
	na := p.ActionSpace().Len()
	if len(fr.Images) == 0 || len(fr.Images) != len(fr.Actions) {
		return nil, fmt.Errorf("episode %s: %d frames and %d actions", fr.Name, len(fr.Images), len(fr.Actions))
	}
	k := 0 // keypoint label values per step
	if fr.Keypoints != nil {
		if len(fr.Keypoints) != len(fr.Images) {
			return nil, fmt.Errorf("episode %s: %d frames and %d keypoint labels", fr.Name, len(fr.Images), len(fr.Keypoints))
		}
		if k = len(fr.Keypoints[0]); k == 0 || k%vision.KeypointLabelLen != 0 {
			return nil, fmt.Errorf("episode %s: keypoint labels of %d values (want a multiple of %d)", fr.Name, k, vision.KeypointLabelLen)
		}
	}
	if fr.Lying != nil && (len(fr.Lying) != len(fr.Images) || !validLying(fr.Lying)) {
		return nil, fmt.Errorf("episode %s: %d frames and %d target-lying labels, want one each of 0, 1 or negative", fr.Name, len(fr.Images), len(fr.Lying))
	}
	q := 0 // proprioception values per step
	if fr.Proprio != nil {
		if len(fr.Proprio) != len(fr.Images) {
			return nil, fmt.Errorf("episode %s: %d frames and %d proprioception readings", fr.Name, len(fr.Images), len(fr.Proprio))
		}
		if q = len(fr.Proprio[0]); q == 0 {
			return nil, fmt.Errorf("episode %s: empty proprioception", fr.Name)
		}
	}
	ep := &Episode{Name: fr.Name, Task: fr.Task, Instruction: fr.Instruction, Steps: len(fr.Images), FeatureLen: c * n,
		Features: make([]float32, len(fr.Images)*c*n), Actions: make([]float32, 0, len(fr.Images)*na),
		KeypointLen: k, Keypoints: make([]float32, 0, len(fr.Images)*k),
		Lying:      slices.Clone(fr.Lying),
		ProprioLen: q, Proprio: make([]float32, 0, len(fr.Images)*q)}
	img := vision.Image{Height: uint32(fr.Height), Width: uint32(fr.Width), Encoding: "rgb8", Step: uint32(3 * fr.Width)}
	for t, im := range fr.Images {
		img.Data = im
		frame, err := vision.DecodeImage(&img)
		if err != nil {
			return nil, fmt.Errorf("episode %s step %d: %w", fr.Name, t, err)
		}
		if err := p.Features(ep.Features[t*c*n:(t+1)*c*n], frame); err != nil {
			return nil, fmt.Errorf("episode %s step %d: %w", fr.Name, t, err)
		}
		if len(fr.Actions[t]) != na {
			return nil, fmt.Errorf("episode %s step %d: action of %d values, the policy's space has %d", fr.Name, t, len(fr.Actions[t]), na)
		}
		if !allFinite(fr.Actions[t]) {
			return nil, fmt.Errorf("episode %s step %d: action holds NaN or Inf", fr.Name, t)
		}
		if k > 0 {
			if len(fr.Keypoints[t]) != k {
				return nil, fmt.Errorf("episode %s step %d: keypoint labels of %d values, step 0 has %d", fr.Name, t, len(fr.Keypoints[t]), k)
			}
			if !allFinite(fr.Keypoints[t]) {
				return nil, fmt.Errorf("episode %s step %d: keypoint labels hold NaN or Inf", fr.Name, t)
			}
			ep.Keypoints = append(ep.Keypoints, fr.Keypoints[t]...)
		}
		if q > 0 {
			if len(fr.Proprio[t]) != q || !allFinite(fr.Proprio[t]) {
				return nil, fmt.Errorf("episode %s step %d: proprioception of %d values (step 0 has %d), want all finite", fr.Name, t, len(fr.Proprio[t]), q)
			}
			ep.Proprio = append(ep.Proprio, fr.Proprio[t]...)
		}
		ep.Actions = append(ep.Actions, fr.Actions[t]...)
	}
	return ep, nil
}

// validLying reports whether every target-lying label is 0, 1 or
// negative (unlabelled).
func validLying(x []float32) bool {
	for _, v := range x {
		if v != 0 && v != 1 && !(v < 0) {
			return false
		}
	}
	return true
}

func allFinite(x []float32) bool {
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return false
		}
	}
	return true
}
