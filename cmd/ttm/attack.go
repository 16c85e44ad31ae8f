package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/diagnostic_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/sensor_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"

	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/node"
	"github.com/ttmrobot/ttm/policy"
)

func init() {
	register(command{name: "attack", summary: "drive a policy node as a robot would, attack it, and tabulate what it did", run: runAttack})
}

// Attack timings.
const (
	attackRate        = 10.0                   // Hz: the good camera and proprioception
	attackSettle      = 10 * time.Second       // for the node to act again after a case
	attackStatusWait  = 5 * time.Second        // for a status the node should reach
	attackNodeName    = "ttm_node"             // the node the attack starts
	attackInstruction = "pick up the coke can" // the kitchen policy's language

	attackOtherInstruction = "open the top drawer"
)

// runAttack starts roscore (when none answers) and a policy node (unless
// one runs as <ns>/ttm_node), drives it with a camera, proprioception and
// an instruction as a robot would, then attacks it case by case and prints
// a table of case, expected, observed. It exits 1 when a case did not
// hold.
func runAttack(env *environment, args []string) error {
	fl := newFlags(env, "attack", "[--policy CKPT] [--ns NS] [--out DIR] [--threads N]")
	ckpt := fl.String("policy", "launch/checkpoints/kitchen/policy.safetensors", "`checkpoint` of the node the attack starts, and the file attacks' original")
	ns := fl.String("ns", "/robot", "ROS `namespace` of the node")
	out := fl.String("out", "bin/attack", "`directory` for the logs, the damaged files and attack.md")
	threads := fl.Int("threads", 2, "the node's inference threads")
	if err := parseFlags(fl, args, false); err != nil {
		return err
	}
	if err := makeOutDir(*out); err != nil {
		return err
	}
	p, err := policy.Load(*ckpt, policy.Options{Threads: 1})
	if err != nil {
		return fmt.Errorf("attack: %w", err)
	}
	spec := p.Spec()
	proprio := p.Proprio()
	p.Close()

	ctx := context.Background()
	rosArgs, err := ros.ParseArgs("ttm_attack", []string{"__ns:=" + *ns}, nil)
	if err != nil {
		return fmt.Errorf("attack: %w", err)
	}
	uri := rosArgs.MasterURI
	master, err := ensureMaster(ctx, env, uri, *out)
	if err != nil {
		return err
	}
	a := &attacker{env: env, ns: *ns, uri: uri, master: master, outDir: *out, ckpt: *ckpt,
		height: spec.Vision.Preprocess.Height, width: spec.Vision.Preprocess.Width, proprio: proprio}
	defer func() {
		if a.master != nil {
			a.master.stop(env)
		}
	}()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("attack: find the ttm binary: %w", err)
	}
	if _, err := ros.LookupNode(ctx, uri, *ns+"/"+attackNodeName, 2*time.Second); err != nil {
		a.nodeLog = filepath.Join(*out, "node.log")
		pn, _, err := startPolicyNode(ctx, env, self, *ckpt, a.nodeLog, uri, demoConfig{rate: attackRate, threads: *threads, ns: *ns,
			// The attacker is a robot of the first convention: proprioception on
			// our topic, no camera_info (the node's tree and camera_info
			// checks have tests of their own).
			nodeArgs: []string{"_proprio_source:=" + string(node.ProprioTopic), "_camera_geometry:=" + string(node.CameraCheckpoint)}})
		if err != nil {
			return err
		}
		defer pn.stop(env)
		env.log.Info("policy node up", "checkpoint", *ckpt, "log", a.nodeLog)
	} else {
		env.log.Info("attacking the running node", "node", *ns+"/"+attackNodeName)
	}
	if err := a.start(rosArgs); err != nil {
		return err
	}
	defer a.close()

	rows := a.run(attackCases())
	table := formatAttackTable(rows, a.actions.Load(), a.nonFinite.Load())
	fmt.Fprint(env.stdout, table)
	path := filepath.Join(*out, "attack.md")
	if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
		return err
	}
	env.log.Info("table written", "file", path)
	failed := 0
	for _, r := range rows {
		if !r.ok {
			failed++
		}
	}
	if failed > 0 || a.nonFinite.Load() > 0 {
		return fmt.Errorf("attack: %d of %d cases did not hold, %d non-finite actions", failed, len(rows), a.nonFinite.Load())
	}
	return nil
}

// attacker is the robot side of the attack: a node of its own that
// publishes a camera, proprioception and the instruction, and reads the
// policy node's status, diagnostics and actions.
type attacker struct {
	env     *environment
	ns, uri string
	master  *proc // roscore, when the attack started it
	nodeLog string
	outDir  string
	ckpt    string
	height  int
	width   int
	proprio []string

	sup *ros.Supervisor

	mu    sync.Mutex // mu guards pubs, subs, diag
	pubs  map[string]*ros.Publisher
	subs  []*ros.Subscriber
	diag  map[string]string
	level int8

	cameraOn     atomic.Bool
	instructions atomic.Uint64 // instructions published after the first
	status       atomic.Pointer[string]
	actions      atomic.Uint64
	nonFinite    atomic.Uint64
	stop         chan struct{}
	done         sync.WaitGroup
}

// topic resolves a node topic name in the attack's namespace.
func (a *attacker) topic(name string) string {
	if strings.HasPrefix(name, "/") {
		return name
	}
	return a.ns + "/" + name
}

func (a *attacker) start(args *ros.Args) error {
	a.pubs = map[string]*ros.Publisher{}
	a.stop = make(chan struct{})
	pubs := []struct {
		name string
		msg  any
	}{
		{ros.TopicImage, &sensor_msgs.Image{}},
		{ros.TopicCompressed, &sensor_msgs.CompressedImage{}},
		{ros.TopicInstruction, &std_msgs.String{}},
		{ros.TopicEStop, &std_msgs.Empty{}},
		{ros.TopicEStopReset, &std_msgs.Empty{}},
		{ros.TopicProprio, &std_msgs.Float32MultiArray{}},
	}
	var err error
	a.sup, err = ros.NewSupervisor(context.Background(), ros.SupervisorConf{Args: args, Logger: a.env.log.Named("robot"), PollInterval: 200 * time.Millisecond,
		Setup: func(n *ros.Node) error {
			a.mu.Lock()
			defer a.mu.Unlock()
			for _, pc := range pubs {
				p, err := ros.NewPublisher(ros.PublisherConf{Node: n, Topic: a.topic(pc.name), Msg: pc.msg, Latch: pc.name == ros.TopicInstruction})
				if err != nil {
					return err
				}
				a.pubs[pc.name] = p
			}
			for _, sc := range []struct {
				name string
				cb   any
			}{
				{ros.TopicStatus, func(m *std_msgs.String) { s := m.Data; a.status.Store(&s) }},
				{ros.TopicDiagnostics, a.onDiagnostics},
				{ros.TopicAction, a.onAction},
			} {
				s, err := ros.NewSubscriber(ros.SubscriberConf{Node: n, Topic: a.topic(sc.name), Callback: sc.cb})
				if err != nil {
					return err
				}
				a.subs = append(a.subs, s)
			}
			return nil
		},
		Teardown: func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			for _, s := range a.subs {
				s.Close()
			}
			for _, p := range a.pubs {
				p.Close()
			}
			a.subs, a.pubs = nil, map[string]*ros.Publisher{}
		},
	})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for !a.sup.Status().Connected {
		if time.Now().After(deadline) {
			return errors.New("attack: the robot's node did not register in 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.cameraOn.Store(true)
	a.done.Add(1)
	go a.robotLoop()
	return nil
}

func (a *attacker) close() {
	close(a.stop)
	a.done.Wait()
	a.sup.Close()
}

// publish writes msg on one of the robot's topics (skipped while its node
// is being re-created).
func (a *attacker) publish(name string, msg any) {
	a.mu.Lock()
	p := a.pubs[name]
	a.mu.Unlock()
	if p != nil {
		p.Write(msg)
	}
}

// robotLoop is the robot: a camera frame (while cameraOn) and a
// proprioception reading every period.
func (a *attacker) robotLoop() {
	defer a.done.Done()
	t := time.NewTicker(time.Duration(float64(time.Second) / attackRate))
	defer t.Stop()
	for phase := 0; ; phase++ {
		select {
		case <-a.stop:
			return
		case <-t.C:
		}
		if a.cameraOn.Load() {
			a.publish(ros.TopicImage, a.frame(phase))
		}
		if len(a.proprio) > 0 {
			a.publish(ros.TopicProprio, a.proprioMsg(restingProprio(len(a.proprio))))
		}
	}
}

// frame is a good camera frame at the network's input size, stamped now.
func (a *attacker) frame(phase int) *sensor_msgs.Image {
	img := node.SyntheticImage(a.height, a.width, phase)
	return &sensor_msgs.Image{Header: std_msgs.Header{Stamp: time.Now()}, Height: img.Height, Width: img.Width,
		Encoding: img.Encoding, Step: img.Step, Data: img.Data}
}

// restingProprio is a plausible reading: the hand 0.4 m ahead, 0.2 m up,
// gripper open.
func restingProprio(n int) []float32 {
	r := make([]float32, n)
	copy(r, []float32{0.4, 0, 0.2, 0})
	return r
}

func (a *attacker) proprioMsg(v []float32) *std_msgs.Float32MultiArray {
	return &std_msgs.Float32MultiArray{Layout: std_msgs.MultiArrayLayout{Dim: []std_msgs.MultiArrayDimension{
		{Label: strings.Join(a.proprio, ";"), Size: uint32(len(v)), Stride: uint32(len(v))}}}, Data: v}
}

func (a *attacker) onDiagnostics(m *diagnostic_msgs.DiagnosticArray) {
	for _, st := range m.Status {
		if st.Name != a.ns+"/"+attackNodeName+": control loop" {
			continue
		}
		kv := map[string]string{}
		for _, v := range st.Values {
			kv[v.Key] = v.Value
		}
		a.mu.Lock()
		a.diag, a.level = kv, st.Level
		a.mu.Unlock()
	}
}

func (a *attacker) onAction(m *std_msgs.Float32MultiArray) {
	a.actions.Add(1)
	for _, v := range m.Data {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			a.nonFinite.Add(1)
			return
		}
	}
}

// statusNow is the node's latest status text.
func (a *attacker) statusNow() string {
	if s := a.status.Load(); s != nil {
		return *s
	}
	return ""
}

// waitStatus waits until the status starts with prefix and returns how
// long that took.
func (a *attacker) waitStatus(prefix string, timeout time.Duration) (time.Duration, bool) {
	start := time.Now()
	for {
		if strings.HasPrefix(a.statusNow(), prefix) {
			return time.Since(start), true
		}
		if time.Since(start) > timeout {
			return time.Since(start), false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// diagValue is a value of the node's latest diagnostics.
func (a *attacker) diagValue(key string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.diag[key]
}

// counter is a diagnostics counter, 0 when absent.
func (a *attacker) counter(key string) uint64 {
	v, _ := strconv.ParseUint(a.diagValue(key), 10, 64)
	return v
}

// freshCounter waits for the next diagnostics message (published every
// second) and returns a counter from it.
func (a *attacker) freshCounter(key string) uint64 {
	a.mu.Lock()
	a.diag = nil
	a.mu.Unlock()
	deadline := time.Now().Add(3 * time.Second)
	for a.diagValue(key) == "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return a.counter(key)
}

// logLines counts the lines of the node's log (when the attack started
// the node), -1 otherwise.
func (a *attacker) logLines() int {
	if a.nodeLog == "" {
		return -1
	}
	b, err := os.ReadFile(a.nodeLog)
	if err != nil {
		return -1
	}
	return strings.Count(string(b), "\n")
}

// logLinesWith counts the lines of the node's log that contain substr, -1
// when the attack did not start the node.
func (a *attacker) logLinesWith(substr string) int {
	if a.nodeLog == "" {
		return -1
	}
	return len(grepLines(a.nodeLog, substr))
}

// libraryLines counts the lines of the node's log that a codec library
// printed itself (hclog's lines quote its messages, never start with them),
// -1 when the log is not visible.
func (a *attacker) libraryLines() int {
	if a.nodeLog == "" {
		return -1
	}
	n := 0
	for _, l := range grepLines(a.nodeLog, "Corrupt JPEG", "libpng", "Premature end of JPEG") {
		if strings.HasPrefix(l, "Corrupt JPEG") || strings.HasPrefix(l, "libpng") || strings.HasPrefix(l, "Premature end of JPEG") {
			n++
		}
	}
	return n
}

// acting restores the robot's good inputs and waits until the node acts;
// when the policy has ended its episode (it chose terminate) the next
// instruction starts another.
func (a *attacker) acting(timeout time.Duration) bool {
	a.cameraOn.Store(true)
	start := time.Now()
	for time.Since(start) < timeout {
		if _, ok := a.waitStatus("acting", time.Second); ok {
			return true
		}
		if strings.Contains(a.statusNow(), "episode done") {
			a.nextInstruction()
		}
	}
	return false
}

// nextInstruction publishes the other of two instructions, which starts a
// new episode.
func (a *attacker) nextInstruction() {
	text := attackInstruction
	if a.instructions.Add(1)%2 == 1 {
		text = attackOtherInstruction
	}
	a.publish(ros.TopicInstruction, &std_msgs.String{Data: text})
}

// instruction republishes the current instruction (the latched one after
// an attack on the topic); it changes nothing at the node.
func (a *attacker) instruction() {
	text := attackInstruction
	if a.instructions.Load()%2 == 1 {
		text = attackOtherInstruction
	}
	a.publish(ros.TopicInstruction, &std_msgs.String{Data: text})
}

// otherNode runs f with a publisher of msg on topic from a node of its own
// (a publisher of another type needs one), closed when f returns.
func (a *attacker) otherNode(name, topic string, msg any, f func(p *ros.Publisher)) error {
	args, err := ros.ParseArgs(name, []string{"__ns:=" + a.ns}, nil)
	if err != nil {
		return err
	}
	var pub atomic.Pointer[ros.Publisher]
	sup, err := ros.NewSupervisor(context.Background(), ros.SupervisorConf{Args: args, PollInterval: 200 * time.Millisecond,
		Logger: a.env.log.Named(name),
		Setup: func(n *ros.Node) error {
			p, err := ros.NewPublisher(ros.PublisherConf{Node: n, Topic: topic, Msg: msg})
			if err == nil {
				pub.Store(p)
			}
			return err
		},
		Teardown: func() {
			if p := pub.Swap(nil); p != nil {
				p.Close()
			}
		},
	})
	if err != nil {
		return err
	}
	defer sup.Close()
	deadline := time.Now().Add(10 * time.Second)
	for pub.Load() == nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not register", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
	f(pub.Load())
	return nil
}

// attackRow is one line of the table.
type attackRow struct {
	name, expected, observed string
	ok                       bool
}

// attackCase is one attack: it runs against a node that acts, and leaves
// it acting or says why not.
type attackCase struct {
	name, expected string
	run            func(a *attacker) (observed string, ok bool)
}

// run starts the episode and runs the cases in order; after each the
// robot's good inputs return and the node must act again.
func (a *attacker) run(cases []attackCase) []attackRow {
	var rows []attackRow
	a.instruction()
	d, ok := a.waitStatus("acting", 60*time.Second)
	rows = append(rows, attackRow{"the robot drives the node", "acting", fmt.Sprintf("%s after %v", a.statusNow(), d.Round(time.Millisecond)), ok})
	if !ok {
		return rows
	}
	for i, c := range cases {
		a.env.log.Info("attack", "case", fmt.Sprintf("%d/%d", i+1, len(cases)), "name", c.name)
		observed, ok := c.run(a)
		if !a.acting(attackSettle) {
			observed += fmt.Sprintf("; did not act again within %v (status %q)", attackSettle, a.statusNow())
			ok = false
		}
		rows = append(rows, attackRow{c.name, c.expected, observed, ok})
	}
	return rows
}

func formatAttackTable(rows []attackRow, actions, nonFinite uint64) string {
	var b strings.Builder
	b.WriteString("| # | case | expected | observed | held |\n|---|---|---|---|---|\n")
	esc := func(s string) string {
		return strings.Join(strings.Fields(strings.ReplaceAll(s, "|", "\\|")), " ")
	}
	for i, r := range rows {
		held := "yes"
		if !r.ok {
			held = "**no**"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", i+1, esc(r.name), esc(r.expected), esc(r.observed), held)
	}
	held := "yes"
	if nonFinite > 0 {
		held = "**no**"
	}
	fmt.Fprintf(&b, "| %d | every action published | finite | %d actions, %d with NaN or Inf | %s |\n", len(rows)+1, actions, nonFinite, held)
	return b.String()
}
