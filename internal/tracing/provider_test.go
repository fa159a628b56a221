package tracing

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/tracing/tracingtest"
)

// clearOTel leaves the test with no OTEL_* variable at all.
func clearOTel(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func newProvider(t *testing.T) *Provider {
	t.Helper()
	p, err := New(t.Context(), Options{Instance: "r1", Version: "v9"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(time.Second) })
	return p
}

// exportRun ends one run span through a new provider and shuts the
// provider down, so that the span has reached the collector.
func exportRun(t *testing.T, info RunInfo) {
	t.Helper()
	p := newProvider(t)
	_, run := StartRun(t.Context(), Tracer(p.TracerProvider()), info)
	run.End()
	if err := p.Shutdown(5 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// Which variables turn exporting on, and which settings are refused rather
// than silently ignored.
func TestExporterFromEnv(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		export bool
		errHas string
	}{
		{"nothing set", nil, false, ""},
		{"service name alone", map[string]string{"OTEL_SERVICE_NAME": "x"}, false, ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, ""},
		{"exporter otlp, default endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, ""},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false, ""},
		{"http/json", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, `protocol "http/json"`},
		{"traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"}, false, `protocol "thrift"`},
		{"zipkin", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, `OTEL_TRACES_EXPORTER "zipkin"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearOTel(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			p, err := New(t.Context(), Options{})
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err = %v, want one naming %s", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Shutdown(time.Second)
			if p.Exporting() != tc.export {
				t.Errorf("exporting = %v, want %v", p.Exporting(), tc.export)
			}
		})
	}
}

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc sends the spans over OTLP/gRPC, and the
// resource names the replica.
func TestExportsOverGRPC(t *testing.T) {
	recv, endpoint := tracingtest.StartGRPC(t)
	clearOTel(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	exportRun(t, RunInfo{Job: "j", RunID: "j@1", Attempt: 1})
	spans := recv.Spans()
	if len(spans) != 1 || spans[0].Name != RunSpan || spans[0].Attrs["scheduler.run_id"] != "j@1" {
		t.Fatalf("received %+v, want the one run span", spans)
	}
	if spans[0].Service != "scheduler" || spans[0].ServiceInstance != "r1" {
		t.Errorf("resource: service %q instance %q, want scheduler, r1", spans[0].Service, spans[0].ServiceInstance)
	}
}

// OTEL_SERVICE_NAME overrides the default service name.
func TestServiceNameFromEnv(t *testing.T) {
	recv, endpoint := tracingtest.StartHTTP(t)
	clearOTel(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_SERVICE_NAME", "billing-scheduler")
	exportRun(t, RunInfo{Job: "j", RunID: "j@1"})
	if spans := recv.Spans(); len(spans) != 1 || spans[0].Service != "billing-scheduler" {
		t.Fatalf("received %+v, want one span of service billing-scheduler", spans)
	}
}

// A collector that accepts the connection and never answers does not hold
// Shutdown past its bound, and the export it hangs is interrupted rather
// than left running (goleak checks the rest).
func TestShutdownBoundedWhenCollectorHangs(t *testing.T) {
	var arrived, interrupted atomic.Bool
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the whole request: only then does the server watch the
		// connection, and see the client give up.
		_, _ = io.Copy(io.Discard, r.Body)
		arrived.Store(true)
		select {
		case <-r.Context().Done(): // the exporter gave up on the request
			interrupted.Store(true)
		case <-release: // the test is over
		}
	}))
	defer hang.Close()
	defer close(release)
	clearOTel(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", hang.URL)
	p, err := New(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, run := StartRun(t.Context(), Tracer(p.TracerProvider()), RunInfo{Job: "j", RunID: "j@1"})
	run.End()

	const bound = 500 * time.Millisecond
	start := time.Now()
	err = p.Shutdown(bound)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want the bound's deadline exceeded", err)
	}
	// Generous: the machine is shared; what matters is that it is not
	// the exporter's 10s timeout.
	if took > bound+2*time.Second {
		t.Errorf("Shutdown took %s with a %s bound", took, bound)
	}
	if !arrived.Load() {
		t.Error("the export never reached the collector: the bound was not what ended Shutdown")
	}
	poll.For(t, 5*time.Second, "the hanging export interrupted", interrupted.Load)
}
