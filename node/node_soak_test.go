package node

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
	"github.com/hashicorp/go-hclog"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/nodetest"
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/internal/rostest"
	"github.com/ttmrobot/ttm/policy"
)

// The soak harness: go test -run Soak -soak=10m ./node
//
// It runs the node in this process against a real roscore for the given
// time, with a Go camera publishing rgb8 frames with fresh stamps, and
// reports deadline misses, loop jitter, end-to-end latency from the image
// stamp to the published action, inference time, the publish rate a
// subscriber sees and the process's RSS at start and end. Without -soak the
// test is skipped: it is a measurement, not part of `make test`.
var (
	soakFor      = flag.Duration("soak", 0, "run TestSoak for this long (e.g. 1m, 10m)")
	soakPreset   = flag.String("soak-preset", "robot", "policy preset of the soak: robot (B0 at 224), robot-b3 (B3 at 300) or small")
	soakPolicy   = flag.String("soak-policy", "", "soak this checkpoint (and the backbone beside it) instead of a fresh -soak-preset policy")
	soakRate     = flag.Float64("soak-rate", 10, "control rate of the soak, Hz")
	soakCameraHz = flag.Float64("soak-camera-hz", 15, "camera rate of the soak, Hz")
	soakFollow   = flag.Bool("soak-follow-camera", true, "the node's ~follow_camera (false: ticks at a fixed phase)")
	soakThreads  = flag.Int("soak-threads", 0, "node threads (0: one per CPU)")
	soakOut      = flag.String("soak-out", "", "also write the soak report as JSON to this file")
)

// SoakReport is what TestSoak measures.
type SoakReport struct {
	Preset          string  `json:"preset"`
	RateHz          float64 `json:"rate_hz"`
	CameraHz        float64 `json:"camera_hz"`
	FollowCamera    bool    `json:"follow_camera"`
	Threads         int     `json:"threads"`
	Seconds         float64 `json:"seconds"`
	Ticks           uint64  `json:"ticks"`
	Acted           uint64  `json:"acted"`
	Stopped         uint64  `json:"stopped"`
	DeadlineMisses  uint64  `json:"deadline_misses"`
	Busy            uint64  `json:"busy_ticks"`
	SkippedTicks    uint64  `json:"skipped_ticks"`
	FramesIn        uint64  `json:"frames_in"`
	FramesDropped   uint64  `json:"frames_dropped"`
	RepeatedFrames  uint64  `json:"frames_repeated"`
	StaleTicks      uint64  `json:"stale_frame_ticks"`
	JitterP50MS     float64 `json:"jitter_p50_ms"`
	JitterP99MS     float64 `json:"jitter_p99_ms"`
	JitterMaxMS     float64 `json:"jitter_max_ms"`
	InferenceP50MS  float64 `json:"inference_p50_ms"`
	InferenceP99MS  float64 `json:"inference_p99_ms"`
	InferenceMaxMS  float64 `json:"inference_max_ms"`
	EndToEndP50MS   float64 `json:"end_to_end_p50_ms"`
	EndToEndP99MS   float64 `json:"end_to_end_p99_ms"`
	EndToEndMaxMS   float64 `json:"end_to_end_max_ms"`
	TickLatencyP99  float64 `json:"tick_latency_p99_ms"`
	ImageAgeP50MS   float64 `json:"image_age_p50_ms"` // the frame's age (stamp to tick) when a tick reads it
	ImageAgeP99MS   float64 `json:"image_age_p99_ms"`
	WarmupP50MS     float64 `json:"warmup_p50_ms"`
	WarmupP99MS     float64 `json:"warmup_p99_ms"`
	SubscriberHz    float64 `json:"subscriber_hz"`
	RSSStartMB      float64 `json:"rss_start_mb"`
	RSSMinute1MB    float64 `json:"rss_minute_1_mb"` // after the first minute, warmed up
	RSSEndMB        float64 `json:"rss_end_mb"`
	GoHeapStartMB   float64 `json:"go_heap_start_mb"`
	GoHeapEndMB     float64 `json:"go_heap_end_mb"`
	NonFiniteValues int     `json:"non_finite_values"`
	// StealPercent is the share of the machine's CPU time its hypervisor
	// gave to other guests during the soak (/proc/stat): time the node
	// was ready to run and could not.
	StealPercent float64 `json:"cpu_steal_percent"`
}

func TestSoak(t *testing.T) {
	if *soakFor <= 0 {
		t.Skip("a measurement: run with -soak=DURATION (go test -run Soak -soak=10m ./node)")
	}
	ckpt, spec := soakCheckpoint(t)
	// Keep acting: a seeded policy terminates every few steps, a trained one
	// on the camera's synthetic frames too. The step costs the same.
	biasToArm(t, ckpt)

	m := rostest.StartMaster(t)
	log, _ := rostest.Logger(t)
	threads := *soakThreads
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	args := nodetest.Args(t, m, "ttm_node", "__name:=ttm_soak", "_rate:="+strconv.FormatFloat(*soakRate, 'f', -1, 64), "_warmup_steps:=100",
		"_rate_mismatch:=rescale", "_follow_camera:="+strconv.FormatBool(*soakFollow), "_proprio_source:=topic", "_camera_geometry:=checkpoint") // a robot of the proprio topic's convention
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, err := Start(ctx, Config{Args: args, Policy: ckpt, Threads: threads, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	cam := startCamera(t, m.URI, "/headcam/image_raw", 256, 320, *soakCameraHz, log.Named("camera"))
	watch := startCounter(t, m.URI, "/action", log.Named("counter"))
	if len(spec.Policy.Proprio) > 0 {
		startProprio(t, m.URI, "/proprio", []float32{0.45, 0, 0.95, 0}, *soakCameraHz, log.Named("proprio"))
	}
	m.MustRun(rostest.ToolTimeout, "rostopic", "pub", "-1", "/instruction", "std_msgs/String", "data: 'pick up the coke can'")
	rostest.WaitFor(t, 30*time.Second, "the node acting", func() error {
		if n.Stats().Acted < 10 {
			return fmt.Errorf("stats %+v", n.Stats().Counters)
		}
		return nil
	})

	runtime.GC()
	rss0, heap0 := rssMB(t), heapMB()
	n.loop.resetTotals()
	s0 := n.Stats()
	start := time.Now()
	watch.restart()
	cpu0 := readCPUTimes(t)
	cpuMinute := cpu0
	rssMinute1 := 0.0
	for time.Since(start) < *soakFor {
		time.Sleep(min(time.Minute, *soakFor-time.Since(start)))
		if rssMinute1 == 0 {
			rssMinute1 = rssMB(t)
		}
		s, cpu := n.Stats(), readCPUTimes(t)
		t.Logf("soak %v: ticks %d, acted %d, deadline misses %d, busy %d, inference p99 %v (last 64), RSS %.1f MB, CPU steal %.1f %% (last minute)",
			time.Since(start).Round(time.Second), s.Ticks-s0.Ticks, s.Acted-s0.Acted, s.DeadlineMisses-s0.DeadlineMisses, s.Busy-s0.Busy,
			s.Stages[StageInference].P99.Round(100*time.Microsecond), rssMB(t), cpu.stealPercentSince(cpuMinute))
		cpuMinute = cpu
	}
	elapsed := time.Since(start)
	s := n.Stats()
	runtime.GC()
	r := SoakReport{
		Preset: spec.Policy.Preset, RateHz: *soakRate, CameraHz: *soakCameraHz, FollowCamera: n.loop.Config().FollowCamera, Threads: threads, Seconds: elapsed.Seconds(),
		Ticks: s.Ticks - s0.Ticks, Acted: s.Acted - s0.Acted, Stopped: s.Stopped - s0.Stopped,
		DeadlineMisses: s.DeadlineMisses - s0.DeadlineMisses, Busy: s.Busy - s0.Busy, SkippedTicks: s.SkippedTicks - s0.SkippedTicks,
		FramesIn: s.FramesIn - s0.FramesIn, FramesDropped: s.FramesDropped - s0.FramesDropped,
		RepeatedFrames: s.RepeatedFrames - s0.RepeatedFrames, StaleTicks: s.StaleFrames - s0.StaleFrames,
		RSSStartMB: rss0, RSSMinute1MB: rssMinute1, RSSEndMB: rssMB(t), GoHeapStartMB: heap0, GoHeapEndMB: heapMB(),
		WarmupP50MS: msOf(n.Warmup().P50), WarmupP99MS: msOf(n.Warmup().P99),
		StealPercent: readCPUTimes(t).stealPercentSince(cpu0),
	}
	// Quantiles of the measured window (histogram, within 4.4 %).
	q := s.Stages[StageJitter]
	r.JitterP50MS, r.JitterP99MS, r.JitterMaxMS = msOf(q.TotalP50), msOf(q.TotalP99), msOf(q.Max)
	q = s.Stages[StageInference]
	r.InferenceP50MS, r.InferenceP99MS, r.InferenceMaxMS = msOf(q.TotalP50), msOf(q.TotalP99), msOf(q.Max)
	q = s.Stages[StageEndToEnd]
	r.EndToEndP50MS, r.EndToEndP99MS, r.EndToEndMaxMS = msOf(q.TotalP50), msOf(q.TotalP99), msOf(q.Max)
	r.TickLatencyP99 = msOf(s.Stages[StageTickLatency].TotalP99)
	q = s.Stages[StageImageAge]
	r.ImageAgeP50MS, r.ImageAgeP99MS = msOf(q.TotalP50), msOf(q.TotalP99)

	r.SubscriberHz, r.NonFiniteValues = watch.rate(), watch.nonFiniteValues()
	cam.close()
	b, _ := json.MarshalIndent(r, "", "  ")
	t.Logf("soak report:\n%s", b)
	if *soakOut != "" {
		if err := os.WriteFile(*soakOut, append(b, '\n'), 0o644); err != nil {
			t.Error(err)
		}
	}
	if r.NonFiniteValues != 0 {
		t.Errorf("%d non-finite action values published", r.NonFiniteValues)
	}
	if math.Abs(r.SubscriberHz-*soakRate)/(*soakRate) > 0.02 {
		t.Errorf("a subscriber saw %.3f Hz, want %g Hz within 2 %%", r.SubscriberHz, *soakRate)
	}
	if r.Acted+r.Stopped != r.Ticks {
		t.Errorf("%d ticks but %d actions and %d stops published", r.Ticks, r.Acted, r.Stopped)
	}
}

// soakCheckpoint is the soak's policy file, a copy the soak may change:
// -soak-policy's checkpoint with its backbone, or a fresh -soak-preset one.
// It returns the file and its spec.
func soakCheckpoint(t *testing.T) (string, policy.Spec) {
	dir := t.TempDir()
	if *soakPolicy == "" {
		spec, err := policy.Preset(*soakPreset)
		if err != nil {
			t.Fatal(err)
		}
		ckpt := filepath.Join(dir, *soakPreset+".safetensors")
		if err := policy.Create(spec, 1, "", ckpt, nil); err != nil {
			t.Fatal(err)
		}
		return ckpt, spec
	}
	p, err := policy.Load(*soakPolicy, policy.Options{NoBackbone: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	backbone := p.Spec().Vision.Backbone.File
	if !filepath.IsAbs(backbone) {
		backbone = filepath.Join(filepath.Dir(*soakPolicy), backbone)
	}
	for _, f := range []string{*soakPolicy, backbone} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, filepath.Base(*soakPolicy)), p.Spec()
}

func msOf(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// rssMB reads this process's resident set size.
func rssMB(t *testing.T) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb / 1024
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// cpuTimes are the machine's CPU time counters of /proc/stat, in clock
// ticks summed over CPUs.
type cpuTimes struct{ total, steal uint64 }

// parseCPUTimes reads the aggregate "cpu" line of /proc/stat: user, nice,
// system, idle, iowait, irq, softirq, steal, then guest times that user
// already counts (proc(5)).
func parseCPUTimes(stat string) (cpuTimes, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("no aggregate cpu line with steal time in %q", line)
	}
	var c cpuTimes
	for i, v := range f[1:9] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("cpu time %q: %w", v, err)
		}
		if c.total+n < c.total {
			return cpuTimes{}, fmt.Errorf("cpu times overflow: %q", line)
		}
		c.total += n
		if i == 7 {
			c.steal = n
		}
	}
	return c, nil
}

func readCPUTimes(t *testing.T) cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseCPUTimes(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stealPercentSince is the share of CPU time stolen between b and c.
func (c cpuTimes) stealPercentSince(b cpuTimes) float64 {
	if c.total <= b.total {
		return 0
	}
	return 100 * float64(c.steal-b.steal) / float64(c.total-b.total)
}

func heapMB() float64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}

// biasToArm makes a checkpoint's head always choose arm mode.
func biasToArm(t *testing.T, path string) {
	editTensor(t, path, policy.Prefix+"head/bias", func(v []float32) { v[action.ModeArm] = 1e3 })
}

// counter subscribes to the action topic and keeps counts, not messages, so
// that the soak's RSS is the node's: the rate since restart and the
// non-finite values of every action.
type counter struct {
	sup         *ros.Supervisor
	sub         *ros.Subscriber
	mu          sync.Mutex // guards the rest
	n           int        // actions since restart
	first, last time.Time
	nonFinite   int
}

func startCounter(t testing.TB, master, topic string, log hclog.Logger) *counter {
	t.Helper()
	a, err := ros.ParseArgs("soak_counter", nil, rostest.Env(map[string]string{"ROS_MASTER_URI": master}))
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{}
	c.sup, err = ros.NewSupervisor(context.Background(), ros.SupervisorConf{Args: a, Logger: log, PollInterval: 200 * time.Millisecond,
		Setup: func(n *ros.Node) error {
			var err error
			c.sub, err = ros.NewSubscriber(ros.SubscriberConf{Node: n, Topic: topic, Callback: func(m *std_msgs.Float32MultiArray) {
				now := time.Now()
				c.mu.Lock()
				defer c.mu.Unlock()
				for _, v := range m.Data {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						c.nonFinite++
					}
				}
				if c.n == 0 {
					c.first = now
				}
				c.n++
				c.last = now
			}})
			return err
		},
		Teardown: func() {
			if c.sub != nil {
				c.sub.Close()
				c.sub = nil
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.sup.Close)
	return c
}

// restart starts the rate's count afresh (the non-finite count goes on).
func (c *counter) restart() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = 0
}

// rate is the actions per second since restart, first to last.
func (c *counter) rate() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n < 2 {
		return 0
	}
	return float64(c.n-1) / c.last.Sub(c.first).Seconds()
}

func (c *counter) nonFiniteValues() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nonFinite
}

func TestParseCPUTimes(t *testing.T) {
	for _, c := range []struct {
		name, stat string
		want       cpuTimes
		err        string
	}{
		{"kernel line", "cpu  100 2 30 400 5 6 7 50 9 10\ncpu0 1 2 3 4 5 6 7 8 9 10\n", cpuTimes{total: 600, steal: 50}, ""},
		{"no guest fields", "cpu 1 1 1 1 1 1 1 3", cpuTimes{total: 10, steal: 3}, ""},
		{"no steal field", "cpu 1 2 3 4 5 6 7\n", cpuTimes{}, "no aggregate cpu line"},
		{"per-CPU line first", "cpu0 1 2 3 4 5 6 7 8\n", cpuTimes{}, "no aggregate cpu line"},
		{"not a number", "cpu 1 2 3 4 5 6 7 x\n", cpuTimes{}, `cpu time "x"`},
		{"empty", "", cpuTimes{}, "no aggregate cpu line"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseCPUTimes(c.stat)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("parseCPUTimes = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
	if p := (cpuTimes{total: 1100, steal: 60}).stealPercentSince(cpuTimes{total: 100, steal: 10}); p != 5 {
		t.Fatalf("steal over 1000 ticks with 50 stolen: %v %%, want 5", p)
	}
}

func FuzzParseCPUTimes(f *testing.F) {
	f.Add("cpu  100 2 30 400 5 6 7 50 9 10\n")
	f.Add("cpu 1 2 3\n")
	f.Fuzz(func(t *testing.T, stat string) {
		c, err := parseCPUTimes(stat)
		if err == nil && c.steal > c.total {
			t.Fatalf("steal %d above total %d", c.steal, c.total)
		}
	})
}
