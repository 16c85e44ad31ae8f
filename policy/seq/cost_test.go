package seq

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/imagetest"
	"github.com/ttmrobot/ttm/internal/nn"
)

// costModels builds every model at a size, initialised.
func costModels(t testing.TB, size string) []Model {
	var ms []Model
	for _, name := range Names() {
		c, err := Preset(name, size)
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(name, c)
		if err != nil {
			t.Fatal(err)
		}
		m.Init(1)
		ms = append(ms, m)
	}
	return ms
}

func TestCostTable(t *testing.T) {
	defer func(d time.Duration) { costTimeTarget = d }(costTimeTarget)
	costTimeTarget = time.Millisecond
	models := costModels(t, "small")
	steps := []int{1, 10, 300} // past MaxSteps (128): the growing states are built larger
	rows, err := CostTable(models, steps)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(models)*len(steps) {
		t.Fatalf("%d rows for %d models at %d steps", len(rows), len(models), len(steps))
	}
	for i, row := range rows {
		m := models[i/len(steps)]
		if row.Model != m.Name() || row.Step != steps[i%len(steps)] {
			t.Fatalf("row %d is %s at step %d", i, row.Model, row.Step)
		}
		if row.FLOPs != m.FLOPs(row.Step-1) || row.Params != NumParams(m) || row.Latency <= 0 || row.Iterations < 1 || row.Note != "" {
			t.Errorf("row %+v", row)
		}
		if i%len(steps) > 0 {
			prev := rows[i-1]
			grows := row.Model == "causal" || row.Model == "concat"
			if (row.StateBytes > prev.StateBytes) != grows || (row.FLOPs > prev.FLOPs) != grows {
				t.Errorf("%s: state %d -> %d bytes, FLOPs %d -> %d from step %d to %d; growing should be %v",
					row.Model, prev.StateBytes, row.StateBytes, prev.FLOPs, row.FLOPs, prev.Step, row.Step, grows)
			}
		}
	}
	for _, row := range rows {
		t.Logf("%-10s step %5d  %9.3f ms  %12d FLOPs  state %9d B", row.Model, row.Step, float64(row.Latency)/1e6, row.FLOPs, row.StateBytes)
	}
	// A cache over the budget is measured on one shared layer buffer.
	defer func(b int64) { CostStateBudget = b }(CostStateBudget)
	CostStateBudget = 1 << 10
	causal := models[5]
	rows, err = CostTable([]Model{causal}, []int{20})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rows[0].Note, "share one key/value buffer") || rows[0].Latency <= 0 {
		t.Errorf("over budget: %+v", rows[0])
	}
}

func TestCostTableErrors(t *testing.T) {
	m := costModels(t, "small")[:1]
	for _, c := range []struct {
		models []Model
		steps  []int
		want   string
	}{
		{nil, []int{1}, "no models"},
		{m, nil, "no steps"},
		{m, []int{1, 0}, "step 0: steps count from 1"},
	} {
		if _, err := CostTable(c.models, c.steps); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CostTable(%d models, %v): %v, want %q", len(c.models), c.steps, err, c.want)
		}
	}
}

func TestPlotCost(t *testing.T) {
	var rows []CostRow
	for i, name := range []string{"ttm", "causal"} {
		for _, s := range []int{1, 10, 100, 1000, 10000} {
			lat := time.Millisecond
			if i == 1 {
				lat *= time.Duration(s)
			}
			rows = append(rows, CostRow{Model: name, Step: s, Latency: lat, FLOPs: int64(lat)})
		}
	}
	path := filepath.Join(t.TempDir(), "cost.png")
	if err := PlotCost(path, rows); err != nil {
		t.Fatal(err)
	}
	if b := imagetest.PNG(t, path).Bounds(); b.Dx() < 500 || b.Dy() < 500 {
		t.Errorf("image is %v", b)
	}
	if err := PlotCost(path, nil); err == nil {
		t.Error("no rows plotted without an error")
	}
	one := []CostRow{{Model: "ttm", Step: 1, Latency: time.Millisecond, FLOPs: 1000}}
	if err := PlotCost(path, one); err != nil {
		t.Errorf("a single step: %v", err)
	}
	rows[0].Latency = 0
	if err := PlotCost(path, rows); err == nil || !strings.Contains(err.Error(), "log axes") {
		t.Errorf("a zero latency: %v", err)
	}
}

// TestCostTableRobot measures the cost table at the robot width, one
// thread per model, and writes the chart: SEQ_COST_PNG=/path/cost.png go test -run CostTableRobot
// -v -timeout 30m ./policy/seq. It takes minutes (the causal Transformer
// at step 10 000 attends over 480 000 keys in each of 8 layers), so it
// runs only when asked.
func TestCostTableRobot(t *testing.T) {
	path := os.Getenv("SEQ_COST_PNG")
	if path == "" {
		t.Skip("set SEQ_COST_PNG to measure the robot-width cost table")
	}
	// One thread for every model: the TTM's packed products and the
	// others' OpenBLAS products alike.
	defer nn.SetThreads(nn.Threads())
	nn.SetThreads(1)
	nn.SetParallelism(1)
	rows, err := CostTable(costModels(t, "robot"), []int{1, 10, 100, 1000, 10000})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("| model | step | latency (ms) | GFLOPs | state (MB) | timed steps | note |")
	t.Log("|---|---|---|---|---|---|---|")
	for _, r := range rows {
		t.Logf("| %s | %d | %.3f | %.4g | %.3g | %d | %s |", r.Model, r.Step, float64(r.Latency)/1e6, float64(r.FLOPs)/1e9, float64(r.StateBytes)/1e6, r.Iterations, r.Note)
	}
	if err := PlotCost(path, rows); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkStepAt times Runner.Step at the small size at three places in
// an episode (see CostTable for the State stand-ins).
func BenchmarkStepAt(b *testing.B) {
	for _, m := range costModels(b, "small") {
		cs := m.(costStater)
		nd, rd := sizes(m)
		in, out := make([]float32, nd), make([]float32, rd)
		for _, step := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("%s/step=%d", m.Name(), step), func(b *testing.B) {
				st, _ := cs.costState(step-1, rand.New(rand.NewPCG(1, 2)))
				run := m.NewRunner()
				run.Step(st, in, out) // grow scratch space to this step
				cs.rewind(st)
				b.ReportAllocs()
				for b.Loop() {
					run.Step(st, in, out)
					cs.rewind(st)
				}
				b.ReportMetric(float64(m.FLOPs(step-1))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
