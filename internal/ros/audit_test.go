package ros

import (
	"context"
	"errors"
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
	startReader(t, SupervisorConf{
		Args:         argsFor(t, m, "ttm_audit"),
		PollInterval: 200 * time.Millisecond,
		Inputs:       map[string]string{"/stop": "std_msgs/Empty", "/words": "std_msgs/String"},
		OnWrongType: func(w []WrongType) {
			mu.Lock()
			reports = append(reports, w)
			mu.Unlock()
		},
	}, map[string]any{"/stop": func(*std_msgs.Empty) {}, "/words": func(*std_msgs.String) {}})

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

// TestOversizeMessagesReported: goroslib drops a message over its 16 MiB
// limit with the connection and says nothing; the supervisor reports the
// publisher whose connection is retried, and only it.
func TestOversizeMessagesReported(t *testing.T) {
	m := rostest.StartMaster(t)
	log, logs := rostest.Logger(t)
	read := func(*std_msgs.String) {}
	startReader(t, SupervisorConf{Args: argsFor(t, m, "ttm_big_reader"), Logger: log, PollInterval: 200 * time.Millisecond},
		map[string]any{"/big": read, "/small": read})

	var big, small *Publisher
	w, err := NewSupervisor(context.Background(), SupervisorConf{
		Args: argsFor(t, m, "ttm_big_writer"), PollInterval: 200 * time.Millisecond,
		Setup: func(n *Node) error {
			var err error
			if big, err = NewPublisher(PublisherConf{Node: n, Topic: "/big", Msg: &std_msgs.String{}}); err != nil {
				return err
			}
			small, err = NewPublisher(PublisherConf{Node: n, Topic: "/small", Msg: &std_msgs.String{}})
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	waitConnected(t, w, 1, 10*time.Second)
	huge := &std_msgs.String{Data: strings.Repeat("x", 17<<20)}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				big.Write(huge)
				small.Write(&std_msgs.String{Data: "hi"})
			}
		}
	}()
	rostest.WaitFor(t, 20*time.Second, "the failing connection reported", func() error {
		for _, e := range logs.Entries("a publisher's messages are dropped: the connection failed and goroslib retries it every 5 s (a message over its 16 MiB limit, or of another type)") {
			if e["topic"] == "/big" {
				return nil
			}
			t.Fatalf("reported %v", e)
		}
		return errors.New("not yet")
	})
}

// startReader starts a supervised node, conf without Setup and Teardown,
// that subscribes to each topic with its callback, waits until it is
// registered and closes it when the test ends.
func startReader(t *testing.T, conf SupervisorConf, callbacks map[string]any) {
	t.Helper()
	var subs []*Subscriber
	conf.Setup = func(n *Node) error {
		for topic, cb := range callbacks {
			sub, err := NewSubscriber(SubscriberConf{Node: n, Topic: topic, Callback: cb})
			if err != nil {
				return err
			}
			subs = append(subs, sub)
		}
		return nil
	}
	conf.Teardown = func() {
		for _, s := range subs {
			s.Close()
		}
		subs = nil
	}
	s, err := NewSupervisor(context.Background(), conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitConnected(t, s, 1, 10*time.Second)
}
