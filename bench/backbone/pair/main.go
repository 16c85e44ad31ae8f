// Command pair times an ONNX backbone in two runtimes taking turns: the
// project's (vision.Backbone: OpenCV DNN with the project's rewrites and
// layers, in this process) and ONNX Runtime's CPU provider
// (bench/backbone/ort.mjs in paced mode, a Node.js child process), on the
// same file and thread count. Each turn starts after -gap idle (ORT's
// workers stop spinning when its run ends, so neither side's threads take
// a core from the other's frame), runs -warm untimed frames and times the
// next; with -warm 0 the timed frame is cold, as a 10 Hz node's is. The
// side that goes first alternates. A pair of turns takes a fraction of a
// second, so a VM's speed drifting over seconds moves both; the ratio
// reported is the median of the pairs' ratios, with a 95 % interval.
//
//	go run ./bench/backbone/pair -onnx bin/bench/backbone/b3-300.onnx -size 300 -threads 2
//
// Prints `ours_ms_median`, `ort_ms_median` and `ratio_median R LO HI`;
// with -times first each pair, `pair OURS ORT` (ms).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ttmrobot/ttm/vision"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pair:", err)
		os.Exit(1)
	}
}

func run() error {
	file := flag.String("onnx", "", "ONNX backbone")
	size := flag.Int("size", 0, "input height and width")
	threads := flag.Int("threads", 2, "threads per side")
	frames := flag.Int("frames", 40, "timed pairs of frames (after 3 warm-up frames each)")
	gap := flag.Duration("gap", 100*time.Millisecond, "idle time before each side's turn")
	warm := flag.Int("warm", 1, "untimed frames at the start of each side's turn, before its timed frame")
	script := flag.String("ort", "bench/backbone/ort.mjs", "the ONNX Runtime side")
	times := flag.Bool("times", false, "print each pair's times")
	flag.Parse()
	if *file == "" || *size <= 0 || *threads < 1 || *frames < 8 {
		flag.Usage()
		return fmt.Errorf("need -onnx, -size, -threads >= 1 and -frames >= 8")
	}

	b, err := vision.OpenBackbone(vision.BackboneSpec{Path: *file, Height: *size, Width: *size, Threads: *threads}, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	if got := vision.OpenCVThreads(); got != *threads {
		return fmt.Errorf("OpenCV runs %d threads, want %d", got, *threads)
	}
	c, h, w := b.OutputShape()
	r := rand.New(rand.NewPCG(1, 2))
	in := make([]float32, 3**size**size)
	for i := range in {
		in[i] = float32(r.NormFloat64())
	}
	feat := make([]float32, c*h*w)
	ours := func() (float64, error) {
		time.Sleep(*gap)
		for range *warm {
			if err := b.Run(in, nil, feat); err != nil {
				return 0, err
			}
		}
		start := time.Now()
		err := b.Run(in, nil, feat)
		return float64(time.Since(start).Microseconds()) / 1000, err
	}

	cmd := exec.Command("node", *script, *file, strconv.Itoa(*threads), "1", "paced")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		return fmt.Errorf("%s did not start: %v", *script, lines.Err())
	}
	ort := func() (float64, error) {
		time.Sleep(*gap)
		var ms float64
		for range *warm + 1 {
			if _, err := io.WriteString(stdin, "run\n"); err != nil {
				return 0, err
			}
			if !lines.Scan() {
				return 0, fmt.Errorf("%s stopped: %v", *script, lines.Err())
			}
			v, ok := strings.CutPrefix(lines.Text(), "ort_ms ")
			if !ok {
				return 0, fmt.Errorf("%s printed %q", *script, lines.Text())
			}
			if ms, err = strconv.ParseFloat(v, 64); err != nil {
				return 0, err
			}
		}
		return ms, nil
	}

	for range 3 {
		if _, err := ours(); err != nil {
			return err
		}
	}
	var o, x, ratio []float64
	sides := [2]func() (float64, error){ours, ort}
	for i := range *frames {
		var t [2]float64 // ours, ORT
		for k := range 2 {
			j := (i + k) % 2 // ours first on even pairs, ORT first on odd ones
			if t[j], err = sides[j](); err != nil {
				return err
			}
		}
		o, x, ratio = append(o, t[0]), append(x, t[1]), append(ratio, t[0]/t[1])
		if *times {
			fmt.Printf("pair %.3f %.3f\n", t[0], t[1])
		}
	}
	lo, mid, hi := medianInterval(ratio)
	fmt.Printf("ours_ms_median %.2f\nort_ms_median %.2f\nratio_median %.3f %.3f %.3f\n", median(o), median(x), mid, lo, hi)
	return nil
}

func median(v []float64) float64 {
	_, m, _ := medianInterval(v)
	return m
}

// medianInterval returns the median of v and a distribution-free 95 %
// interval for it: the order statistics n/2 ∓ 0.98·√n (the binomial's
// normal approximation).
func medianInterval(v []float64) (lo, mid, hi float64) {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		mid = s[n/2]
	} else {
		mid = (s[n/2-1] + s[n/2]) / 2
	}
	d := 0.98 * math.Sqrt(float64(n))
	i := max(0, int(math.Floor(float64(n)/2-d))-1)
	j := min(n-1, int(math.Ceil(float64(n)/2+d))-1)
	return s[i], mid, s[j]
}
