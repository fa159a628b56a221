package main

import (
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/etcdsched/scheduler/internal/jobs/metrics"
)

// The start marks' quantiles come from the replicas' own histogram, read
// as the bench reads it (a scrape before and after the window, the
// buckets' changes): 50 marks at 10 ms and 49 at 30 ms in the window, one
// at 10 ms before it, put p50 in 10 ms's bucket and p99 in 30 ms's.
func TestStartMarkQuantilesAreReadFromTheReplicasBuckets(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	read := func() map[string]float64 {
		t.Helper()
		out, err := scrape(context.Background(), []string{srv.URL, srv.URL}, startMarkBuckets, runsSkipped)
		if err != nil {
			t.Fatal(err)
		}
		out["time"] = float64(len(out)) // a span of 0 would scale to nothing
		return out
	}
	m.StartMarks.Observe(0.010)
	before := read()
	for range 50 {
		m.StartMarks.Observe(0.010)
	}
	for range 49 {
		m.StartMarks.Observe(0.030)
	}
	after := read()
	after["time"] = before["time"] + 1
	w := startMarkWait(perWindow(before, after, 1))
	if w == nil {
		t.Fatal("no start marks read")
	}
	// Two urls, the same replica twice: every count doubles.
	if w.N != 198 {
		t.Errorf("%v marks, want 198", w.N)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"p50", w.P50, 10}, {"p99", w.P99, 30}} {
		if lo, hi := boundsAround(after, c.want/1000); c.got <= lo*1000 || c.got > hi*1000 {
			t.Errorf("%s %.2f ms, want within %.0f ms's bucket (%.2f, %.2f]", c.name, c.got, c.want, lo*1000, hi*1000)
		}
	}
	if note := markNote(w); !strings.Contains(note, "p50") {
		t.Errorf("progress note %q", note)
	}
	if startMarkWait(map[string]float64{runsSkipped: 3}) != nil {
		t.Error("marks read from a step without any")
	}
}

// boundsAround is the bucket of the scraped d that holds v: the largest
// bound below v and the smallest at or above it.
func boundsAround(d map[string]float64, v float64) (lo, hi float64) {
	hi = math.Inf(1)
	for k := range d {
		if le, ok := bucketBound(k); ok {
			if le < v {
				lo = max(lo, le)
			} else {
				hi = min(hi, le)
			}
		}
	}
	return lo, hi
}
