// Package nodetest holds what the tests of nodes built on internal/ros
// share: a command line for a node of a test master, and waiting for its
// supervisor to set the node up. (internal/rostest cannot hold them:
// internal/ros's own tests import it.)
package nodetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/internal/rostest"
)

// Args parses a command line for a node talking to m (through
// ROS_MASTER_URI, as roslaunch would pass it).
func Args(t testing.TB, m *rostest.Master, name string, args ...string) *ros.Args {
	t.Helper()
	a, err := ros.ParseArgs(name, args, rostest.Env(map[string]string{"ROS_MASTER_URI": m.URI}))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// WaitConnected waits until the supervisor reports a set-up node of at
// least the given generation.
func WaitConnected(t testing.TB, s *ros.Supervisor, generation int, timeout time.Duration) {
	t.Helper()
	rostest.WaitFor(t, timeout, fmt.Sprintf("node generation %d", generation), func() error {
		if st := s.Status(); !st.Connected || st.Generation < generation {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
}
