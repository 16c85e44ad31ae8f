package train

import (
	"path/filepath"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/ttmrobot/ttm/internal/imagetest"
)

// TestClipWarmUp: the loss axis leaves out the first 5 % of the records
// only when they fall outside the range of the rest (plus a tenth of it
// each side).
func TestClipWarmUp(t *testing.T) {
	decaying := func(n int, first float64) plotter.XYs {
		xy := make(plotter.XYs, n)
		for i := range xy {
			xy[i] = plotter.XY{X: float64(i), Y: 8 - float64(i)/float64(n)} // 8 down to 7 + 1/n
		}
		xy[0].Y = first
		return xy
	}
	for _, c := range []struct {
		name    string
		xy      plotter.XYs
		clipped bool
		lo, hi  float64
	}{
		// 100 records: the rest run from 8 - 5/100 to 8 - 99/100, a range
		// of 0.94, so the axis is that with 0.094 each side.
		{"warm-up far above", decaying(100, 25), true, 8 - 0.99 - 0.094, 8 - 0.05 + 0.094},
		{"warm-up within the margin", decaying(100, 8.0), false, 0, 0},
		{"too short to leave any out", decaying(19, 25), false, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := plot.New()
			l, err := plotter.NewLine(c.xy)
			if err != nil {
				t.Fatal(err)
			}
			p.Add(l)
			dataLo, dataHi := p.Y.Min, p.Y.Max
			if got := clipWarmUp(p, c.xy); got != c.clipped {
				t.Errorf("clipped %v, want %v", got, c.clipped)
			}
			if !c.clipped {
				if p.Y.Min != dataLo || p.Y.Max != dataHi {
					t.Errorf("axis %g..%g, want the data's %g..%g", p.Y.Min, p.Y.Max, dataLo, dataHi)
				}
				return
			}
			const tol = 1e-9
			if d := p.Y.Min - c.lo; d > tol || d < -tol {
				t.Errorf("axis from %g, want %g", p.Y.Min, c.lo)
			}
			if d := p.Y.Max - c.hi; d > tol || d < -tol {
				t.Errorf("axis to %g, want %g", p.Y.Max, c.hi)
			}
		})
	}
}

// TestPlotCurve writes a curve with and without the auxiliary losses'
// panel: the one with it is a third taller (three panels of 3 inches
// against two).
func TestPlotCurve(t *testing.T) {
	dir := t.TempDir()
	heights := map[bool]int{}
	for _, aux := range []bool{false, true} {
		var history []Record
		for i := 1; i <= 40; i++ {
			r := Record{Step: 20 * i, Loss: 8 + 20/float64(i), BinAcc: 1 - 1/float64(i+1)}
			if aux {
				r.KeypointLoss, r.GoalLoss = 4+10/float64(i), 0.1
			}
			history = append(history, r)
		}
		path := filepath.Join(dir, "curve.png")
		if err := PlotCurve(path, "test", history); err != nil {
			t.Fatal(err)
		}
		heights[aux] = imagetest.PNG(t, path).Bounds().Dy()
	}
	if 2*heights[true] != 3*heights[false] {
		t.Errorf("heights %d with the auxiliary panel, %d without; want 3:2", heights[true], heights[false])
	}
	if err := PlotCurve(filepath.Join(dir, "empty.png"), "test", nil); err == nil {
		t.Error("a curve of no records: no error")
	}
}
