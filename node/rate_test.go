package node

import (
	"math"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/internal/action"
)

func TestChooseRate(t *testing.T) {
	for _, tc := range []struct {
		name           string
		param, trained float64
		mismatch       RateMismatch
		rate, scale    float64
		wantErr        string
	}{
		{"unset, trained at 3 Hz", 0, 3, RateRefuse, 3, 1, ""},
		{"unset, rate unknown", 0, 0, RateRefuse, DefaultRate, 1, ""},
		{"set, rate unknown", 7, 0, RateRefuse, 7, 1, ""},
		{"the trained rate", 3, 3, RateRefuse, 3, 1, ""},
		{"within 1 %", 3.02, 3, RateRefuse, 3.02, 1, ""},
		{"10 Hz refused", 10, 3, RateRefuse, 0, 0, "learnt its per-step actions at 3 Hz; at ~rate 10 Hz its arm would move 3.33 times as fast"},
		{"10 Hz rescaled", 10, 3, RateRescale, 10, 0.3, ""},
		{"1 Hz rescaled", 1, 3, RateRescale, 1, 3, ""},
		{"lockstep", 5, 3, RateLockstep, 5, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rate, scale, err := ChooseRate(tc.param, tc.trained, tc.mismatch)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || rate != tc.rate || math.Abs(scale-tc.scale) > 1e-12 {
				t.Errorf("ChooseRate = %v Hz, x%v, %v; want %v Hz, x%v", rate, scale, err, tc.rate, tc.scale)
			}
		})
	}
	for _, s := range []string{"refuse", "rescale", "lockstep"} {
		if m, err := ParseRateMismatch(s); err != nil || string(m) != s {
			t.Errorf("ParseRateMismatch(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseRateMismatch("scale"); err == nil {
		t.Error("ParseRateMismatch accepted scale")
	}
}

// TestLoopStepScale runs one policy with and without rescaling on the same
// frame: the per-step dimensions are scaled, the velocities, the gripper
// and the mode are not, and the status says so.
func TestLoopStepScale(t *testing.T) {
	for _, mode := range []int{action.ModeArm, action.ModeBase} {
		p := loadPolicy(t, modeCheckpoint(t, mode))
		act := func(cfg LoopConfig) (Output, string) {
			h := newHarness(t, p, cfg)
			h.in.SetInstruction("pick up the coke can")
			o := h.actNow()
			return o, h.sink.lastStatus()
		}
		plain, status := act(LoopConfig{})
		if status != "acting" {
			t.Errorf("unscaled status %q", status)
		}
		scaled, status := act(LoopConfig{Rate: 10, TrainedRate: 3, StepScale: 0.3})
		if want := "acting (rescaled: trained at 3 Hz, running at 10 Hz, per-step actions x0.3)"; status != want {
			t.Errorf("status %q, want %q", status, want)
		}
		if !plain.Acting || !scaled.Acting {
			t.Fatalf("outputs %+v, %+v", plain, scaled)
		}
		live := 0
		for i, d := range action.RT1().Dims {
			want := plain.Action[i]
			if d.PerStep() {
				want *= 0.3
			}
			if math.Abs(float64(scaled.Action[i]-want)) > 1e-6 {
				t.Errorf("mode %d: %s = %v, want %v (unscaled %v)", mode, d.Name, scaled.Action[i], want, plain.Action[i])
			}
			if d.PerStep() && want != 0 {
				live++
			}
		}
		if mode == action.ModeArm && live == 0 {
			t.Error("arm mode moved no per-step dimension: the test shows nothing")
		}
	}
}
