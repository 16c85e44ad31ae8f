package simnode

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/goroslib/v2/pkg/msgs/std_msgs"

	"github.com/ttmrobot/ttm/internal/ros"
	"github.com/ttmrobot/ttm/internal/rostest"
	"github.com/ttmrobot/ttm/sim"
)

func TestCheckAction(t *testing.T) {
	ok := []float32{1, 0.5, -0.5, 0, 0.1, 0.2, 0.3, -1, 0, 0, 0}
	with := func(i int, v float32) []float32 {
		a := append([]float32(nil), ok...)
		a[i] = v
		return a
	}
	for _, tc := range []struct {
		name   string
		data   []float32
		sizes  []uint32
		offset uint32
		want   string // "" for accepted
	}{
		{"RT-1 action", ok, nil, 0, ""},
		{"RT-1 action with its layout", ok, []uint32{11}, 0, ""},
		{"out of bounds values are the simulator's to clamp", with(1, 7), nil, 0, ""},
		{"empty", nil, nil, 0, "action has 0 values, want 11"},
		{"too short", ok[:3], nil, 0, "action has 3 values, want 11"},
		{"too long", append(append([]float32(nil), ok...), 0), nil, 0, "action has 12 values, want 11"},
		{"NaN", with(4, float32(math.NaN())), nil, 0, "action value 4 (rotation_delta/roll) is NaN"},
		{"+Inf", with(10, float32(math.Inf(1))), nil, 0, "action value 10 (base/y) is +Inf"},
		{"-Inf mode", with(0, float32(math.Inf(-1))), nil, 0, "action value 0 (mode) is -Inf"},
		{"data offset", ok, nil, 2, "layout.data_offset is 2"},
		{"layout disagrees", ok, []uint32{7}, 0, "layout.dim[0].size is 7 but the action has 11 values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkAction(tc.data, tc.sizes, tc.offset)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// FuzzCheckAction: any message is either refused or has exactly 11 finite
// values at offset 0; checking never panics.
func FuzzCheckAction(f *testing.F) {
	enc := func(v ...float32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b
	}
	f.Add(enc(1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), uint32(11), uint32(0))
	f.Add(enc(1, float32(math.NaN()), 0, 0, 0, 0, 0, 0, 0, 0, 0), uint32(11), uint32(0))
	f.Add(enc(1, 2, 3), uint32(0), uint32(0))
	f.Add([]byte{}, uint32(0), uint32(1))
	f.Fuzz(func(t *testing.T, raw []byte, size, offset uint32) {
		data := make([]float32, len(raw)/4)
		for i := range data {
			data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		var sizes []uint32
		if size > 0 {
			sizes = []uint32{size}
		}
		err := checkAction(data, sizes, offset)
		if err != nil {
			return
		}
		if len(data) != 11 || offset != 0 || size != 0 && size != 11 {
			t.Fatalf("accepted %d values, size %d, offset %d", len(data), size, offset)
		}
		for i, v := range data {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("accepted value %d = %v", i, v)
			}
		}
	})
}

func TestActionQueue(t *testing.T) {
	q := newActionQueue()
	at := func(i int) simAction { return simAction{data: []float32{float32(i)}} }
	q.push(at(1))
	select {
	case <-q.notify:
	default:
		t.Fatal("push did not signal")
	}
	q.push(at(2))
	for _, want := range []float32{1, 2} {
		a, ok := q.pop()
		if !ok || a.data[0] != want {
			t.Fatalf("pop = %v, %v; want %v (oldest first)", a.data, ok, want)
		}
	}
	if _, ok := q.pop(); ok {
		t.Fatal("pop from an empty queue")
	}

	// Full: the oldest go first.
	for i := range simQueueLen + 3 {
		q.push(at(i))
	}
	if a, _ := q.pop(); a.data[0] != 3 {
		t.Errorf("after overflow the oldest is %v, want 3", a.data[0])
	}
	if d, _ := q.counts(); d != 3 {
		t.Errorf("dropped %d, want 3", d)
	}
	// clear counts what it throws away as ignored.
	q.clear()
	if _, ok := q.pop(); ok {
		t.Error("pop after clear")
	}
	if d, ign := q.counts(); d != 3 || ign != simQueueLen-1 {
		t.Errorf("dropped %d ignored %d, want 3 and %d", d, ign, simQueueLen-1)
	}
}

func TestDoneNear(t *testing.T) {
	s := &simIO{doneIn: make(chan struct{}, 1)}
	t0 := time.Now()
	if _, ok := s.doneNear(t0, time.Second); ok {
		t.Fatal("found a message in an empty log")
	}
	put := func(at time.Time, done bool) {
		s.doneMu.Lock()
		s.doneLog[s.doneNext%len(s.doneLog)] = doneMsg{at: at, done: done}
		s.doneNext++
		s.doneMu.Unlock()
	}
	put(t0.Add(-200*time.Millisecond), true) // the previous tick
	put(t0.Add(3*time.Millisecond), false)   // this tick's, a little after the action
	put(t0.Add(200*time.Millisecond), true)  // the next tick
	d, ok := s.doneNear(t0, simDoneWindow)
	if !ok || d.done || !d.at.Equal(t0.Add(3*time.Millisecond)) {
		t.Errorf("doneNear = %+v, %v; want this tick's false", d, ok)
	}
	if _, ok := s.doneNear(t0.Add(100*time.Millisecond), simDoneWindow); ok {
		t.Error("found a message 97 ms away within a 25 ms window")
	}
	// The ring keeps the last 8.
	for i := range 8 {
		put(t0.Add(time.Duration(10+i)*time.Second), true)
	}
	if _, ok := s.doneNear(t0, time.Second); ok {
		t.Error("an overwritten message was found")
	}
	// onDone records with the arrival time and signals.
	s.onDone(&std_msgs.Bool{Data: true})
	select {
	case <-s.doneIn:
	default:
		t.Error("onDone did not signal")
	}
	if d, ok := s.doneNear(time.Now(), time.Second); !ok || !d.done {
		t.Errorf("onDone's message: %+v %v", d, ok)
	}
}

// TestTerminateConfirmed checks how a terminate-mode action is told from a
// stop action holding an earlier terminate: by the episode_done message of
// the same tick, and applied when there is none.
func TestTerminateConfirmed(t *testing.T) {
	for _, tc := range []struct {
		name         string
		offset       time.Duration // of the episode_done message from the action; 0: none
		done         bool
		apply, known bool
	}{
		{"the policy terminated", 2 * time.Millisecond, true, true, true},
		{"a stop action holding terminate", -3 * time.Millisecond, false, false, true},
		{"only the previous tick's message", -300 * time.Millisecond, false, true, false},
		{"no episode_done at all", 0, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Node{io: &simIO{doneIn: make(chan struct{}, 1)}}
			at := time.Now()
			if tc.offset != 0 {
				s.io.doneLog[0] = doneMsg{at: at.Add(tc.offset), done: tc.done}
			}
			start := time.Now()
			apply, known := s.terminateConfirmed(context.Background(), at)
			if apply != tc.apply || known != tc.known {
				t.Errorf("apply %v known %v, want %v %v", apply, known, tc.apply, tc.known)
			}
			if waited := time.Since(start); known && waited > simDoneWait/2 {
				t.Errorf("waited %v with the message already there", waited)
			}
		})
	}
	// A message that comes while waiting is seen.
	s := &Node{io: &simIO{doneIn: make(chan struct{}, 1)}}
	at := time.Now()
	go func() {
		time.Sleep(5 * time.Millisecond)
		s.io.onDone(&std_msgs.Bool{Data: false})
	}()
	if apply, known := s.terminateConfirmed(context.Background(), at); apply || !known {
		t.Errorf("late message: apply %v known %v, want false true", apply, known)
	}
}

func TestStartRefuses(t *testing.T) {
	a, err := ros.ParseArgs("ttm_sim", nil, rostest.Env(map[string]string{"ROS_MASTER_URI": "http://127.0.0.1:1"}))
	if err != nil {
		t.Fatal(err)
	}
	pick, _ := sim.TaskByName("pick")
	for _, tc := range []struct {
		name string
		conf Config
		want string
	}{
		{"no args", Config{Tasks: []*sim.Task{pick}}, "Args is nil"},
		{"no tasks", Config{Args: a}, "no tasks"},
		{"nil task", Config{Args: a, Tasks: []*sim.Task{nil}}, "task 0 is nil"},
		{"negative episodes", Config{Args: a, Tasks: []*sim.Task{pick}, Episodes: -1}, "episodes -1"},
		{"negative max steps", Config{Args: a, Tasks: []*sim.Task{pick}, MaxSteps: -2}, "max steps -2"},
		{"tiny image", Config{Args: a, Tasks: []*sim.Task{pick}, Height: 4, Width: 64}, "image size 4x64"},
		{"timeouts", Config{Args: a, Tasks: []*sim.Task{pick}, ActionTimeout: time.Second, EpisodeTimeout: time.Millisecond}, "shorter than the action timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(context.Background(), tc.conf)
			if err == nil {
				s.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to mention %q", err, tc.want)
			}
		})
	}
}
