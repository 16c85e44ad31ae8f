package ros

import (
	"strings"
	"testing"

	"github.com/bluenviron/goroslib/v2"

	"github.com/ttmrobot/ttm/internal/rostest"
)

// TestGoroslibLogLevels: the supervisor's reading of goroslib's log lines,
// fed directly. A publisher closing its connection (goroslib's "got an
// error: EOF") is an info event naming the topic; any other goroslib
// error stays an error. TestPublisherGoneIsNotAnError sees the EOF only
// when the socket closes before the master's publisherUpdate arrives.
func TestGoroslibLogLevels(t *testing.T) {
	for _, tc := range []struct {
		name, msg, wantMessage, wantLevel string
		level                             goroslib.LogLevel
	}{
		{"publisher gone", "subscriber '/gone' got an error: EOF", "a publisher closed its connection", "info", goroslib.LogLevelError},
		{"other error", "subscriber '/x' got an error: checksum mismatch", "subscriber '/x' got an error: checksum mismatch", "error", goroslib.LogLevelError},
		{"warning", "something odd", "something odd", "warn", goroslib.LogLevelWarn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, logs := rostest.Logger(t)
			s := &Supervisor{gorosLog: log, conns: map[string]*connAttempts{}}
			s.onGoroslibLog(tc.level, tc.msg)
			es := logs.Entries(tc.wantMessage)
			if len(es) != 1 {
				t.Fatalf("log %q: want one entry starting %q", logs.String(), tc.wantMessage)
			}
			if es[0]["@level"] != tc.wantLevel {
				t.Errorf("level %v, want %s", es[0]["@level"], tc.wantLevel)
			}
			if tc.name == "publisher gone" && es[0]["topic"] != "/gone" {
				t.Errorf("topic %v, want /gone", es[0]["topic"])
			}
			if tc.name != "publisher gone" && strings.Contains(logs.String(), "closed its connection") {
				t.Errorf("%q read as a publisher closing", tc.msg)
			}
		})
	}
}
