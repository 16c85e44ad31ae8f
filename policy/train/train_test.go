package train

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"

	"github.com/ttmrobot/ttm/internal/safetensors"
	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/vision"
)

// testPolicy writes a fresh small checkpoint once per test binary and
// loads it without a backbone (training needs only cached features).
func testPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	return presetPolicy(t, filepath.Join(sharedDir, "small.safetensors"), nil)
}

// presetPolicy loads the small preset's checkpoint at path without a
// backbone, creating it first (with edit applied to the preset, if not
// nil) unless it exists.
func presetPolicy(t *testing.T, path string, edit func(*policy.Spec)) *policy.Policy {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		spec, err := policy.Preset("small")
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(&spec)
		}
		if err := policy.Create(spec, 1, "", path, nil); err != nil {
			t.Fatal(err)
		}
	}
	p, err := policy.Load(path, policy.Options{NoBackbone: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var sharedDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "train-test")
	if err != nil {
		panic(err)
	}
	sharedDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syntheticEpisodes makes demonstrations whose actions are a function of
// the features, so there is something to learn: the sign of the mean of
// feature channel 0 chooses the base's forward velocity.
func syntheticEpisodes(p *policy.Policy, count, steps int, seed uint64) []*Episode {
	spec := p.Spec()
	c, n := spec.Vision.Head.FeatureChannels, spec.Vision.Head.Positions
	r := rand.New(rand.NewPCG(seed, 2))
	var eps []*Episode
	for e := range count {
		ep := &Episode{Name: "synthetic-" + string(rune('a'+e)), Task: "pick", Instruction: "pick up the can", Steps: steps, FeatureLen: c * n}
		for range steps {
			sign := float32(1)
			if r.IntN(2) == 0 {
				sign = -1
			}
			for ch := range c {
				for range n {
					v := float32(r.NormFloat64() * 0.3)
					if ch == 0 {
						v += sign
					}
					ep.Features = append(ep.Features, v)
				}
			}
			a := make([]float32, p.ActionSpace().Len())
			a[action.DimMode] = action.ModeBase
			a[action.DimBaseX] = 0.8 * sign
			ep.Actions = append(ep.Actions, a...)
		}
		eps = append(eps, ep)
	}
	return eps
}

func smallConfig() Config {
	c := DefaultConfig()
	c.Steps, c.Batch, c.Window, c.Warmup, c.LR = 6, 4, 3, 2, 3e-3
	c.LabelSigma = 0 // one-hot labels: the loss can approach zero
	return c
}

func flatParams(p *policy.Policy) []float32 {
	var out []float32
	for _, g := range p.Groups() {
		out = append(out, g.Params...)
	}
	return out
}

// TestTrainingIsDeterministic: the same data, checkpoint and settings give
// the same losses and weights, bit for bit.
func TestTrainingIsDeterministic(t *testing.T) {
	var losses [2][]float64
	var params [2][]float32
	for run := range 2 {
		p := testPolicy(t)
		tr, err := New(smallConfig(), p, syntheticEpisodes(p, 3, 7, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 6 {
			loss, _, _, err := tr.Step()
			if err != nil {
				t.Fatal(err)
			}
			losses[run] = append(losses[run], loss)
		}
		params[run] = flatParams(p)
	}
	if !slices.Equal(losses[0], losses[1]) {
		t.Errorf("loss curves differ:\n%v\n%v", losses[0], losses[1])
	}
	if !slices.Equal(params[0], params[1]) {
		t.Error("weights differ after identical runs")
	}
}

// TestResumeContinuesExactly: stopping after 3 updates, saving checkpoint
// and state, and resuming in a new trainer gives the weights of 6
// uninterrupted updates, bit for bit; also for a policy whose FiLM reads
// the previous step's TTM output back, a state the streams carry across
// updates.
func TestResumeContinuesExactly(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*policy.Spec)
	}{
		{"small", nil},
		{"memory FiLM", func(s *policy.Spec) { s.Policy.MemoryFiLM = true }},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fresh.safetensors")
			resumeContinuesExactly(t, func() *policy.Policy { return presetPolicy(t, path, c.edit) })
		})
	}
}

// resumeContinuesExactly checks resuming on policies newPolicy returns,
// each with the same fresh weights.
func resumeContinuesExactly(t *testing.T, newPolicy func() *policy.Policy) {
	cfg := smallConfig()
	p := newPolicy()
	// 11 steps: after 3 updates of windows of 3 the streams stop mid-episode.
	eps := syntheticEpisodes(p, 3, 11, 2)
	tr, err := New(cfg, p, eps, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		if _, _, _, err := tr.Step(); err != nil {
			t.Fatal(err)
		}
	}
	want := flatParams(p)

	dir := t.TempDir()
	ckpt, state := filepath.Join(dir, "p.safetensors"), filepath.Join(dir, "p.state")
	p1 := newPolicy()
	tr1, err := New(cfg, p1, eps, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, _, _, err := tr1.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p1.SaveAs(ckpt, filepath.Join(sharedDir, "small.backbone.onnx")); err != nil {
		t.Fatal(err)
	}
	if err := tr1.SaveState(state); err != nil {
		t.Fatal(err)
	}

	p2, err := policy.Load(ckpt, policy.Options{NoBackbone: true})
	if err != nil {
		t.Fatal(err)
	}
	tr2, err := New(cfg, p2, eps, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr2.LoadState(state); err != nil {
		t.Fatal(err)
	}
	if tr2.Updates() != 3 {
		t.Fatalf("resumed at update %d, want 3", tr2.Updates())
	}
	for tr2.Updates() < 6 {
		if _, _, _, err := tr2.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if got := flatParams(p2); !slices.Equal(got, want) {
		t.Error("resumed run's weights differ from the uninterrupted run's")
	}

	// A state for other episodes or settings is refused.
	for _, edit := range []func(*Config){
		func(c *Config) { c.Batch = 5 },
		func(c *Config) { c.LR *= 2 },
		func(c *Config) { c.Seed++ },
	} {
		other := cfg
		edit(&other)
		tr3, _ := New(other, p2, eps, nil)
		if err := tr3.LoadState(state); err == nil {
			t.Errorf("state of %+v accepted for %+v", cfg, other)
		}
	}
	tr4, _ := New(cfg, p2, eps[:2], nil)
	if err := tr4.LoadState(state); err == nil {
		t.Error("state of other episodes accepted")
	}
}

// TestTrainingLearns: on demonstrations where the base velocity follows
// a feature, the loss falls and the policy's chosen bin becomes right.
func TestTrainingLearns(t *testing.T) {
	p := testPolicy(t)
	cfg := smallConfig()
	cfg.Steps, cfg.Batch, cfg.Warmup = 60, 8, 5
	eps := syntheticEpisodes(p, 6, 8, 3)
	tr, err := New(cfg, p, eps, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _, err := tr.Step()
	if err != nil {
		t.Fatal(err)
	}
	var last, acc float64
	for tr.Updates() < cfg.Steps {
		if last, acc, _, err = tr.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if !(last < first/3) || acc < 0.8 {
		t.Errorf("loss %.3f -> %.3f, bin accuracy %.2f: not learning", first, last, acc)
	}
}

func TestAdamWHandComputed(t *testing.T) {
	params := []policy.Group{{Name: "w", Params: []float32{1, -2}}}
	grads := []policy.Group{{Name: "w", Params: []float32{0.5, -0.25}}}
	o := NewAdamW(params, [][]bool{{true, false}}, 0.1)
	o.Update(params, grads, 0.01)
	// Step 1: m̂ = g, v̂ = g², so the Adam step is sign(g) (up to ε);
	// weight decay applies to the first parameter only.
	want := []float64{1 - 0.01*(1+0.1*1), -2 - 0.01*(-1)}
	for i, w := range want {
		if math.Abs(float64(params[0].Params[i])-w) > 1e-6 {
			t.Errorf("param %d = %v, want %v", i, params[0].Params[i], w)
		}
	}
}

func TestScheduleAndClipping(t *testing.T) {
	s := Schedule{Peak: 1, Warmup: 4, Total: 14, Floor: 0.1}
	for _, tc := range []struct {
		step int
		want float64
	}{{0, 0.25}, {3, 1}, {4, 1}, {9, 0.1 + 0.9*0.5}, {14, 0.1}, {20, 0.1}} {
		if got := s.At(tc.step); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("At(%d) = %v, want %v", tc.step, got, tc.want)
		}
	}
	g := []policy.Group{{Params: []float32{3, 0}}, {Params: []float32{4}}}
	if n := ClipGlobalNorm(g, 1); n != 5 {
		t.Errorf("norm %v, want 5", n)
	}
	if g[0].Params[0] != 0.6 || g[1].Params[0] != 0.8 {
		t.Errorf("clipped to %v %v, want 0.6 0.8", g[0].Params, g[1].Params)
	}
}

func TestCacheRoundTripAndDamage(t *testing.T) {
	p := testPolicy(t)
	c, err := NewCache(t.TempDir(), p.Spec())
	if err != nil {
		t.Fatal(err)
	}
	ep := syntheticEpisodes(p, 1, 3, 4)[0]
	na := p.ActionSpace().Len()
	if got, err := c.Load(ep.Name, ep.FeatureLen, na); got != nil || err != nil {
		t.Fatalf("missing entry: %v, %v; want nil, nil", got, err)
	}
	if err := c.Store(ep, na); err != nil {
		t.Fatal(err)
	}
	got, err := c.Load(ep.Name, ep.FeatureLen, na)
	if err != nil {
		t.Fatal(err)
	}
	if got.Instruction != ep.Instruction || got.Steps != ep.Steps || !slices.Equal(got.Features, ep.Features) || !slices.Equal(got.Actions, ep.Actions) {
		t.Error("cache round trip changed the episode")
	}
	if got.KeypointLen != 0 || got.Keypoints != nil {
		t.Errorf("an episode without keypoint labels came back with %d", len(got.Keypoints))
	}
	if _, err := c.Load(ep.Name, ep.FeatureLen+1, na); err == nil {
		t.Error("cache of another feature size accepted")
	}

	// Keypoint labels survive the cache; a file written before episodes
	// carried them (no keypoint_len) is a miss, so that its bag's labels
	// are read again.
	labelled := spotEpisodes(keypointPolicy(t), 1, 3, 4)[0]
	labelled.Name = "labelled"
	if err := c.Store(labelled, na); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Load(labelled.Name, labelled.FeatureLen, na); err != nil || got.KeypointLen != 6 || !slices.Equal(got.Keypoints, labelled.Keypoints) {
		t.Errorf("keypoint labels after the cache: %v (err %v), want %v", got.Keypoints, err, labelled.Keypoints)
	}
	path := filepath.Join(c.Dir, ep.Name+".safetensors")
	old, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	delete(old.Metadata, "keypoint_len")
	oldPath := filepath.Join(c.Dir, "old.safetensors")
	if err := safetensors.WriteFile(oldPath, old); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Load("old", ep.FeatureLen, na); got != nil || err != nil {
		t.Errorf("a cache file without keypoint_len: %v, %v; want a miss", got, err)
	}

	// Proprioception survives the cache too; a file written before
	// episodes carried it is a miss.
	sensed := proprioEpisodes(proprioPolicy(t), 1, 3, 4)[0]
	sensed.Name = "sensed"
	if err := c.Store(sensed, na); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Load(sensed.Name, sensed.FeatureLen, na); err != nil || got.ProprioLen != 4 || !slices.Equal(got.Proprio, sensed.Proprio) {
		t.Errorf("proprioception after the cache: %v (err %v), want %v", got.Proprio, err, sensed.Proprio)
	}
	delete(old.Metadata, "proprio_len")
	old.Metadata["keypoint_len"] = "0"
	if err := safetensors.WriteFile(oldPath, old); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Load("old", ep.FeatureLen, na); got != nil || err != nil {
		t.Errorf("a cache file without proprio_len: %v, %v; want a miss", got, err)
	}

	// Target-lying labels survive the cache; a file written before
	// episodes carried them (no lying_labels) is a miss.
	lying := lyingEpisodes(p, 1, 3, 4)[0]
	lying.Name = "lying"
	if err := c.Store(lying, na); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Load(lying.Name, lying.FeatureLen, na); err != nil || !slices.Equal(got.Lying, lying.Lying) {
		t.Errorf("target-lying labels after the cache: %v (err %v), want %v", got.Lying, err, lying.Lying)
	}
	old.Metadata["proprio_len"] = "0"
	delete(old.Metadata, "lying_labels")
	if err := safetensors.WriteFile(oldPath, old); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Load("old", ep.FeatureLen, na); got != nil || err != nil {
		t.Errorf("a cache file without lying_labels: %v, %v; want a miss", got, err)
	}

	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)/2], 0o644)
	if _, err := c.Load(ep.Name, ep.FeatureLen, na); err == nil {
		t.Error("truncated cache file accepted")
	}
}

// BenchmarkUpdate is one optimiser update (batch 32 windows of 8 steps,
// both workers) on synthetic features, per preset: samples/s is the
// training throughput `ttm train` reports.
func BenchmarkUpdate(b *testing.B) {
	for _, preset := range []string{"small", "robot"} {
		b.Run(preset, func(b *testing.B) {
			spec, err := policy.Preset(preset)
			if err != nil {
				b.Fatal(err)
			}
			path := filepath.Join(sharedDir, preset+".safetensors")
			if _, err := os.Stat(path); err != nil {
				if err := policy.Create(spec, 1, "", path, nil); err != nil {
					b.Fatal(err)
				}
			}
			p, err := policy.Load(path, policy.Options{NoBackbone: true})
			if err != nil {
				b.Fatal(err)
			}
			c := spec.Vision.Head.FeatureChannels
			n := spec.Vision.Head.Positions
			if n == 0 {
				n = 7 * 7 // B0 at 224
			}
			r := rand.New(rand.NewPCG(1, 1))
			var eps []*Episode
			for e := range 4 {
				ep := &Episode{Name: string(rune('a' + e)), Instruction: "pick up the can", Steps: 16, FeatureLen: c * n}
				ep.Features = make([]float32, 16*c*n)
				for i := range ep.Features {
					ep.Features[i] = float32(r.NormFloat64())
				}
				ep.Actions = make([]float32, 16*p.ActionSpace().Len())
				eps = append(eps, ep)
			}
			cfg := DefaultConfig()
			tr, err := New(cfg, p, eps, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, _, _, err := tr.Step(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*cfg.Batch*cfg.Window)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// keypointPolicy is the small preset with a hidden stage and a keypoint
// token, fresh weights, loaded without a backbone.
func keypointPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	return presetPolicy(t, filepath.Join(t.TempDir(), "keypoints.safetensors"), func(spec *policy.Spec) {
		h := &spec.Vision.Head
		h.Hidden, h.Keypoints, h.PositionGridWidth, h.Tokens = 16, true, 10, 5
		spec.Policy.Padding = 0
	})
}

// spotEpisodes puts a bright spot at a random cell of channel 0 in every
// frame and labels it as keypoint 0 (keypoint 1 is out of view).
func spotEpisodes(p *policy.Policy, count, steps int, seed uint64) []*Episode {
	eps := syntheticEpisodes(p, count, steps, seed)
	spec := p.Spec()
	n, gw := spec.Vision.Head.Positions, spec.Vision.Head.PositionGridWidth
	r := rand.New(rand.NewPCG(seed, 3))
	for _, ep := range eps {
		ep.KeypointLen = 6
		for s := range ep.Steps {
			cell := r.IntN(n)
			ep.Features[s*ep.FeatureLen+cell] += 3
			u, v := (float32(cell%gw)+0.5)/float32(gw), (float32(cell/gw)+0.5)/float32(n/gw)
			ep.Keypoints = append(ep.Keypoints, u, v, 1, 0, 0, 0)
		}
	}
	return eps
}

// TestKeypointSupervisionLearns: with labels naming the spot's cell, the
// keypoint loss falls from its start (about ln of the 80 cells, against
// Gaussian targets; the targets' own entropy, the floor, is about 2.1) by
// more than 30 % within 60 updates (measured: 5.09 to 3.25); without a
// weight it is not computed.
func TestKeypointSupervisionLearns(t *testing.T) {
	p := keypointPolicy(t)
	cfg := smallConfig()
	cfg.Steps, cfg.Batch, cfg.Warmup, cfg.LR = 60, 8, 5, 1e-2
	cfg.KeypointWeight, cfg.KeypointSigma = 4, 0.7
	tr, err := New(cfg, p, spotEpisodes(p, 6, 8, 4), nil)
	if err != nil {
		t.Fatal(err)
	}
	first, last := lossAtEnds(t, tr, func(u update) float64 { return u.keypointLoss / cfg.KeypointWeight })
	t.Logf("keypoint loss %.3f -> %.3f per unit weight", first, last)
	if !(first > 4) || !(last < 0.7*first) {
		t.Errorf("keypoint loss %.3f -> %.3f (per unit weight): not learning where the spot is", first, last)
	}

	cfg.KeypointWeight = 0
	tr, err = New(cfg, keypointPolicy(t), spotEpisodes(p, 6, 8, 4), nil)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := tr.step(); err != nil || u.keypointLoss != 0 {
		t.Errorf("keypoint loss %v (err %v) without a weight, want 0", u.keypointLoss, err)
	}
}

func TestKeypointSupervisionNeedsLabelsAndToken(t *testing.T) {
	cfg := smallConfig()
	cfg.KeypointWeight, cfg.KeypointSigma = 1, 1
	kp := keypointPolicy(t)
	plain := testPolicy(t)
	bad := spotEpisodes(kp, 2, 4, 5)
	bad[1].Keypoints = bad[1].Keypoints[:6] // one step's labels for four steps
	for _, tc := range []struct {
		name string
		p    *policy.Policy
		eps  []*Episode
	}{
		{"no labels", kp, syntheticEpisodes(kp, 2, 4, 5)},
		{"no keypoint token", plain, spotEpisodes(kp, 2, 4, 5)},
		{"labels of the wrong length", kp, bad},
	} {
		if _, err := New(cfg, tc.p, tc.eps, nil); err == nil {
			t.Errorf("%s: accepted", tc.name)
		} else {
			t.Logf("%s: %v", tc.name, err)
		}
	}
	cfg.KeypointSigma = 0
	if err := cfg.Validate(); err == nil {
		t.Error("a keypoint weight with sigma 0 accepted")
	}
}

// TestCacheKeyCountsPatches: colour patches are part of the cached map,
// so a policy with them never reads features cached without them.
func TestCacheKeyCountsPatches(t *testing.T) {
	spec := testPolicy(t).Spec()
	root := t.TempDir()
	plain, err := NewCache(root, spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.Vision.Patches = 2
	patched, err := NewCache(root, spec)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Dir == patched.Dir {
		t.Errorf("features with and without colour patches share the cache %s", plain.Dir)
	}
	// Nor features rounded otherwise.
	if a := vision.LayerArithmetic(); !strings.HasSuffix(plain.Dir, "-"+a) {
		t.Errorf("cache %s is not keyed by the layers' arithmetic %s", plain.Dir, a)
	}
}

// proprioPolicy is the small preset reading the arm's proprioception.
func proprioPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	return presetPolicy(t, filepath.Join(sharedDir, "proprio.safetensors"), func(s *policy.Spec) {
		s.Policy.Proprio = action.ArmProprio
		s.TTM.InputTokens++
	})
}

// proprioEpisodes are syntheticEpisodes whose features carry nothing: the
// sign of the hand's height (proprioception 2) chooses the base's forward
// velocity.
func proprioEpisodes(p *policy.Policy, count, steps int, seed uint64) []*Episode {
	eps := syntheticEpisodes(p, count, steps, seed)
	r := rand.New(rand.NewPCG(seed, 3))
	na := p.ActionSpace().Len()
	for _, ep := range eps {
		for i := range ep.Features {
			ep.Features[i] = float32(r.NormFloat64() * 0.3)
		}
		ep.ProprioLen = 4
		for t := range ep.Steps {
			z := float32(2*r.IntN(2)-1) + float32(r.NormFloat64()*0.1)
			ep.Proprio = append(ep.Proprio, 0.5, 0, z, 0)
			if z < 0 {
				ep.Actions[t*na+action.DimBaseX] = -0.8
			} else {
				ep.Actions[t*na+action.DimBaseX] = 0.8
			}
		}
	}
	return eps
}

// TestProprioLearns: when only the proprioception tells the action, a
// policy that reads it learns the action, and the same training on the
// same episodes with the proprioception zeroed cannot; the trainer
// refuses episodes without it.
func TestProprioLearns(t *testing.T) {
	cfg := smallConfig()
	cfg.Steps, cfg.Batch, cfg.Warmup = 100, 8, 5
	train := func(eps []*Episode) (first, last float64) {
		p := proprioPolicy(t)
		tr, err := New(cfg, p, eps, nil)
		if err != nil {
			t.Fatal(err)
		}
		if first, _, _, err = tr.Step(); err != nil {
			t.Fatal(err)
		}
		for tr.Updates() < cfg.Steps {
			if last, _, _, err = tr.Step(); err != nil {
				t.Fatal(err)
			}
		}
		return first, last
	}
	p := proprioPolicy(t)
	eps := proprioEpisodes(p, 16, 8, 3)
	first, last := train(eps)
	blind := proprioEpisodes(p, 16, 8, 3)
	for _, ep := range blind {
		clear(ep.Proprio)
	}
	_, lastBlind := train(blind)
	t.Logf("loss %.3f -> %.3f; with the proprioception zeroed -> %.3f", first, last, lastBlind)
	// Without it the base velocity's sign is a coin toss: about log 2 of
	// loss per step that reading it removes.
	if !(last < first/3) || !(last < lastBlind-0.3) {
		t.Errorf("loss %.3f -> %.3f, %.3f with the proprioception zeroed: not learning from it", first, last, lastBlind)
	}
	bad := proprioEpisodes(p, 2, 3, 5)
	bad[1].ProprioLen, bad[1].Proprio = 0, nil
	if _, err := New(cfg, p, bad, nil); err == nil || !strings.Contains(err.Error(), "0 proprioception values per step, the policy reads 4") {
		t.Errorf("an episode without proprioception: %v", err)
	}
	cfg.GeometryLabels = true
	if _, err := New(cfg, p, eps, nil); err == nil || !strings.Contains(err.Error(), "geometry labels need a policy with target geometry") {
		t.Errorf("geometry labels without target geometry: %v", err)
	}
}

// TestGeometryOwnDraws: with GeometryOwn the first half of the updates
// read labels only; after it each window reads the
// policy's own keypoints with the given probability, the same draw
// whatever the workers; the setting needs geometry labels and a
// probability.
func TestGeometryOwnDraws(t *testing.T) {
	for _, c := range []struct{ p float64 }{{0}, {0.3}, {0.5}, {1}} {
		cfg := smallConfig()
		cfg.Steps, cfg.Batch, cfg.GeometryLabels, cfg.GeometryOwn = 400, 32, true, c.p
		const start = 200 // hand-computed: the first update that may read its own keypoints
		tr := &Trainer{cfg: cfg, opt: &AdamW{}}
		own, draws := 0, 0
		for step := range cfg.Steps {
			tr.opt.Step = step
			for i := range cfg.Batch {
				o := tr.ownGeometry(i)
				if step < start && o {
					t.Fatalf("%+v: update %d, stream %d reads its own keypoints before update %d", c, step, i, start)
				}
				if step >= start {
					draws++
					if o {
						own++
					}
				}
				if o != tr.ownGeometry(i) {
					t.Fatal("the same update and stream draw differently")
				}
			}
		}
		if share := float64(own) / float64(draws); math.Abs(share-c.p) > 0.02 {
			t.Errorf("%+v: %d of %d windows from update %d read their own keypoints", c, own, draws, start)
		}
	}
	for _, c := range []Config{{GeometryOwn: 0.5}, {GeometryOwn: 1.5, GeometryLabels: true}, {GeometryOwn: math.NaN(), GeometryLabels: true}} {
		cfg := smallConfig()
		cfg.GeometryOwn, cfg.GeometryLabels = c.GeometryOwn, c.GeometryLabels
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "geometry_own") {
			t.Errorf("geometry_own %v with labels %v: %v", c.GeometryOwn, c.GeometryLabels, err)
		}
	}
}

// goalEpisodes are synthetic episodes whose goal is a bright spot's
// position: a spot at cell c of channel 0 in every frame, the goal at
// (c mod 4 - 1.5, c div 4 - 1.5, 1) in policy.GoalUnit.
func goalEpisodes(p *policy.Policy, count, steps int, seed uint64) []*Episode {
	eps := syntheticEpisodes(p, count, steps, seed)
	r := rand.New(rand.NewPCG(seed, 4))
	for _, ep := range eps {
		cell := r.IntN(16)
		for s := range ep.Steps {
			ep.Features[s*ep.FeatureLen+cell] += 3
		}
		ep.Goal = []float32{float32(cell%4) - 1.5, float32(cell/4) - 1.5, 1}
	}
	return eps
}

// lossAtEnds runs tr to its last update and returns loss of its first
// update and of its last.
func lossAtEnds(t *testing.T, tr *Trainer, loss func(update) float64) (first, last float64) {
	t.Helper()
	for i := 0; tr.Updates() < tr.cfg.Steps; i++ {
		u, err := tr.step()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = loss(u)
		}
		last = loss(u)
	}
	return first, last
}

// TestGoalProbeLearns: with a goal the frames show, the goal probe's loss
// falls by more than half within 60 updates; without a weight it is not
// computed; a weight without a probe or without goals is refused.
func TestGoalProbeLearns(t *testing.T) {
	p := presetPolicy(t, filepath.Join(t.TempDir(), "probe.safetensors"), func(spec *policy.Spec) { spec.Policy.GoalProbe = true })
	cfg := smallConfig()
	cfg.Steps, cfg.Batch, cfg.Warmup, cfg.LR, cfg.GoalWeight = 60, 8, 5, 1e-2, 1
	eps := goalEpisodes(p, 8, 6, 7)
	tr, err := New(cfg, p, eps, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, last := lossAtEnds(t, tr, func(u update) float64 { return u.goalLoss })
	t.Logf("goal loss %.3f -> %.3f", first, last)
	if !(first > 0.5) || !(last < 0.5*first) {
		t.Errorf("goal loss %.3f -> %.3f: the probe is not learning where the goal is", first, last)
	}

	cfg.GoalWeight = 0
	if tr, err = New(cfg, p, eps, nil); err != nil {
		t.Fatal(err)
	}
	if u, err := tr.step(); err != nil || u.goalLoss != 0 {
		t.Errorf("goal loss %v (err %v) without a weight, want 0", u.goalLoss, err)
	}

	cfg.GoalWeight = 1
	if _, err := New(cfg, testPolicy(t), goalEpisodes(testPolicy(t), 2, 4, 5), nil); err == nil || !strings.Contains(err.Error(), "goal probe") {
		t.Errorf("a goal weight for a policy without a probe: %v", err)
	}
	if _, err := New(cfg, p, syntheticEpisodes(p, 2, 4, 5), nil); err == nil || !strings.Contains(err.Error(), "start goal") {
		t.Errorf("a goal probe without goals: %v", err)
	}
	cfg.GoalWeight = -1
	if err := cfg.Validate(); err == nil {
		t.Error("a negative goal weight accepted")
	}
}

// TestBalanceWindows: every window goes to exactly one worker, longest
// first to the least-loaded worker, so the loads differ by at most the
// longest window; hand-computed shares for small cases.
func TestBalanceWindows(t *testing.T) {
	for _, c := range []struct {
		lens    []int
		workers int
		want    [][]int
	}{
		{[]int{16, 16, 16, 16}, 2, [][]int{{0, 2}, {1, 3}}},
		// 16 (0) to w0, 16 (3) to w1, 9 (2) to w0 (tie: lower index), 7 (1) to w1, 3 (4) to w1: loads 25, 26.
		{[]int{16, 7, 9, 16, 3}, 2, [][]int{{0, 2}, {1, 3, 4}}},
		{[]int{5}, 2, [][]int{{0}, nil}},
		{[]int{4, 4, 4}, 1, [][]int{{0, 1, 2}}},
	} {
		if got := balanceWindows(c.lens, c.workers); !slices.EqualFunc(got, c.want, func(a, b []int) bool { return slices.Equal(a, b) }) {
			t.Errorf("balanceWindows(%v, %d) = %v, want %v", c.lens, c.workers, got, c.want)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		lens := make([]int, 1+r.IntN(40))
		for i := range lens {
			lens[i] = 1 + r.IntN(16)
		}
		workers := 1 + r.IntN(4)
		seen := make([]int, len(lens))
		lo, hi := math.MaxInt, 0
		for _, s := range balanceWindows(lens, workers) {
			load := 0
			for _, i := range s {
				seen[i]++
				load += lens[i]
			}
			lo, hi = min(lo, load), max(hi, load)
		}
		for i, n := range seen {
			if n != 1 {
				t.Fatalf("%v over %d workers: window %d given %d times", lens, workers, i, n)
			}
		}
		if hi-lo > slices.Max(lens) {
			t.Fatalf("%v over %d workers: loads %d..%d differ by more than the longest window", lens, workers, lo, hi)
		}
	}
}

// TestConfigFor: each preset gets the auxiliary losses of the parts it
// has, and DefaultConfig's settings otherwise.
func TestConfigFor(t *testing.T) {
	for _, tc := range []struct {
		preset           string
		keypoint, goal   float64
		geometry         bool
		geometryOwnShare float64
	}{
		{"small", 0, 0, false, 0},
		{"robot", 0, 0, false, 0},
		{"small-keypoints", 1, 0, false, 0},
		{"small-proprio", 1, 0, false, 0},
		{"small-geometry", 1, 0, true, 0.5},
		{"small-memory-film", 1, 0, true, 0.5},
		{"small-goal-probe", 1, 0.2, true, 0.5},
		{"small-memory-prior", 1, 0.2, true, 0.5},
	} {
		spec, err := policy.Preset(tc.preset)
		if err != nil {
			t.Fatal(err)
		}
		c := ConfigFor(spec)
		want := DefaultConfig()
		want.KeypointWeight, want.GoalWeight, want.GeometryLabels, want.GeometryOwn = tc.keypoint, tc.goal, tc.geometry, tc.geometryOwnShare
		if tc.keypoint > 0 {
			want.KeypointSigma = 0.5
		}
		if c != want {
			t.Errorf("%s: %+v, want %+v", tc.preset, c, want)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", tc.preset, err)
		}
	}
}

// lyingEpisodes labels each step of synthetic episodes lying or standing
// at random, a lying step's frame raising channel 1 at every cell, so that
// the map under any keypoint shows it.
func lyingEpisodes(p *policy.Policy, count, steps int, seed uint64) []*Episode {
	eps := syntheticEpisodes(p, count, steps, seed)
	n := p.Spec().Vision.Head.Positions
	r := rand.New(rand.NewPCG(seed, 5))
	for _, ep := range eps {
		for s := range ep.Steps {
			label := float32(r.IntN(2))
			if label == 1 {
				f := ep.Features[s*ep.FeatureLen : (s+1)*ep.FeatureLen]
				for cell := range n {
					f[n+cell] += 2
				}
			}
			ep.Lying = append(ep.Lying, label)
		}
	}
	return eps
}

// TestLyingProbeLearns: with frames that show how the target lies, the
// lying probe's loss per labelled step falls from ln 2 (a zero probe) by
// more than half within 60 updates; a weight without a probe or without
// labels is refused.
func TestLyingProbeLearns(t *testing.T) {
	p := presetPolicy(t, filepath.Join(t.TempDir(), "lying.safetensors"), func(spec *policy.Spec) {
		h := &spec.Vision.Head
		h.Hidden, h.Keypoints, h.PositionGridWidth, h.Tokens, h.LyingProbe = 16, true, 10, 5, true
		spec.Policy.Padding = 0
	})
	cfg := smallConfig()
	cfg.Steps, cfg.Batch, cfg.Warmup, cfg.LR, cfg.LyingWeight = 60, 8, 5, 1e-2, 1
	eps := lyingEpisodes(p, 8, 6, 7)
	tr, err := New(cfg, p, eps, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, last := lossAtEnds(t, tr, func(u update) float64 { return u.lyingLoss / float64(u.lyingLabels) })
	t.Logf("lying loss %.3f -> %.3f", first, last)
	if math.Abs(first-math.Ln2) > 1e-6 || !(last < 0.5*first) {
		t.Errorf("lying loss %.3f -> %.3f: want ln 2 at first, then less than half of it", first, last)
	}

	if _, err := New(cfg, keypointPolicy(t), lyingEpisodes(keypointPolicy(t), 2, 4, 5), nil); err == nil || !strings.Contains(err.Error(), "lying probe") {
		t.Errorf("a lying weight for a head without a probe: %v", err)
	}
	if _, err := New(cfg, p, syntheticEpisodes(p, 2, 4, 5), nil); err == nil || !strings.Contains(err.Error(), "target-lying labels") {
		t.Errorf("a lying probe without labels: %v", err)
	}
}
