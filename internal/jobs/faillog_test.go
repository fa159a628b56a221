package jobs_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
)

// A test's nodes log into its failLog, which prints them when the test
// fails: CI runs the suite without TEST_LOG, and a failure under a load no
// one can reproduce at will is read from what it printed or not at all.
// Every warning and error is kept (up to failLogWarns), and the last
// failLogLines lines of any level. The failures a test reports through
// errorf are printed again after them: a CI report that keeps only an
// output's tail still shows what failed.
const (
	failLogLines = 1500
	failLogWarns = 400
)

type failLog struct {
	mu       sync.Mutex
	ring     []string
	next     int
	wrapped  bool
	warns    []string
	dropped  int // warnings past failLogWarns
	t        *testing.T
	failures []string
}

var failLogs sync.Map // *testing.T -> *failLog

// failLogOf returns t's log, made on first use with a cleanup that prints
// it when t failed. The cleanup is registered before the nodes' own, so it
// runs after them and their stopping's lines are in.
func failLogOf(t *testing.T) *failLog {
	if l, ok := failLogs.Load(t); ok {
		return l.(*failLog)
	}
	l := &failLog{ring: make([]string, 0, failLogLines), t: t}
	if got, loaded := failLogs.LoadOrStore(t, l); loaded {
		return got.(*failLog)
	}
	t.Cleanup(func() {
		failLogs.Delete(t)
		if t.Failed() {
			l.print(t)
		}
	})
	return l
}

// errorf is t.Errorf, the message kept to be printed after the logs.
func (l *failLog) errorf(format string, args ...any) {
	l.t.Helper()
	msg := fmt.Sprintf(format, args...)
	l.mu.Lock()
	l.failures = append(l.failures, msg)
	l.mu.Unlock()
	l.t.Error(msg)
}

// Write takes one line: slog's text handler writes a record in one call.
func (l *failLog) Write(p []byte) (int, error) {
	line := string(bytes.TrimRight(p, "\n"))
	l.mu.Lock()
	defer l.mu.Unlock()
	if bytes.Contains(p, []byte("level=WARN")) || bytes.Contains(p, []byte("level=ERROR")) {
		if len(l.warns) < failLogWarns {
			l.warns = append(l.warns, line)
		} else {
			l.dropped++
		}
	}
	if len(l.ring) < failLogLines {
		l.ring = append(l.ring, line)
		return len(p), nil
	}
	l.ring[l.next] = line
	l.next = (l.next + 1) % failLogLines
	l.wrapped = true
	return len(p), nil
}

func (l *failLog) print(t *testing.T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("the nodes' warnings and errors (%d, %d more not kept):", len(l.warns), l.dropped)
	for _, line := range l.warns {
		t.Log(line)
	}
	t.Logf("the nodes' last %d log lines (earlier ones dropped: %v):", len(l.ring), l.wrapped)
	for i := range l.ring {
		t.Log(l.ring[(l.next+i)%len(l.ring)])
	}
	if len(l.failures) > 0 {
		t.Logf("the test's failures again (%d):", len(l.failures))
		for _, f := range l.failures {
			t.Log(f)
		}
	}
}

// testLogger is node id's logger in t: into t's failLog, and to stderr too
// with TEST_LOG set.
func testLogger(t *testing.T, id string) *slog.Logger {
	var w io.Writer = failLogOf(t)
	if os.Getenv("TEST_LOG") != "" {
		w = io.MultiWriter(w, os.Stderr)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", id)
}
