package eval

import (
	"fmt"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot file names in the output directory.
const (
	PlotSuccess = "success_per_family.png"
	PlotLength  = "success_vs_length.png"
)

// WritePlots writes the ledger's plots as PNG into dir:
//   - PlotSuccess: success rate per family (and overall), one bar per run,
//     with 95 % Wilson interval whiskers;
//   - PlotLength: success vs episode length: for every step budget T, the
//     share of episodes that end in success and first reached their goal
//     within T steps (EpisodeResult.StepsToSuccess), one line per run.
func WritePlots(dir string, l *Ledger) error {
	if err := successPlot(filepath.Join(dir, PlotSuccess), l); err != nil {
		return fmt.Errorf("plot %s: %w", PlotSuccess, err)
	}
	if err := lengthPlot(filepath.Join(dir, PlotLength), l); err != nil {
		return fmt.Errorf("plot %s: %w", PlotLength, err)
	}
	return nil
}

// errPoints are bar tops with their interval, as YErrorBars wants them.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

func successPlot(path string, l *Ledger) error {
	p := plot.New()
	p.Title.Text = "Success per task family (95 % Wilson interval)"
	p.Y.Label.Text = "success rate"
	const heightPt = 4 * 72
	// Room above 1 for the legend, one line per run.
	legend := math.Min(0.6, float64(14*len(l.Runs)+12)/(heightPt-60))
	p.Y.Min, p.Y.Max = 0, 1/(1-legend)
	p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"}, {Value: 0.5, Label: "0.5"},
		{Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"}}
	labels := append(append([]string(nil), l.Setup.Tasks...), "overall")
	p.NominalX(labels...)
	nr := len(l.Runs)
	width := 0.8 / float64(nr)
	for ri := range l.Runs {
		r := &l.Runs[ri]
		col := plotutil.Color(ri)
		pts := errPoints{}
		for fi, name := range labels {
			st, ok := r.PerFamily[name]
			if name == "overall" {
				st, ok = r.Overall, true
			}
			if !ok {
				continue
			}
			x := float64(fi) - 0.4 + width*(float64(ri)+0.5)
			y := st.SuccessRate
			bar, err := plotter.NewPolygon(plotter.XYs{{X: x - width/2, Y: 0}, {X: x + width/2, Y: 0}, {X: x + width/2, Y: y}, {X: x - width/2, Y: y}})
			if err != nil {
				return err
			}
			bar.Color = col
			bar.LineStyle.Width = 0
			p.Add(bar)
			if len(pts.XYs) == 0 {
				p.Legend.Add(r.Name, bar)
			}
			pts.XYs = append(pts.XYs, plotter.XY{X: x, Y: y})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{y - st.CILow, st.CIHigh - y})
		}
		if len(pts.XYs) > 0 {
			eb, err := plotter.NewYErrorBars(pts)
			if err != nil {
				return err
			}
			eb.CapWidth = vg.Points(3)
			p.Add(eb)
		}
	}
	p.Legend.Top = true
	w := vg.Length(math.Min(16, math.Max(6, 1.5+0.25*float64(len(labels)*nr)+0.4*float64(len(labels))))) * vg.Inch
	return p.Save(w, heightPt, path)
}

func lengthPlot(path string, l *Ledger) error {
	p := plot.New()
	p.Title.Text = "Success vs episode length"
	p.X.Label.Text = "step budget T"
	p.Y.Label.Text = "success within T steps"
	p.Y.Min, p.Y.Max = 0, 1.05
	p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"}, {Value: 0.5, Label: "0.5"},
		{Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"}}
	longest := 1
	for _, r := range l.Runs {
		for _, e := range r.Episodes {
			longest = max(longest, e.Steps)
		}
	}
	p.X.Min, p.X.Max = 0, float64(longest)
	for ri := range l.Runs {
		r := &l.Runs[ri]
		within := make([]int, longest+1) // successful episodes whose goal first held after T steps
		for _, e := range r.Episodes {
			if e.Success && e.StepsToSuccess != nil {
				within[min(max(*e.StepsToSuccess, 0), longest)]++
			}
		}
		pts := make(plotter.XYs, 0, longest+1)
		n := 0
		for T := range longest + 1 {
			n += within[T]
			pts = append(pts, plotter.XY{X: float64(T), Y: float64(n) / float64(len(r.Episodes))})
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(ri)
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(r.Name, line)
	}
	p.Legend.Top, p.Legend.Left = true, true
	return p.Save(7*vg.Inch, 4*vg.Inch, path)
}
