package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (map[string]bool, error) {
	fs.SetOutput(io.Discard)
	set := map[string]bool{}
	var envErr error
	fs.VisitAll(func(fl *flag.Flag) {
		name := "SCHEDULER_" + strings.ToUpper(strings.ReplaceAll(fl.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok && envErr == nil {
			if err := fl.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s=%q: %w", name, v, err)
			}
			set[fl.Name] = true
		}
	})
	if envErr != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, envErr)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.PrintDefaults()
		}
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return set, nil
}
