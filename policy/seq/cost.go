package seq

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/ttmrobot/ttm/internal/atomicfile"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The cost of a step as a function of its place in the episode: the TTM
// paper's claim is that the TTM's (and any fixed-state model's) does not
// grow, while attending over the whole history does.

// CostRow is one model's cost at one step of an episode.
type CostRow struct {
	Model string
	// Step is the measured step's place in the episode, counted from 1:
	// Step-1 steps precede it.
	Step       int
	FLOPs      int64         // Model.FLOPs(Step-1)
	Latency    time.Duration // median wall time of Runner.Step
	Iterations int           // steps timed
	Params     int           // parameters (float32)
	StateBytes int64         // bytes the State needs at this step
	Note       string        // how the measurement departs from a real episode, if it does
}

// CostStateBudget bounds the memory CostTable gives one State. A causal
// Transformer's cache past it (the robot size needs 15.7 GB at step
// 10 000) is measured with every layer reading and writing one layer's
// buffer: the same products over the same number of keys, so the same
// time, in 1/L of the memory; the row's Note says so.
var CostStateBudget int64 = 3 << 30

// costTimeTarget is how long CostTable times one row for (at least one
// step, at most costMaxIterations); tests shorten it.
var costTimeTarget = 300 * time.Millisecond

const costMaxIterations = 25

// costStater is what CostTable needs from a model beyond Model: a State
// as it would be after `steps` steps, filled with random tokens instead of
// running them, and a way to undo one Runner.Step on it so each timed step
// runs at the same place.
type costStater interface {
	costState(steps int, r *rand.Rand) (State, string)
	rewind(State)
	stateBytes(steps int) int64
}

// CostTable measures every model's Runner.Step at each of steps (1-based
// places in an episode, for example 1, 10, 100, 1000, 10000), in that
// order, on the calling goroutine: for each, it builds the State the
// earlier steps would leave (random tokens, not real steps), runs one
// step untimed, then times steps at the same place (rewinding the State
// in between) and reports the median. Products run on the threads the
// caller configured (nn.SetThreads for OpenBLAS, nn.SetParallelism for
// the TTM's packed products); set both to 1 to compare models per core.
// Latencies are wall time on a machine other processes may share: noisy,
// compare them within one table.
func CostTable(models []Model, steps []int) ([]CostRow, error) {
	if len(models) == 0 || len(steps) == 0 {
		return nil, errors.New("seq cost: no models or no steps to measure")
	}
	for _, s := range steps {
		if s < 1 {
			return nil, fmt.Errorf("seq cost: step %d: steps count from 1", s)
		}
	}
	var rows []CostRow
	for _, m := range models {
		cs, ok := m.(costStater)
		if !ok {
			return nil, fmt.Errorf("seq cost: model %s (%T) cannot build a State at a given step", m.Name(), m)
		}
		sh := m.Shape()
		r := rand.New(rand.NewPCG(1, hashString(m.Name())))
		input := make([]float32, sh.InputTokens*sh.Dim)
		for i := range input {
			input[i] = float32(r.NormFloat64())
		}
		output := make([]float32, sh.OutputTokens*sh.Dim)
		run := m.NewRunner()
		for _, step := range steps {
			st, note := cs.costState(step-1, r)
			run.Step(st, input, output) // warm up: scratch space, caches
			cs.rewind(st)
			var took []time.Duration
			var total time.Duration
			for len(took) < costMaxIterations && (len(took) == 0 || total < costTimeTarget) {
				t0 := time.Now()
				run.Step(st, input, output)
				dt := time.Since(t0)
				cs.rewind(st)
				took = append(took, dt)
				total += dt
			}
			slices.Sort(took)
			rows = append(rows, CostRow{
				Model: m.Name(), Step: step, FLOPs: m.FLOPs(step - 1), Latency: took[len(took)/2], Iterations: len(took),
				Params: len(m.Params()), StateBytes: cs.stateBytes(step - 1), Note: note,
			})
		}
	}
	return rows, nil
}

// fillRandom fills x with random values of standard deviation about 1,
// tiling one random block (the values do not matter for timing, and
// drawing hundreds of millions of normals would take longer than the
// measurement).
func fillRandom(x []float32, r *rand.Rand) {
	const block = 1 << 14
	n := min(block, len(x))
	for i := range x[:n] {
		x[i] = float32(r.NormFloat64())
	}
	for i := n; i < len(x); i += n {
		copy(x[i:], x[:n])
	}
}

// Fixed-size states: fill the tokens, set the step count; a step's cost
// does not depend on the values, so rewinding is not needed.

func (t *TTM) costState(steps int, r *rand.Rand) (State, string) {
	s := t.NewState().(*ttmState)
	fillRandom(s.mem.Tokens, r)
	s.mem.Steps = int64(steps)
	return s, ""
}
func (t *TTM) rewind(State) {}
func (t *TTM) stateBytes(int) int64 {
	return 4 * int64(t.model.Config.MemorySize*t.model.Config.Dim)
}

func (m *Window) costState(steps int, r *rand.Rand) (State, string) {
	s := m.NewState().(*windowState)
	fillRandom(s.buf, r)
	s.steps, s.head = steps, steps%s.h
	return s, ""
}
func (m *Window) rewind(State) {}
func (m *Window) stateBytes(int) int64 {
	return 4 * int64(m.cfg.Window*m.cfg.InputTokens*m.cfg.Dim)
}

func (m *Recurrent) costState(steps int, r *rand.Rand) (State, string) {
	s := m.NewState().(*tokenState)
	fillRandom(s.tokens, r)
	s.steps = steps
	return s, ""
}
func (m *Recurrent) rewind(State) {}
func (m *Recurrent) stateBytes(int) int64 {
	return 4 * int64(m.cfg.StateTokens*m.cfg.Dim)
}

func (m *LSTM) costState(steps int, r *rand.Rand) (State, string) {
	s := m.NewState().(*lstmState)
	fillRandom(s.hc, r)
	s.steps = steps
	return s, ""
}
func (m *LSTM) rewind(State)         {}
func (m *LSTM) stateBytes(int) int64 { return 4 * int64(2*m.cfg.LSTMHidden) }

// Growing states: fill `steps` steps of cache, with room for one more;
// rewinding drops the step just taken.

func (m *Causal) costState(steps int, r *rand.Rand) (State, string) {
	c := m.cfg
	s := &kvState{n: c.InputTokens, r: c.OutputTokens, d: c.Dim, k: make([][]float32, c.Layers), v: make([][]float32, c.Layers)}
	note := ""
	if m.stateBytes(steps+1) > CostStateBudget {
		s.shared = true
		note = fmt.Sprintf("the %d layers share one key/value buffer: the full cache needs %.1f GB", c.Layers, float64(m.stateBytes(steps+1))/1e9)
	}
	s.reserve(steps + 1)
	for l := range s.k {
		if s.shared && l > 0 {
			break
		}
		fillRandom(s.k[l], r)
		fillRandom(s.v[l], r)
	}
	s.steps = steps
	return s, note
}
func (m *Causal) rewind(s State) { s.(*kvState).steps-- }
func (m *Causal) stateBytes(steps int) int64 {
	c := m.cfg
	return 4 * 2 * int64(c.Layers) * int64(steps*c.InputTokens+c.OutputTokens) * int64(c.Dim)
}

func (m *Concat) costState(steps int, r *rand.Rand) (State, string) {
	c := m.cfg
	s := &memState{n: c.InputTokens, r: c.OutputTokens, d: c.Dim}
	s.reserve(steps + 1)
	fillRandom(s.mem, r)
	fillRandom(s.logT, r)
	s.steps = steps
	return s, ""
}
func (m *Concat) rewind(s State) { s.(*memState).steps-- }
func (m *Concat) stateBytes(steps int) int64 {
	c := m.cfg
	return 4 * int64(steps*c.InputTokens) * int64(c.Dim+c.OutputTokens)
}

// costColors tell eight lines apart (Tableau 10).
var costColors = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
	color.RGBA{227, 119, 194, 255}, color.RGBA{127, 127, 127, 255}, color.RGBA{188, 189, 34, 255},
	color.RGBA{23, 190, 207, 255},
}

// PlotCost writes rows (from CostTable) as a PNG: latency (top) and FLOPs
// (bottom) against the step, both on log-log axes, one line per model.
func PlotCost(path string, rows []CostRow) error {
	if len(rows) == 0 {
		return fmt.Errorf("plot %s: no rows", path)
	}
	var order []string
	byModel := map[string][]CostRow{}
	for _, r := range rows {
		if r.Step < 1 || r.Latency <= 0 || r.FLOPs <= 0 {
			return fmt.Errorf("plot %s: %s at step %d: latency %v and FLOPs %d cannot go on log axes", path, r.Model, r.Step, r.Latency, r.FLOPs)
		}
		if _, ok := byModel[r.Model]; !ok {
			order = append(order, r.Model)
		}
		byModel[r.Model] = append(byModel[r.Model], r)
	}
	top, bottom := plot.New(), plot.New()
	top.Title.Text = "Cost of one step against its place in the episode"
	top.Y.Label.Text = "latency per step (ms)"
	bottom.Y.Label.Text = "FLOPs per step"
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Label.Text = "step of the episode"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		p.Add(plotter.NewGrid())
		p.Legend.Top, p.Legend.Left = true, true
	}
	for i, name := range order {
		rs := byModel[name]
		slices.SortFunc(rs, func(a, b CostRow) int { return a.Step - b.Step })
		lat, fl := make(plotter.XYs, len(rs)), make(plotter.XYs, len(rs))
		for j, r := range rs {
			lat[j] = plotter.XY{X: float64(r.Step), Y: float64(r.Latency) / 1e6}
			fl[j] = plotter.XY{X: float64(r.Step), Y: float64(r.FLOPs)}
		}
		for _, s := range []struct {
			p  *plot.Plot
			xy plotter.XYs
		}{{top, lat}, {bottom, fl}} {
			l, pts, err := plotter.NewLinePoints(s.xy)
			if err != nil {
				return fmt.Errorf("plot %s: %s: %w", path, name, err)
			}
			col := costColors[i%len(costColors)]
			l.Color, pts.Color = col, col
			l.Dashes = plotutil.Dashes(i)
			pts.Shape = plotutil.Shape(i)
			s.p.Add(l, pts)
			s.p.Legend.Add(name, l, pts)
		}
	}
	for _, p := range []*plot.Plot{top, bottom} {
		widenPoint(&p.X)
		widenPoint(&p.Y)
	}
	const w, h = 8 * vg.Inch, 10 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(8)}
	canvases := plot.Align([][]*plot.Plot{{top}, {bottom}}, tiles, dc)
	top.Draw(canvases[0][0])
	bottom.Draw(canvases[1][0])
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w)
		return err
	})
}

// widenPoint gives a log axis that spans a single value (one step, or
// equal latencies) a decade around it: a log scale of zero width has no
// ticks to draw.
func widenPoint(a *plot.Axis) {
	if a.Min == a.Max {
		a.Min, a.Max = a.Min/10, a.Max*10
	}
}
