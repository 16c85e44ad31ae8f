package ros

import (
	"context"
	"time"

	"github.com/bluenviron/goroslib/v2"
)

// Node is a registered goroslib node, as a Supervisor hands it to Setup.
// Everything created on it (publishers, subscribers, services) must be
// closed by Teardown; the node itself belongs to the Supervisor.
type Node struct {
	n *goroslib.Node
}

// TimeNow returns the node's ROS time: the last /clock message when
// /use_sim_time is set (the Unix epoch before the first one), the wall
// clock otherwise.
func (n *Node) TimeNow() time.Time { return n.n.TimeNow() }

// Subscribers returns how many subscribers the master knows for topic (a
// resolved name); 0 for a topic it does not know.
func (n *Node) Subscribers(topic string) (int, error) {
	topics, err := n.n.MasterGetTopics()
	if err != nil {
		return 0, err
	}
	if t, ok := topics[topic]; ok {
		return len(t.Subscribers), nil
	}
	return 0, nil
}

// PublisherConf configures a Publisher.
type PublisherConf struct {
	// Node to publish from. Required.
	Node *Node
	// Topic is the resolved name (Args.Resolve). Required.
	Topic string
	// Msg is a pointer to a message of the topic's type. Required.
	Msg any
	// Latch keeps the last message and sends it to every new subscriber.
	Latch bool
}

// Publisher publishes messages on a topic.
type Publisher struct {
	p *goroslib.Publisher
}

// NewPublisher advertises a topic.
func NewPublisher(conf PublisherConf) (*Publisher, error) {
	p, err := goroslib.NewPublisher(goroslib.PublisherConf{Node: conf.Node.n, Topic: conf.Topic, Msg: conf.Msg, Latch: conf.Latch})
	if err != nil {
		return nil, err
	}
	return &Publisher{p: p}, nil
}

// Write queues msg (a pointer of the topic's type) for every subscriber.
// goroslib encodes it later on its own goroutines: msg must not change
// afterwards.
func (p *Publisher) Write(msg any) { p.p.Write(msg) }

// Close stops publishing; on a nil Publisher (one a partial setup never
// created) it does nothing.
func (p *Publisher) Close() {
	if p != nil {
		p.p.Close()
	}
}

// SubscriberConf configures a Subscriber.
type SubscriberConf struct {
	// Node to subscribe from. Required.
	Node *Node
	// Topic is the resolved name (Args.Resolve). Required.
	Topic string
	// Callback is a func(*M) for the topic's message type M; it runs on
	// goroslib's goroutines. Required.
	Callback any
}

// Subscriber receives a topic's messages.
type Subscriber struct {
	s *goroslib.Subscriber
}

// NewSubscriber subscribes to a topic.
func NewSubscriber(conf SubscriberConf) (*Subscriber, error) {
	s, err := goroslib.NewSubscriber(goroslib.SubscriberConf{Node: conf.Node.n, Topic: conf.Topic, Callback: conf.Callback})
	if err != nil {
		return nil, err
	}
	return &Subscriber{s: s}, nil
}

// Close unsubscribes; no callback runs after it returns.
func (s *Subscriber) Close() { s.s.Close() }

// ServiceProviderConf configures a ServiceProvider.
type ServiceProviderConf struct {
	// Node to provide the service from. Required.
	Node *Node
	// Name is the resolved name (Args.Resolve). Required.
	Name string
	// Srv is a pointer to the service type (std_srvs.Trigger{}, ...).
	// Required.
	Srv any
	// Callback is a func(*Req) (*Res, bool) of the service's request and
	// response types; false answers the call with an error. Required.
	Callback any
}

// ServiceProvider answers a service.
type ServiceProvider struct {
	s *goroslib.ServiceProvider
}

// NewServiceProvider provides a service.
func NewServiceProvider(conf ServiceProviderConf) (*ServiceProvider, error) {
	s, err := goroslib.NewServiceProvider(goroslib.ServiceProviderConf{Node: conf.Node.n, Name: conf.Name, Srv: conf.Srv, Callback: conf.Callback})
	if err != nil {
		return nil, err
	}
	return &ServiceProvider{s: s}, nil
}

// Close stops providing the service.
func (s *ServiceProvider) Close() { s.s.Close() }

// ServiceClientConf configures a ServiceClient.
type ServiceClientConf struct {
	// Node to call from. Required.
	Node *Node
	// Name is the resolved name (Args.Resolve). Required.
	Name string
	// Srv is a pointer to the service type. Required.
	Srv any
}

// ServiceClient calls a service.
type ServiceClient struct {
	c *goroslib.ServiceClient
}

// NewServiceClient creates a client of a service; the service need not
// exist yet.
func NewServiceClient(conf ServiceClientConf) (*ServiceClient, error) {
	c, err := goroslib.NewServiceClient(goroslib.ServiceClientConf{Node: conf.Node.n, Name: conf.Name, Srv: conf.Srv})
	if err != nil {
		return nil, err
	}
	return &ServiceClient{c: c}, nil
}

// CallContext calls the service with req and fills res (pointers of the
// service's request and response types), until ctx ends.
func (c *ServiceClient) CallContext(ctx context.Context, req, res any) error {
	return c.c.CallContext(ctx, req, res)
}

// Close closes the client's connection.
func (c *ServiceClient) Close() { c.c.Close() }
