// Package tracing gives every run attempt an OpenTelemetry span (docs/design-edges.md#tracing) and its target a W3C trace context. The process's tracer
// provider exports over OTLP only when the standard OTEL_* variables name
// a collector; without one it still mints trace and span ids, so a target
// can correlate its logs with the run, and nothing leaves the process.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation names the tracer, as OpenTelemetry asks: the module
// that makes the spans.
const instrumentation = "github.com/etcdsched/scheduler"

// Options describe the process in the spans' resource.
type Options struct {
	Instance string // the replica id: service.instance.id
	Version  string // service.version
}

// Provider is the process's tracer provider. Its Shutdown must be called
// when it exports: the batch span processor owns a goroutine.
type Provider struct {
	tp   *sdktrace.TracerProvider
	exp  sdktrace.SpanExporter // nil: nothing leaves the process
	mint bool                  // the engine only mints ids (Tracer)
}

// New builds the provider the environment asks for: an OTLP exporter
// behind a batch span processor when a collector is configured, otherwise
// a provider with no processor, which creates spans with real ids and
// drops them when they end.
func New(ctx context.Context, o Options) (*Provider, error) {
	res, err := newResource(ctx, o)
	if err != nil {
		return nil, err
	}
	exp, err := newExporter(ctx, os.Getenv)
	if err != nil {
		return nil, err
	}
	// No WithSampler: the SDK reads OTEL_TRACES_SAMPLER itself, and an
	// explicit option would override it.
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if exp != nil {
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	// Nothing exported and no sampler named: the engine mints ids, sampled
	// as the SDK's default sampler marks them, at a sixth of the cost.
	mint := exp == nil && os.Getenv("OTEL_TRACES_SAMPLER") == ""
	return &Provider{tp: sdktrace.NewTracerProvider(opts...), exp: exp, mint: mint}, nil
}

// TracerProvider is what the engine makes its spans with: nil when nothing
// leaves the process and no sampler is named, so the engine only mints ids
// (Tracer); a sampler named without a collector still marks the targets'
// trace context as it says.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if p.mint {
		return nil
	}
	return p.tp
}

// Exporting reports whether spans leave the process.
func (p *Provider) Exporting() bool { return p.exp != nil }

// Shutdown exports the spans still buffered and stops the exporter, giving
// up after within: a collector that is unreachable must not hold a
// replica's shutdown (docs/design-edges.md#operating-at-the-edges), and the spans are worth less than
// a bounded exit.
func (p *Provider) Shutdown(within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := p.tp.Shutdown(ctx); err != nil {
		if p.exp != nil {
			// The processor stopped waiting, but its export may still
			// hang on the collector for the export timeout; stopping the
			// exporter interrupts it, so nothing outlives the bound long.
			_ = p.exp.Shutdown(ctx)
		}
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}

func newResource(ctx context.Context, o Options) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", "scheduler")}
	if o.Instance != "" {
		attrs = append(attrs, attribute.String("service.instance.id", o.Instance))
	}
	if o.Version != "" {
		attrs = append(attrs, attribute.String("service.version", o.Version))
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the defaults above, as operators expect.
	res, err := resource.New(ctx,
		resource.WithAttributes(attrs...),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return res, nil
}

// errProtocol names a protocol the Go exporters do not speak.
var errProtocol = errors.New("tracing: unsupported OTLP protocol")

// newExporter returns the exporter the OTEL_* variables ask for, or nil.
// Spans are exported when a collector endpoint is set, or when
// OTEL_TRACES_EXPORTER says otlp (the SDK's default endpoint then);
// OTEL_TRACES_EXPORTER=none and OTEL_SDK_DISABLED=true turn it off. The
// exporters read the rest (headers, TLS, compression, timeout) themselves.
func newExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	switch kind := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); kind {
	case "none":
		return nil, nil
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return nil, nil
		}
	case "otlp":
	default:
		return nil, fmt.Errorf("tracing: OTEL_TRACES_EXPORTER %q: only otlp and none are supported", kind)
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case "", "http/protobuf": // the specification's default
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("%w %q (want http/protobuf or grpc)", errProtocol, protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: otlp exporter: %w", err)
	}
	return exp, nil
}

// Tracer is the engine's tracer from tp; nil gives one that exports
// nothing but still produces ids for the targets' trace context (mint).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return mint{}
	}
	return tp.Tracer(instrumentation)
}
