package tracing

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// Span names.
const (
	RunSpan   = "scheduler.run"
	ClaimSpan = "scheduler.claim"
)

// Attribute keys. docs/design-edges.md#tracing names them plainly; they carry the
// scheduler. prefix because OpenTelemetry reserves unprefixed names for its
// semantic conventions, and a backend shows them grouped.
const (
	AttrJob          = attribute.Key("scheduler.job")
	AttrRunID        = attribute.Key("scheduler.run_id")
	AttrAttempt      = attribute.Key("scheduler.attempt")
	AttrTrigger      = attribute.Key("scheduler.trigger")
	AttrSlot         = attribute.Key("scheduler.slot")
	AttrFencingToken = attribute.Key("scheduler.fencing_token")
	AttrHolder       = attribute.Key("scheduler.holder")
	AttrOutcome      = attribute.Key("scheduler.outcome")
	// AttrClaimResult is the claim span's: claimed, full (every slot
	// taken), taken (another worker claimed the run, or it changed),
	// stopped (the worker stopped first) or error.
	AttrClaimResult = attribute.Key("scheduler.claim.result")
)

// RunInfo is what is known of an attempt before its claim.
type RunInfo struct {
	Job     string
	RunID   string
	Attempt int
	Trigger runs.Trigger
	Holder  string // this replica
}

// Run is the span of one attempt on this replica, from the first claim
// try to the release. Its methods accept a nil *Run.
type Run struct {
	span trace.Span
}

// StartRun starts the attempt's span; the returned context carries it, so
// the claim span and an unstarted outcome (Unstarted) find it there.
// A nil tracer, or one that makes no ids (the global no-op), is replaced by
// one that does: the target's trace context must always name a trace.
func StartRun(ctx context.Context, tracer trace.Tracer, ri RunInfo) (context.Context, *Run) {
	if tracer == nil {
		tracer = mint{}
	}
	if m, ok := tracer.(mint); ok {
		// Its spans record nothing: no attributes to build.
		runCtx, span := m.start(ctx, trace.SpanContext{})
		return runCtx, &Run{span: span}
	}
	opts := []trace.SpanStartOption{
		// A new root: the worker's context carries no caller's trace.
		trace.WithNewRoot(),
		trace.WithAttributes(
			AttrJob.String(ri.Job), AttrRunID.String(ri.RunID), AttrAttempt.Int(ri.Attempt),
			AttrTrigger.String(string(ri.Trigger)), AttrHolder.String(ri.Holder),
		),
	}
	runCtx, span := tracer.Start(ctx, RunSpan, opts...)
	if !span.SpanContext().IsValid() {
		runCtx, span = mint{}.start(ctx, trace.SpanContext{})
	}
	return runCtx, &Run{span: span}
}

// Claim is the span of one claim transaction of the attempt.
type Claim struct {
	run  *Run
	span trace.Span
}

// Into returns ctx carrying the run span: a claim tried after a wait, or
// an unstarted end, belongs to the attempt's span.
func (r *Run) Into(ctx context.Context) context.Context {
	if r == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, r.span)
}

// Claim starts a claim span under the run's; ctx must carry the run span
// (StartRun's, or Into's).
func (r *Run) Claim(ctx context.Context) (context.Context, *Claim) {
	if r == nil {
		return ctx, nil
	}
	ctx, span := r.span.TracerProvider().Tracer(instrumentation).Start(ctx, ClaimSpan)
	return ctx, &Claim{run: r, span: span}
}

// End ends the claim with its result. A claimed slot gives the run span
// its slot and fencing token; only an unexpected failure is an error, a
// refusal is how claims compete.
func (c *Claim) End(held *slots.Held, err error) {
	if c == nil {
		return
	}
	result := "claimed"
	switch {
	case err == nil && held != nil:
		c.run.span.SetAttributes(AttrSlot.Int(held.Slot), AttrFencingToken.Int64(held.Token))
	case errors.Is(err, slots.ErrFull):
		result = "full"
	case errors.Is(err, slots.ErrConflict):
		result = "taken"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		result = "stopped"
	case err != nil:
		result = "error"
		c.span.RecordError(err)
		c.span.SetStatus(codes.Error, err.Error())
	}
	c.span.SetAttributes(AttrClaimResult.String(result))
	c.span.End()
}

// TraceContext is the W3C traceparent and tracestate naming the run span,
// for the target (docs/design-edges.md#tracing): its spans become the run's children.
func (r *Run) TraceContext() (traceparent, tracestate string) {
	if r == nil {
		return "", ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpan(context.Background(), r.span), c)
	return c.Get("traceparent"), c.Get("tracestate")
}

// Finish records how the executed attempt ended. Failed, timed out and
// lost runs are errors; a release that failed is one too, whatever the
// target did, since the leader will record the run lost.
func (r *Run) Finish(outcome runs.Outcome, msg string, releaseErr error) {
	if r == nil {
		return
	}
	r.span.SetAttributes(AttrOutcome.String(string(outcome)))
	switch {
	case releaseErr != nil:
		r.span.RecordError(releaseErr)
		r.span.SetStatus(codes.Error, "release: "+releaseErr.Error())
	case outcome == runs.Failed || outcome == runs.TimedOut || outcome == runs.Lost:
		r.span.SetStatus(codes.Error, msg)
	}
}

// End ends the run span. An attempt this replica neither executed nor
// recorded (another worker claimed it, or the worker stopped) ends with
// no outcome.
func (r *Run) End() {
	if r != nil {
		r.span.End()
	}
}

// Unstarted records, on the run span in ctx, the outcome of an attempt
// that never started (skipped, missed): not errors, the job's policy.
func Unstarted(ctx context.Context, outcome runs.Outcome) {
	trace.SpanFromContext(ctx).SetAttributes(AttrOutcome.String(string(outcome)))
}
