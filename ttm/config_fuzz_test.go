package ttm

import "testing"

// FuzzParseConfig: any bytes give a valid configuration or an error, never
// a panic, and an accepted configuration survives a round trip.
func FuzzParseConfig(f *testing.F) {
	for _, c := range Presets {
		f.Add([]byte(c.WithDefaults().JSON()))
	}
	f.Add([]byte(`{"memory_size":8,"process_size":4,"input_tokens":6,"dim":32,"num_layers":1,"num_heads":4,"mlp_dim":32,"summariser_hidden":16,"memory_mode":"TL-MHA"}`))
	f.Add([]byte(`{"dim":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ParseConfig accepted an invalid configuration: %v", err)
		}
		again, err := ParseConfig([]byte(c.JSON()))
		if err != nil || again != c {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, c)
		}
	})
}
