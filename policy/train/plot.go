package train

import (
	"fmt"
	"io"

	"github.com/ttmrobot/ttm/internal/atomicfile"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// PlotCurve writes the learning curve (loss per step and bin accuracy
// against updates) as a PNG.
func PlotCurve(path, title string, history []Record) error {
	if len(history) == 0 {
		return fmt.Errorf("plot %s: no records", path)
	}
	loss, acc := make(plotter.XYs, len(history)), make(plotter.XYs, len(history))
	for i, r := range history {
		loss[i] = plotter.XY{X: float64(r.Step), Y: r.Loss}
		acc[i] = plotter.XY{X: float64(r.Step), Y: r.BinAcc}
	}
	top := plot.New()
	top.Title.Text = title
	top.X.Label.Text = "update"
	top.Y.Label.Text = "loss per step (Σ over action dimensions)"
	bottom := plot.New()
	bottom.X.Label.Text = "update"
	bottom.Y.Label.Text = "bin accuracy"
	bottom.Y.Min, bottom.Y.Max = 0, 1
	for _, s := range []struct {
		p  *plot.Plot
		xy plotter.XYs
	}{{top, loss}, {bottom, acc}} {
		l, err := plotter.NewLine(s.xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		s.p.Add(l, plotter.NewGrid())
	}
	const w, h = 8 * vg.Inch, 6 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(8)}
	plots := [][]*plot.Plot{{top}, {bottom}}
	canvases := plot.Align(plots, tiles, dc)
	top.Draw(canvases[0][0])
	bottom.Draw(canvases[1][0])
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w)
		return err
	})
}
