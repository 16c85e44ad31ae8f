package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ttmrobot/ttm/internal/proctree"
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/node"
	"github.com/ttmrobot/ttm/policy"
)

// Demo timings.
const (
	demoMasterWait = 30 * time.Second // roscore opens its port in about 1.5 s here
	demoStopWait   = 15 * time.Second // after SIGINT, before SIGKILL
	demoStartWait  = 3 * time.Minute  // the policy node's load and warm-up

	demoMinRate     = 1.0 // Hz: the lowest rate tried after refusals
	demoDefaultRate = 3.0 // Hz: for a policy that records no rate, RT-1's
)

// rosDemo runs the ROS part of the demo; see runDemo.
func rosDemo(ctx context.Context, env *environment, c demoConfig) error {
	ckpt := c.policy
	if ckpt == "" {
		ckpt = filepath.Join(c.dir, "small-policy.safetensors")
		if _, err := os.Stat(ckpt); errors.Is(err, fs.ErrNotExist) {
			env.log.Info("no --policy: writing a fresh, untrained small policy", "file", ckpt)
			if err := runInit(env, []string{"--policy", "--preset", "small", "--seed", "1", "--out", ckpt}); err != nil {
				return err
			}
		}
	}
	// Load it once here: a bad checkpoint is reported before any process
	// starts, and the simulator renders at the network's input size.
	p, err := policy.Load(ckpt, policy.Options{Threads: 1})
	if err != nil {
		return fmt.Errorf("demo: policy %s: %w", ckpt, err)
	}
	spec := p.Spec()
	p.Close()
	if c.rate == 0 {
		c.rate = cmp.Or(spec.Policy.Rate, demoDefaultRate)
	}
	size := fmt.Sprintf("%dx%d", spec.Vision.Preprocess.Height, spec.Vision.Preprocess.Width)

	rosArgs, err := ros.ParseArgs("ttm_demo", nil, nil) // ROS_MASTER_URI, or the default
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	uri := rosArgs.MasterURI
	master, err := ensureMaster(ctx, env, uri, c.dir)
	if err != nil {
		return err
	}
	if master != nil {
		defer func() {
			if c.keepAlive {
				env.log.Info("leaving roscore running (--keep-master)", "pid", master.cmd.Process.Pid, "master", uri)
				return
			}
			master.stop(env)
		}()
	}

	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: find the ttm binary: %w", err)
	}
	nodeLog := filepath.Join(c.dir, "node.log")
	pn, rate, err := startPolicyNode(ctx, env, self, ckpt, nodeLog, uri, c)
	if err != nil {
		return err
	}
	defer pn.stop(env)
	env.log.Info("policy node up", "checkpoint", ckpt, "preset", spec.Policy.Preset, "rate_hz", rate, "pid", pn.cmd.Process.Pid, "log", nodeLog)

	episodes := filepath.Join(c.dir, "episodes")
	if err := os.RemoveAll(episodes); err != nil {
		return err
	}
	simCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-pn.exited: // the simulator would wait for actions in vain
			cancel()
		case <-simCtx.Done():
		}
	}()
	fmt.Fprintf(env.stdout, "the policy node (%s, %s preset, %g Hz) drives the simulator over ROS at %s; episodes:\n\n", filepath.Base(ckpt), spec.Policy.Preset, rate, uri)
	simErr := simROS(simCtx, env, []string{"--ros", "--tasks", c.tasks, "--episodes", strconv.Itoa(c.episodes),
		"--seed", strconv.FormatUint(c.seed, 10), "--size", size, "--max-steps", strconv.Itoa(c.maxSteps), "--out", episodes,
		"__name:=ttm_sim", "__ns:=" + c.ns, "__master:=" + uri})
	select {
	case <-pn.exited:
		if ctx.Err() == nil {
			return fmt.Errorf("demo: the policy node exited (%v); the end of %s:\n%s", pn.err, nodeLog, tail(nodeLog, 15))
		}
	default:
	}
	pn.stop(env)
	for _, l := range grepLines(nodeLog, "warm-up done", "node stopped") {
		fmt.Fprintln(env.stdout, "policy node:", l)
	}
	if simErr != nil {
		return simErr
	}
	fmt.Fprintf(env.stdout, "\nheadcam strips (PNG) and rollouts (GIF): %s\nlogs: %s", episodes, nodeLog)
	if master != nil {
		fmt.Fprintf(env.stdout, ", %s", master.logPath)
	}
	fmt.Fprintln(env.stdout)
	return nil
}

// startPolicyNode starts `ttm node` and waits until it runs. When its
// warm-up refuses the rate (the machine is busier than the rate allows), it
// tries again at half the rate, down to demoMinRate. It returns the running
// node and its rate.
func startPolicyNode(ctx context.Context, env *environment, self, ckpt, logPath, uri string, c demoConfig) (*proc, float64, error) {
	rate := c.rate
	for {
		args := []string{"node", "--policy", ckpt, "--threads", strconv.Itoa(c.threads),
			"_rate:=" + strconv.FormatFloat(rate, 'g', -1, 64), "_warmup_steps:=" + strconv.Itoa(node.MinWarmupSteps),
			// In lockstep a frame goes out right after an action, almost a
			// period before the tick that acts on it: the node must accept
			// frames that old (its default, 0.5 s, is less than a period
			// below 2 Hz).
			"_max_image_age:=" + strconv.FormatFloat(max(0.5, 2/rate), 'g', 4, 64),
			"_max_proprio_age:=" + strconv.FormatFloat(max(0.5, 2/rate), 'g', 4, 64), // it comes with each frame
			// The simulator steps once per action, each one trained step
			// (sim.StepSeconds), whatever the wall clock's rate.
			// Its frames follow the actions: the ticks keep their phase.
			"_rate_mismatch:=" + string(node.RateLockstep), "_follow_camera:=false",
			"__name:=ttm_node", "__ns:=" + c.ns, "__master:=" + uri}
		p, err := startProc("policy node", logPath, self, append(args, c.nodeArgs...)...)
		if err != nil {
			return nil, 0, err
		}
		env.log.Info("starting the policy node: load, warm-up, register", "rate_hz", rate, "warmup_steps", node.MinWarmupSteps, "log", logPath)
		up, err := waitForLine(ctx, p, logPath, "ttm.node: node started", demoStartWait)
		if up {
			return p, rate, nil
		}
		p.stop(env)
		if err == nil && rate > demoMinRate && len(grepLines(logPath, "refuses to start")) > 0 {
			lower := max(demoMinRate, rate/2)
			env.log.Warn("the policy node's warm-up refused the rate on this machine right now; trying a lower one",
				"refused_hz", rate, "next_hz", lower, "why", strings.Join(grepLines(logPath, "refuses to start"), " "))
			rate = lower
			continue
		}
		if err == nil {
			err = fmt.Errorf("the policy node exited (%v)", p.err)
		}
		return nil, 0, fmt.Errorf("demo: %w; the end of %s:\n%s", err, logPath, tail(logPath, 15))
	}
}

// waitForLine waits until the file has a line containing line (true), the
// process exits (false, nil), or timeout or ctx ends (an error).
func waitForLine(ctx context.Context, p *proc, path, line string, timeout time.Duration) (bool, error) {
	deadline := time.After(timeout)
	for {
		if len(grepLines(path, line)) > 0 {
			return true, nil
		}
		select {
		case <-p.exited:
			return len(grepLines(path, line)) > 0, nil
		case <-ctx.Done():
			return false, ctx.Err()
		case <-deadline:
			return false, fmt.Errorf("the policy node did not start within %v", timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ensureMaster returns nil when a ROS master answers at uri; otherwise it
// starts roscore on uri's port (uri must name this machine) and waits until
// it answers.
func ensureMaster(ctx context.Context, env *environment, uri, dir string) (*proc, error) {
	if pid, err := ros.MasterPID(ctx, uri, 2*time.Second); err == nil {
		env.log.Info("using the running ROS master", "master", uri, "pid", pid)
		return nil, nil
	}
	u, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("demo: master URI %s: %w", uri, err)
	}
	if !isLocalHost(u.Hostname()) {
		return nil, fmt.Errorf("demo: no ROS master answers at %s, and that is not this machine: start roscore there, or point ROS_MASTER_URI at this machine", uri)
	}
	roscore := "/usr/bin/roscore" // Debian's ros-core; its scripts need /usr/bin/python3
	if _, err := os.Stat(roscore); err != nil {
		if roscore, err = exec.LookPath("roscore"); err != nil {
			return nil, errors.New("demo: no ROS master is running and roscore is not installed: run `make setup` (Debian ros-core)")
		}
	}
	logPath := filepath.Join(dir, "roscore.log")
	m, err := startProc("roscore", logPath, roscore, "-p", u.Port())
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for {
		if _, err := ros.MasterPID(ctx, uri, time.Second); err == nil {
			break
		}
		select {
		case <-m.exited:
			return nil, fmt.Errorf("demo: roscore -p %s exited (%v):\n%s", u.Port(), m.err, tail(logPath, 15))
		case <-ctx.Done():
			m.stop(env)
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Since(start) > demoMasterWait {
			m.stop(env)
			return nil, fmt.Errorf("demo: roscore -p %s did not answer within %v:\n%s", u.Port(), demoMasterWait, tail(logPath, 15))
		}
	}
	env.log.Info("no ROS master was running: started roscore; it stops at the end", "master", uri, "pid", m.cmd.Process.Pid,
		"ready_after", time.Since(start).Round(time.Millisecond), "log", logPath)
	return m, nil
}

// isLocalHost reports whether host names this machine.
func isLocalHost(host string) bool {
	if host == "localhost" {
		return true
	}
	if h, err := os.Hostname(); err == nil && strings.EqualFold(h, host) {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// proc is a child process of the demo, in a process group of its own,
// writing to a log file.
type proc struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when it has exited
	err     error         // its exit status, once exited is closed
}

// startProc starts a child process with /usr/bin first on PATH (ROS's
// Python scripts need Debian's python3), its output going to logPath.
func startProc(name, logPath, path string, args ...string) (*proc, error) {
	out, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("demo: %s log: %w", name, err)
	}
	defer out.Close() // the child has its own descriptor
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), "PATH=/usr/bin"+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("demo: start %s: %w", name, err)
	}
	p := &proc{name: name, logPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// stop sends SIGINT to the process group (what Ctrl-C does; roscore then
// stops rosmaster and rosout itself) and, after demoStopWait, SIGKILL to
// the group and to every descendant.
func (p *proc) stop(env *environment) {
	select {
	case <-p.exited:
		return
	default:
	}
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGINT)
	select {
	case <-p.exited:
		return
	case <-time.After(demoStopWait):
	}
	env.log.Warn("no exit after SIGINT; killing", "process", p.name, "pid", pid, "waited", demoStopWait)
	for _, d := range proctree.Descendants(pid) {
		_ = syscall.Kill(d, syscall.SIGKILL)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-p.exited
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// grepLines returns the lines of a file that contain any of the strings.
func grepLines(path string, subs ...string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		for _, s := range subs {
			if strings.Contains(sc.Text(), s) {
				out = append(out, sc.Text())
				break
			}
		}
	}
	return out
}
