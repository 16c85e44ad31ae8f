// Command testsummary reads `go test -json` on standard input and prints
// what `go test` prints without -v (each package's ok, FAIL or "no test
// files" line, the output of failed tests, build errors), then the tests
// that were skipped, each with its reason. make test pipes its runs
// through it:
//
//	go test -json ./... | go run ./internal/testsummary
//
// It exits 0; the caller takes the exit status from go test.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output events
	Test       string
	Output     string
}

// skipped is one skipped test and why.
type skipped struct{ pkg, test, reason string }

// summarise copies r's go test -json events to w as go test prints them
// without -v and returns the skipped tests, in the order they ended.
func summarise(w io.Writer, r io.Reader) ([]skipped, error) {
	out := map[string][]string{} // package and test -> its output lines so far
	var skips []skipped
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line) // not an event: pass it on
			continue
		}
		key := e.Package + " " + e.Test
		switch {
		case e.Action == "build-output":
			fmt.Fprint(w, e.Output)
		case e.Action == "output" && e.Test == "":
			if e.Output != "PASS\n" {
				fmt.Fprint(w, e.Output)
			}
		case e.Action == "output":
			if !strings.HasPrefix(e.Output, "=== ") {
				out[key] = append(out[key], e.Output)
			}
		case e.Test == "":
		case e.Action == "fail":
			fmt.Fprint(w, strings.Join(out[key], ""))
			delete(out, key)
		case e.Action == "skip":
			var reason []string
			for _, l := range out[key] {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "--- SKIP") {
					reason = append(reason, l)
				}
			}
			skips = append(skips, skipped{e.Package, e.Test, strings.Join(reason, " ")})
			delete(out, key)
		case e.Action == "pass":
			delete(out, key)
		}
	}
	return skips, sc.Err()
}

func main() {
	skips, err := summarise(os.Stdout, os.Stdin)
	if len(skips) > 0 {
		fmt.Printf("\nskipped %d tests:\n", len(skips))
		for _, s := range skips {
			fmt.Printf("  %s %s: %s\n", s.pkg, s.test, s.reason)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
	}
}
