package policy

import (
	"slices"
	"testing"

	"github.com/ttmrobot/ttm/policy/seq"
)

// FuzzParseConfig: any bytes give a usable policy configuration or an
// error, never a panic; an accepted one survives a round trip.
func FuzzParseConfig(f *testing.F) {
	for _, s := range Presets() {
		f.Add([]byte(s.Policy.JSON()))
	}
	f.Add([]byte(`{"action_space":{"dims":[]},"padding":1}`))
	f.Add([]byte(`{"padding":-3,"blind_actions":true}`))
	for _, s := range Presets() {
		for _, m := range []string{"recurrent", "gru", "ttm", ""} {
			s.Policy.Model = m
			f.Add([]byte(s.Policy.JSON()))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			return
		}
		if err := c.ActionSpace.Validate(); err != nil {
			t.Fatalf("ParseConfig accepted an invalid action space: %v", err)
		}
		if !slices.Contains(seq.Names(), c.ModelName()) {
			t.Fatalf("ParseConfig accepted the unknown sequence model %q", c.Model)
		}
		again, err := ParseConfig([]byte(c.JSON()))
		if err != nil || again.JSON() != c.JSON() {
			t.Fatalf("round trip: %s, %v; want %s", again.JSON(), err, c.JSON())
		}
	})
}
