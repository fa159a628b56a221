package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/replica"
)

func validateCommand(args []string, stdout, stderr io.Writer, now time.Time) int {
	var path string
	var capacityReport bool
	var window time.Duration
	var maxPeak int
	fset := flag.NewFlagSet("scheduler validate", flag.ContinueOnError)
	fset.StringVar(&path, "config", "", "configuration `FILE` (required)")
	fset.BoolVar(&capacityReport, "capacity", false, "also report the runs due at the busiest second of --window, and what history keeps")
	fset.DurationVar(&window, "window", defaultWindow, "with --capacity: how far ahead to count")
	fset.IntVar(&maxPeak, "max-peak", 0, "with --capacity: exit 3 when more than `N` runs are due in one second (implies --capacity)")
	set, err := parseFlags(fset, args, stdout)
	if err != nil {
		return usageError(stderr, err)
	}
	switch {
	case path == "":
		return usageError(stderr, fmt.Errorf("%w: --config is required", errUsage))
	case maxPeak < 0:
		return usageError(stderr, fmt.Errorf("%w: --max-peak %d: want a number of runs, 1 or more", errUsage, maxPeak))
	case window < time.Second || window > 366*24*time.Hour:
		return usageError(stderr, fmt.Errorf("%w: --window %s: want 1s to 8784h (a year)", errUsage, window))
	}
	cfg, err := config.Load(path)
	if code, ok := loadFailed(stderr, err); ok {
		return code
	}
	fmt.Fprintf(stdout, "%s: ok (%d jobs, config hash %s)\n", path, len(cfg.Jobs), cfg.Hash())
	if !capacityReport && !set["max-peak"] {
		return exitOK
	}
	return capacityCommand(cfg, now, window, maxPeak, stdout, stderr)
}

func runCommand(args []string, stdout, stderr io.Writer, supervised bool) int {
	var f runFlags
	fset := newRunFlagSet(&f)
	set, err := parseFlags(fset, args, stdout)
	if err != nil {
		return usageError(stderr, err)
	}
	if f.config == "" {
		return usageError(stderr, fmt.Errorf("%w: --config is required", errUsage))
	}
	logger, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return usageError(stderr, fmt.Errorf("%w: %w", errUsage, err))
	}
	cfg, err := config.Load(f.config)
	if code, failed := loadFailed(stderr, err); failed {
		return code
	}
	// Parsing allocates about six times the file's size for every job
	// (the YAML node tree keeps positions for FILE:LINE:COL errors): with
	// 100,000 jobs a 500 MB peak that the runtime would hand back to the
	// OS only slowly. Hand it back now.
	debug.FreeOSMemory()
	applyOverrides(cfg, &f, set)

	ctx, reload, stop := signalContext()
	defer stop()
	defer startGCFloor(logger)()
	err = replica.Run(ctx, replica.Options{
		Config:     cfg,
		ConfigPath: f.config,
		ID:         f.id,
		Version:    buildVersion(),
		Logger:     logger,
		Reload:     reload,
		Overrides:  func(c *config.Config) { applyOverrides(c, &f, set) },
		Supervised: supervised,
	})
	if errors.Is(err, replica.ErrStart) {
		logger.Error("scheduler refused to start", "err", err)
		return exitFail
	}
	if err != nil {
		logger.Error("scheduler stopped with an error", "err", err)
		return exitFail
	}
	return exitOK
}

func applyOverrides(cfg *config.Config, f *runFlags, set map[string]bool) {
	if set["listen"] {
		cfg.API.Listen = f.listen
	}
	if set["etcd-endpoints"] {
		cfg.Cluster.Etcd.Endpoints = nil
		for _, ep := range strings.Split(f.etcdEndpoints, ",") {
			if ep = strings.TrimSpace(ep); ep != "" {
				cfg.Cluster.Etcd.Endpoints = append(cfg.Cluster.Etcd.Endpoints, ep)
			}
		}
	}
	if set["data-dir"] {
		cfg.Cluster.DataDir = f.dataDir
	}
}

// loadFailed prints why a config could not be loaded: every problem for an
// invalid file (exit 1), one line for a file that cannot be read (exit 2).
func loadFailed(stderr io.Writer, err error) (int, bool) {
	if err == nil {
		return exitOK, false
	}
	var problems *config.Error
	if errors.As(err, &problems) {
		fmt.Fprintln(stderr, problems.Error())
		return exitFail, true
	}
	fmt.Fprintf(stderr, "scheduler: %v\n", err)
	return exitUsage, true
}

func usageError(stderr io.Writer, err error) int {
	if errors.Is(err, errHelp) {
		return exitOK // the usage is printed: help is not an error
	}
	msg := strings.TrimPrefix(err.Error(), errUsage.Error()+": ")
	fmt.Fprintf(stderr, "scheduler: %s (see 'scheduler help')\n", msg)
	return exitUsage
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want json or text", format)
	}
}
