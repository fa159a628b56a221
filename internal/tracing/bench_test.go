package tracing

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// What a run's span costs the engine without a collector (mint) against
// the SDK's provider with no processor, which it used before.
func BenchmarkRunSpan(b *testing.B) {
	for name, tracer := range map[string]func() trace.Tracer{
		"mint": func() trace.Tracer { return Tracer(nil) },
		"sdk":  func() trace.Tracer { return Tracer(sdktrace.NewTracerProvider()) },
	} {
		b.Run(name, func(b *testing.B) {
			tr := tracer()
			b.ReportAllocs()
			for b.Loop() {
				ctx, run := StartRun(b.Context(), tr, info)
				_, claim := run.Claim(ctx)
				claim.End(nil, nil)
				_, _ = run.TraceContext()
				run.Finish("succeeded", "", nil)
				run.End()
			}
		})
	}
}
