package fault

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// RecordEvent is one write of a run's record as etcd's history keeps it:
// a put of its value, or a delete (the leader's prune of a history beyond
// its limits, docs/design-leader.md#history). The checker reads every
// record ever written from these, so that a tick whose record was pruned
// is still accounted for, and checks each delete against the limits
// (pruned.go).
type RecordEvent struct {
	Rev    int64
	Job    string
	RunID  string
	Delete bool
	Record runs.Record // a put's
	// Unstarted: a put's record had its unstarted marker then, which is
	// what the pruner counts it by (skipped_history_limit, not
	// history_limit), whichever version of the replicas wrote it.
	Unstarted bool
	// Chunk: the write is of a chunk record (shed/, docs/design-shed.md)
	// naming the run, not of the run's own key: one event per tick it
	// names. A tick written both ways is written twice (once.go).
	Chunk bool
}

// ReadRecordLog replays every write under l's records up to revision
// until (replay).
func ReadRecordLog(ctx context.Context, cli *clientv3.Client, l keys.Layout, until int64) ([]RecordEvent, error) {
	var out []RecordEvent
	err := replay(ctx, cli, l.Runs(), until, func(ev *clientv3.Event) error {
		e := RecordEvent{Rev: ev.Kv.ModRevision, Job: l.RecordJob(string(ev.Kv.Key)),
			RunID: l.RecordRun(string(ev.Kv.Key)), Delete: ev.Type == clientv3.EventTypeDelete}
		if !e.Delete {
			rec, err := runs.DecodeRecord(ev.Kv.Value)
			if err != nil {
				return fmt.Errorf("%s at revision %d: %w", ev.Kv.Key, e.Rev, err)
			}
			e.Record = rec
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := markUnstarted(ctx, cli, l, until, out); err != nil {
		return nil, err
	}
	shed, err := readShedLog(ctx, cli, l, until)
	if err != nil {
		return nil, err
	}
	return mergeByRevision(out, shed), nil
}

// readShedLog replays every write of a chunk record up to until as the
// writes of the ticks it names: a put of each tick it names anew, and a
// delete of each it no longer names, on a rewrite (the prune taking ticks
// out, docs/design-shed.md, "Retention") or its delete (the replay saw
// the put: the members never compact). A tick a rewrite keeps is not
// written again.
func readShedLog(ctx context.Context, cli *clientv3.Client, l keys.Layout, until int64) ([]RecordEvent, error) {
	var out []RecordEvent
	named := map[string][]runs.Record{} // chunk record key -> its ticks
	err := replay(ctx, cli, l.Shed(), until, func(ev *clientv3.Event) error {
		k := string(ev.Kv.Key)
		var now []runs.Record
		if ev.Type != clientv3.EventTypeDelete {
			c, err := runs.DecodeChunkRecord(ev.Kv.Value)
			if err != nil {
				return fmt.Errorf("%s at revision %d: %w", k, ev.Kv.ModRevision, err)
			}
			now = c.Records()
		}
		out = append(out, chunkWrites(ev.Kv.ModRevision, named[k], now)...)
		if named[k] = now; len(now) == 0 {
			delete(named, k)
		}
		return nil
	})
	return out, err
}

// chunkWrites are the writes of ticks a chunk record's write at rev
// makes, from naming was to naming now: a delete of each tick gone, a put
// of each new one.
func chunkWrites(rev int64, was, now []runs.Record) []RecordEvent {
	var out []RecordEvent
	in := func(rs []runs.Record, id string) bool {
		return slices.ContainsFunc(rs, func(r runs.Record) bool { return r.RunID == id })
	}
	for _, rec := range was {
		if !in(now, rec.RunID) {
			out = append(out, RecordEvent{Rev: rev, Job: rec.Job, RunID: rec.RunID, Delete: true, Chunk: true})
		}
	}
	for _, rec := range now {
		if !in(was, rec.RunID) {
			out = append(out, RecordEvent{Rev: rev, Job: rec.Job, RunID: rec.RunID, Record: rec, Unstarted: true, Chunk: true})
		}
	}
	return out
}

// mergeByRevision is a and b, each in revision order, in revision order.
func mergeByRevision(a, b []RecordEvent) []RecordEvent {
	out := make([]RecordEvent, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if b[0].Rev < a[0].Rev {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

// markUnstarted sets Unstarted on each put of log whose record's marker
// was there once its revision applied (a marker is put in the record's
// transaction and deleted with it).
func markUnstarted(ctx context.Context, cli *clientv3.Client, l keys.Layout, until int64, log []RecordEvent) error {
	type markEvent struct {
		rev int64
		put bool
	}
	marks := map[string][]markEvent{} // marker key -> its writes, in revision order
	err := replay(ctx, cli, l.UnstartedMarks(), until, func(ev *clientv3.Event) error {
		k := string(ev.Kv.Key)
		marks[k] = append(marks[k], markEvent{ev.Kv.ModRevision, ev.Type == clientv3.EventTypePut})
		return nil
	})
	if err != nil {
		return err
	}
	for i := range log {
		e := &log[i]
		if e.Delete {
			continue
		}
		for _, m := range marks[l.UnstartedMark(e.Job, e.RunID)] {
			if m.rev > e.Rev {
				break
			}
			e.Unstarted = m.put
		}
	}
	return nil
}

// replay hands each write under prefix up to revision until to each, in
// revision order, from etcd's own history: the fault suite's members never
// compact (test/etcdnode), so a watch from revision 1 sees each put and
// delete. The watch is done once etcd says it is synced past until (a
// progress notification, sent only to a watcher that has caught up) or an
// event after until arrives.
func replay(ctx context.Context, cli *clientv3.Client, prefix string, until int64, each func(*clientv3.Event) error) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(1))
	ask := time.NewTicker(200 * time.Millisecond)
	defer ask.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("replay of %s: %d events read, not synced past revision %d: %w", prefix, n, until, ctx.Err())
		case <-ask.C:
			_ = cli.RequestProgress(wctx) // answered only once the watch is synced
			continue
		case resp, ok := <-wch:
			if !ok {
				return fmt.Errorf("replay of %s: the watch closed", prefix)
			}
			if err := resp.Err(); err != nil {
				return fmt.Errorf("replay of %s: %w", prefix, err)
			}
			for _, ev := range resp.Events {
				if ev.Kv.ModRevision > until {
					return nil
				}
				if err := each(ev); err != nil {
					return fmt.Errorf("replay of %s: %w", prefix, err)
				}
				n++
			}
			if resp.IsProgressNotify() && resp.Header.Revision >= until {
				return nil
			}
		}
	}
}

// folded is what the checker reads of records, folded from a record log:
// each run's record as last written (pruned ones too), the revision it was
// first written at, how often its key was written (across a prune and a
// write again), and whether its last write was a delete.
type folded struct {
	last          map[string]runs.Record
	first, writes map[string]int64
	deleted       map[string]bool
}

func recordsOf(log []RecordEvent) folded {
	f := folded{last: map[string]runs.Record{}, first: map[string]int64{}, writes: map[string]int64{}, deleted: map[string]bool{}}
	for _, e := range log {
		f.deleted[e.RunID] = e.Delete
		if e.Delete {
			continue
		}
		f.last[e.RunID] = e.Record
		if _, ok := f.first[e.RunID]; !ok {
			f.first[e.RunID] = e.Rev
		}
		f.writes[e.RunID]++
	}
	return f
}

// writesOf tells the writes of run id in log, for a violation's message:
// each put's revision and outcome, each delete's revision.
func writesOf(log []RecordEvent, id string) string {
	var parts []string
	for _, e := range log {
		switch {
		case e.RunID != id:
		case e.Delete:
			parts = append(parts, fmt.Sprintf("deleted at %d", e.Rev))
		default:
			parts = append(parts, fmt.Sprintf("%s#%d at %d by %s", e.Record.Outcome, e.Record.Attempt, e.Rev, e.Record.Holder))
		}
	}
	return strings.Join(parts, ", ")
}
