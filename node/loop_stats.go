package node

import (
	"math"
	"slices"
	"time"
)

// Timing statistics of the control loop. Each stage keeps the last
// recentLen samples (what /diagnostics reports) and a histogram of the
// whole run (what the soak harness reports). Recording allocates nothing.

// recentLen is how many samples a stage keeps for the recent quantiles:
// 6.4 s at 10 Hz.
const recentLen = 64

// Histogram buckets: bucket 0 holds durations under 1 µs; bucket i > 0
// holds [2^((i-1)/16), 2^(i/16)) µs, so a quantile read from the histogram
// is within 4.4 % of the true value; the last bucket also holds anything
// longer (about 17 minutes and more).
const (
	histPerOctave = 16
	histOctaves   = 30
	histBuckets   = 1 + histPerOctave*histOctaves
)

// durationStat accumulates one stage's durations.
type durationStat struct {
	recent [recentLen]time.Duration
	pos    int // next slot of recent
	count  uint64
	sum    time.Duration
	max    time.Duration
	hist   [histBuckets]uint64
}

func (s *durationStat) add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	s.recent[s.pos] = d
	s.pos = (s.pos + 1) % recentLen
	s.count++
	s.sum += d
	s.max = max(s.max, d)
	s.hist[histBucket(d)]++
}

func histBucket(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us < 1 {
		return 0
	}
	return min(1+int(math.Log2(us)*histPerOctave), histBuckets-1)
}

// histUpper is the upper edge of bucket i.
func histUpper(i int) time.Duration {
	if i == 0 {
		return time.Microsecond
	}
	return time.Duration(math.Exp2(float64(i)/histPerOctave) * float64(time.Microsecond))
}

// Quantiles summarises a stage. Recent quantiles are exact over the last
// samples; Total quantiles come from the whole-run histogram (upper bucket
// edges, never above Max).
type Quantiles struct {
	Count          uint64
	Last           time.Duration // the latest sample
	Mean, Max      time.Duration
	P50, P99       time.Duration // recent
	TotalP50       time.Duration
	TotalP99       time.Duration
	RecentMax      time.Duration
	RecentSamples  int
	TotalHistogram bool // the Total fields are set
}

// summary computes s's quantiles, using scratch (recentLen long) to sort.
func (s *durationStat) summary(scratch []time.Duration) Quantiles {
	q := Quantiles{Count: s.count, Max: s.max, TotalHistogram: s.count > 0}
	if s.count == 0 {
		return q
	}
	q.Mean = s.sum / time.Duration(s.count)
	q.Last = s.recent[(s.pos+recentLen-1)%recentLen]
	n := int(min(s.count, recentLen))
	r := scratch[:n]
	copy(r, s.recent[:n])
	slices.Sort(r)
	q.P50, q.P99, q.RecentMax, q.RecentSamples = nearestRank(r, 0.5), nearestRank(r, 0.99), r[n-1], n
	q.TotalP50, q.TotalP99 = s.histQuantile(0.5), s.histQuantile(0.99)
	return q
}

// nearestRank returns the q-quantile of sorted samples (nearest-rank
// method: the smallest sample with at least q of the samples at or below).
func nearestRank(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

func (s *durationStat) histQuantile(q float64) time.Duration {
	need := uint64(math.Ceil(q * float64(s.count)))
	var seen uint64
	for i, c := range s.hist {
		seen += c
		if seen >= need && c > 0 {
			return min(histUpper(i), s.max)
		}
	}
	return s.max
}

// Stage names the timed parts of a tick.
type Stage int

// The timed stages. Jitter is how late a tick started after its scheduled
// time; Decode (of compressed frames, and the conversion of raw yuv422 and
// Bayer frames to RGB) and Inference run on the inference goroutine;
// Filter is mode gating and the safety filter; Publish the sink's call; TickLatency
// runs from the scheduled tick time to the end of publishing; EndToEnd from
// the image stamp to the end of publishing an action made from it; ImageAge
// is the age of the frame the tick looked at.
const (
	StageJitter Stage = iota
	StageDecode
	StageInference
	StageFilter
	StagePublish
	StageTickLatency
	StageEndToEnd
	StageImageAge
	numStages
)

var stageNames = [numStages]string{"jitter", "decode", "inference", "filter", "publish", "tick_latency", "end_to_end", "image_age"}

func (s Stage) String() string {
	if s < 0 || s >= numStages {
		return "stage?"
	}
	return stageNames[s]
}

// Counters are the loop's event counts since start.
type Counters struct {
	Ticks          uint64 // ticks run
	Acted          uint64 // ticks that published the policy's action
	Stopped        uint64 // ticks that published the stop action
	Silent         uint64 // ticks that published nothing (before the first action)
	DeadlineMisses uint64 // inference not done by the deadline: stop published
	Busy           uint64 // an overrunning inference still ran at the tick: stop published
	SkippedTicks   uint64 // ticks not run at all: the loop itself woke more than a period late
	LateDiscarded  uint64 // results of overrunning inferences thrown away
	StaleFrames    uint64 // ticks stopped because the newest frame was too old
	RepeatedFrames uint64 // ticks that acted on a frame already used by an earlier tick
	PolicyErrors   uint64 // inference failed (bad frame, non-finite output): stop published
	Modified       uint64 // actions the safety filter changed (clamp, rate limit, workspace)
	Rejected       uint64 // actions the filter rejected (non-finite): stop published
	Episodes       uint64 // episodes started (memory resets)
	EpisodesDone   uint64 // episodes ended by terminate or max_steps
	FramesIn       uint64 // frames accepted by the slot
	FramesDropped  uint64 // frames overwritten in the slot before a tick took them
	FramesBad      uint64 // frames refused on arrival (encoding, size, corrupt header)
	EmbeddingsBad  uint64 // upstream embeddings refused
	StaleProprio   uint64 // ticks stopped because the newest proprioception was too old
	ProprioIn      uint64 // proprioception readings accepted
	ProprioBad     uint64 // proprioception readings refused (length, label, non-finite)
	// From the robot's tree, joints and camera_info (Inputs.SetRobot):
	// messages taken and refused.
	TransformsIn, TransformsBad   uint64
	JointStatesIn, JointStatesBad uint64
	CameraInfoIn, CameraInfoBad   uint64
	InstructionsBad               uint64 // instructions refused (empty, over language.MaxInstructionBytes)
	Unpublished                   uint64 // outputs not sent because no ROS node was registered
}

// Stats is a snapshot of the loop's statistics.
type Stats struct {
	Counters
	Stages  [numStages]Quantiles
	Rate    float64 // ticks per second over the last 64 ticks (loop clock)
	Reason  Reason  // of the last tick
	Episode uint64  // current episode number
	Step    int     // steps acted in the current episode
	Done    bool    // the current episode is done
}
