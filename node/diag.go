package node

import (
	"context"
	"strconv"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/diagnostic_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
)

type diagnosticArray = diagnostic_msgs.DiagnosticArray

// DefaultDiagnosticsPeriod is how often /diagnostics is published.
const DefaultDiagnosticsPeriod = time.Second

// diagState remembers the previous snapshot, so that each message can tell
// what happened since the last one.
type diagState struct {
	name   string // the status's name, "<node>: control loop"
	target float64
	// trained is the rate the policy learnt at (0 unknown), stepScale
	// what its per-step actions are scaled by.
	trained, stepScale float64
	deadline           time.Duration
	prev               Stats
	havePrev           bool
}

// diagnostics builds the DiagnosticArray for stats taken at clock time now.
// Values (all strings, as diagnostic_msgs/KeyValue requires):
//
//	state, episode, step, episode_done, e_stop, wrong_type_publishers ("none", or "; "-separated), enabled, heartbeat_age_s
//	rate_target_hz, rate_measured_hz (ticks per second over the last 64 ticks, by the loop's clock)
//	trained_rate_hz (0: the checkpoint records none), per_step_scale (LoopConfig.StepScale)
//	deadline_s, deadline_misses, deadline_misses_recent, busy_ticks, skipped_ticks, late_results_discarded
//	<stage>_p50_ms, <stage>_p99_ms, <stage>_max_ms for every Stage (the last 64 ticks)
//	image_age_ms (the last tick's), stale_frame_ticks, frames_in, frames_dropped, frames_refused, frames_repeated
//	embeddings_refused, policy_errors, actions_modified_by_filter, actions_rejected, unpublished
//	transforms_in, transforms_refused, joint_states_in, joint_states_refused, camera_info_in, camera_info_refused
//	  (when the node reads the robot's tree, joints or camera_info)
//
// The level is OK while acting or waiting for a new episode, ERROR while the
// e-stop is latched or a safety input unreadable, or when inference failed or an action was rejected
// since the last message, and WARN otherwise (not acting, or deadline
// misses since the last message).
func (d *diagState) diagnostics(s Stats, now time.Time, in *Inputs, unpublished uint64) *diagnosticArray {
	st := diagnostic_msgs.DiagnosticStatus{Name: d.name, HardwareId: "ttm", Message: statusText(s.Reason, s.Acted > 0)}
	var recentMiss, recentErr, recentRej uint64
	if d.havePrev {
		recentMiss = s.DeadlineMisses + s.Busy - d.prev.DeadlineMisses - d.prev.Busy
		recentErr = s.PolicyErrors - d.prev.PolicyErrors
		recentRej = s.Rejected - d.prev.Rejected
	}
	d.prev, d.havePrev = s, true

	switch {
	case s.Reason == ReasonEStop || s.Reason == ReasonUnreadableSafety || recentErr > 0 || recentRej > 0:
		st.Level = diagnostic_msgs.DiagnosticStatus_ERROR
	case (s.Reason == ReasonNone || s.Reason == ReasonEpisodeDone) && recentMiss == 0:
		st.Level = diagnostic_msgs.DiagnosticStatus_OK
	default:
		st.Level = diagnostic_msgs.DiagnosticStatus_WARN
	}

	kv := func(k, v string) { st.Values = append(st.Values, diagnostic_msgs.KeyValue{Key: k, Value: v}) }
	u := func(k string, v uint64) { kv(k, strconv.FormatUint(v, 10)) }
	f := func(k string, v float64, prec int) { kv(k, strconv.FormatFloat(v, 'f', prec, 64)) }
	ms := func(k string, v time.Duration) { f(k, float64(v)/float64(time.Millisecond), 3) }

	kv("state", s.Reason.Key())
	u("episode", s.Episode)
	u("step", uint64(s.Step))
	kv("episode_done", strconv.FormatBool(s.Done))
	kv("e_stop", strconv.FormatBool(in.EStopped()))
	kv("wrong_type_publishers", in.wrongTypeText())
	kv("enabled", strconv.FormatBool(in.Enabled()))
	if hb := in.heartbeat.Load(); hb != 0 {
		f("heartbeat_age_s", now.Sub(time.Unix(0, hb)).Seconds(), 3)
	} else {
		kv("heartbeat_age_s", "never")
	}
	f("rate_target_hz", d.target, 3)
	f("rate_measured_hz", s.Rate, 3)
	f("trained_rate_hz", d.trained, 4)
	f("per_step_scale", d.stepScale, 4)
	f("deadline_s", d.deadline.Seconds(), 4)
	u("deadline_misses", s.DeadlineMisses)
	u("deadline_misses_recent", recentMiss)
	u("busy_ticks", s.Busy)
	u("skipped_ticks", s.SkippedTicks)
	u("late_results_discarded", s.LateDiscarded)
	u("ticks", s.Ticks)
	u("acted", s.Acted)
	u("stopped", s.Stopped)
	for i, q := range s.Stages {
		name := Stage(i).String()
		ms(name+"_p50_ms", q.P50)
		ms(name+"_p99_ms", q.P99)
		ms(name+"_max_ms", q.RecentMax)
	}
	ms("image_age_ms", s.Stages[StageImageAge].Last)
	u("stale_frame_ticks", s.StaleFrames)
	u("frames_in", s.FramesIn)
	u("frames_dropped", s.FramesDropped)
	u("frames_refused", s.FramesBad)
	u("frames_repeated", s.RepeatedFrames)
	u("embeddings_refused", s.EmbeddingsBad)
	u("proprio_in", s.ProprioIn)
	u("proprio_refused", s.ProprioBad)
	u("instructions_refused", s.InstructionsBad)
	u("stale_proprio_ticks", s.StaleProprio)
	if in.robot != nil {
		u("transforms_in", s.TransformsIn)
		u("transforms_refused", s.TransformsBad)
		u("joint_states_in", s.JointStatesIn)
		u("joint_states_refused", s.JointStatesBad)
		u("camera_info_in", s.CameraInfoIn)
		u("camera_info_refused", s.CameraInfoBad)
	}
	u("policy_errors", s.PolicyErrors)
	u("actions_modified_by_filter", s.Modified)
	u("actions_rejected", s.Rejected)
	u("unpublished", unpublished)
	return &diagnosticArray{Header: std_msgs.Header{Stamp: now}, Status: []diagnostic_msgs.DiagnosticStatus{st}}
}

// runDiagnostics publishes diagnostics every period of wall time until ctx
// ends.
func runDiagnostics(ctx context.Context, period time.Duration, d *diagState, l *Loop, r *rosIO) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.publishDiagnostics(d.diagnostics(l.Stats(), l.clock.Now(), l.in, r.unpublished.Load()))
	}
}
