package ros

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/bluenviron/goroslib/v2"
	"github.com/hashicorp/go-hclog"
)

// Supervisor defaults.
const (
	DefaultPollInterval = time.Second
	DefaultRetryMin     = 250 * time.Millisecond
	DefaultRetryMax     = 5 * time.Second
	DefaultCallTimeout  = 2 * time.Second
)

// ErrNodeShutdown is returned by Supervisor.Err when the ROS graph shut the
// node down: `rosnode kill`, or another node registering under the same name
// (the master then tells the old node to exit). A ROS node exits then; the
// Supervisor stops instead of fighting for the name.
var ErrNodeShutdown = errors.New("node shut down by the ROS graph")

// SupervisorConf configures a Supervisor.
type SupervisorConf struct {
	// Args holds the node's name, namespace, master, host and private
	// parameters. Required.
	Args *Args

	// Setup creates the node's publishers, subscribers and services on a
	// fresh goroslib node. It runs on the supervisor's goroutine after every
	// (re)creation of the node, after the command-line private parameters
	// have been written to the parameter server. Give goroslib names already
	// resolved with Args.Resolve: goroslib applies neither namespaces of
	// remaps nor private names by ROS rules. Required.
	Setup func(n *Node) error

	// Teardown undoes Setup (close what it created, stop using the node); it
	// runs before the node is closed, also after a failed Setup, so it must
	// cope with a partial setup. Publishers it does not close keep running
	// until the node closes; their Write returns at once from then on.
	// Optional.
	Teardown func()

	// Logger receives what the supervisor and goroslib report.
	// It defaults to a logger that discards everything.
	Logger hclog.Logger

	// PollInterval is how often the master is checked.
	// It defaults to DefaultPollInterval.
	PollInterval time.Duration

	// RetryMin and RetryMax bound the exponential backoff between attempts
	// to create the node. They default to DefaultRetryMin and
	// DefaultRetryMax.
	RetryMin, RetryMax time.Duration

	// CallTimeout bounds each call to the master made by the supervisor.
	// It defaults to DefaultCallTimeout.
	CallTimeout time.Duration

	// Inputs maps the resolved topics the node subscribes to onto the
	// message types it reads them as (see MessageType). Every poll
	// interval the supervisor asks who publishes them with which type and
	// passes the publishers of another type (none: an empty slice) to
	// OnWrongType, since goroslib drops their connections silently.
	// Optional; OnWrongType is required with it.
	Inputs      map[string]string
	OnWrongType func([]WrongType)
}

// SupervisorStatus is a snapshot of a Supervisor.
type SupervisorStatus struct {
	Connected  bool   // a node is registered and set up
	Generation int    // how many times a node was created and set up
	MasterPID  int    // pid of the master the current node registered with
	NodeURI    string // slave API URI of the current node
}

// Supervisor owns a goroslib node and keeps it registered: it waits for the
// master at start-up (like rospy and roscpp), notices a master restart (its
// pid changes; goroslib never re-registers) and re-creates the node, writes
// the command-line private parameters again, and runs Setup again. While the
// master is merely unreachable the node is kept, so connections between
// nodes that already exist keep working; it is re-created only when the
// master comes back as a new process.
//
// One goroutine runs everything, including Setup and Teardown. Close (or
// cancelling the context given to NewSupervisor) tears down, closes the
// node and waits for that goroutine.
type Supervisor struct {
	conf      SupervisorConf
	log       hclog.Logger
	gorosLog  hclog.Logger
	master    *rpcClient
	params    *Params
	ctx       context.Context
	ctxCancel context.CancelFunc
	done      chan struct{}
	audits    sync.WaitGroup // the audit goroutine, when conf.Inputs is set

	connMu sync.Mutex               // connMu guards conns
	conns  map[string]*connAttempts // "topic publisher-address"

	mu     sync.Mutex // mu guards status and err
	status SupervisorStatus
	err    error
}

// NewSupervisor validates conf and starts supervising; it returns at once.
// The node appears once the master answers; watch Status or the log.
//
// goroslib reads ROS_NAMESPACE itself and lets it override the configured
// namespace, so when ROS_NAMESPACE is set and differs from Args.Namespace
// (__ns:= given), NewSupervisor sets ROS_NAMESPACE to Args.Namespace for the
// process.
func NewSupervisor(ctx context.Context, conf SupervisorConf) (*Supervisor, error) {
	if conf.Args == nil {
		return nil, fmt.Errorf("supervisor: Args is nil")
	}
	if conf.Setup == nil {
		return nil, fmt.Errorf("supervisor: Setup is nil")
	}
	if conf.Logger == nil {
		conf.Logger = hclog.NewNullLogger()
	}
	if conf.PollInterval <= 0 {
		conf.PollInterval = DefaultPollInterval
	}
	if conf.RetryMin <= 0 {
		conf.RetryMin = DefaultRetryMin
	}
	if conf.RetryMax <= 0 {
		conf.RetryMax = DefaultRetryMax
	}
	if conf.RetryMax < conf.RetryMin {
		return nil, fmt.Errorf("supervisor: RetryMax %v is below RetryMin %v", conf.RetryMax, conf.RetryMin)
	}
	if conf.CallTimeout <= 0 {
		conf.CallTimeout = DefaultCallTimeout
	}
	if len(conf.Inputs) > 0 && conf.OnWrongType == nil {
		return nil, fmt.Errorf("supervisor: Inputs without OnWrongType")
	}
	if err := checkGoroslibRemaps(os.Args[1:], conf.Args); err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	if v := os.Getenv("ROS_NAMESPACE"); v != "" && v != conf.Args.Namespace {
		if err := os.Setenv("ROS_NAMESPACE", conf.Args.Namespace); err != nil {
			return nil, fmt.Errorf("supervisor: set ROS_NAMESPACE for goroslib: %w", err)
		}
	}

	log := conf.Logger.With("node", conf.Args.NodeName(), "master", conf.Args.MasterURI)
	s := &Supervisor{
		conf:     conf,
		log:      log,
		gorosLog: log.Named("goroslib"),
		master:   newRPCClient(conf.Args.MasterURI, conf.Args.NodeName(), conf.CallTimeout),
		params:   NewParams(conf.Args, conf.CallTimeout),
		done:     make(chan struct{}),
		conns:    map[string]*connAttempts{},
	}
	s.ctx, s.ctxCancel = context.WithCancel(ctx)
	if len(conf.Inputs) > 0 {
		s.audits.Add(1)
		go func() {
			defer s.audits.Done()
			s.auditLoop()
		}()
	}
	go s.run()
	return s, nil
}

// Close stops the supervisor: Teardown runs, the node closes, and Close
// returns when the supervisor's goroutine has finished.
func (s *Supervisor) Close() {
	s.ctxCancel()
	<-s.done
	s.audits.Wait()
}

// Done is closed when the supervisor has stopped (Close, context, or a
// terminal error; see Err).
func (s *Supervisor) Done() <-chan struct{} { return s.done }

// Err returns why the supervisor stopped on its own: an error wrapping
// ErrNodeShutdown, or a permanent setup failure. It is nil while running
// and after Close.
func (s *Supervisor) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Status returns a snapshot of the supervisor's state.
func (s *Supervisor) Status() SupervisorStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Resolve resolves a name for the node (namespace, private names,
// remappings); give goroslib the result.
func (s *Supervisor) Resolve(name string) (string, error) { return s.conf.Args.Resolve(name) }

// Params returns the node's parameter reader.
func (s *Supervisor) Params() *Params { return s.params }

func (s *Supervisor) setStatus(f func(*SupervisorStatus)) {
	s.mu.Lock()
	f(&s.status)
	s.mu.Unlock()
}

func (s *Supervisor) run() {
	defer close(s.done)
	for {
		n, pid, uri, err := s.connect()
		if err != nil {
			if s.ctx.Err() == nil {
				s.log.Error("giving up on the ROS node", "error", err)
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
			}
			return
		}
		reason, err := s.watch(pid, uri)
		s.setStatus(func(st *SupervisorStatus) { st.Connected = false })
		s.closeNode(n)
		if err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			s.log.Error("node stopped", "reason", reason, "error", err)
			return
		}
		if s.ctx.Err() != nil {
			return
		}
		s.log.Info("re-creating the node", "reason", reason)
	}
}

// connect creates and sets up a node, retrying with exponential backoff
// until it succeeds, the context ends (error ctx.Err()), or a failure is
// permanent.
func (s *Supervisor) connect() (n *goroslib.Node, pid int, uri string, err error) {
	delay := s.conf.RetryMin
	start := time.Now()
	for attempt := 1; ; attempt++ {
		n, pid, uri, err = s.create()
		if err == nil {
			var gen int
			s.setStatus(func(st *SupervisorStatus) {
				gen = st.Generation + 1
				*st = SupervisorStatus{Connected: true, Generation: gen, MasterPID: pid, NodeURI: uri}
			})
			s.log.Info("node registered", "generation", gen, "master_pid", pid,
				"node_uri", uri, "attempts", attempt, "waited", time.Since(start).Round(time.Millisecond))
			return n, pid, uri, nil
		}
		if s.ctx.Err() != nil {
			return nil, 0, "", s.ctx.Err()
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			return nil, 0, "", perm.err
		}
		if attempt == 1 {
			s.log.Warn("waiting for the ROS master", "error", err)
		} else {
			s.log.Debug("ROS master still unavailable", "attempt", attempt, "retry_in", delay, "error", err)
		}
		if !sleepCtx(s.ctx, delay) {
			return nil, 0, "", s.ctx.Err()
		}
		delay = min(2*delay, s.conf.RetryMax)
	}
}

// permanentError marks a failure that retrying cannot fix: the master is up
// and unchanged, and creating or setting up the node still failed.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }

// create makes one attempt: master pid, goroslib node, private parameters,
// own URI, Setup.
func (s *Supervisor) create() (*goroslib.Node, int, string, error) {
	a := s.conf.Args
	pid, err := s.master.getPid(s.ctx)
	if err != nil {
		return nil, 0, "", err
	}
	n, err := goroslib.NewNode(goroslib.NodeConf{
		MasterAddress: a.MasterAddress,
		Namespace:     a.Namespace,
		Name:          a.Name,
		Host:          a.Host,
		LogLevel:      goroslib.LogLevelDebug, // onGoroslibLog reads its connection events

		LogDestinations: goroslib.LogDestinationRosout | goroslib.LogDestinationCallback,
		OnLog:           s.onGoroslibLog,
	})
	if err != nil {
		return nil, 0, "", s.classify(fmt.Errorf("create goroslib node %s: %w", a.NodeName(), err), pid)
	}
	uri, err := s.afterCreate()
	if err != nil {
		n.Close()
		return nil, 0, "", s.classify(err, pid)
	}
	if err := s.conf.Setup(&Node{n: n}); err != nil {
		s.teardown()
		n.Close()
		return nil, 0, "", s.classify(fmt.Errorf("setup: %w", err), pid)
	}
	return n, pid, uri, nil
}

// afterCreate writes the command-line private parameters and returns the
// slave API URI the master has for the new node.
func (s *Supervisor) afterCreate() (string, error) {
	if err := s.params.SetCommandLineParams(s.ctx); err != nil {
		return "", err
	}
	uri, found, err := s.master.lookupNode(s.ctx, s.conf.Args.NodeName())
	if err != nil {
		return "", fmt.Errorf("look up own registration: %w", err)
	}
	if !found {
		return "", fmt.Errorf("look up own registration: master does not know %s", s.conf.Args.NodeName())
	}
	return uri, nil
}

// classify marks err permanent when the master is still the same process and
// err is not a network failure.
func (s *Supervisor) classify(err error, pid int) error {
	if s.ctx.Err() != nil {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return err
	}
	now, perr := s.master.getPid(s.ctx)
	if perr != nil || now != pid {
		return err
	}
	return &permanentError{err}
}

// watch polls the master until the node must be re-created (err nil, with
// the reason) or must stop (err non-nil), or the context ends.
func (s *Supervisor) watch(pid int, uri string) (string, error) {
	self := newRPCClient(uri, s.conf.Args.NodeName(), s.conf.CallTimeout)
	name := s.conf.Args.NodeName()
	t := time.NewTicker(s.conf.PollInterval)
	defer t.Stop()
	var lostAt time.Time // zero while the master answers
	for {
		select {
		case <-s.ctx.Done():
			return "closed", nil
		case <-t.C:
		}
		now, err := s.master.getPid(s.ctx)
		if err != nil {
			if s.ctx.Err() != nil {
				return "closed", nil
			}
			if lostAt.IsZero() {
				lostAt = time.Now()
				s.log.Warn("ROS master unreachable; keeping the node, existing connections continue", "error", err)
			}
			continue
		}
		if now != pid {
			down := time.Duration(0)
			if !lostAt.IsZero() {
				down = time.Since(lostAt).Round(time.Millisecond)
			}
			s.log.Warn("ROS master restarted; the node's registrations are gone", "old_pid", pid, "new_pid", now, "unreachable_for", down)
			return "master restarted", nil
		}
		if !lostAt.IsZero() {
			s.log.Info("ROS master reachable again, same process", "pid", now, "unreachable_for", time.Since(lostAt).Round(time.Millisecond))
			lostAt = time.Time{}
		}
		got, found, err := s.master.lookupNode(s.ctx, name)
		if err != nil {
			continue // transient; the next poll decides
		}
		if found && got != uri {
			return "name taken", fmt.Errorf("%w: another node registered as %s (at %s)", ErrNodeShutdown, name, got)
		}
		if _, err := self.getPid(s.ctx); err != nil {
			if s.ctx.Err() != nil {
				return "closed", nil
			}
			return "shut down", fmt.Errorf("%w: %s no longer answers on %s (rosnode kill?)", ErrNodeShutdown, name, uri)
		}
		if !found {
			s.log.Warn("the master has forgotten the node; re-registering")
			return "registration lost", nil
		}
	}
}

func (s *Supervisor) closeNode(n *goroslib.Node) {
	s.teardown()
	n.Close()
}

func (s *Supervisor) teardown() {
	if s.conf.Teardown != nil {
		s.conf.Teardown()
	}
}

// publisherGone matches goroslib's error when a publisher this node
// subscribes to closes its connection ("subscriber '/t' got an error:
// EOF"): an ordinary event (a rostopic pub -1 ending, a camera node
// restarting) that goroslib reports as an error, once per connection.
var publisherGone = regexp.MustCompile(`^subscriber '([^']*)' got an error: EOF$`)

// goroslib's debug events of a subscriber's connection to one publisher.
// When reading fails for any reason but EOF (a message over goroslib's
// 16 MiB limit, a checksum that differs), goroslib says nothing, waits 5 s
// and connects again: a second "is connecting" to the same publisher is
// the only sign that its messages are being dropped.
var (
	connecting = regexp.MustCompile(`^subscriber '([^']*)' is connecting to publisher '([^']*)'$`)
	gone       = regexp.MustCompile(`^subscriber '([^']*)' doesn't have publisher '([^']*)' anymore$`)
)

// failingReportEvery throttles the report of one failing connection.
const failingReportEvery = 30 * time.Second

// connAttempts counts connection attempts per subscriber and publisher.
type connAttempts struct {
	n        int
	reported time.Time
}

func (s *Supervisor) onGoroslibLog(level goroslib.LogLevel, msg string) {
	if m := publisherGone.FindStringSubmatch(msg); m != nil {
		s.gorosLog.Info("a publisher closed its connection", "topic", m[1])
		return
	}
	if m := connecting.FindStringSubmatch(msg); m != nil {
		s.connMu.Lock()
		key := m[1] + " " + m[2]
		a := s.conns[key]
		if a == nil {
			a = &connAttempts{}
			s.conns[key] = a
		}
		a.n++
		report := a.n >= 2 && time.Since(a.reported) >= failingReportEvery
		if report {
			a.reported = time.Now()
		}
		n := a.n
		s.connMu.Unlock()
		if report {
			s.gorosLog.Warn("a publisher's messages are dropped: the connection failed and goroslib retries it every 5 s "+
				"(a message over its 16 MiB limit, or of another type)", "topic", m[1], "publisher", m[2], "attempts", n)
		}
	}
	if m := gone.FindStringSubmatch(msg); m != nil {
		s.connMu.Lock()
		delete(s.conns, m[1]+" "+m[2])
		s.connMu.Unlock()
	}
	switch level {
	case goroslib.LogLevelDebug:
		if !s.gorosLog.IsDebug() {
			return
		}
		s.gorosLog.Debug(msg)
	case goroslib.LogLevelInfo:
		s.gorosLog.Info(msg)
	case goroslib.LogLevelWarn:
		s.gorosLog.Warn(msg)
	default:
		s.gorosLog.Error(msg)
	}
}

// checkGoroslibRemaps rejects command lines that goroslib would misread.
// goroslib matches every from:=to of os.Args literally against the node name
// and against each topic or service name it is given. Names given to
// goroslib are resolved and remapped already, so a literal match can only
// happen when a remap target is itself a literal global remap source (a
// chain /a:=/b /b:=/c, which ROS applies once and goroslib twice), or when a
// remap source equals the node's base name (goroslib would rename the node).
func checkGoroslibRemaps(osArgs []string, a *Args) error {
	for _, arg := range osArgs {
		parts := strings.Split(arg, ":=")
		if len(parts) != 2 {
			continue // goroslib ignores these too
		}
		src := parts[0]
		if src == a.Name {
			return fmt.Errorf("argument %q: goroslib would rename the node %q by it; write the source as a global name (%s:=...) or rename the node", arg, a.Name, JoinName(a.Namespace, src))
		}
		if !strings.HasPrefix(src, "/") {
			continue
		}
		for _, r := range a.Remaps {
			if r.ResolvedTo == src {
				return fmt.Errorf("remap chain %s:=%s then %q: ROS applies remaps once, goroslib would apply both; remap %s to the final name directly", r.From, r.To, arg, r.From)
			}
		}
	}
	return nil
}

// sleepCtx waits d or until ctx ends; it reports whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
