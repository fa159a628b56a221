// Package tracingtest is a real OTLP trace receiver for tests: it accepts
// what an OpenTelemetry exporter sends over HTTP (POST /v1/traces,
// protobuf, gzip or not) or gRPC, decodes it with the OTLP protobuf types
// and keeps the spans, so a test checks what a collector would get.
package tracingtest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Span is a received span, its ids in lower-case hex as in a traceparent.
type Span struct {
	Name                      string
	TraceID, SpanID, ParentID string
	Attrs                     map[string]string // values as text
	StatusCode, StatusMessage string            // STATUS_CODE_ERROR, ...
	Service, ServiceInstance  string            // from the resource
	Start, End                uint64            // unix nanoseconds
}

// Receiver records every export request and the spans in it.
type Receiver struct {
	mu       sync.Mutex
	requests int
	spans    []Span
}

// StartHTTP serves OTLP/HTTP on 127.0.0.1 until the test ends and returns
// its base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it.
func StartHTTP(t testing.TB) (*Receiver, string) {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serveHTTP))
	t.Cleanup(srv.Close)
	return r, srv.URL
}

// StartGRPC serves OTLP/gRPC on 127.0.0.1 until the test ends and returns
// its address as an http:// URL (plain text, as OTEL_EXPORTER_OTLP_ENDPOINT
// says for gRPC).
func StartGRPC(t testing.TB) (*Receiver, string) {
	r := &Receiver{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, grpcService{r: r})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return r, "http://" + lis.Addr().String()
}

type grpcService struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

func (g grpcService) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.r.record(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.Error(w, "want POST /v1/traces", http.StatusNotFound)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer gz.Close()
		body = gz
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &msg); err != nil {
		http.Error(w, "not an ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.record(&msg)
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *Receiver) record(msg *coltracepb.ExportTraceServiceRequest) {
	var got []Span
	for _, rs := range msg.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, Span{
					Name:            s.GetName(),
					TraceID:         hex.EncodeToString(s.GetTraceId()),
					SpanID:          hex.EncodeToString(s.GetSpanId()),
					ParentID:        hex.EncodeToString(s.GetParentSpanId()),
					Attrs:           attrs(s.GetAttributes()),
					StatusCode:      s.GetStatus().GetCode().String(),
					StatusMessage:   s.GetStatus().GetMessage(),
					Service:         res["service.name"],
					ServiceInstance: res["service.instance.id"],
					Start:           s.GetStartTimeUnixNano(),
					End:             s.GetEndTimeUnixNano(),
				})
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	r.spans = append(r.spans, got...)
}

// Requests is how many export requests arrived, of any content.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Spans are the spans received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch v.GetValue().(type) {
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = strconv.FormatInt(v.GetIntValue(), 10)
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = strconv.FormatBool(v.GetBoolValue())
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = strconv.FormatFloat(v.GetDoubleValue(), 'g', -1, 64)
		default:
			m[kv.GetKey()] = v.GetStringValue()
		}
	}
	return m
}
