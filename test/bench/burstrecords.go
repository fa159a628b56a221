package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/pruned"
	"github.com/etcdsched/scheduler/internal/jobs/shed"
	"github.com/etcdsched/scheduler/internal/runs"
)

// The ticks a step of ours did not deliver, looked up in etcd once the
// step's jobs are removed and their runs drained (burstOurs): each has a
// record (its own, or a chunk record naming it: inChunkRecords) saying why
// it did not run (skipped, missed, failed: a target call
// that failed reached no witness), or had a queue entry as the grace ended,
// the queue path still to decide it ("pending"; the removal withdraws it),
// or it has neither, which is what G2 forbids. The skipped counter's change over the
// window only approximates this: ticks recorded before the window opened
// or after it closed, and records that are not skips, blur it; so when the
// ticks were looked up, they are what the step's unaccounted ticks are
// counted from (burstSide.unaccounted).
//
// A job keeps skipped_history_limit records of ticks that did not run
// (the bench leaves the default) and prunes the first written beyond it,
// its own or in a chunk record, having covered each in its pruned
// stretches first: a tick without a record that they cover was pruned,
// not lost ("pruned", told apart).

// maxRecordLookups bounds the lookups (a transaction of 100 reads each):
// twice the ceiling for a 20 s window misses some tens of thousands.
const maxRecordLookups = 100_000

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

// maxNamedNoRecord bounds the ticks without a record a step names (run
// ids, to look for in the replicas' logs).
const maxNamedNoRecord = 10

// recordsOf counts the outcomes of ticks' records ("pending" for a tick
// with no record that was queued as the grace ended, in queued: its job's
// removal withdrew the entry; "none" for one with neither, "pruned" for
// one its job's history has pruned), or nil when they are more than
// maxRecordLookups, and names the first maxNamedNoRecord ticks with none.
func (e *env) recordsOf(ctx context.Context, ticks []undelivered, queued map[string]bool) (map[string]int, []string, error) {
	if len(ticks) > maxRecordLookups {
		return nil, nil, nil
	}
	out := map[string]int{}
	var none []undelivered
	const perTxn = 100 // a read a tick, under etcd's --max-txn-ops
	for len(ticks) > 0 {
		batch := ticks[:min(perTxn, len(ticks))]
		ticks = ticks[len(batch):]
		ops := make([]clientv3.Op, 0, len(batch))
		for _, t := range batch {
			ops = append(ops, clientv3.OpGet(layout.Record(t.job, runs.ID(t.job, t.at))))
		}
		resp, err := e.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, nil, fmt.Errorf("bench: reading the records of undelivered ticks: %w", err)
		}
		for i, t := range batch {
			kvs := resp.Responses[i].GetResponseRange().GetKvs()
			switch {
			case len(kvs) > 0:
				out[recordOutcome(kvs[0].Value)]++
			case queued[runs.ID(t.job, t.at)]:
				out["pending"]++ // queued: the queue path still decided it
			default:
				none = append(none, t)
			}
		}
	}
	none, err := e.inChunkRecords(ctx, none, out)
	if err != nil {
		return nil, nil, err
	}
	named, err := e.prunedOrNone(ctx, none, out)
	return out, named, err
}

// inChunkRecords counts each of ticks that a chunk record names (shed/,
// docs/design-shed.md: the ticks of an instant a worker shed together) in
// out by its outcome there, and returns the others. One read of the
// chunk records of the ticks' instants; a chunk record that cannot be
// read is counted "unreadable".
func (e *env) inChunkRecords(ctx context.Context, ticks []undelivered, out map[string]int) ([]undelivered, error) {
	if len(ticks) == 0 {
		return nil, nil
	}
	from, to := ticks[0].at, ticks[0].at
	for _, t := range ticks {
		if t.at.Before(from) {
			from = t.at
		}
		if t.at.After(to) {
			to = t.at
		}
	}
	resp, err := e.cli.Do(ctx, shed.Between(layout, from, to.Add(time.Nanosecond)))
	if err != nil {
		return nil, fmt.Errorf("bench: reading the chunk records of undelivered ticks: %w", err)
	}
	chunks, bad := shed.Decode(layout, resp.Get().Kvs)
	out["unreadable"] += len(bad)
	outcome := map[string]runs.Outcome{}
	for _, c := range chunks {
		for _, r := range c.Records() {
			outcome[r.RunID] = r.Outcome
		}
	}
	var left []undelivered
	for _, t := range ticks {
		if o, ok := outcome[runs.ID(t.job, t.at)]; ok {
			out[string(o)]++
			continue
		}
		left = append(left, t)
	}
	return left, nil
}

// recordOutcome is a stored record's outcome (runs.DecodeRecord),
// "unreadable" when it does not decode or has none.
func recordOutcome(v []byte) string {
	rec, err := runs.DecodeRecord(v)
	if err != nil || rec.Outcome == "" {
		return "unreadable"
	}
	return string(rec.Outcome)
}

// prunedOrNone counts each of ticks, which have no record, in out as
// "pruned" when its job's pruned stretches cover it (the prune writes them
// before it deletes a record or takes a tick out of a chunk record:
// docs/design-leader.md, History), or, for an engine that keeps none, when
// its job holds skipped_history_limit records of ticks that did not run
// (its history may have pruned it), else as "none"; it returns the run ids
// of the first maxNamedNoRecord of those. The history prunes the records
// written first, not those due first (leader/prune.go sorts by
// ModRevision): past capacity a job's ticks are recorded out of their
// order (a chunk late by seconds records its missed tick after the next
// tick's), so a full history can lack a tick due after records it keeps.
func (e *env) prunedOrNone(ctx context.Context, ticks []undelivered, out map[string]int) ([]string, error) {
	type history struct {
		stretches pruned.Stretches
		full      bool // skipped_history_limit not-run records or more
	}
	byJob := map[string]*history{} // looked up once a job
	var named []string
	for _, t := range ticks {
		h := byJob[t.job]
		if h == nil {
			h = &history{}
			var err error
			if h.stretches, err = e.prunedStretches(ctx, t.job); err != nil {
				return named, err
			}
			if h.full, err = e.notRunFull(ctx, t.job); err != nil {
				return named, err
			}
			byJob[t.job] = h
		}
		if h.stretches.Covers(t.at) || h.full {
			out["pruned"]++
			continue
		}
		out["none"]++
		if len(named) < maxNamedNoRecord {
			named = append(named, runs.ID(t.job, t.at))
		}
	}
	return named, nil
}

// prunedStretches are the ticks of job whose records its history pruned
// (none when it has no such key or it does not decode: the tick is then
// judged by notRunFull).
func (e *env) prunedStretches(ctx context.Context, job string) (pruned.Stretches, error) {
	resp, err := e.cli.Get(ctx, layout.Pruned(job))
	if err != nil {
		return pruned.Stretches{}, fmt.Errorf("bench: reading the pruned stretches of %s: %w", job, err)
	}
	if len(resp.Kvs) == 0 {
		return pruned.Stretches{}, nil
	}
	st, err := pruned.Decode(resp.Kvs[0].Value)
	if err != nil {
		return pruned.Stretches{}, nil
	}
	return st, nil
}

// notRunFull reports whether job holds skipped_history_limit records of
// ticks that did not run (skipped, missed) or more: their unstarted
// markers, counted (each such record is written with one, queue.RecordOps).
func (e *env) notRunFull(ctx context.Context, job string) (bool, error) {
	resp, err := e.cli.Get(ctx, layout.Unstarted(job), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return false, fmt.Errorf("bench: counting the records of %s that did not run: %w", job, err)
	}
	return resp.Count >= config.DefaultSkippedHistoryLimit, nil
}

// recordsNote is " (records: skipped 35, failed 5)", "" when there were no
// lookups, and says "NO RECORD N" first when some tick had no record,
// naming those of named.
func recordsNote(byOutcome map[string]int, named []string) string {
	if len(byOutcome) == 0 {
		return ""
	}
	var parts []string
	if n := byOutcome["none"]; n > 0 {
		parts = append(parts, fmt.Sprintf("NO RECORD %d [%s]", n, strings.Join(named, " ")))
	}
	var rest []string
	for k := range byOutcome {
		if k != "none" && byOutcome[k] > 0 {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("%s %d", k, byOutcome[k]))
	}
	return " (records: " + strings.Join(parts, ", ") + ")"
}

// queuedRuns are the run ids of the queue's entries (keys only).
func (e *env) queuedRuns(ctx context.Context) (map[string]bool, error) {
	resp, err := e.cli.Get(ctx, layout.Queue(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("bench: reading the queue: %w", err)
	}
	out := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[layout.RecordRun(string(kv.Key))] = true
	}
	return out, nil
}
