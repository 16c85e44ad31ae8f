// Package proctree reads Linux's process tree from /proc: a process's
// state and parent, and every process below a root. The demo and the ROS
// test rig use it to stop what roscore and roslaunch leave running in
// sessions of their own, where killing a process group is not enough.
package proctree

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
)

// Stat reads pid's state (R, S, Z, ...) and parent pid from /proc/pid/stat.
func Stat(pid int) (state string, ppid int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, err
	}
	return ParseStat(b)
}

// ParseStat reads the state and parent pid from a /proc/pid/stat line,
// "pid (comm) state ppid ...", where comm may hold spaces and parentheses.
func ParseStat(b []byte) (state string, ppid int, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, errors.New("proctree: malformed stat: no ')' after the command")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return "", 0, errors.New("proctree: malformed stat: no state and parent after the command")
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil || ppid < 0 {
		return "", 0, errors.New("proctree: malformed stat: parent pid " + strconv.Quote(f[1]))
	}
	return f[0], ppid, nil
}

// Exited reports whether pid has exited (a zombie waiting to be reaped) or
// is gone, without reaping it.
func Exited(pid int) bool {
	state, _, err := Stat(pid)
	return err != nil || state == "Z"
}

// Descendants lists the pids of every process below root, parents before
// their children.
func Descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, err := Stat(pid); err == nil {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
