package target

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// SupervisorArg, as argv[1], makes the scheduler binary the supervisor of
// one exec run instead of itself. It is not a command a person types.
const SupervisorArg = "__scheduler-exec-supervisor"

// Supervise must be the first thing main does:
//
//	if code, ok := target.Supervise(os.Args); ok { os.Exit(code) }
//
// When args ask for a supervisor it runs one to the end and returns its exit
// code with ok; otherwise it returns at once. Only a binary that does this
// may be an Executor's Options.Supervisor (Discover(true) names it): any
// other (another package's test binary) would run as itself instead.
//
// Why a process of its own: the replica cannot kill anything once it is dead
// (SIGKILL, the OOM killer, a panic), and the kernel kills only the leader
// of a group, through Pdeathsig, never the group. The supervisor is a small
// process between the replica and the command. It reads the run's spec, then
// control messages, from its stdin, a pipe whose other end only the replica
// holds: end of file there means the replica is gone, however it died, and
// the supervisor kills the whole group (and the run's cgroup) at once and
// exits. It reports log records and then how the run ended on fd 3. The
// command's output does not pass through it: its stdout is the replica's
// output pipe, handed on to the command.
func Supervise(args []string) (code int, ok bool) {
	if len(args) < 2 || args[1] != SupervisorArg {
		return 0, false
	}
	return supervise(os.Stdin, os.NewFile(3, "report"), os.Stdout), true
}

// control is a message from the replica after the spec.
type control struct {
	Stop bool `json:"stop,omitempty"` // SIGTERM the group, SIGKILL after the grace
}

// report is a message to the replica: a log record, or how the run ended,
// which is the last message.
type report struct {
	Log  *logRecord `json:"log,omitempty"`
	Done *ended     `json:"done,omitempty"`
}

type ended struct {
	Status status `json:"status"`
	Error  string `json:"error,omitempty"` // the command could not start
}

type logRecord struct {
	Level slog.Level `json:"level"`
	Msg   string     `json:"msg"`
	Attrs []string   `json:"attrs,omitempty"` // key, value, key, value...
}

func supervise(ctl io.Reader, rep *os.File, out *os.File) int {
	// A terminal's ^C or a service manager's SIGTERM to the replica's group
	// reaches us too, and the replica, not we, decides what becomes of the
	// run. Handled rather than ignored: an ignored signal would stay ignored
	// in the command, which must still die of SIGTERM.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	// The report pipe is ours alone; a command holding it would keep the
	// replica waiting for its end of file.
	syscall.CloseOnExec(int(rep.Fd()))
	w := &reporter{enc: json.NewEncoder(rep)}
	log := slog.New(&relayHandler{r: w})

	dec := json.NewDecoder(ctl)
	var sp spec
	if err := dec.Decode(&sp); err != nil {
		return 2 // started by something that is not a replica, or one already gone
	}
	stop, lost := make(chan struct{}), make(chan struct{})
	go func() {
		// Lives as long as the process; the process is short-lived.
		defer close(lost)
		var once sync.Once
		for {
			var c control
			if err := dec.Decode(&c); err != nil {
				return
			}
			if c.Stop {
				once.Do(func() { close(stop) })
			}
		}
	}()
	if err := becomeSubreaper(); err != nil {
		log.Warn("supervisor is no child subreaper: orphans of the command are reaped by init", "err", err)
	}
	c, err := startCommand(sp, out, log)
	if err != nil {
		w.send(report{Done: &ended{Error: err.Error()}})
		return 0
	}
	over := make(chan struct{})
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		reapOrphans(c.cmd.Process.Pid, over)
	}()
	st := c.wait(stop, lost)
	close(over)
	<-reaped
	reapAll()
	w.send(report{Done: &ended{Status: st}})
	return 0
}

// reporter writes messages to the replica. A failed write means the replica
// is gone; its end of file on stdin will tell the supervisor the same.
type reporter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (r *reporter) send(m report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.enc.Encode(m)
}

// relayHandler sends log records to the replica, which logs them with its
// own logger and the run's attributes: the supervisor's stderr is the run's
// output and no place for them.
type relayHandler struct {
	r     *reporter
	attrs []string
}

func (h *relayHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *relayHandler) Handle(_ context.Context, rec slog.Record) error {
	attrs := append([]string(nil), h.attrs...)
	rec.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a.Key, a.Value.String())
		return true
	})
	h.r.send(report{Log: &logRecord{Level: rec.Level, Msg: rec.Message, Attrs: attrs}})
	return nil
}

func (h *relayHandler) WithAttrs(as []slog.Attr) slog.Handler {
	attrs := append([]string(nil), h.attrs...)
	for _, a := range as {
		attrs = append(attrs, a.Key, a.Value.String())
	}
	return &relayHandler{r: h.r, attrs: attrs}
}

// WithGroup flattens: the supervisor's few records use no groups.
func (h *relayHandler) WithGroup(string) slog.Handler { return h }
