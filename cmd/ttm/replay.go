package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ttmrobot/ttm/internal/action"
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/sim/simnode"

	"github.com/ttmrobot/ttm/policy"
	"github.com/ttmrobot/ttm/sim"
	"github.com/ttmrobot/ttm/vision"
)

func init() {
	register(command{name: "replay", summary: "feed a recorded episode bag through a policy and score it against the recorded actions, or republish it to a live node", run: runReplay})
}

const replaySynopsis = `EPISODE.bag --policy CKPT.safetensors [--json] [--no-memory] [--raw] [--ns NS] [--image-topic T] [--instruction TEXT]
       ttm replay EPISODE.bag --ros [--speed X] [--ns NS] [__ns:=NS] [__master:=URI] [from:=to ...]`

// runReplay replays a bag offline through the policy (the node's code
// path: each frame decoded as an rgb8 sensor_msgs/Image into a
// vision.Frame, then policy.Step) and reports the action error per
// dimension, or with --ros republishes it on live topics (ros.Replay:
// fresh stamps).
func runReplay(env *environment, args []string) error {
	rosArgs, err := ros.ParseArgs("ttm_replay", args, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	fl := newFlags(env, "replay", replaySynopsis)
	policyPath := fl.String("policy", "", "policy checkpoint `file`")
	asJSON := fl.Bool("json", false, "print the report as JSON, with every step's action, recorded action and memory hash")
	noMemory := fl.Bool("no-memory", false, "zero the TTM memory before every step (the paper's ablation)")
	threads := fl.Int("threads", 0, "threads for the backbone and the TTM (0: one per CPU)")
	raw := fl.Bool("raw", false, "compare the policy's raw outputs with the recorded actions, without RT-1's mode gating")
	ns := fl.String("ns", "", "namespace of the bag's topics (a bag rosbag recorded from a node in a namespace)")
	imageTopic := fl.String("image-topic", "", "the camera topic in the bag (default headcam/image_raw in --ns)")
	instruction := fl.String("instruction", "", "use this instruction instead of the bag's")
	live := fl.Bool("ros", false, "republish the episode's frames, camera_info, proprioception, tf, joint_states and instruction to a live node at the recorded rate")
	speed := fl.Float64("speed", 1, "--ros: multiple of the recorded rate")
	// The bag may come before, between or after the flags.
	var positional []string
	for rest := rosArgs.Rest; ; {
		if err := parseFlags(fl, rest, true); err != nil {
			return err
		}
		if fl.NArg() == 0 {
			break
		}
		positional = append(positional, fl.Arg(0))
		rest = fl.Args()[1:]
	}
	if len(positional) != 1 {
		return fmt.Errorf("%w: want one EPISODE.bag, got %d arguments %s", errUsage, len(positional), strings.Join(positional, " "))
	}
	bag := positional[0]
	if *live == (*policyPath != "") {
		return fmt.Errorf("%w: give exactly one of --policy and --ros", errUsage)
	}
	if !*live && (len(rosArgs.Remaps) > 0 || len(rosArgs.Params) > 0) {
		return fmt.Errorf("%w: ROS arguments need --ros", errUsage)
	}
	ep, err := sim.ReadEpisode(bag, sim.ReadOptions{Namespace: *ns, Topics: sim.Topics{Image: *imageTopic}, Instruction: *instruction,
		DecodeCompressed: openCVDecoder()})
	if err != nil {
		return err
	}
	if *live {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return replayLive(ctx, env, rosArgs, ep, *speed)
	}
	if *threads < 0 {
		return fmt.Errorf("%w: --threads %d is negative", errUsage, *threads)
	}
	p, err := policy.Load(*policyPath, policy.Options{Threads: *threads, Log: env.log})
	if err != nil {
		return err
	}
	defer p.Close()
	if err := ablateMemory(p, *noMemory); err != nil {
		return err
	}
	rep, err := replayOffline(p, ep, !*raw)
	if err != nil {
		return fmt.Errorf("replay %s: %w", bag, err)
	}
	rep.Bag, rep.Policy, rep.Memory, rep.Gated = bag, *policyPath, memoryNote(p, *noMemory), !*raw
	rep.NoMemory = rep.Memory != ""
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return printReplay(env, rep)
}

// replayReport is what an offline replay measured.
type replayReport struct {
	Bag      string `json:"bag"`
	Policy   string `json:"policy"`
	NoMemory bool   `json:"no_memory"`
	// Memory says why NoMemory: "checkpoint" (trained without memory) or
	// "ablation" (--no-memory).
	Memory string `json:"memory,omitempty"`
	// Gated: actions are compared after RT-1's mode gating, as the node
	// publishes them (arm mode zeroes the base dimensions, and so on).
	Gated       bool   `json:"gated"`
	Task        string `json:"task,omitempty"`
	Instruction string `json:"instruction"`
	Steps       int    `json:"steps"`
	// Compared counts the steps with a recorded action.
	Compared int         `json:"compared"`
	Dims     []dimReport `json:"dims"`
	// MeanBinAccuracy averages BinAccuracy over the discrete dimensions.
	MeanBinAccuracy float64      `json:"mean_bin_accuracy"`
	FinalHash       string       `json:"final_memory_hash"`
	StepMillis      float64      `json:"step_ms_mean"`
	PerStep         []stepReport `json:"per_step"`
}

type dimReport struct {
	Name string `json:"name"`
	// MAE is the mean absolute difference between the policy's and the
	// recorded action.
	MAE float64 `json:"mae"`
	// BinAccuracy is the fraction of steps where both fall in the same
	// bin; absent for a continuous dimension.
	BinAccuracy *float64 `json:"bin_accuracy,omitempty"`
}

type stepReport struct {
	Step  int       `json:"step"`
	Stamp time.Time `json:"stamp"`
	// Action is the policy's action as compared (gated unless --raw), Raw
	// its output before gating (the previous action of the next step).
	Action     []float32 `json:"action"`
	Raw        []float32 `json:"raw"`
	Recorded   []float32 `json:"recorded,omitempty"`
	MemoryHash string    `json:"memory_hash"`
}

// replayOffline runs the policy over the episode from a fresh state. With
// gate, the policy's and the recorded actions are compared after RT-1's
// mode gating (action.GateMode), as the node would publish them.
func replayOffline(p *policy.Policy, ep *sim.RecordedEpisode, gate bool) (*replayReport, error) {
	pre := p.Spec().Vision.Preprocess
	if gate && action.RT1().CompareLayout(p.ActionSpace()) != nil {
		return nil, fmt.Errorf("the policy's action space is not RT-1's, so RT-1's mode gating does not apply: use --raw")
	}
	if ep.Info.Height != pre.Height || ep.Info.Width != pre.Width {
		return nil, fmt.Errorf("the policy takes %dx%d frames, the bag's are %dx%d (record the episodes at the policy's size: ttm record --size %dx%d)",
			pre.Height, pre.Width, ep.Info.Height, ep.Info.Width, pre.Height, pre.Width)
	}
	space := p.ActionSpace()
	n := space.Len()
	rep := &replayReport{Task: ep.Info.Task, Instruction: ep.Info.Instruction, Steps: len(ep.Steps)}
	absErr := make([]float64, n)
	sameBin := make([]int, n)
	st := p.NewState()
	obs := policy.Observation{Instruction: ep.Info.Instruction}
	out := make([]float32, n)
	want := make([]float32, n)
	var busy time.Duration
	for k, s := range ep.Steps {
		if s.Action != nil && len(s.Action) != n {
			return nil, fmt.Errorf("step %d: the bag's action has %d values, the policy's action space %d", k, len(s.Action), n)
		}
		img := vision.Image{Height: uint32(ep.Info.Height), Width: uint32(ep.Info.Width), Encoding: "rgb8", Step: uint32(3 * ep.Info.Width), Data: s.Image}
		t := time.Now()
		frame, err := vision.DecodeImage(&img)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", k, err)
		}
		obs.Frame, obs.Proprio = frame, s.Proprio
		if err := p.Step(&obs, st, out); err != nil {
			return nil, fmt.Errorf("step %d: %w", k, err)
		}
		busy += time.Since(t)
		sr := stepReport{Step: k, Stamp: s.Stamp, Action: slices.Clone(out), Raw: slices.Clone(out), Recorded: s.Action, MemoryHash: fmt.Sprintf("%016x", st.Hash())}
		if gate {
			action.GateMode(sr.Action)
		}
		rep.PerStep = append(rep.PerStep, sr)
		if s.Action == nil {
			continue
		}
		copy(want, s.Action)
		if gate {
			action.GateMode(want)
		}
		rep.Compared++
		for i, d := range space.Dims {
			absErr[i] += math.Abs(float64(sr.Action[i]) - float64(want[i]))
			if d.Bins > 0 && d.Bin(sr.Action[i]) == d.Bin(want[i]) {
				sameBin[i]++
			}
		}
	}
	var accSum float64
	var discrete int
	for i, d := range space.Dims {
		dr := dimReport{Name: d.Name}
		if rep.Compared > 0 {
			dr.MAE = absErr[i] / float64(rep.Compared)
			if d.Bins > 0 {
				acc := float64(sameBin[i]) / float64(rep.Compared)
				dr.BinAccuracy = &acc
				accSum += acc
				discrete++
			}
		}
		rep.Dims = append(rep.Dims, dr)
	}
	if discrete > 0 {
		rep.MeanBinAccuracy = accSum / float64(discrete)
	}
	rep.FinalHash = fmt.Sprintf("%016x", st.Hash())
	rep.StepMillis = busy.Seconds() * 1000 / float64(len(ep.Steps))
	return rep, nil
}

func printReplay(env *environment, rep *replayReport) error {
	fmt.Fprintf(env.stdout, "%s: %d steps (%d with recorded actions), instruction %q, policy %s%s\n", rep.Bag, rep.Steps, rep.Compared,
		rep.Instruction, filepath.Base(rep.Policy), map[string]string{"checkpoint": " without memory (checkpoint)", "ablation": " without memory (ablation)"}[rep.Memory])
	if !rep.Gated {
		fmt.Fprintln(env.stdout, "raw policy outputs, without RT-1's mode gating")
	}
	if rep.Compared == 0 {
		fmt.Fprintf(env.stdout, "no recorded actions to compare with; final memory hash %s\n", rep.FinalHash)
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "dimension\tmean abs error\tsame bin\t")
	for _, d := range rep.Dims {
		acc := "-"
		if d.BinAccuracy != nil {
			acc = fmt.Sprintf("%.1f%%", 100**d.BinAccuracy)
		}
		fmt.Fprintf(tw, "%s\t%.4f\t%s\t\n", d.Name, d.MAE, acc)
	}
	fmt.Fprintf(tw, "mean\t\t%.1f%%\t\n", 100*rep.MeanBinAccuracy)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "final memory hash %s, %.1f ms per step\n", rep.FinalHash, rep.StepMillis)
	return nil
}

// replayLive republishes the episode's frames to a running node, each
// after the proprioception, tf, joint_states and camera_info recorded with
// it, if any.
func replayLive(ctx context.Context, env *environment, rosArgs *ros.Args, ep *sim.RecordedEpisode, speed float64) error {
	static, robot := simnode.ReplayRobot(ep)
	stats, err := ros.Replay(ctx, ros.ReplayConfig{Args: rosArgs, Instruction: ep.Info.Instruction, Frames: simnode.ReplayFrames(ep), ProprioLabel: ep.ProprioLabel,
		TFStatic: static, Robot: robot, Speed: speed, Log: env.log})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "replayed %d frames (%d late); the node published %d actions meanwhile\n", stats.Frames, stats.Late, stats.Actions)
	return nil
}

// openCVDecoder decodes compressed frames as the node does (vision's
// OpenCV decoder) into rgb8.
func openCVDecoder() sim.CompressedDecoder {
	var d vision.Decoder
	return func(format string, data []byte) ([]byte, int, int, error) {
		f, err := d.DecodeCompressed(&vision.CompressedImage{Format: format, Data: data})
		if err != nil {
			return nil, 0, 0, err
		}
		if f.Format != vision.BGR8 {
			return nil, 0, 0, fmt.Errorf("decoded to %v, want bgr8", f.Format)
		}
		rgb := make([]byte, 3*f.Width*f.Height)
		for y := range f.Height {
			row := f.Pix[y*f.Stride : y*f.Stride+3*f.Width]
			dst := rgb[3*y*f.Width : 3*(y+1)*f.Width]
			for x := 0; x < 3*f.Width; x += 3 {
				dst[x], dst[x+1], dst[x+2] = row[x+2], row[x+1], row[x]
			}
		}
		return rgb, f.Height, f.Width, nil
	}
}
