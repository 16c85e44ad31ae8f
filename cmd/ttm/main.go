// Command ttm runs, trains, evaluates and inspects Token Turing Machine
// robot policies. Each subcommand lives in its own file and registers
// itself with register; run `ttm help` for the list.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// A command is one subcommand: its name, a one-line summary, and run, which
// receives the arguments after the subcommand's name.
type command struct {
	name    string
	summary string
	run     func(env *environment, args []string) error
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("ttm: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// environment is what every command gets: output streams and a logger.
type environment struct {
	stdout, stderr io.Writer
	log            hclog.Logger
}

// errUsage marks an error caused by the command line; main exits with 2.
var errUsage = errors.New("usage")

func main() {
	env := &environment{stdout: os.Stdout, stderr: os.Stderr}
	level := hclog.LevelFromString(os.Getenv("TTM_LOG_LEVEL"))
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	env.log = hclog.New(&hclog.LoggerOptions{Name: "ttm", Level: level, Output: os.Stderr})
	os.Exit(run(env, os.Args[1:]))
}

func run(env *environment, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(env.stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(env.stderr, "ttm: unknown command %q\n\n", args[0])
		usage(env.stderr)
		return 2
	}
	env.log = env.log.Named(c.name)
	if err := c.run(env, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if errors.Is(err, errUsage) {
			fmt.Fprintf(env.stderr, "ttm %s: %v\n", c.name, err)
			return 2
		}
		fmt.Fprintf(env.stderr, "ttm %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ttm <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun ttm <command> -h for a command's flags.")
}

// newFlags returns a flag set for a command that reports errors instead of
// exiting, with its usage written to stderr.
func newFlags(env *environment, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("ttm "+name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.stderr, "usage: ttm %s %s\n\nflags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and rejects positional arguments unless allowed.
func parseFlags(fs *flag.FlagSet, args []string, positional bool) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if !positional && fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %s", errUsage, strings.Join(fs.Args(), " "))
	}
	return nil
}

// requireFlag reports a missing mandatory flag as a usage error.
// givenFlags reports which flags the command line set (defaults excluded).
func givenFlags(fs *flag.FlagSet) map[string]bool {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return given
}

// makeOutDir creates dir: the folder --out names, or the folder of the
// file it names.
func makeOutDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

func requireFlag(name, value string) error {
	if value == "" {
		return fmt.Errorf("%w: --%s is required", errUsage, name)
	}
	return nil
}
