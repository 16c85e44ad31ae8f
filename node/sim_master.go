package node

import (
	"context"
	"fmt"
	"time"
)

// MasterPID asks the ROS master at uri (http://host:port) for its process
// id; an error means no master answers there within timeout.
func MasterPID(ctx context.Context, uri string, timeout time.Duration) (int, error) {
	if _, err := masterAddress(uri); err != nil {
		return 0, fmt.Errorf("master URI %s: %w", uri, err)
	}
	return newRPCClient(uri, "/ttm_master_check", timeout).getPid(ctx)
}
