package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// The etcd members' index work, from their /metrics: etcd counts a range
// for each compare and each read, a put for each put, a delete for each
// delete, in every member that applies the transaction.
const (
	mvccRange  = "etcd_mvcc_range_total"
	mvccPut    = "etcd_mvcc_put_total"
	mvccDelete = "etcd_mvcc_delete_total"
	mvccTxn    = "etcd_mvcc_txn_total"
	// The members' disk: a start mark waits for its fsync, so one that
	// stalls makes a whole instant late (a bare client's call does not
	// wait). All fsyncs and backend commits, and those within 64 ms (and
	// fsyncs within about a second: one that stalls longer delays an
	// instant's runs past the next tick's).
	walFsyncs       = "etcd_disk_wal_fsync_duration_seconds_count"
	walFsyncsFast   = `etcd_disk_wal_fsync_duration_seconds_bucket{le="0.064"}`
	walFsyncsSecond = `etcd_disk_wal_fsync_duration_seconds_bucket{le="1.024"}`
	diskCommits     = "etcd_disk_backend_commit_duration_seconds_count"
	diskCommitsFast = `etcd_disk_backend_commit_duration_seconds_bucket{le="0.064"}`
	// watchEvents: the events each replica's etcd client decoded
	// (internal/watch.EventCounter).
	watchEvents = "scheduler_watch_events_total"
	runsSkipped = "scheduler_runs_skipped_total"
	// runsMissed: the skips that are ticks too late to start.
	runsMissed = `scheduler_runs_skipped_total{reason="missed"}`
)

// scrape sums each named metric over its samples at every url (a
// Prometheus text endpoint). A name may carry one label selector,
// `name{label="value"}`: then only samples with that label count. A
// histogram's `…_bucket` name without one is summed series by series,
// each under its series' text.
func scrape(ctx context.Context, urls []string, names ...string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, url := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("bench: scraping %s: %w", url, err)
		}
		err = sumMetrics(resp.Body, names, out)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("bench: scraping %s: %w", url, err)
		}
	}
	return out, nil
}

// sumMetrics adds the samples of names in the text r to out.
func sumMetrics(r io.Reader, names []string, out map[string]float64) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		series := line[:sp]
		name, labels, _ := strings.Cut(series, "{")
		for _, want := range names {
			wname, sel, hasSel := strings.Cut(want, "{")
			if name != wname || (hasSel && !strings.Contains(labels, strings.TrimSuffix(sel, "}"))) {
				continue
			}
			v, err := strconv.ParseFloat(line[sp+1:], 64)
			if err != nil {
				return fmt.Errorf("%q: %w", line, err)
			}
			if !hasSel && strings.HasSuffix(name, "_bucket") {
				want = series // each bucket apart (startmarks.go)
			}
			out[want] += v
		}
	}
	return sc.Err()
}

func (e *env) memberMetricURLs() []string {
	var out []string
	for _, m := range e.c.Members {
		out = append(out, m.ClientURL+"/metrics")
	}
	return out
}

func (e *env) replicaMetricURLs() []string {
	var out []string
	for _, r := range e.c.Replicas {
		if r.Running() && !r.Frozen() {
			out = append(out, r.URL()+"/metrics")
		}
	}
	return out
}
