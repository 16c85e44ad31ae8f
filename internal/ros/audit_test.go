package ros

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"

	"github.com/ttmrobot/ttm/internal/rostest"
)

// TestAuditReportsWrongTypePublishers: a rostopic publishing std_msgs/Bool
// on a topic the node reads as std_msgs/Empty is reported (goroslib drops
// its connection without a word), one of the right type is not, and the
// report empties once the wrong one has gone.
func TestAuditReportsWrongTypePublishers(t *testing.T) {
	m := rostest.StartMaster(t)
	var (
		mu      sync.Mutex
		reports [][]WrongType
	)
	var subs []*Subscriber
	s, err := NewSupervisor(context.Background(), SupervisorConf{
		Args:         argsFor(t, m, "ttm_audit"),
		PollInterval: 200 * time.Millisecond,
		Inputs:       map[string]string{"/stop": "std_msgs/Empty", "/words": "std_msgs/String"},
		OnWrongType: func(w []WrongType) {
			mu.Lock()
			reports = append(reports, w)
			mu.Unlock()
		},
		Setup: func(n *Node) error {
			for _, sc := range []struct {
				topic string
				cb    any
			}{{"/stop", func(*std_msgs.Empty) {}}, {"/words", func(*std_msgs.String) {}}} {
				sub, err := NewSubscriber(SubscriberConf{Node: n, Topic: sc.topic, Callback: sc.cb})
				if err != nil {
					return err
				}
				subs = append(subs, sub)
			}
			return nil
		},
		Teardown: func() {
			for _, s := range subs {
				s.Close()
			}
			subs = nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitConnected(t, s, 1, 10*time.Second)

	last := func() []WrongType {
		mu.Lock()
		defer mu.Unlock()
		if len(reports) == 0 {
			return nil
		}
		return reports[len(reports)-1]
	}
	done := make(chan []rostest.Result, 1)
	go func() {
		done <- m.RunParallel(rostest.ToolTimeout,
			[]string{"rostopic", "pub", "-1", "/stop", "std_msgs/Bool", "data: true"},
			[]string{"rostopic", "pub", "-1", "/words", "std_msgs/String", "data: hi"})
	}()
	rostest.WaitFor(t, 15*time.Second, "the Bool publisher reported", func() error {
		w := last()
		if len(w) != 1 {
			return fmt.Errorf("last report %v", w)
		}
		if w[0].Topic != "/stop" || w[0].Type != "std_msgs/Bool" || w[0].Want != "std_msgs/Empty" || !strings.HasPrefix(w[0].Publisher, "/rostopic_") {
			return fmt.Errorf("reported %+v", w[0])
		}
		return nil
	})
	rostest.RequireOK(t, <-done)
	rostest.WaitFor(t, 15*time.Second, "an empty report once rostopic exited", func() error {
		if w := last(); len(w) != 0 {
			return fmt.Errorf("still reported: %v", w)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	for _, r := range reports {
		for _, w := range r {
			if w.Topic == "/words" {
				t.Errorf("a publisher of the right type reported: %v", w)
			}
		}
	}
}
