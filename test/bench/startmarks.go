package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// What a lean run waits at its instant before it starts: the commit of its
// replica's start marks (docs/protocol.md, "Start marks"), which the
// replicas histogram as scheduler_start_mark_seconds. A run of ours starts
// that much after a bare timer's would, so its quantiles stand beside the
// lateness: at 500 jobs ours' p50 is about the reference's plus the mark's.

const startMarkBuckets = "scheduler_start_mark_seconds_bucket"

// markWait is the window's start mark commits: their count and quantiles.
type markWait struct {
	N   float64 `json:"n"`
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
}

// startMarkWait reads the window's marks from d, the counters' deltas,
// whose startMarkBuckets entries are keyed by their series
// (`…_bucket{le="0.005"}`); nil when there were none.
func startMarkWait(d map[string]float64) *markWait {
	var bs []bucket
	for k, v := range d {
		le, ok := bucketBound(k)
		if ok {
			bs = append(bs, bucket{le: le, count: v})
		}
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	if len(bs) == 0 || bs[len(bs)-1].count <= 0 {
		return nil
	}
	return &markWait{N: bs[len(bs)-1].count, P50: quantile(bs, 0.5) * 1000, P99: quantile(bs, 0.99) * 1000}
}

// bucket is one cumulative bucket of a histogram: the samples <= le.
type bucket struct{ le, count float64 }

// bucketBound is the upper bound of the startMarkBuckets series k.
func bucketBound(k string) (float64, bool) {
	rest, ok := strings.CutPrefix(k, startMarkBuckets+`{le="`)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(rest, `"}`), 64)
	return v, err == nil
}

// quantile is q of the cumulative buckets bs, sorted by bound with +Inf
// last, interpolated within its bucket as Prometheus' histogram_quantile
// does; in the +Inf bucket it is the largest finite bound.
func quantile(bs []bucket, q float64) float64 {
	rank := q * bs[len(bs)-1].count
	lo, below := 0.0, 0.0
	for _, b := range bs {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return lo
			}
			if b.count == below {
				return b.le
			}
			return lo + (b.le-lo)*(rank-below)/(b.count-below)
		}
		lo, below = b.le, b.count
	}
	return lo
}

// markNote is w for the progress line ("" without marks).
func markNote(w *markWait) string {
	if w == nil {
		return ""
	}
	return fmt.Sprintf(", start marks committed p50 %.1f / p99 %.1f ms after their instant (%.0f)", w.P50, w.P99, w.N)
}
