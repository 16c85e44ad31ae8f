package seq

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ttmrobot/ttm/ttm"
)

func TestNamesAndPresets(t *testing.T) {
	names := Names()
	want := []string{"ttm", "ttm-nomem", "erase-add", "concat", "window", "causal", "recurrent", "lstm"}
	if !slices.Equal(names, want) {
		t.Fatalf("Names() = %v, want %v", names, want)
	}
	names[0] = "changed"
	if Names()[0] != "ttm" {
		t.Error("Names returns the registry's own slice")
	}
	for _, size := range []string{"small", "robot"} {
		tc, err := ttm.Preset(size)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range want {
			c, err := Preset(name, size)
			if err != nil {
				t.Fatalf("Preset(%q, %q): %v", name, size, err)
			}
			// The same width, depth and token budget as the TTM preset.
			if c.InputTokens != tc.InputTokens || c.OutputTokens != tc.ProcessSize || c.Dim != tc.Dim ||
				c.Layers != tc.NumLayers || c.Heads != tc.NumHeads || c.MLPDim != tc.MLPDim ||
				c.MemoryTokens != tc.MemorySize || c.SummariserHidden != tc.SummariserHidden {
				t.Errorf("Preset(%q, %q) = %+v, does not match ttm preset %+v", name, size, c, tc)
			}
			if c.Window != 6 || c.StateTokens != 16 || c.MaxSteps != 128 || c.LSTMHidden != c.Dim {
				t.Errorf("Preset(%q, %q): model defaults %+v", name, size, c)
			}
		}
	}
	for _, c := range []struct{ name, size, want string }{
		{"ttm", "huge", `unknown size "huge"`},
		{"transformer", "small", `unknown model "transformer"`},
	} {
		if _, err := Preset(c.name, c.size); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Preset(%q, %q): error %v, want %q", c.name, c.size, err, c.want)
		}
	}
	if _, err := New("gru", tinyConfig()); err == nil || !strings.Contains(err.Error(), `unknown model "gru"`) {
		t.Errorf("New(gru): %v", err)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, c := range []struct {
		name, json, want string
	}{
		{"window", `{"input_tokens": 3, "output_tokens": 2, "dim": 8, "layers": 1, "heads": 3, "mlp_dim": 4}`, "heads 3 does not divide dim 8"},
		{"lstm", `{"input_tokens": 0, "output_tokens": 2, "dim": 8, "layers": 1, "heads": 2, "mlp_dim": 4}`, "input_tokens is 0"},
		{"causal", `{"input_tokens": 3, "output_tokens": 2, "dim": 8, "layers": 1, "heads": 2, "mlp_dim": 4, "window": -1}`, "window is -1"},
		{"recurrent", `{"input_tokens": 3, "output_tokens": 2, "dim": 8, "layers": 1, "heads": 2, "mlp_dim": 4, "windw": 3}`, `unknown field "windw"`},
		{"concat", `{"input_tokens": 3, "output_tokens": 2, "dim": 8, "layers": 1, "heads": 2, "mlp_dim": 4} {}`, "trailing data"},
		{"window", `{"input_tokens": 3, "output_tokens": 2, "dim": 65536, "layers": 1, "heads": 2, "mlp_dim": 65536}`, "parameters, want at most"},
		{"causal", `{"input_tokens": 64, "output_tokens": 2, "dim": 512, "layers": 8, "heads": 2, "mlp_dim": 4, "max_steps": 65536}`, "would hold"},
		{"window", `{"input_tokens": 70000, "output_tokens": 2, "dim": 8, "layers": 1, "heads": 2, "mlp_dim": 4}`, "input_tokens is 70000, want at most"},
		{"window", `[1, 2]`, "cannot unmarshal"},
		{"nope", `{}`, `unknown model "nope"`},
	} {
		_, err := ParseConfig(c.name, []byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseConfig(%s, %s): error %v, want one containing %q", c.name, c.json, err, c.want)
		}
	}
}

func TestFromJSONRoundTrip(t *testing.T) {
	// A model rebuilt from its ConfigJSON and a copy of its parameters
	// computes the same outputs, bit for bit, and does not share the
	// caller's slice.
	for _, name := range Names() {
		m := newModel(t, name, tinyConfig(), 71)
		params := append([]float32(nil), m.Params()...)
		back, err := FromJSON(name, m.ConfigJSON(), params)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		params[0] = 1e6
		if back.Name() != name || back.Shape() != m.Shape() || len(back.Specs()) != len(m.Specs()) {
			t.Fatalf("%s: rebuilt as %s %+v with %d tensors", name, back.Name(), back.Shape(), len(back.Specs()))
		}
		r := rand.New(rand.NewPCG(71, 72))
		nd, rd := sizes(m)
		ra, rb := m.NewRunner(), back.NewRunner()
		sa, sb := m.NewState(), back.NewState()
		oa, ob := make([]float32, rd), make([]float32, rd)
		for s := 0; s < 3; s++ {
			in := randFloats(r, nd, 1)
			ra.Step(sa, in, oa)
			rb.Step(sb, in, ob)
			if relErr(ob, oa) != 0 {
				t.Errorf("%s step %d: the rebuilt model computes something else", name, s)
			}
		}
	}
}

func TestFromJSONErrors(t *testing.T) {
	m := newModel(t, "window", tinyConfig(), 73)
	good := m.Params()
	nan := append([]float32(nil), good...)
	spec := m.Specs()[2]
	nan[spec.Offset+1] = float32(math.Inf(1))
	tm := newModel(t, "ttm", tinyConfig(), 73)
	for _, c := range []struct {
		what, name, json string
		params           []float32
		want             string
	}{
		{"short", "window", m.ConfigJSON(), good[:len(good)-1], "parameters given, the configuration needs"},
		{"not finite", "window", m.ConfigJSON(), nan, "tensor " + spec.Name + " holds +Inf at element 1"},
		{"bad json", "window", "{", good, "seq window config"},
		{"unknown name", "mamba", m.ConfigJSON(), good, `unknown model "mamba"`},
		{"ttm config under another variant", "ttm-nomem", tm.ConfigJSON(), tm.Params(), "needs a ttm model with no_memory"},
		{"ttm config that does not parse", "ttm", `{"memory_size": -1}`, nil, "memory_size"},
	} {
		_, err := FromJSON(c.name, c.json, c.params)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.what, err, c.want)
		}
	}
}

func TestWrapTTM(t *testing.T) {
	tc := ttmConfig("erase-add", tinyConfig())
	m, err := ttm.NewModel(tc)
	if err != nil {
		t.Fatal(err)
	}
	w, err := WrapTTM("erase-add", m)
	if err != nil {
		t.Fatal(err)
	}
	if w.Model() != m || &w.Params()[0] != &m.Params[0] {
		t.Error("WrapTTM does not adapt the model it is given")
	}
	if TTMMemory(w.NewState()) == nil || TTMMemory(newModel(t, "lstm", tinyConfig(), 1).NewState()) != nil {
		t.Error("TTMMemory does not tell TTM states from others")
	}
	for _, name := range []string{"ttm", "ttm-nomem", "window"} {
		if _, err := WrapTTM(name, m); err == nil {
			t.Errorf("an erase-add TTM wrapped as %q", name)
		}
	}
}

func TestParamCounts(t *testing.T) {
	// Hand counts for tinyConfig: d 8, f 12, L 2, n 3, r 2, m 4, TokenLearner
	// hidden 6, window 2, 3 state tokens, LSTM width 5.
	//
	// One encoder block: LN 16 + attention 4·(64+8) + LN 16 + MLP
	// (8·12+12) + (12·8+8) = 532; two blocks and the final LN: 1080.
	// A TokenLearner with K outputs: LN 16 + (8·6+6) + (6·K+K).
	want := map[string]int{
		"ttm":       (16 + 54 + 14) + (16 + 54 + 28) + 16 + 1080, // read K=2, write K=4, P_proc, encoder
		"ttm-nomem": 84 + 98 + 1096,
		// read 84; add/erase write: 3 LNs 48, MLPs d->6->8 (54+56), r->6->8 (18+56),
		// d->6->d (54+56), r->6->8, d->6->d
		"erase-add": 84 + 48 + 110 + 74 + 110 + 74 + 110 + 1096,
		"concat":    84 + 16 + 1080,                                    // read, P_proc, encoder
		"window":    2*3*8 + 2*8 + 1080,                                // P over h·n rows, readout tokens, encoder
		"causal":    3*8 + 2*8 + 1080,                                  // P over n rows, readout, encoder
		"recurrent": (3+3)*8 + 2*8 + 1080,                              // P over s+n rows, readout, encoder
		"lstm":      16 + (8*20 + 20) + (5*20 + 20) + (5*16 + 16) + 16, // LN, W_x b_x, W_h b_h, out, LN
	}
	for _, name := range Names() {
		m, err := New(name, tinyConfig())
		if err != nil {
			t.Fatal(err)
		}
		if got := NumParams(m); got != want[name] {
			t.Errorf("%s: %d parameters, want %d", name, got, want[name])
		}
		// Specs tile the flat slice in order.
		off := 0
		for _, s := range m.Specs() {
			size := 1
			for _, d := range s.Shape {
				size *= d
			}
			if s.Offset != off || s.Size != size {
				t.Errorf("%s: tensor %s at %d size %d (shape %v), want offset %d", name, s.Name, s.Offset, s.Size, s.Shape, off)
			}
			off += s.Size
		}
		if off != NumParams(m) {
			t.Errorf("%s: specs cover %d of %d parameters", name, off, NumParams(m))
		}
	}
}

func TestFLOPs(t *testing.T) {
	// Hand counts for tinyConfig, 2 per multiply-add. One pass of the
	// encoder over R rows and K keys: L·2·(4·R·d² + 2·R·K·d + 2·R·d·f).
	enc := func(rows, keys int) int64 { return int64(2 * 2 * (4*rows*64 + 2*rows*keys*8 + 2*rows*8*12)) }
	for _, c := range []struct {
		name string
		step int
		want int64
	}{
		{"window", 0, 18432},    // R = K = h·n + r = 8
		{"window", 5000, 18432}, // the same at every step
		{"recurrent", 7, 18432}, // R = K = s + n + r = 8
		{"causal", 0, 10560},    // R = n + r = 5, K = 5
		{"causal", 10, 20160},   // K = 10·3 + 5 = 35
		{"concat", 0, 360 + 96 + 3840},
		{"concat", 10, 360 + 1056 + 3840}, // logits of n rows 2·3·(48+12), A·V 2·2·33·8, encoder R = K = 2
		{"lstm", 3, 680},                  // 2·(8·20 + 5·20 + 5·16)
	} {
		m, err := New(c.name, tinyConfig())
		if err != nil {
			t.Fatal(err)
		}
		if got := m.FLOPs(c.step); got != c.want {
			t.Errorf("%s at step %d: %d FLOPs, want %d", c.name, c.step, got, c.want)
		}
	}
	if enc(8, 8) != 18432 || enc(5, 35) != 20160 {
		t.Error("the hand counts above disagree with the encoder formula")
	}
	// Flat for the fixed-state models, growing for the others.
	for _, name := range Names() {
		m, _ := New(name, tinyConfig())
		grows := name == "causal" || name == "concat"
		if got := m.FLOPs(9999) > m.FLOPs(0); got != grows {
			t.Errorf("%s: FLOPs at step 9999 %d, at step 0 %d; growing %v, want %v", name, m.FLOPs(9999), m.FLOPs(0), got, grows)
		}
	}
}

func TestSizesReport(t *testing.T) {
	// Parameters and FLOPs per step of every model at both sizes, for the
	// README and the issue (go test -run SizesReport -v).
	for _, size := range []string{"small", "robot"} {
		for _, name := range Names() {
			c, _ := Preset(name, size)
			m, err := New(name, c)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%-6s %-10s %10d params   FLOPs per step: %.4g at step 1, %.4g at step 100, %.4g at step 10000",
				size, name, NumParams(m), float64(m.FLOPs(0)), float64(m.FLOPs(99)), float64(m.FLOPs(9999)))
		}
	}
}

func TestGrowingStatesGrowExactly(t *testing.T) {
	// A State that outgrows MaxSteps computes what a State with room
	// from the start computes, bit for bit.
	for _, name := range []string{"causal", "concat"} {
		small, big := tinyConfig(), tinyConfig()
		small.MaxSteps, big.MaxSteps = 1, 16
		ma := newModel(t, name, small, 79)
		mb, err := FromJSON(name, big.JSON(), ma.Params())
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(79, 80))
		nd, rd := sizes(ma)
		ra, rb, sa, sb := ma.NewRunner(), mb.NewRunner(), ma.NewState(), mb.NewState()
		oa, ob := make([]float32, rd), make([]float32, rd)
		for s := 0; s < 9; s++ {
			in := randFloats(r, nd, 1)
			ra.Step(sa, in, oa)
			rb.Step(sb, in, ob)
			if relErr(oa, ob) != 0 || sa.Hash() != sb.Hash() {
				t.Errorf("%s step %d: a growing state computes something else", name, s)
			}
		}
		// A snapshot larger than a state's room is restored by growing it.
		fresh := ma.NewState()
		fresh.CopyFrom(sa)
		if fresh.Hash() != sa.Hash() || fresh.Steps() != 9 {
			t.Errorf("%s: restoring 9 steps into a state with room for 1 failed", name)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, name := range Names() {
		c, _ := Preset(name, "small")
		f.Add(name, c.JSON())
	}
	f.Add("window", `{"input_tokens": 2, "output_tokens": 1, "dim": 4, "layers": 1, "heads": 2, "mlp_dim": 3, "window": 1}`)
	f.Add("lstm", `{"dim": -4}`)
	f.Add("causal", `{"max_steps": 65536, "input_tokens": 65536}`)
	f.Add("recurrent", `null`)
	f.Fuzz(func(t *testing.T, name, js string) {
		c, err := ParseConfig(name, []byte(js))
		if err != nil {
			return
		}
		if isTTMName(name) {
			return // checkpoints keep the ttm package's configuration
		}
		// A configuration that parses builds, and survives a round trip.
		m, err := New(name, c)
		if err != nil {
			t.Fatalf("ParseConfig accepted %s for %s, New refused it: %v", js, name, err)
		}
		back, err := ParseConfig(name, []byte(m.ConfigJSON()))
		if err != nil || back != c {
			t.Fatalf("round trip of %s: %+v, %v; want %+v", js, back, err, c)
		}
	})
}

func FuzzFromJSON(f *testing.F) {
	for _, name := range Names() {
		m, _ := New(name, tinyConfig())
		f.Add(name, m.ConfigJSON(), 0)
	}
	f.Add("window", `{"dim": 8}`, 3)
	f.Add("ttm", `{"memory_size": 4, "process_size": 2, "input_tokens": 3, "dim": 8, "num_layers": 1, "num_heads": 2, "mlp_dim": 4}`, -1)
	f.Fuzz(func(t *testing.T, name, js string, extra int) {
		// Never a panic: a model, or an error.
		if _, err := ParseConfig(name, []byte(js)); err != nil && !isTTMName(name) {
			return
		}
		n := 0
		if isTTMName(name) {
			tc, err := ttm.ParseConfig([]byte(js))
			if err != nil || max(tc.Dim, tc.MemorySize, tc.InputTokens, tc.ProcessSize, tc.NumLayers, tc.MLPDim, tc.SummariserHidden, tc.MixerTokenDim, tc.WriteHeads) > 256 {
				return // sizes the ttm package would allocate without bound
			}
			m, err := ttm.NewModel(tc)
			if err != nil {
				return
			}
			n = len(m.Params)
		} else {
			c, _ := ParseConfig(name, []byte(js))
			m, _ := New(name, c)
			n = len(m.Params())
		}
		params := make([]float32, max(0, n+extra%3))
		m, err := FromJSON(name, js, params)
		if (err == nil) != (extra%3 == 0) {
			t.Fatalf("%d parameters for a model of %d: error %v", len(params), n, err)
		}
		if err == nil && len(m.Params()) != n {
			t.Fatalf("rebuilt with %d parameters, want %d", len(m.Params()), n)
		}
	})
}
