package train

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	"github.com/ttmrobot/ttm/internal/atomicfile"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// warmUpShare is the share of a run's records the loss axis leaves out of
// its range: the first updates' loss is several times the rest, and an
// axis that holds it shows the remaining run as a flat line.
const warmUpShare = 0.05

// PlotCurve writes the learning curve as a PNG: the action loss per step,
// the auxiliary losses when the run has them (keypoints, goal probe), and
// the bin accuracy, against updates.
func PlotCurve(path, title string, history []Record) error {
	if len(history) == 0 {
		return fmt.Errorf("plot %s: no records", path)
	}
	n := len(history)
	loss, acc := make(plotter.XYs, n), make(plotter.XYs, n)
	keypoint, goal := make(plotter.XYs, n), make(plotter.XYs, n)
	var hasKeypoint, hasGoal bool
	for i, r := range history {
		x := float64(r.Step)
		loss[i] = plotter.XY{X: x, Y: r.Loss}
		acc[i] = plotter.XY{X: x, Y: r.BinAcc}
		keypoint[i] = plotter.XY{X: x, Y: r.KeypointLoss}
		goal[i] = plotter.XY{X: x, Y: r.GoalLoss}
		hasKeypoint = hasKeypoint || r.KeypointLoss != 0
		hasGoal = hasGoal || r.GoalLoss != 0
	}

	top := panel(title, "action loss per step")
	if err := addLine(top, loss, 0); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	clipped := clipWarmUp(top, loss)
	plots := []*plot.Plot{top}
	if hasKeypoint || hasGoal {
		aux := panel("", "")
		var series []plotter.XYs
		var names []string
		for i, s := range []struct {
			has  bool
			xy   plotter.XYs
			name string
		}{{hasKeypoint, keypoint, "keypoints (black)"}, {hasGoal, goal, "goal probe (red)"}} {
			if !s.has {
				continue
			}
			if err := addLine(aux, s.xy, i); err != nil {
				return fmt.Errorf("plot %s: %w", path, err)
			}
			series, names = append(series, s.xy), append(names, s.name)
		}
		aux.Y.Label.Text = "auxiliary loss per step: " + strings.Join(names, ", ")
		clipped = clipWarmUp(aux, series...) || clipped
		plots = append(plots, aux)
	}
	bottom := panel("", "bin accuracy")
	if err := addLine(bottom, acc, 0); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	bottom.Y.Min, bottom.Y.Max = 0, 1
	plots = append(plots, bottom)
	if clipped {
		top.Title.Text += fmt.Sprintf("\n(the first %.0f %% of updates run above the loss axes)", 100*warmUpShare)
	}

	w, h := 8*vg.Inch, vg.Length(3*len(plots))*vg.Inch
	img := vgimg.New(w, h)
	rows := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		rows[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(rows, draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Points(8)}, draw.New(img))
	for i, p := range plots {
		p.Draw(canvases[i][0])
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w)
		return err
	})
}

// clipWarmUp sets p's y axis to the range of series over the records
// after the warm-up share, with a margin of a tenth of it, when the
// warm-up's values fall outside it, and reports whether it did. It leaves
// short runs as they are.
func clipWarmUp(p *plot.Plot, series ...plotter.XYs) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, xy := range series {
		for _, v := range xy[warmUpLen(len(xy)):] {
			lo, hi = min(lo, v.Y), max(hi, v.Y)
		}
	}
	margin := (hi - lo) / 10
	lo, hi = lo-margin, hi+margin
	for _, xy := range series {
		for _, v := range xy[:warmUpLen(len(xy))] {
			if v.Y > hi || v.Y < lo {
				p.Y.Min, p.Y.Max = lo, hi
				return true
			}
		}
	}
	return false
}

// warmUpLen is how many of n records the loss axis leaves out.
func warmUpLen(n int) int { return int(warmUpShare * float64(n)) }

func panel(title, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "update"
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	return p
}

// addLine draws xy on p in the i-th line colour: black, red.
func addLine(p *plot.Plot, xy plotter.XYs, i int) error {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Color = []color.Color{color.Black, color.RGBA{R: 200, G: 60, B: 20, A: 255}}[i]
	p.Add(l)
	return nil
}
