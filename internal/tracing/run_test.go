package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/tracing/tracingtest"
)

func recorder(t *testing.T) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return sr, tp
}

func attrsOf(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

var info = RunInfo{Job: "nightly", RunID: "nightly@2026-01-01T00:00:00Z", Attempt: 2, Trigger: runs.Retry, Holder: "r1"}

// A claim refused by the other workers is how claims compete, not an error;
// a claim that failed is; a claimed one gives the run its slot and token.
func TestClaimResults(t *testing.T) {
	tests := []struct {
		name   string
		held   *slots.Held
		err    error
		result string
		status codes.Code
	}{
		{"claimed", &slots.Held{Slot: 3, Token: 4242}, nil, "claimed", codes.Unset},
		{"full", nil, fmt.Errorf("slots: claim: %w", slots.ErrFull), "full", codes.Unset},
		{"taken", nil, fmt.Errorf("slots: claim: %w", slots.ErrConflict), "taken", codes.Unset},
		{"stopped", nil, context.Canceled, "stopped", codes.Unset},
		{"error", nil, errors.New("etcdserver: request timed out"), "error", codes.Error},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sr, tp := recorder(t)
			ctx, run := StartRun(t.Context(), Tracer(tp), info)
			_, claim := run.Claim(ctx)
			claim.End(tc.held, tc.err)
			run.End()
			ended := sr.Ended()
			if len(ended) != 2 || ended[0].Name() != ClaimSpan || ended[1].Name() != RunSpan {
				t.Fatalf("ended spans %v, want the claim then the run", ended)
			}
			c, r := ended[0], ended[1]
			if c.Parent().SpanID() != r.SpanContext().SpanID() || c.SpanContext().TraceID() != r.SpanContext().TraceID() {
				t.Error("claim span is not the run span's child")
			}
			if got := attrsOf(c)[AttrClaimResult].AsString(); got != tc.result {
				t.Errorf("claim result %q, want %q", got, tc.result)
			}
			if c.Status().Code != tc.status {
				t.Errorf("claim status %v, want %v", c.Status().Code, tc.status)
			}
			ra := attrsOf(r)
			if ra[AttrJob].AsString() != "nightly" || ra[AttrRunID].AsString() != info.RunID || ra[AttrAttempt].AsInt64() != 2 ||
				ra[AttrTrigger].AsString() != "retry" || ra[AttrHolder].AsString() != "r1" {
				t.Errorf("run attributes %v", ra)
			}
			_, hasToken := ra[AttrFencingToken]
			if tc.held != nil && (ra[AttrSlot].AsInt64() != 3 || ra[AttrFencingToken].AsInt64() != 4242) {
				t.Errorf("claimed: slot %v token %v, want 3, 4242", ra[AttrSlot], ra[AttrFencingToken])
			}
			if tc.held == nil && hasToken {
				t.Error("an unclaimed run has a fencing token")
			}
			if _, ok := ra[AttrOutcome]; ok {
				t.Error("an attempt not executed has an outcome")
			}
		})
	}
}

// Failed, timed out and lost runs are errors; the others are not, unless
// the release failed.
func TestFinishStatus(t *testing.T) {
	tests := []struct {
		outcome runs.Outcome
		release error
		status  codes.Code
	}{
		{runs.Succeeded, nil, codes.Unset},
		{runs.Cancelled, nil, codes.Unset},
		{runs.Failed, nil, codes.Error},
		{runs.TimedOut, nil, codes.Error},
		{runs.Lost, nil, codes.Error},
		{runs.Succeeded, slots.ErrNotOwner, codes.Error},
	}
	for _, tc := range tests {
		sr, tp := recorder(t)
		_, run := StartRun(t.Context(), Tracer(tp), info)
		run.Finish(tc.outcome, "target: http status 500", tc.release)
		run.End()
		s := sr.Ended()[0]
		if got := attrsOf(s)[AttrOutcome].AsString(); got != string(tc.outcome) {
			t.Errorf("%s: outcome attribute %q", tc.outcome, got)
		}
		if s.Status().Code != tc.status {
			t.Errorf("%s (release %v): status %v, want %v", tc.outcome, tc.release, s.Status().Code, tc.status)
		}
	}
}

func TestUnstartedOutcome(t *testing.T) {
	sr, tp := recorder(t)
	ctx, run := StartRun(t.Context(), Tracer(tp), info)
	Unstarted(ctx, runs.Skipped)
	run.End()
	s := sr.Ended()[0]
	if got := attrsOf(s)[AttrOutcome].AsString(); got != "skipped" || s.Status().Code != codes.Unset {
		t.Errorf("outcome %q status %v, want skipped, not an error", got, s.Status().Code)
	}
}

// The trace context names the run span; with no provider, or one that
// makes no ids, it is still valid: the target always gets one.
func TestTraceContext(t *testing.T) {
	sr, tp := recorder(t)
	_, run := StartRun(t.Context(), Tracer(tp), info)
	run.End()
	tp1, _ := run.TraceContext()
	traceID, spanID, ok := tracingtest.ParseTraceParent(tp1)
	sc := sr.Ended()[0].SpanContext()
	if !ok || traceID != sc.TraceID().String() || spanID != sc.SpanID().String() {
		t.Errorf("traceparent %q, want one naming %s/%s", tp1, sc.TraceID(), sc.SpanID())
	}

	for name, tracer := range map[string]func() *Run{
		"nil provider": func() *Run { _, r := StartRun(t.Context(), Tracer(nil), info); return r },
		"nil tracer":   func() *Run { _, r := StartRun(t.Context(), nil, info); return r },
		"no-op":        func() *Run { _, r := StartRun(t.Context(), Tracer(noop.NewTracerProvider()), info); return r },
	} {
		a, b := tracer(), tracer()
		pa, _ := a.TraceContext()
		pb, _ := b.TraceContext()
		ta, _, okA := tracingtest.ParseTraceParent(pa)
		tb, _, okB := tracingtest.ParseTraceParent(pb)
		if !okA || !okB || ta == tb {
			t.Errorf("%s: traceparents %q, %q: want two valid ones of different traces", name, pa, pb)
		}
		a.End()
		b.End()
	}

	var none *Run
	if p, s := none.TraceContext(); p != "" || s != "" {
		t.Errorf("nil run: %q %q", p, s)
	}
}

// Without a collector the engine only mints ids (mint): the target's
// traceparent is sampled, as the SDK's default sampler marked it, so a
// target that samples by its parent keeps its spans; a claim span joins
// the run's trace; and nothing records, which is the point.
func TestMintedSpansAreSampledAndJoinTheirTrace(t *testing.T) {
	clearOTel(t)
	p := newProvider(t)
	if p.TracerProvider() != nil {
		t.Fatalf("a provider exporting nothing hands the engine %v, want nil (ids only)", p.TracerProvider())
	}
	ctx, run := StartRun(t.Context(), Tracer(p.TracerProvider()), info)
	defer run.End()
	parent, _ := run.TraceContext()
	if !strings.HasSuffix(parent, "-01") {
		t.Errorf("traceparent %q: want the sampled flag, as before", parent)
	}
	if run.span.IsRecording() {
		t.Error("a minted run span records")
	}
	_, child := Tracer(nil).Start(ctx, ClaimSpan)
	root, _ := Tracer(nil).Start(ctx, RunSpan, trace.WithNewRoot())
	runTrace, _, _ := tracingtest.ParseTraceParent(parent)
	if got := child.SpanContext().TraceID().String(); got != runTrace {
		t.Errorf("child span's trace %s, want the run's %s", got, runTrace)
	}
	if got := trace.SpanContextFromContext(root).TraceID().String(); got == runTrace {
		t.Errorf("a new root kept the run's trace %s", got)
	}
	if child.SpanContext().SpanID() == run.span.SpanContext().SpanID() {
		t.Error("child span has its parent's span id")
	}
}

// A sampler named without a collector keeps the SDK's provider, so the
// targets' trace context says what the sampler decided.
func TestASamplerWithoutACollectorStillDecides(t *testing.T) {
	clearOTel(t)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	p := newProvider(t)
	_, run := StartRun(t.Context(), Tracer(p.TracerProvider()), info)
	defer run.End()
	if parent, _ := run.TraceContext(); !strings.HasSuffix(parent, "-00") {
		t.Errorf("traceparent %q: want the sampler's unsampled flag", parent)
	}
}
