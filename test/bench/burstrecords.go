package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/runs"
)

// The ticks a step of ours did not deliver, looked up in etcd after the
// grace: each has a record saying why it did not run (skipped, missed,
// failed: a target call that failed reached no witness), or it has none,
// which is what G2 forbids. The skipped counter's change over the window
// only approximates this: ticks recorded before the window opened or after
// it closed, and records that are not skips, blur it.

// maxRecordLookups bounds the lookups: a step far past the ceiling misses
// tens of thousands of ticks, whose records the skipped counter counts
// well enough (and history_limit prunes).
const maxRecordLookups = 2000

// undelivered is a tick of the step's jobs due in the window that no run
// of it reached the witness by the grace.
type undelivered struct {
	job string
	at  time.Time
}

// undeliveredTicks are those of the step's n jobs (burstJobName) due on
// the whole seconds of [from, to) not in delivered (by tickKey).
func undeliveredTicks(step string, n int, from, to time.Time, delivered map[string]bool) []undelivered {
	var out []undelivered
	for _, s := range dueSeconds(from, to) {
		for i := range n {
			job := burstJobName(step, i)
			if !delivered[tickKey(job, s)] {
				out = append(out, undelivered{job, s})
			}
		}
	}
	return out
}

// recordsOf counts the outcomes of ticks' records ("none" for a tick with
// no record), or nil when they are more than maxRecordLookups.
func (e *env) recordsOf(ctx context.Context, ticks []undelivered) (map[string]int, error) {
	if len(ticks) > maxRecordLookups {
		return nil, nil
	}
	out := map[string]int{}
	const perTxn = 100 // under etcd's --max-txn-ops
	for len(ticks) > 0 {
		batch := ticks[:min(perTxn, len(ticks))]
		ticks = ticks[len(batch):]
		ops := make([]clientv3.Op, len(batch))
		for i, t := range batch {
			ops[i] = clientv3.OpGet(layout.Record(t.job, runs.ID(t.job, t.at)))
		}
		resp, err := e.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, fmt.Errorf("bench: reading the records of undelivered ticks: %w", err)
		}
		for _, r := range resp.Responses {
			kvs := r.GetResponseRange().GetKvs()
			if len(kvs) == 0 {
				out["none"]++
				continue
			}
			var rec struct {
				Outcome string `json:"outcome"`
			}
			if json.Unmarshal(kvs[0].Value, &rec) != nil || rec.Outcome == "" {
				rec.Outcome = "unreadable"
			}
			out[rec.Outcome]++
		}
	}
	return out, nil
}

// recordsNote is " (records: skipped 35, failed 5)", "" when there were no
// lookups, and says "none N" first when some tick had no record.
func recordsNote(byOutcome map[string]int) string {
	if len(byOutcome) == 0 {
		return ""
	}
	var parts []string
	if n := byOutcome["none"]; n > 0 {
		parts = append(parts, fmt.Sprintf("NO RECORD %d", n))
	}
	var rest []string
	for k := range byOutcome {
		if k != "none" {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("%s %d", k, byOutcome[k]))
	}
	return " (records: " + strings.Join(parts, ", ") + ")"
}
