package rostest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ToolTimeout bounds one run of a ROS tool in the integration tests (the
// Python tools take about a second to start; more under load).
const ToolTimeout = 15 * time.Second

// Env returns a lookup over a fixed map, never the process environment:
// the environment a test gives ros.ParseArgs.
func Env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

// Log collects a JSON hclog log; tests look entries up by message.
type Log struct {
	mu sync.Mutex // mu guards b
	b  bytes.Buffer
}

// Write implements io.Writer.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns the log so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Entries returns the log entries whose message starts with msg.
func (l *Log) Entries(msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(l.String(), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		if m, _ := e["@message"].(string); strings.HasPrefix(m, msg) {
			out = append(out, e)
		}
	}
	return out
}

// Logger returns a debug-level JSON logger into a Log that is printed when
// the test fails.
func Logger(t testing.TB) (hclog.Logger, *Log) {
	buf := &Log{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", buf.String())
		}
	})
	return hclog.New(&hclog.LoggerOptions{Name: "test", Output: buf, JSONFormat: true, Level: hclog.Debug}), buf
}

// RequireOK fails the test on any failed command.
func RequireOK(t testing.TB, res []Result) {
	t.Helper()
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
}

// CheckNoGoroutineLeak waits until the goroutine count is back to baseline
// and fails with the stacks of the extra goroutines otherwise.
//
// goroslib calls the master through http.DefaultTransport, and rosmaster
// answers HTTP/1.1 with keep-alive, so one idle connection (two goroutines)
// stays in that process-wide pool after a node closes, until the master
// closes it or 90 s pass. The pool is not the node's; it is emptied first.
func CheckNoGoroutineLeak(t testing.TB, baseline int) {
	t.Helper()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			var b bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), baseline, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
