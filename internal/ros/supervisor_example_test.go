package ros_test

import (
	"context"
	"os"
	"sync/atomic"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"
	"github.com/hashicorp/go-hclog"
	"github.com/ttmrobot/ttm/internal/ros"
)

// A node that keeps publishing across roscore restarts. The control loop
// reads the current publisher; Setup and Teardown swap it.
func ExampleSupervisor() {
	log := hclog.New(&hclog.LoggerOptions{Name: "ttm"})
	args, err := ros.ParseArgs("ttm_node", os.Args[1:], nil)
	if err != nil {
		log.Error("bad command line", "error", err)
		return
	}
	topic, err := args.Resolve("action")
	if err != nil {
		log.Error("bad topic name", "error", err)
		return
	}
	var pub atomic.Pointer[ros.Publisher]
	s, err := ros.NewSupervisor(context.Background(), ros.SupervisorConf{
		Args:   args,
		Logger: log,
		Setup: func(n *ros.Node) error {
			p, err := ros.NewPublisher(ros.PublisherConf{Node: n, Topic: topic, Msg: &std_msgs.Float32MultiArray{}})
			if err != nil {
				return err
			}
			pub.Store(p)
			return nil
		},
		Teardown: func() {
			if p := pub.Swap(nil); p != nil {
				p.Close()
			}
		},
	})
	if err != nil {
		log.Error("supervisor", "error", err)
		return
	}
	defer s.Close()

	rate, err := s.Params().Float64(context.Background(), "~rate", 3)
	if err != nil {
		log.Error("parameter", "error", err)
		return
	}
	log.Info("control loop", "rate_hz", rate)
	// ... every tick: if p := pub.Load(); p != nil { p.Write(msg) }
	// ... on <-s.Done(): exit with s.Err() (rosnode kill, name taken)
}
