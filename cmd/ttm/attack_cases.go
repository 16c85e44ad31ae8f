package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/sensor_msgs"
	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"

	"github.com/ttmrobot/ttm/internal/damage"
	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/internal/safetensors"
	"github.com/ttmrobot/ttm/policy"
)

// attackCases are the attacks in the order they run.
func attackCases() []attackCase {
	raw := func(w, h int, enc string, step int, n int) *sensor_msgs.Image {
		return &sensor_msgs.Image{Width: uint32(w), Height: uint32(h), Encoding: enc, Step: uint32(step), Data: make([]byte, n)}
	}
	cases := []attackCase{
		badRaw("raw frame: 16UC1 depth", raw(160, 128, "16UC1", 320, 320*128)),
		badRaw("raw frame: 64FC1", raw(160, 128, "64FC1", 1280, 1280*128)),
		badRaw("raw frame: step shorter than a row", raw(160, 128, "rgb8", 100, 100*128)),
		badRaw("raw frame: data shorter than height x step", raw(160, 128, "rgb8", 480, 480*100)),
		badRaw("raw frame: 0x0", raw(0, 0, "rgb8", 0, 0)),
		badRaw("raw frame: 9000 pixels wide", raw(9000, 1, "mono8", 9000, 9000)),
		badCompressed("JPEG: scan cut to a tenth, end marker kept", "jpeg", func() []byte { return damage.CutScan(goodJPEG(), 10) }),
		badCompressed("JPEG: random scan bytes", "jpeg", func() []byte { return damage.RandomScan(goodJPEG(), 3) }),
		badCompressed("JPEG: truncated (no end marker)", "jpeg", func() []byte { j := goodJPEG(); return j[:len(j)/2] }),
		badCompressed("PNG: a chunk's checksum damaged", "png", func() []byte { return damage.BadTextChunk(goodPNG()) }),
		badCompressed("bytes that are no image", "jpeg", func() []byte { return []byte("definitely not an image") }),
		{"PNG of 8192x2048 zeros (a few KB) at 12 Hz for 3 s", "refused from its header; no deadline missed", pngBomb},
		{"3840x2160 rgb8 frames (24.9 MB, over goroslib's 16 MiB) for 7 s", "never arrive; the node logs the publisher whose connection fails; stops", oversizeFrames},
		{"camera stalls for 3 s", "stop within 0.6 s; act again within 0.3 s of the next frame", cameraStall},
		{"frames 640x480 at 100 Hz for 5 s", "10 Hz held, no deadline missed, the excess dropped", frameFlood},
		{"e_stop, then e_stop_reset", "stop, latched through fresh frames, until the reset", eStop},
		{"e_stop published as std_msgs/Bool", "stop and name the publisher; latched after it leaves", wrongTypeEStop},
		{"heartbeat published as std_msgs/Bool", "stop while it publishes, act when it leaves", wrongTypeHeartbeat},
		{"an instruction of 1 MB", "refused and counted; the episode goes on", hugeInstruction},
		{"1000 empty instructions", "refused and counted, logged at most a few times", emptyInstructions},
		badProprio("proprioception: NaN", []float32{float32(math.NaN()), 0, 0.2, 0}),
		badProprio("proprioception: 1e30", []float32{1e30, 0, 0.2, 0}),
		badProprio("proprioception: a gripper reading of 5", []float32{0.4, 0, 0.2, 5}),
		badProprio("proprioception: 3 values", []float32{0.4, 0, 0.2}),
		{"roscore killed and restarted", "the node re-registers and acts again", masterRestart},
	}
	return append(cases, fileAttacks()...)
}

// badFrames stops the good camera, sends n bad frames at 10 Hz, and checks
// that each is refused and nothing is acted on (the node stops for want of
// a fresh frame) with a throttled log.
func (a *attacker) badFrames(n int, send func(i int)) (string, bool) {
	a.cameraOn.Store(false)
	refused := a.freshCounter("frames_refused")
	// The node's lines about frames: an episode the policy ends meanwhile
	// logs its own lines, and the next instruction sent here more.
	lines := a.logLinesWith("frame")
	var during string
	for i := range n {
		if strings.Contains(a.statusNow(), "episode done") {
			// A done episode acts on nothing and so decodes nothing.
			a.nextInstruction()
		}
		send(i)
		time.Sleep(100 * time.Millisecond)
		if i == n-1 {
			during = a.statusNow()
		}
	}
	_, stopped := a.waitStatus("stopped: camera frame too old", attackStatusWait)
	got := a.freshCounter("frames_refused") - refused
	logged := a.logLinesWith("frame") - lines
	ok := stopped && !strings.HasPrefix(during, "acting") && got >= uint64(n)*9/10 && (lines < 0 || logged <= 5)
	return fmt.Sprintf("refused %d of %d; status %q, then %q; %s", got, n, during, a.statusNow(), logLinesText(logged)), ok
}

func logLinesText(n int) string {
	if n < 0 {
		return "log not visible"
	}
	return fmt.Sprintf("%d log lines", n)
}

func badRaw(name string, m *sensor_msgs.Image) attackCase {
	return attackCase{name, "refused, never acted on, logged throttled", func(a *attacker) (string, bool) {
		return a.badFrames(20, func(int) {
			m.Header.Stamp = time.Now()
			a.publish(ros.TopicImage, m)
		})
	}}
}

func badCompressed(name, format string, data func() []byte) attackCase {
	return attackCase{name, "refused, never acted on, no codec message on stderr", func(a *attacker) (string, bool) {
		d := data()
		printed := a.libraryLines()
		obs, ok := a.badFrames(20, func(int) {
			a.publish(ros.TopicCompressed, &sensor_msgs.CompressedImage{Header: std_msgs.Header{Stamp: time.Now()}, Format: format, Data: d})
		})
		if printed >= 0 {
			n := a.libraryLines() - printed
			obs += fmt.Sprintf("; %d codec lines on stderr", n)
			ok = ok && n == 0
		}
		return obs, ok
	}}
}

func goodImage() *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, 320, 256))
	r := rand.New(rand.NewPCG(1, 2))
	for y := range 256 {
		for x := range 320 {
			m.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(r.IntN(40)), 255})
		}
	}
	return m
}

func goodJPEG() []byte {
	var b bytes.Buffer
	_ = jpeg.Encode(&b, goodImage(), &jpeg.Options{Quality: 90})
	return b.Bytes()
}

func goodPNG() []byte {
	var b bytes.Buffer
	_ = png.Encode(&b, goodImage())
	return b.Bytes()
}

func pngBomb(a *attacker) (string, bool) {
	var b bytes.Buffer
	_ = png.Encode(&b, image.NewGray(image.Rect(0, 0, 8192, 2048)))
	msg := &sensor_msgs.CompressedImage{Format: "png", Data: b.Bytes()}
	misses := a.freshCounter("deadline_misses")
	refused := a.counter("frames_refused")
	for range 36 {
		msg.Header.Stamp = time.Now()
		a.publish(ros.TopicCompressed, msg)
		time.Sleep(83 * time.Millisecond)
	}
	missed := a.freshCounter("deadline_misses") - misses
	got := a.counter("frames_refused") - refused
	return fmt.Sprintf("%d bytes; refused %d of 36; %d deadline misses", b.Len(), got, missed), got >= 32 && missed == 0
}

func oversizeFrames(a *attacker) (string, bool) {
	a.cameraOn.Store(false)
	in := a.freshCounter("frames_in")
	lines := a.logLines()
	m := &sensor_msgs.Image{Width: 3840, Height: 2160, Encoding: "rgb8", Step: 3 * 3840, Data: make([]byte, 3*3840*2160)}
	for range 14 {
		m.Header.Stamp = time.Now()
		a.publish(ros.TopicImage, m)
		time.Sleep(500 * time.Millisecond)
	}
	_, stopped := a.waitStatus("stopped: camera frame too old", attackStatusWait)
	arrived := a.freshCounter("frames_in") - in
	reported := -1
	if a.nodeLog != "" {
		reported = len(grepLines(a.nodeLog, "a publisher's messages are dropped"))
	}
	obs := fmt.Sprintf("%d arrived; status %q; %s", arrived, a.statusNow(), logLinesText(a.logLines()-lines))
	if reported >= 0 {
		obs += fmt.Sprintf("; %d reports of the failing connection", reported)
	}
	return obs, stopped && arrived == 0 && reported != 0
}

func cameraStall(a *attacker) (string, bool) {
	a.cameraOn.Store(false)
	stop, stopped := a.waitStatus("stopped: camera frame too old", attackStatusWait)
	time.Sleep(3*time.Second - stop)
	a.cameraOn.Store(true)
	back, acting := a.waitStatus("acting", attackStatusWait)
	return fmt.Sprintf("stopped after %v; acting %v after the camera returned", stop.Round(10*time.Millisecond), back.Round(10*time.Millisecond)),
		stopped && acting && stop <= 700*time.Millisecond && back <= 400*time.Millisecond
}

func frameFlood(a *attacker) (string, bool) {
	a.cameraOn.Store(false)
	misses := a.freshCounter("deadline_misses")
	dropped := a.counter("frames_dropped")
	m := &sensor_msgs.Image{Width: 640, Height: 480, Encoding: "rgb8", Step: 1920, Data: make([]byte, 1920*480)}
	for i := range m.Data {
		m.Data[i] = byte(i * 7)
	}
	end := time.Now().Add(5 * time.Second)
	for time.Now().Before(end) {
		m.Header.Stamp = time.Now()
		a.publish(ros.TopicImage, m)
		time.Sleep(10 * time.Millisecond)
	}
	rate, _ := strconv.ParseFloat(a.diagValue("rate_measured_hz"), 64)
	missed := a.freshCounter("deadline_misses") - misses
	drop := a.counter("frames_dropped") - dropped
	return fmt.Sprintf("%.2f Hz; %d deadline misses; %d frames dropped; status %q", rate, missed, drop, a.statusNow()),
		math.Abs(rate-attackRate) <= 0.05*attackRate && missed == 0 && drop > 300
}

func eStop(a *attacker) (string, bool) {
	a.publish(ros.TopicEStop, &std_msgs.Empty{})
	d, stopped := a.waitStatus("stopped: e-stop latched", attackStatusWait)
	time.Sleep(time.Second)
	latched := strings.HasPrefix(a.statusNow(), "stopped: e-stop latched")
	a.publish(ros.TopicEStopReset, &std_msgs.Empty{})
	back, acting := a.waitStatus("acting", attackStatusWait)
	return fmt.Sprintf("stopped after %v; latched 1 s later: %v; acting %v after the reset", d.Round(10*time.Millisecond), latched, back.Round(10*time.Millisecond)),
		stopped && latched && acting
}

// wrongType publishes data: true as std_msgs/Bool on topic from a node of
// its own until the node reports it, then leaves.
func (a *attacker) wrongType(topic string) (stopped time.Duration, ok bool, listed string, err error) {
	err = a.otherNode("ttm_attack_bool", a.topic(topic), &std_msgs.Bool{}, func(p *ros.Publisher) {
		start := time.Now()
		for time.Since(start) < 3*attackStatusWait {
			p.Write(&std_msgs.Bool{Data: true})
			if strings.HasPrefix(a.statusNow(), "stopped: a publisher of another type") {
				stopped, ok = time.Since(start), true
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		a.freshCounter("ticks")
		listed = a.diagValue("wrong_type_publishers")
	})
	return stopped, ok, listed, err
}

func wrongTypeEStop(a *attacker) (string, bool) {
	d, ok, listed, err := a.wrongType(ros.TopicEStop)
	if err != nil {
		return err.Error(), false
	}
	_, latched := a.waitStatus("stopped: e-stop latched", attackStatusWait)
	a.publish(ros.TopicEStopReset, &std_msgs.Empty{})
	return fmt.Sprintf("stopped after %v; diagnostics: %q; latched after it left: %v", d.Round(10*time.Millisecond), listed, latched),
		ok && latched && strings.Contains(listed, "std_msgs/Bool")
}

func wrongTypeHeartbeat(a *attacker) (string, bool) {
	d, ok, listed, err := a.wrongType(ros.TopicHeartbeat)
	if err != nil {
		return err.Error(), false
	}
	back, acting := a.waitStatus("acting", attackStatusWait)
	return fmt.Sprintf("stopped after %v; diagnostics: %q; acting %v after it left", d.Round(10*time.Millisecond), listed, back.Round(10*time.Millisecond)),
		ok && acting && strings.Contains(listed, "std_msgs/Bool")
}

func hugeInstruction(a *attacker) (string, bool) {
	refused := a.freshCounter("instructions_refused")
	episode := a.diagValue("episode")
	lines := a.logLines()
	a.publish(ros.TopicInstruction, &std_msgs.String{Data: strings.Repeat("pick up the coke can ", 50000)})
	time.Sleep(time.Second)
	got := a.freshCounter("instructions_refused") - refused
	now := a.diagValue("episode")
	a.instruction() // the latched instruction again
	logged := a.logLines() - lines
	return fmt.Sprintf("refused %d; episode %s -> %s; status %q; %s", got, episode, now, a.statusNow(), logLinesText(logged)),
		got == 1 && now == episode && (lines < 0 || logged <= 3)
}

func emptyInstructions(a *attacker) (string, bool) {
	refused := a.freshCounter("instructions_refused")
	lines := a.logLines()
	for range 1000 {
		a.publish(ros.TopicInstruction, &std_msgs.String{})
		time.Sleep(time.Millisecond) // goroslib's queues drop what comes faster
	}
	time.Sleep(time.Second)
	got := a.freshCounter("instructions_refused") - refused
	a.instruction()
	logged := a.logLines() - lines
	return fmt.Sprintf("refused %d; status %q; %s", got, a.statusNow(), logLinesText(logged)),
		got >= 900 && (lines < 0 || logged <= 5)
}

func badProprio(name string, v []float32) attackCase {
	return attackCase{name, "refused and counted; the good readings drive the node", func(a *attacker) (string, bool) {
		if len(a.proprio) == 0 {
			return "the policy reads no proprioception: skipped", true
		}
		refused := a.freshCounter("proprio_refused")
		for range 20 {
			a.publish(ros.TopicProprio, a.proprioMsg(v))
			time.Sleep(20 * time.Millisecond)
		}
		got := a.freshCounter("proprio_refused") - refused
		status := a.statusNow()
		return fmt.Sprintf("refused %d of 20; status %q", got, status), got >= 18 && !strings.Contains(status, "proprioception")
	}}
}

func masterRestart(a *attacker) (string, bool) {
	if a.master == nil {
		return "roscore was running before the attack: skipped", true
	}
	a.master.stop(a.env)
	start := time.Now()
	m, err := ensureMaster(context.Background(), a.env, a.uri, a.outDir)
	if err != nil {
		return err.Error(), false
	}
	a.master = m
	a.instruction()
	acting := a.acting(30 * time.Second)
	return fmt.Sprintf("acting %v after roscore was killed", time.Since(start).Round(100*time.Millisecond)), acting
}

// fileAttacks damage copies of the checkpoint and its backbone and load
// them as the node would.
func fileAttacks() []attackCase {
	load := func(name, expected string, damage func(dir, ckpt, backbone string) (string, error)) attackCase {
		return attackCase{name, expected, func(a *attacker) (string, bool) {
			dir := filepath.Join(a.outDir, "files", strings.ReplaceAll(name, " ", "_"))
			ckpt, backbone, err := copyCheckpoint(a.ckpt, dir)
			if err != nil {
				return err.Error(), false
			}
			path, err := damage(dir, ckpt, backbone)
			if err != nil {
				return "could not damage the file: " + err.Error(), false
			}
			p, err := policy.Load(path, policy.Options{Threads: 1})
			if err == nil {
				p.Close()
				return "loaded", false
			}
			return "refused: " + shortError(err.Error(), dir), true
		}}
	}
	flip := func(path string, at func(size int) int) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		b[at(len(b))] ^= 0x40
		return os.WriteFile(path, b, 0o644)
	}
	return []attackCase{
		load("checkpoint: one bit of a weight flipped", "refused: its tensors' digest differs", func(_, ckpt, _ string) (string, error) {
			return ckpt, flip(ckpt, func(n int) int { return n - 5 })
		}),
		load("checkpoint: a weight of 3e38, digest rewritten", "refused, naming the tensor", func(_, ckpt, _ string) (string, error) {
			f, err := safetensors.ReadFile(ckpt)
			if err != nil {
				return "", err
			}
			name := policy.Prefix + "head/kernel"
			v, err := f.Tensors[name].Floats()
			if err != nil {
				return "", err
			}
			v[0] = 3e38
			f.Tensors[name] = safetensors.FromFloat32(v, f.Tensors[name].Shape...)
			return ckpt, safetensors.WriteFile(ckpt, f)
		}),
		load("checkpoint: truncated to half", "refused", func(_, ckpt, _ string) (string, error) {
			st, err := os.Stat(ckpt)
			if err != nil {
				return "", err
			}
			return ckpt, os.Truncate(ckpt, st.Size()/2)
		}),
		load("checkpoint: /dev/zero", "refused: not a regular file", func(string, string, string) (string, error) { return "/dev/zero", nil }),
		load("backbone: one byte flipped", "refused: its SHA-256 differs", func(_, ckpt, backbone string) (string, error) {
			return ckpt, flip(backbone, func(n int) int { return n / 2 })
		}),
	}
}

// copyCheckpoint copies a checkpoint and its backbone (the file next to it)
// into dir.
func copyCheckpoint(ckpt, dir string) (string, string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	backbone := strings.TrimSuffix(ckpt, ".safetensors") + ".backbone.onnx"
	var out [2]string
	for i, src := range []string{ckpt, backbone} {
		b, err := os.ReadFile(src)
		if err != nil {
			return "", "", err
		}
		out[i] = filepath.Join(dir, filepath.Base(src))
		if err := os.WriteFile(out[i], b, 0o644); err != nil {
			return "", "", err
		}
	}
	return out[0], out[1], nil
}

// shortError is an error message for the table: dir written as <dir>, and
// the middle of a long message left out.
func shortError(msg, dir string) string {
	msg = strings.ReplaceAll(msg, dir, "<dir>")
	if len(msg) > 200 {
		msg = msg[:80] + " ... " + msg[len(msg)-115:]
	}
	return msg
}
