package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ttmrobot/ttm/vision"
)

func init() {
	register(command{name: "backbone", summary: "write a seeded EfficientNet backbone (ONNX), or check one in OpenCV", run: runBackbone})
}

// runBackbone writes a generated EfficientNet, or with --check loads an
// ONNX file the way the policy will (validation, rewrites, OpenCV) and
// reports its output shape and, with --profile, where OpenCV spends the
// time.
func runBackbone(env *environment, args []string) error {
	fs := newFlags(env, "backbone",
		"--variant b0|b1|b2|b3 [--film 512] [--padding keras|same] --seed N --out FILE.onnx\n"+
			"       ttm backbone --check FILE.onnx --size 300 [--film-input film --film 512] [--sha256 HEX] [--profile]")
	variant := fs.String("variant", "", "EfficientNet variant: b0, b1, b2 or b3")
	film := fs.Int("film", 0, "FiLM embedding width D: adds an input \"film\" [1, D] and FiLM after every MBConv block (0: none)")
	padding := fs.String("padding", "keras", "stride-2 padding: keras (B3 at 300 gives 9x9) or same (TF SAME, 10x10)")
	seed := fs.Uint64("seed", 0, "random seed; the same seed always gives the same file")
	out := fs.String("out", "", "ONNX file to write")
	blocks := fs.Int("blocks", 0, "end the graph after this many MBConv blocks (0: the whole network with its head)")
	size := fs.Int("size", 0, "input height and width (default: the variant's resolution, 224/240/260/300)")
	check := fs.String("check", "", "ONNX file to validate and load in OpenCV instead of generating one")
	filmInput := fs.String("film-input", "", "with --check: name of the FiLM input")
	sha := fs.String("sha256", "", "with --check: expected SHA-256 of the file")
	threads := fs.Int("threads", 0, "with --check: OpenCV threads (0: OpenCV's default)")
	profile := fs.Bool("profile", false, "with --check: time --frames frames and print OpenCV's per-layer profile")
	frames := fs.Int("frames", 10, "with --profile: frames to time (after one warm-up)")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	if *check != "" {
		return checkBackbone(env, *check, *size, *filmInput, *film, *sha, *threads, *profile, *frames)
	}
	if err := requireFlag("variant", *variant); err != nil {
		return err
	}
	if err := requireFlag("out", *out); err != nil {
		return err
	}
	pad, err := vision.ParsePadding(*padding)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if _, err := vision.LookupEfficientNet(*variant); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := makeOutDir(filepath.Dir(*out)); err != nil {
		return err
	}
	cfg := vision.EfficientNetConfig{Variant: *variant, Padding: pad, Height: *size, Width: *size, FiLMDim: *film, Seed: *seed, Blocks: *blocks}
	start := time.Now()
	g, err := vision.GenerateEfficientNet(cfg)
	if err != nil {
		return err
	}
	sum, err := g.WriteONNX(*out)
	if err != nil {
		return err
	}
	c, h, w := g.FeatureShape()
	ih, iw := g.InputSize()
	env.log.Info("backbone written", "path", *out, "variant", *variant, "padding", pad, "seed", *seed,
		"input", fmt.Sprintf("1x3x%dx%d", ih, iw), "features", fmt.Sprintf("%dx%dx%d", c, h, w),
		"film", *film, "params", g.Params(), "film_params", g.FiLMParams(), "took", time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(env.stdout, "%s\nsha256 %s\ninput 1x3x%dx%d\nfeatures %dx%dx%d\nparams %d (published %d without classifier, %d with)\n",
		*out, sum, ih, iw, c, h, w, g.Params(), g.PublishedParams(false), g.PublishedParams(true))
	return nil
}

func checkBackbone(env *environment, path string, size int, filmInput string, filmDim int, sha string, threads int, profile bool, frames int) error {
	if size <= 0 {
		return fmt.Errorf("%w: --check needs --size", errUsage)
	}
	if frames < 1 || frames > 100000 {
		return fmt.Errorf("%w: --frames %d outside 1..100000", errUsage, frames)
	}
	spec := vision.BackboneSpec{Path: path, SHA256: sha, Height: size, Width: size, FiLMInput: filmInput, FiLMDim: filmDim, Threads: threads}
	b, err := vision.OpenBackbone(spec, env.log)
	if err != nil {
		return err
	}
	defer b.Close()
	c, h, w := b.OutputShape()
	fmt.Fprintf(env.stdout, "%s\nsha256 %s\noutput %dx%dx%d\n", path, b.SHA256(), c, h, w)
	for _, r := range b.Rewrites() {
		fmt.Fprintf(env.stdout, "rewrite %s\n", r)
	}
	if !profile {
		return nil
	}
	r := rand.New(rand.NewPCG(1, 2))
	in := make([]float32, 3*size*size)
	for i := range in {
		in[i] = float32(r.NormFloat64())
	}
	e := make([]float32, filmDim)
	if filmDim == 0 {
		e = nil
	}
	feat := make([]float32, c*h*w)
	if err := b.Run(in, e, feat); err != nil { // warm-up
		return err
	}
	times := make([]time.Duration, frames)
	var prof layerProfile
	for i := range times {
		start := time.Now()
		if err := b.Run(in, e, feat); err != nil {
			return err
		}
		times[i] = time.Since(start)
		prof.add(b.LayerTimings())
	}
	slices.Sort(times)
	fmt.Fprintf(env.stdout, "%.2f ms per frame (median of %d frames, %d OpenCV threads)\n",
		float64(times[frames/2].Microseconds())/1000, frames, vision.OpenCVThreads())
	prof.write(env.stdout, frames)
	return nil
}

// layerProfile sums OpenCV's per-layer times over frames, by layer type
// and by part of the network: the first component of the layer's name
// ("stem", "blocks.3", "head" in the generated EfficientNets), in the
// order the parts first run.
type layerProfile struct {
	byType, byPart map[string]time.Duration
	count          map[string]int // layers of each type in a frame
	types, parts   []string
	total          time.Duration
}

func (p *layerProfile) add(ts []vision.LayerTiming) {
	if p.byType == nil {
		p.byType, p.byPart, p.count = map[string]time.Duration{}, map[string]time.Duration{}, map[string]int{}
		for _, t := range ts {
			p.count[t.Type]++
		}
	}
	for _, t := range ts {
		if _, ok := p.byType[t.Type]; !ok {
			p.types = append(p.types, t.Type)
		}
		part := layerPart(t.Name)
		if _, ok := p.byPart[part]; !ok {
			p.parts = append(p.parts, part)
		}
		p.byType[t.Type] += t.Time
		p.byPart[part] += t.Time
		p.total += t.Time
	}
}

// layerPart is the first component of an OpenCV layer name, without the
// ONNX importer's "onnx_node!" prefix.
func layerPart(name string) string {
	name = strings.TrimLeft(strings.TrimPrefix(name, "onnx_node!"), "/")
	if i := strings.IndexByte(name, '/'); i > 0 {
		return name[:i]
	}
	return name
}

// write prints the mean frame by layer type, slowest first, then by part.
func (p *layerProfile) write(w io.Writer, frames int) {
	mean := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(frames) }
	types := slices.Clone(p.types)
	sort.SliceStable(types, func(i, j int) bool { return p.byType[types[i]] > p.byType[types[j]] })
	fmt.Fprintf(w, "mean frame by layer type (%.1f ms):\n", mean(p.total))
	for _, k := range types {
		fmt.Fprintf(w, "  %-14s %4d layers %8.2f ms\n", k, p.count[k], mean(p.byType[k]))
	}
	fmt.Fprintf(w, "mean frame by part:\n")
	for _, k := range p.parts {
		fmt.Fprintf(w, "  %-14s %8.2f ms\n", k, mean(p.byPart[k]))
	}
}
