package jobs_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/tracing"
	"github.com/etcdsched/scheduler/internal/tracing/tracingtest"
)

// traceTarget is an HTTP target that keeps, per run id, the trace context
// and fencing token it was sent.
type traceTarget struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string]http.Header // by X-Scheduler-Run-Id
}

func startTraceTarget(t *testing.T) *traceTarget {
	tt := &traceTarget{got: map[string]http.Header{}}
	tt.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tt.mu.Lock()
		tt.got[r.Header.Get("X-Scheduler-Run-Id")] = r.Header.Clone()
		tt.mu.Unlock()
		if c, err := strconv.Atoi(r.URL.Query().Get("status")); err == nil {
			w.WriteHeader(c)
		}
	}))
	t.Cleanup(tt.srv.Close)
	return tt
}

func (tt *traceTarget) headers(runID string) http.Header {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.got[runID]
}

// clearOTel leaves the test with no OTEL_* variable at all, whatever the
// environment it was started in.
func clearOTel(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "") // restores it after the test
			os.Unsetenv(k)
		}
	}
}

// collectTo points the OTel variables at a receiver, the way an operator
// configures a replica, with a short batch delay so spans arrive quickly.
func collectTo(t *testing.T, endpoint string) {
	clearOTel(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // milliseconds
}

// runSpans waits until the receiver has the run span of runID, and returns
// it with its claim spans.
func runSpans(t *testing.T, r *tracingtest.Receiver, runID string) (run tracingtest.Span, claims []tracingtest.Span) {
	t.Helper()
	poll.Until(t, 30*time.Second, "the run span of "+runID, func() (bool, string) {
		for _, s := range r.Spans() {
			if s.Name == tracing.RunSpan && s.Attrs["scheduler.run_id"] == runID {
				run = s
				return true, ""
			}
		}
		return false, strconv.Itoa(len(r.Spans())) + " spans received"
	})
	for _, s := range r.Spans() {
		if s.Name == tracing.ClaimSpan && s.ParentID == run.SpanID {
			claims = append(claims, s)
		}
	}
	return run, claims
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, a run attempt reaches a real OTLP
// collector as a scheduler.run span with a scheduler.claim child, carrying
// the run's attributes; the traceparent the target got names that span;
// a failed run's span is an error.
func TestRunSpanReachesCollector(t *testing.T) {
	etcd := startEtcd(t)
	recv, endpoint := tracingtest.StartHTTP(t)
	collectTo(t, endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	tgt := startTraceTarget(t)
	far := jobstest.FarTick(time.Now())
	cfg := newConfig(
		httpJob("traced", far, tgt.srv.URL),
		httpJob("broken", far, tgt.srv.URL+"?status=500"),
	)
	n := etcd.node("solo", cfg)
	if !n.Tracing.Exporting() {
		t.Fatal("OTEL_EXPORTER_OTLP_ENDPOINT is set but the node does not export")
	}
	leaderOf(t, []*node{n})

	id := n.trigger(t, "traced", "")
	rec := awaitRecord(t, n.client, "traced", id, nil)
	run, claims := runSpans(t, recv, id)

	want := map[string]string{
		"scheduler.job":           "traced",
		"scheduler.run_id":        id,
		"scheduler.attempt":       "1",
		"scheduler.trigger":       string(runs.Manual),
		"scheduler.slot":          "0",
		"scheduler.fencing_token": strconv.FormatInt(rec.FencingToken, 10),
		"scheduler.holder":        "solo",
		"scheduler.outcome":       string(runs.Succeeded),
	}
	for k, v := range want {
		if run.Attrs[k] != v {
			t.Errorf("run span %s = %q, want %q", k, run.Attrs[k], v)
		}
	}
	if run.StatusCode == "STATUS_CODE_ERROR" {
		t.Errorf("succeeded run's span is an error: %s", run.StatusMessage)
	}
	if run.ParentID != "" {
		t.Errorf("run span has parent %s, want a root", run.ParentID)
	}
	if run.Service != "scheduler" || run.ServiceInstance != "solo" {
		t.Errorf("resource service.name %q service.instance.id %q, want scheduler, solo", run.Service, run.ServiceInstance)
	}
	if len(claims) != 1 || claims[0].TraceID != run.TraceID || claims[0].Attrs["scheduler.claim.result"] != "claimed" {
		t.Fatalf("claim spans under the run span: %+v, want one claimed, same trace %s", claims, run.TraceID)
	}
	if claims[0].Start < run.Start || claims[0].End > run.End {
		t.Errorf("claim span [%d,%d] not within the run span [%d,%d]", claims[0].Start, claims[0].End, run.Start, run.End)
	}

	h := tgt.headers(id)
	if got := h.Get("X-Scheduler-Fencing-Token"); got != run.Attrs["scheduler.fencing_token"] {
		t.Errorf("target got fencing token %s, span says %s", got, run.Attrs["scheduler.fencing_token"])
	}
	traceID, parentID, ok := tracingtest.ParseTraceParent(h.Get("traceparent"))
	if !ok {
		t.Fatalf("target got traceparent %q, not valid W3C", h.Get("traceparent"))
	}
	if traceID != run.TraceID || parentID != run.SpanID {
		t.Errorf("traceparent %q names %s/%s, want the run span %s/%s", h.Get("traceparent"), traceID, parentID, run.TraceID, run.SpanID)
	}

	id = n.trigger(t, "broken", "")
	awaitRecord(t, n.client, "broken", id, nil)
	failed, _ := runSpans(t, recv, id)
	if failed.Attrs["scheduler.outcome"] != string(runs.Failed) || failed.StatusCode != "STATUS_CODE_ERROR" ||
		!strings.Contains(failed.StatusMessage, "500") {
		t.Errorf("failed run's span: outcome %q status %s %q, want failed, an error naming the 500",
			failed.Attrs["scheduler.outcome"], failed.StatusCode, failed.StatusMessage)
	}
	if failed.TraceID == run.TraceID {
		t.Error("two runs share a trace")
	}
}

// Without any OTEL_* variable nothing is exported, yet the target still
// gets a valid traceparent to correlate its logs with.
func TestNoCollectorExportsNothing(t *testing.T) {
	etcd := startEtcd(t)
	recv, _ := tracingtest.StartHTTP(t)
	clearOTel(t)
	tgt := startTraceTarget(t)
	n := etcd.node("solo", newConfig(httpJob("quiet", jobstest.FarTick(time.Now()), tgt.srv.URL)))
	if n.Tracing.Exporting() {
		t.Fatal("no OTEL_* variable, yet the node exports")
	}
	leaderOf(t, []*node{n})
	id := n.trigger(t, "quiet", "")
	if rec := awaitRecord(t, n.client, "quiet", id, nil); rec.Outcome != runs.Succeeded {
		t.Fatalf("run: %s %s", rec.Outcome, rec.Error)
	}
	tp := tgt.headers(id).Get("traceparent")
	if _, _, ok := tracingtest.ParseTraceParent(tp); !ok {
		t.Errorf("target got traceparent %q, want a valid one without a collector too", tp)
	}
	// Stop flushes the tracer provider: an exporter, had there been one,
	// would have sent its spans by the time Stop returns.
	n.stop(5 * time.Second)
	if got := recv.Requests(); got != 0 {
		t.Errorf("receiver got %d requests without any OTEL_* variable", got)
	}
}

// An exec target finds the run's trace context in TRACEPARENT, which the
// job's own env cannot override.
func TestExecTargetGetsTraceparent(t *testing.T) {
	etcd := startEtcd(t)
	recv, endpoint := tracingtest.StartHTTP(t)
	collectTo(t, endpoint)
	out := filepath.Join(t.TempDir(), "traceparent")
	job := config.Job{Name: "script", Schedule: jobstest.FarTick(time.Now()), Exec: &config.Exec{
		Command: []string{"sh", "-c", `printf %s "$TRACEPARENT" > "$OUT"`},
		Env:     map[string]string{"OUT": out, "TRACEPARENT": "00-forged"},
	}}
	n := etcd.leading("solo", newConfig(job))
	id := n.trigger(t, "script", "")
	if rec := awaitRecord(t, n.client, "script", id, nil); rec.Outcome != runs.Succeeded {
		t.Fatalf("run: %s %s (%s)", rec.Outcome, rec.Error, rec.Output)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	traceID, parentID, ok := tracingtest.ParseTraceParent(string(data))
	if !ok {
		t.Fatalf("TRACEPARENT = %q, not valid W3C", data)
	}
	run, _ := runSpans(t, recv, id)
	if traceID != run.TraceID || parentID != run.SpanID {
		t.Errorf("TRACEPARENT %q names %s/%s, want the run span %s/%s", data, traceID, parentID, run.TraceID, run.SpanID)
	}
}
