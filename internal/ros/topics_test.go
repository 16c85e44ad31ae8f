package ros

import "testing"

func TestResetAnswer(t *testing.T) {
	for _, tc := range []struct {
		text  string
		named bool
		want  string
	}{
		{"pick up the coke can", true, `memory reset: a new episode started with instruction "pick up the coke can"`},
		{`say "hi"\now`, true, `memory reset: a new episode started with instruction "say \"hi\"\\now"`},
		{"", true, `memory reset: a new episode started with instruction ""`},
		{"an embedding's episode", false, "memory reset: a new episode started"},
	} {
		got := ResetAnswer(tc.text, tc.named)
		if got != tc.want {
			t.Errorf("ResetAnswer(%q, %v) = %q, want %q", tc.text, tc.named, got, tc.want)
		}
		text, named := ParseResetAnswer(got)
		if named != tc.named || named && text != tc.text {
			t.Errorf("ParseResetAnswer(%q) = %q, %v; want %q, %v", got, text, named, tc.text, tc.named)
		}
	}
	for _, msg := range []string{
		"",
		"memory reset: a new episode started", // an older policy node: names nothing
		"memory reset: a new episode started with", // cut short
		`memory reset: a new episode started with instruction "unterminated`,
		`memory reset: a new episode started with instruction "a" and more`,
		`memory reset requested but not applied within 1s`,
	} {
		if text, named := ParseResetAnswer(msg); named {
			t.Errorf("ParseResetAnswer(%q) = %q, named; want nothing named", msg, text)
		}
	}
}

func FuzzParseResetAnswer(f *testing.F) {
	f.Add("memory reset: a new episode started")
	f.Add(ResetAnswer("open the top drawer", true))
	f.Add(`memory reset: a new episode started with instruction "\xff"`)
	f.Fuzz(func(t *testing.T, msg string) {
		text, named := ParseResetAnswer(msg)
		if !named {
			return
		}
		if again, ok := ParseResetAnswer(ResetAnswer(text, true)); !ok || again != text {
			t.Errorf("%q names %q, which does not survive a round trip (%q, %v)", msg, text, again, ok)
		}
	})
}
