package node

import "fmt"

// Reason says why a tick did not publish the policy's action. The control
// loop checks them at every tick and reports the first that applies, in
// this order except that the proprioception's (added later, to keep the
// numbers) come after ReasonNoInstruction and ReasonStaleFrame,
// ReasonNoHeartbeat comes where ReasonHeartbeat does,
// ReasonFutureFrame where ReasonStaleFrame does, ReasonBadFrame after
// them, and ReasonUnreadableSafety first;
// ReasonNone means it acted.
type Reason int

const (
	ReasonNone             Reason = iota // acting: the policy's action was published
	ReasonEStop                          // e_stop received, not yet e_stop_reset
	ReasonDisabled                       // the enable service was called with false
	ReasonHeartbeat                      // no heartbeat within ~heartbeat_timeout
	ReasonNoFrame                        // no camera frame received yet
	ReasonNoInstruction                  // no instruction (or embedding) received yet
	ReasonStaleFrame                     // the newest frame is older than ~max_image_age
	ReasonEpisodeDone                    // the policy terminated or ~max_steps was reached; waiting for a new episode
	ReasonBusy                           // an inference that missed its deadline is still running
	ReasonDeadline                       // the inference did not finish by the tick's deadline
	ReasonPolicyError                    // the inference failed (bad frame or embedding, non-finite output)
	ReasonRejected                       // the safety filter rejected the action (non-finite value)
	ReasonShutdown                       // the node is stopping
	ReasonNoProprio                      // the policy reads proprioception and none has been received yet
	ReasonStaleProprio                   // the newest proprioception is older than ~max_proprio_age
	ReasonNoHeartbeat                    // a heartbeat is required and none has been received yet
	ReasonFutureFrame                    // the newest frame is stamped more than ~max_image_age ahead of the clock
	ReasonUnreadableSafety               // a publisher on e_stop or heartbeat sends a type the node cannot read
	ReasonBadFrame                       // the newest frame did not decode
	ReasonBadProprio                     // the proprioception read from the robot's tree is outside its range
	ReasonNoCamera                       // the policy reads the robot's camera calibration and has no camera_info or camera transform yet
	ReasonCameraMismatch                 // the robot's camera differs from the policy's calibration beyond the tolerances
	numReasons
)

var reasonText = [numReasons]string{
	ReasonNone:             "acting",
	ReasonEStop:            "e-stop latched (publish e_stop_reset to clear)",
	ReasonDisabled:         "disabled (call enable with true)",
	ReasonHeartbeat:        "heartbeat lost",
	ReasonNoFrame:          "no camera frame yet",
	ReasonNoInstruction:    "no instruction yet",
	ReasonStaleFrame:       "camera frame too old",
	ReasonEpisodeDone:      "episode done (new instruction or reset_memory starts the next)",
	ReasonBusy:             "previous inference still running",
	ReasonDeadline:         "inference missed its deadline",
	ReasonPolicyError:      "inference failed",
	ReasonRejected:         "action rejected by the safety filter",
	ReasonShutdown:         "shutting down",
	ReasonNoProprio:        "no proprioception yet",
	ReasonStaleProprio:     "proprioception too old",
	ReasonNoHeartbeat:      "no heartbeat yet",
	ReasonFutureFrame:      "camera frame stamped in the future (clocks out of step?)",
	ReasonUnreadableSafety: "a publisher of another type on e_stop or heartbeat",
	ReasonBadFrame:         "the newest camera frame did not decode",
	ReasonBadProprio:       "proprioception out of range",
	ReasonNoCamera:         "no camera calibration yet (camera_info and its transform)",
	ReasonCameraMismatch:   "the robot's camera differs from the policy's calibration",
}

var reasonKey = [numReasons]string{
	ReasonNone:             "acting",
	ReasonEStop:            "e_stop",
	ReasonDisabled:         "disabled",
	ReasonHeartbeat:        "heartbeat",
	ReasonNoFrame:          "no_frame",
	ReasonNoInstruction:    "no_instruction",
	ReasonStaleFrame:       "stale_frame",
	ReasonEpisodeDone:      "episode_done",
	ReasonBusy:             "busy",
	ReasonDeadline:         "deadline_miss",
	ReasonPolicyError:      "policy_error",
	ReasonRejected:         "rejected",
	ReasonShutdown:         "shutdown",
	ReasonNoProprio:        "no_proprio",
	ReasonStaleProprio:     "stale_proprio",
	ReasonNoHeartbeat:      "no_heartbeat",
	ReasonFutureFrame:      "future_frame",
	ReasonUnreadableSafety: "unreadable_safety_input",
	ReasonBadFrame:         "bad_frame",
	ReasonBadProprio:       "bad_proprio",
	ReasonNoCamera:         "no_camera_info",
	ReasonCameraMismatch:   "camera_mismatch",
}

// String is a human-readable explanation.
func (r Reason) String() string {
	if r < 0 || r >= numReasons {
		return fmt.Sprintf("Reason(%d)", int(r))
	}
	return reasonText[r]
}

// Key is a short machine-readable name (for diagnostics and the status
// topic).
func (r Reason) Key() string {
	if r < 0 || r >= numReasons {
		return fmt.Sprintf("reason_%d", int(r))
	}
	return reasonKey[r]
}

// waiting reports whether r only means an input has not arrived yet.
func (r Reason) waiting() bool {
	return r == ReasonNoFrame || r == ReasonNoInstruction || r == ReasonNoProprio || r == ReasonNoHeartbeat || r == ReasonNoCamera
}

// fromRobot reports whether r is about what the robot publishes of itself
// (its tree, joints and camera calibration), whose status says more.
func (r Reason) fromRobot() bool {
	switch r {
	case ReasonNoProprio, ReasonStaleProprio, ReasonBadProprio, ReasonNoCamera, ReasonCameraMismatch:
		return true
	}
	return false
}
