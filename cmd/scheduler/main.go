// Command scheduler runs the etcd-backed job scheduler (run), checks a
// configuration file (validate) or prints its version (version).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/etcdsched/scheduler/internal/target"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes: 0 success, 1 the work failed (an invalid config, a run that
// could not start), 2 the command line or an input file is unusable.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

func main() {
	// First, before anything else: this binary is also each exec run's
	// supervisor (target.Supervise says why).
	if code, ok := target.Supervise(os.Args); ok {
		os.Exit(code)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return runCommand(args[1:], stderr)
	case "validate":
		return validateCommand(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "scheduler %s\n", buildVersion())
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "scheduler: unknown command %q (want run, validate or version)\n", args[0])
		return exitUsage
	}
}

const usage = `usage:
  scheduler run      --config FILE [--id NAME] [--listen ADDR] [--etcd-endpoints A,B,C]
                     [--data-dir DIR] [--log-level info] [--log-format json|text]
  scheduler validate --config FILE
  scheduler version

Every flag can also be set as SCHEDULER_<FLAG> in the environment
(e.g. SCHEDULER_ETCD_ENDPOINTS); flags win over the environment, and both win
over the file.`

// signalContext is cancelled on SIGTERM or SIGINT; SIGHUP is delivered on
// reload for the caller to act on.
func signalContext() (ctx context.Context, reload <-chan os.Signal, stop func()) {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return ctx, hup, func() {
		signal.Stop(hup)
		cancel()
	}
}

// errUsage marks errors that come from the command line itself.
var errUsage = errors.New("usage")
