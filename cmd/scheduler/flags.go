package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// runFlags are the settings of `scheduler run` that may override the file.
type runFlags struct {
	config        string
	id            string
	listen        string
	etcdEndpoints string
	dataDir       string
	logLevel      string
	logFormat     string
}

func newRunFlagSet(f *runFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("scheduler run", flag.ContinueOnError)
	fs.StringVar(&f.config, "config", "", "configuration `FILE` (required)")
	fs.StringVar(&f.id, "id", "", "replica `NAME` (default: hostname plus a random suffix)")
	fs.StringVar(&f.listen, "listen", "", "HTTP listen `ADDR`, overrides api.listen")
	fs.StringVar(&f.etcdEndpoints, "etcd-endpoints", "", "comma-separated etcd `URLS`, overrides cluster.etcd.endpoints")
	fs.StringVar(&f.dataDir, "data-dir", "", "embedded etcd data `DIR`, overrides cluster.data_dir")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "json", "json or text")
	return fs
}

// parseFlags reads the environment first and the command line second, so a
// flag wins over SCHEDULER_<FLAG>.
func parseFlags(fs *flag.FlagSet, args []string, help io.Writer) (map[string]bool, error) {
	fs.SetOutput(io.Discard)
	set := map[string]bool{}
	if err := applyEnv(fs, set, nil); err != nil {
		return nil, err
	}
	if err := fs.Parse(args); err != nil {
		return nil, flagError(fs, help, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return set, nil
}

// applyEnv sets the flags named in only (nil: every flag) from
// SCHEDULER_<FLAG>, and marks them in set.
func applyEnv(fs *flag.FlagSet, set map[string]bool, only []string) error {
	var envErr error
	fs.VisitAll(func(fl *flag.Flag) {
		if only != nil && !slices.Contains(only, fl.Name) {
			return
		}
		name := "SCHEDULER_" + strings.ToUpper(strings.ReplaceAll(fl.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok && envErr == nil {
			if err := fl.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s=%q: %w", name, v, err)
			}
			set[fl.Name] = true
		}
	})
	if envErr != nil {
		return fmt.Errorf("%w: %w", errUsage, envErr)
	}
	return nil
}

// flagError is a parse error as a usage error. -h and --help are not an
// error: they print the command's usage and flags to help (stdout where
// the command has one) and return errHelp, which exits 0 (usageError).
func flagError(fs *flag.FlagSet, help io.Writer, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(help, "usage: %s\n\nflags:\n", fs.Name())
		fs.SetOutput(help)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		return errHelp
	}
	return fmt.Errorf("%w: %w", errUsage, err)
}

// errHelp: the command printed its usage because it was asked to.
var errHelp = errors.New("help printed")

// parseInterleaved parses flags that may come before, between or after
// the positional arguments ("trigger JOB --wait" as well as
// "trigger --wait JOB"), which flag.Parse alone stops at. Only the flags
// in env are read from the environment: a client command may run inside
// an exec target, whose environment holds SCHEDULER_INPUT for that target,
// not for --input. It returns the positional arguments, between min and
// max of them. help takes the usage that -h asks for.
func parseInterleaved(fs *flag.FlagSet, args []string, help io.Writer, env []string, min, max int) ([]string, error) {
	fs.SetOutput(io.Discard)
	if err := applyEnv(fs, map[string]bool{}, env); err != nil {
		return nil, err
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, flagError(fs, help, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...) // after "--" nothing is a flag
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	switch {
	case len(pos) < min:
		return nil, fmt.Errorf("%w: missing argument: usage: %s", errUsage, fs.Name())
	case len(pos) > max:
		return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, pos[max])
	}
	return pos, nil
}
