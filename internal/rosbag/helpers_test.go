package rosbag

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// memFile is an in-memory io.WriteSeeker.
type memFile struct {
	b   []byte
	pos int
}

func (m *memFile) Write(p []byte) (int, error) {
	if end := m.pos + len(p); end > len(m.b) {
		m.b = append(m.b, make([]byte, end-len(m.b))...)
	}
	copy(m.b[m.pos:], p)
	m.pos += len(p)
	return len(p), nil
}

func (m *memFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		m.pos = int(off)
	case io.SeekCurrent:
		m.pos += int(off)
	case io.SeekEnd:
		m.pos = len(m.b) + int(off)
	}
	return int64(m.pos), nil
}

// namedErrors are the errors a reader may return for bad input.
var namedErrors = []error{ErrNotBag, ErrVersion, ErrTruncated, ErrCorrupt, ErrUnindexed, ErrCompression, ErrMessage, ErrType}

func isNamed(err error) bool {
	for _, e := range namedErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// toolEnv is the environment for Debian's ROS tools: /usr/bin first on
// PATH (a pyenv python3 cannot import rospy), ROS_HOME in a temporary
// directory, no master needed.
func toolEnv(t testing.TB) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "PATH" && k != "ROS_HOME" && k != "ROS_LOG_DIR" {
			env = append(env, kv)
		}
	}
	home := t.TempDir()
	return append(env, "PATH=/usr/bin:"+os.Getenv("PATH"), "ROS_HOME="+home, "ROS_LOG_DIR="+filepath.Join(home, "log"))
}

// runTool runs a ROS tool from /usr/bin with a deadline and returns its
// standard output.
func runTool(t testing.TB, tool string, args ...string) string {
	t.Helper()
	path := filepath.Join("/usr/bin", tool)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s not found: run `make setup` (Debian ros-core)", path)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = toolEnv(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}
