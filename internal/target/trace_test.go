package target

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
)

const (
	testTraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	testTraceState  = "congo=t61rcWkgMzE"
)

// The run's trace context reaches an HTTP target as W3C headers, and a
// job's own traceparent cannot replace it: like the fencing token, it must
// name the run.
func TestHTTPTraceContext(t *testing.T) {
	var mu sync.Mutex
	var got http.Header
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
	})
	job := httpJob(srv.URL)
	job.HTTP.Headers = map[string]string{"traceparent": "00-forged", "Tracestate": "forged=1"}
	run := testRun()
	run.TraceParent, run.TraceState = testTraceParent, testTraceState
	if res := testExecutor(t).Execute(t.Context(), job, run); res.Outcome != runs.Succeeded {
		t.Fatalf("result = %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if v := got.Values("Traceparent"); len(v) != 1 || v[0] != testTraceParent {
		t.Errorf("traceparent = %q, want [%q]", v, testTraceParent)
	}
	if v := got.Values("Tracestate"); len(v) != 1 || v[0] != testTraceState {
		t.Errorf("tracestate = %q, want [%q]", v, testTraceState)
	}
}

// An exec target finds the trace context in TRACEPARENT and TRACESTATE,
// over the job's own env; without a tracestate there is no TRACESTATE.
func TestExecTraceContext(t *testing.T) {
	job := execJob(20*time.Second, 0, "env")
	job.Exec.Env = map[string]string{"TRACEPARENT": "00-forged"}
	run := testRun()
	run.TraceParent = testTraceParent
	res := testExecutor(t).Execute(t.Context(), job, run)
	if res.Outcome != runs.Succeeded {
		t.Fatalf("result = %+v", res)
	}
	env := map[string]string{}
	for line := range strings.Lines(res.Output) {
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
		env[k] = v
	}
	if env["TRACEPARENT"] != testTraceParent {
		t.Errorf("TRACEPARENT = %q, want %q", env["TRACEPARENT"], testTraceParent)
	}
	if v, ok := env["TRACESTATE"]; ok {
		t.Errorf("TRACESTATE = %q, want none: the run has no tracestate", v)
	}
}
