package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ttmrobot/ttm/internal/atomicfile"
	"github.com/ttmrobot/ttm/internal/nn"
	"github.com/ttmrobot/ttm/policy/seq"
)

func init() {
	register(command{name: "cost", summary: "per-step latency and FLOPs of every sequence model at steps 1..10000 of an episode, with a chart", run: runCost})
}

// runCost measures the paper's flat-cost claim: each sequence model's
// step at several places in an episode, on one core.
func runCost(env *environment, args []string) error {
	fl := newFlags(env, "cost", "[--size robot|small] [--models all|NAME,...] [--steps 1,10,100,1000,10000] --out DIR")
	size := fl.String("size", "robot", "model width: robot (d 512, the paper's) or small")
	models := fl.String("models", "all", "models to measure: all, or names separated by commas ("+strings.Join(seq.Names(), ", ")+")")
	stepList := fl.String("steps", "1,10,100,1000,10000", "places in the episode to measure, counted from 1")
	out := fl.String("out", "", "write cost.json, cost.md and cost.png into `DIR`")
	if err := parseFlags(fl, args, false); err != nil {
		return err
	}
	if err := requireFlag("out", *out); err != nil {
		return err
	}
	if err := makeOutDir(*out); err != nil {
		return err
	}
	var steps []int
	for _, f := range strings.Split(*stepList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("%w: --steps %q: want positive integers separated by commas", errUsage, *stepList)
		}
		steps = append(steps, n)
	}
	names := seq.Names()
	if *models != "all" {
		names = strings.Split(*models, ",")
	}
	var ms []seq.Model
	for _, name := range names {
		c, err := seq.Preset(name, *size)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		m, err := seq.New(name, c)
		if err != nil {
			return err
		}
		m.Init(1)
		ms = append(ms, m)
	}
	// One core per model, so the lines compare the models' work.
	nn.SetThreads(1)
	nn.SetParallelism(1)
	began := time.Now()
	var rows []seq.CostRow
	for _, m := range ms {
		env.log.Info("measuring", "model", m.Name(), "steps", *stepList)
		r, err := seq.CostTable([]seq.Model{m}, steps)
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	js, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(filepath.Join(*out, "cost.json"), append(js, '\n')); err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "Per-step latency (ms, median, one core) and GFLOPs at each step of an episode, %s width.\n\n", *size)
	fmt.Fprintf(&md, "| model | params |")
	for _, s := range steps {
		fmt.Fprintf(&md, " step %d |", s)
	}
	md.WriteString("\n|---|---|" + strings.Repeat("---|", len(steps)) + "\n")
	tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "model\tparams\t")
	for _, s := range steps {
		fmt.Fprintf(tw, "step %d\t", s)
	}
	fmt.Fprintln(tw)
	for i := 0; i < len(rows); i += len(steps) {
		fmt.Fprintf(&md, "| %s | %d |", rows[i].Model, rows[i].Params)
		fmt.Fprintf(tw, "%s\t%d\t", rows[i].Model, rows[i].Params)
		for _, r := range rows[i : i+len(steps)] {
			ms := float64(r.Latency) / float64(time.Millisecond)
			fmt.Fprintf(&md, " %.3g ms / %.3g GF |", ms, float64(r.FLOPs)/1e9)
			fmt.Fprintf(tw, "%.3g ms / %.3g GF\t", ms, float64(r.FLOPs)/1e9)
		}
		md.WriteString("\n")
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.Note != "" {
			fmt.Fprintf(&md, "\n%s at step %d: %s\n", r.Model, r.Step, r.Note)
		}
	}
	if err := atomicfile.WriteBytes(filepath.Join(*out, "cost.md"), []byte(md.String())); err != nil {
		return err
	}
	if err := seq.PlotCost(filepath.Join(*out, "cost.png"), rows); err != nil {
		return err
	}
	env.log.Info("done", "rows", len(rows), "took", time.Since(began).Round(time.Second), "dir", *out)
	return nil
}
