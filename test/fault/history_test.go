package fault

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/test/cluster"
)

// history gathers the witness's runs, its watch and the records in etcd.
func (r *runner) history(jobs []Job, resources map[string]int, ticksFrom, healed time.Time) *History {
	r.t.Helper()
	now := time.Now()
	cli, ctx, done := r.etcd(90 * time.Second) // the record log replays etcd's history
	defer done()
	resp, err := cli.Get(ctx, keys.New(prefix).Runs(), clientv3.WithPrefix())
	if err != nil {
		r.t.Fatal(err)
	}
	log, err := ReadRecordLog(ctx, cli, keys.New(prefix), resp.Header.Revision)
	if err != nil {
		r.t.Fatal(err)
	}
	f := recordsOf(log)
	records, writes := f.last, f.writes
	r.sameAsLive(ctx, cli, log, resp)
	obs := r.w.Observer()
	recordedAt := map[string]time.Time{}
	for id, rev := range f.first {
		recordedAt[id] = obs.RevisionTime(rev)
	}
	fanIns := r.fanIns(ctx, cli, resp.Header.Revision)
	// Ticks still queued (pending or running) are accounted for too.
	// Read at the records' revision: a record and its run's retry entry
	// are written together.
	queued, err := cli.Get(ctx, keys.New(prefix).Queue(), clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithRev(resp.Header.Revision))
	if err != nil {
		r.t.Fatal(err)
	}
	inQueue := map[string]bool{}
	for _, kv := range queued.Kvs {
		id := string(kv.Key[strings.LastIndex(string(kv.Key), "/")+1:])
		inQueue[id] = true
		if _, ok := records[id]; !ok {
			records[id] = runs.Record{RunID: id, Outcome: "queued"}
		}
	}
	left := r.leftovers(ctx, cli)
	margin := 2*r.sc.ttl + 3*time.Second
	var windows []Window
	for _, f := range r.faults {
		if !f.leader {
			continue
		}
		to := f.end
		if at := obs.FirstCursorWriteAfter(f.end); !at.IsZero() {
			to = at
		}
		windows = append(windows, Window{f.start.Add(-time.Second), to.Add(margin)})
	}
	return &History{
		Jobs: jobs, Resources: resources, Runs: r.w.Runs(), Records: records, RecordedAt: recordedAt, Writes: writes, SessionTTL: r.sc.ttl,
		RecordLog: log, Limits: r.limits(),
		TicksFrom: ticksFrom, TicksUntil: now.Add(-5 * time.Second),
		Failover: windows, EtcdDown: r.etcdDown, RunStartGrace: r.sc.ttl,
		Freezes: r.freezes, Kills: r.kills, SlotPeaks: obs.MaxSlots(), Healed: healed, Now: now,
		Left: left, LongestRun: 3 * r.sc.ttl, // the workload's long job
		FanIns: fanIns, Queued: inQueue,
	}
}

// sameAsLive checks the record log against etcd at its end: the records
// and chunk records it leaves written are exactly those in etcd, as read
// there (live, and shed/ at its revision), each as the log last wrote it:
// a replay that missed a write would check a history that never was.
func (r *runner) sameAsLive(ctx context.Context, cli *clientv3.Client, log []RecordEvent, live *clientv3.GetResponse) {
	r.t.Helper()
	l := keys.New(prefix)
	shedKvs, err := cli.Get(ctx, l.Shed(), clientv3.WithPrefix(), clientv3.WithRev(live.Header.Revision))
	if err != nil {
		r.t.Fatal(err)
	}
	inEtcd := map[bool]map[string]runs.Record{false: {}, true: {}} // by Chunk, run id -> record
	for _, kv := range live.Kvs {
		if inEtcd[false][l.RecordRun(string(kv.Key))], err = runs.DecodeRecord(kv.Value); err != nil {
			r.t.Fatalf("record %s: %v", kv.Key, err)
		}
	}
	for _, kv := range shedKvs.Kvs {
		c, err := runs.DecodeChunkRecord(kv.Value)
		if err != nil {
			r.t.Fatalf("chunk record %s: %v", kv.Key, err)
		}
		for _, rec := range c.Records() {
			inEtcd[true][rec.RunID] = rec
		}
	}
	logged := map[bool]map[string]RecordEvent{false: {}, true: {}}
	for _, e := range log {
		logged[e.Chunk][e.RunID] = e
	}
	for chunk, recs := range inEtcd {
		for id, want := range recs {
			e, ok := logged[chunk][id]
			if !ok || e.Delete || e.Record.Outcome != want.Outcome || e.Record.Attempt != want.Attempt {
				r.t.Fatalf("record log: %s (chunk record: %v) is %s#%d in etcd, the log's last write of it is %s#%d (found %v, deleted %v)",
					id, chunk, want.Outcome, want.Attempt, e.Record.Outcome, e.Record.Attempt, ok, e.Delete)
			}
		}
		for id, e := range logged[chunk] {
			if _, ok := recs[id]; !ok && !e.Delete {
				r.t.Fatalf("record log: %s (chunk record: %v) written and never deleted, but not in etcd", id, chunk)
			}
		}
	}
}

// limits are each job's history limits as the replicas read them, from
// their config file.
func (r *runner) limits() map[string]Limits {
	r.t.Helper()
	cfg, err := config.Load(cluster.ConfigPath(r.c.Dir))
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]Limits{}
	for _, j := range cfg.Jobs {
		out[j.Name] = Limits{Executed: j.HistoryLimit, Unstarted: j.SkippedHistoryLimit}
	}
	return out
}

// fanIns are the fan-in keys of the sharded jobs' ticks up to rev, those
// the leader pruned since too (prunefanin.go), replayed from etcd's
// history: Version counts every write of a tick's key, across a prune, so a
// key written again after its prune is a fan-in too many.
func (r *runner) fanIns(ctx context.Context, cli *clientv3.Client, rev int64) map[string]FanIn {
	r.t.Helper()
	out := map[string]FanIn{}
	err := replay(ctx, cli, keys.New(prefix).FanIns(), rev, func(ev *clientv3.Event) error {
		key := string(ev.Kv.Key)
		if strings.HasSuffix(key, "/worst") {
			return nil
		}
		tick := key[strings.LastIndex(key, "/")+1:]
		if ev.Type == clientv3.EventTypeDelete {
			f := out[tick]
			f.Pruned = true
			out[tick] = f
			return nil
		}
		f := FanIn{Version: out[tick].Version + 1}
		if t, ok := queue.DecodeTick(ev.Kv.Value); ok {
			f.Done, f.Outcome = true, t.Outcome
		}
		out[tick] = f
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// leftovers are the assignments and claim markers in etcd now, with the
// instant each was for, and the job and resource slots, with when their
// run started.
func (r *runner) leftovers(ctx context.Context, cli *clientv3.Client) []Left {
	r.t.Helper()
	layout := keys.New(prefix)
	out := r.slotsLeft(ctx, cli)
	for _, dir := range []string{layout.Assignments(), layout.Claimed()} {
		resp, err := cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			r.t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			key := string(kv.Key)
			if _, at, _, ok := layout.ParseAssignment(key); ok {
				out = append(out, Left{Key: key, At: at})
			} else if _, at, _, _, ok := layout.ParseClaimMarker(key); ok {
				out = append(out, Left{Key: key, At: at})
			} else {
				r.problems = append(r.problems, "leftovers: "+key+" is neither an assignment nor a claim marker")
			}
		}
	}
	return out
}

// slotsLeft are the job and resource slots in etcd now, each with its
// run's start (a strict retry's kept slot: its first attempt's).
func (r *runner) slotsLeft(ctx context.Context, cli *clientv3.Client) []Left {
	r.t.Helper()
	layout := keys.New(prefix)
	var out []Left
	for _, dir := range []string{layout.Slots(), layout.Resources()} {
		resp, err := cli.Get(ctx, dir, clientv3.WithPrefix())
		if err != nil {
			r.t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			key := string(kv.Key)
			if _, _, _, ok := layout.ParseSlot(key); !ok {
				continue // a resource's definition, not a slot
			}
			var v slots.Value
			if err := json.Unmarshal(kv.Value, &v); err != nil || v.StartedAt.IsZero() {
				r.problems = append(r.problems, fmt.Sprintf("leftovers: slot %s holds %q, not a run's slot value", key, kv.Value))
				continue
			}
			out = append(out, Left{Key: key, At: v.StartedAt})
		}
	}
	return out
}

// notificationsSeen are the notification ids still in the outbox, then
// those the receiver took: read in this order, a notification deleted
// between the two reads was taken before it.
func (r *runner) notificationsSeen(rcv *receiver) map[string]bool {
	r.t.Helper()
	cli, ctx, done := r.etcd(30 * time.Second)
	defer done()
	resp, err := cli.Get(ctx, keys.New(prefix).Outbox(), clientv3.WithPrefix())
	if err != nil {
		r.t.Fatal(err)
	}
	seen := rcv.taken()
	for _, kv := range resp.Kvs {
		if n, err := notify.Decode(kv.Value); err == nil {
			seen[n.ID] = true
		}
	}
	return seen
}
