package ros

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgproc"
)

// WrongType is a publisher of a topic the node subscribes to that declares
// another message type. goroslib refuses such a connection (the checksums
// differ) and says nothing, so without this audit its messages would simply
// never arrive: an e-stop published as std_msgs/Bool would read as "no
// e-stop".
type WrongType struct {
	Topic     string // resolved topic name
	Publisher string // the publishing node's name
	Type      string // the type it publishes
	Want      string // the type the node reads
}

func (w WrongType) String() string {
	return fmt.Sprintf("%s: %s publishes %s, the node reads %s", w.Topic, w.Publisher, w.Type, w.Want)
}

// MessageType is the ROS type name of a goroslib message struct (not a
// pointer to one): "std_msgs/Empty".
func MessageType(msg any) (string, error) { return msgproc.Type(msg) }

// auditor finds the WrongType publishers of a set of topics: the master
// names each topic's publishers (getSystemState), and each publisher says
// which type it publishes (its slave API's getPublications, asked once per
// node URI).
type auditor struct {
	master   *rpcClient
	callerID string
	timeout  time.Duration
	want     map[string]string // resolved topic -> type
	known    map[string]published
}

// published is what one node URI answered to getPublications.
type published struct {
	uri   string
	types map[string]string // topic -> type
}

func newAuditor(master *rpcClient, callerID string, timeout time.Duration, want map[string]string) *auditor {
	return &auditor{master: master, callerID: callerID, timeout: timeout, want: want, known: map[string]published{}}
}

// audit returns the publishers whose type differs, sorted by topic and
// publisher. A publisher that does not answer is skipped until it does.
func (a *auditor) audit(ctx context.Context) ([]WrongType, error) {
	pubs, err := a.publishers(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var wrong []WrongType
	for topic, want := range a.want {
		for _, node := range pubs[topic] {
			if node == a.callerID {
				continue
			}
			seen[node] = true
			types, err := a.typesOf(ctx, node)
			if err != nil {
				continue
			}
			if got, ok := types[topic]; ok && a.isWrong(topic, got) {
				wrong = append(wrong, WrongType{Topic: topic, Publisher: node, Type: got, Want: want})
			}
		}
	}
	for node := range a.known {
		if !seen[node] {
			delete(a.known, node)
		}
	}
	slices.SortFunc(wrong, func(x, y WrongType) int {
		if c := strings.Compare(x.Topic, y.Topic); c != 0 {
			return c
		}
		return strings.Compare(x.Publisher, y.Publisher)
	})
	return wrong, nil
}

// publishers returns, for each topic, the nodes the master lists as its
// publishers.
func (a *auditor) publishers(ctx context.Context) (map[string][]string, error) {
	v, err := a.master.call(ctx, "getSystemState")
	if err != nil {
		return nil, err
	}
	state, ok := v.([]any)
	if !ok || len(state) != 3 {
		return nil, fmt.Errorf("getSystemState: want [publishers, subscribers, services], got %T", v)
	}
	list, ok := state[0].([]any)
	if !ok {
		return nil, fmt.Errorf("getSystemState: publishers are a %T", state[0])
	}
	out := map[string][]string{}
	for _, e := range list {
		pair, ok := e.([]any)
		if !ok || len(pair) != 2 {
			return nil, fmt.Errorf("getSystemState: publisher entry %v is not [topic, nodes]", e)
		}
		topic, ok1 := pair[0].(string)
		nodes, ok2 := pair[1].([]any)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("getSystemState: publisher entry %v is not [topic, nodes]", e)
		}
		if _, wanted := a.want[topic]; !wanted {
			continue
		}
		for _, n := range nodes {
			if name, ok := n.(string); ok {
				out[topic] = append(out[topic], name)
			}
		}
	}
	return out, nil
}

// typesOf returns the types node publishes its topics with. A node whose
// types were all right is asked again only when its URI changes; one that
// was wrong is asked every time, so that it stops being reported once it
// is gone, even killed without unregistering.
func (a *auditor) typesOf(ctx context.Context, node string) (map[string]string, error) {
	uri, found, err := a.master.lookupNode(ctx, node)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("lookupNode %s: not registered", node)
	}
	if k, ok := a.known[node]; ok && k.uri == uri && a.allRight(k.types) {
		return k.types, nil
	}
	delete(a.known, node)
	v, err := newRPCClient(uri, a.callerID, a.timeout).call(ctx, "getPublications")
	if err != nil {
		return nil, err
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("getPublications %s: want a list, got %T", node, v)
	}
	types := map[string]string{}
	for _, e := range list {
		if pair, ok := e.([]any); ok && len(pair) == 2 {
			topic, ok1 := pair[0].(string)
			typ, ok2 := pair[1].(string)
			if ok1 && ok2 {
				types[topic] = typ
			}
		}
	}
	a.known[node] = published{uri: uri, types: types}
	return types, nil
}

// auditLoop reports the WrongType publishers of conf.Inputs to
// conf.OnWrongType every poll interval while the master answers, until the
// supervisor stops.
func (s *Supervisor) auditLoop() {
	a := newAuditor(s.master, s.conf.Args.NodeName(), s.conf.CallTimeout, s.conf.Inputs)
	t := time.NewTicker(s.conf.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.done:
			return
		case <-t.C:
		}
		wrong, err := a.audit(s.ctx)
		if err != nil {
			if s.ctx.Err() == nil {
				s.log.Debug("publisher type audit skipped", "error", err)
			}
			continue
		}
		s.conf.OnWrongType(wrong)
	}
}

// allRight reports whether types has no topic of a.want with another type.
func (a *auditor) allRight(types map[string]string) bool {
	for topic, got := range types {
		if a.isWrong(topic, got) {
			return false
		}
	}
	return true
}

// isWrong reports whether a publisher of topic with type got sends what
// the node cannot read ("*" is rostopic's any type).
func (a *auditor) isWrong(topic, got string) bool {
	want, ok := a.want[topic]
	return ok && got != want && got != "*"
}
