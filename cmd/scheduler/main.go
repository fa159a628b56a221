// Command scheduler runs the etcd-backed job scheduler (run), checks a
// configuration file (validate), previews its schedules (next), runs an
// etcd for several replicas on one machine (etcd), prints its version
// (version), and is the command-line client of a running
// cluster's API (jobs, runs, trigger, pause, resume, cancel, leader,
// members, slots).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

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
	// Having dispatched the supervisor above, this binary can be each exec
	// run's supervisor: its replicas start their runs under it.
	const supervised = true
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, supervised))
}

// run runs one command; supervised says that this binary's main called
// target.Supervise first, so a replica may start exec runs under it.
func run(args []string, stdout, stderr io.Writer, supervised bool) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return runCommand(args[1:], stdout, stderr, supervised)
	case "validate":
		return validateCommand(args[1:], stdout, stderr, time.Now())
	case "etcd":
		return etcdCommand(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "scheduler %s\n", buildVersion())
		return exitOK
	case "next":
		return nextCommand(args[1:], stdout, stderr, time.Now())
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return exitOK
	}
	cmd, ok := clientCommands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "scheduler: unknown command %q (see 'scheduler help')\n", args[0])
		return exitUsage
	}
	// Ctrl-C during trigger --wait stops the wait, not the run: the
	// context ends, the command says so and exits 1.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return cmd(ctx, args[1:], stdout, stderr)
}

// clientCommands talk to a running cluster's API (docs/operations.md).
var clientCommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
	"jobs":    jobsCommand,
	"runs":    runsCommand,
	"trigger": triggerCommand,
	"pause": func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return pauseCommand(ctx, args, stdout, stderr)
	},
	"resume": func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return resumeCommand(ctx, args, stdout, stderr)
	},
	"backfill": func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return backfillCommand(ctx, args, stdout, stderr)
	},
	"diff": func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return diffCommand(ctx, args, stdout, stderr, time.Now())
	},
	"cancel":  cancelCommand,
	"leader":  leaderCommand,
	"members": membersCommand,
	"slots":   slotsCommand,
	"status":  statusCommand,
}

const usage = `usage:
  scheduler run      --config FILE [--id NAME] [--listen ADDR] [--etcd-endpoints A,B,C]
                     [--data-dir DIR] [--log-level info] [--log-format json|text]
  scheduler validate --config FILE [--capacity [--window 168h] [--max-peak N]]
  scheduler next     --config FILE [JOB] [--from TIME] [-n 5 | --until TIME] [--explain] [-o table|wide|json]
  scheduler etcd     [--listen 127.0.0.1:2379] [--data-dir etcd-data]  # one etcd for replicas to share
  scheduler version

Every flag of run can also be set as SCHEDULER_<FLAG> in the environment
(e.g. SCHEDULER_ETCD_ENDPOINTS); flags win over the environment, and both win
over the file.

Client of a running cluster's API:
  scheduler jobs [NAME] | scheduler jobs --removed
  scheduler runs JOB [--limit N] [--before RUN_ID]
  scheduler trigger JOB [--input JSON|@FILE] [--idempotency-key K] [--wait]
  scheduler backfill JOB --from T --to T [--wait]
  scheduler pause JOB [--reason R] [--until T]
  scheduler resume JOB
  scheduler cancel RUN_ID [--reason TEXT]
  scheduler leader
  scheduler members
  scheduler slots
  scheduler status
  scheduler diff --config FILE [--against OLDFILE] [--window 168h] [-o table|json]

Client flags: --server URL or HOST:PORT (env SCHEDULER_SERVER, default
http://127.0.0.1:8080), --token-file FILE (env SCHEDULER_TOKEN_FILE),
-o table|wide|json (table fits the terminal or 100 columns; wide shows every
column, uncut).
Exit status: 0 success, 1 failure (the API's error, no answer from the server,
a run that did not succeed with --wait), 2 usage error. diff exits 3 when the
configs differ, 2 when FILE is invalid; validate --capacity exits 3 when the
peak passes --max-peak.`

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
