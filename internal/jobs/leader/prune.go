package leader

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/shed"
)

// maxOpsPerTxn stays under etcd's default --max-txn-ops of 128.
const maxOpsPerTxn = 100

// Finished counts, per job, runs finished since its history was last
// pruned; every replica counts (from its queue view), the leader prunes.
type Finished struct {
	mu      sync.Mutex
	counts  map[string]int
	changed chan struct{}
}

// NewFinished counts nothing yet.
func NewFinished() *Finished {
	return &Finished{counts: map[string]int{}, changed: make(chan struct{}, 1)}
}

// Note counts a finished run of job.
func (f *Finished) Note(job string) {
	f.mu.Lock()
	f.counts[job]++
	f.mu.Unlock()
	signal(f.changed)
}

// take returns the jobs that finished at least threshold(job) runs.
func (f *Finished) take(threshold func(job string) int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var due []string
	for job, n := range f.counts {
		if n >= threshold(job) {
			due = append(due, job)
			delete(f.counts, job)
		}
	}
	return due
}

// pruneGap is the least time between two pruning rounds: one round reads
// and trims the history of every job that finished enough runs since, many
// jobs to a transaction, instead of one read and one delete per job.
const pruneGap = time.Second

// pruneReadBatch: history reads per read transaction.
const pruneReadBatch = 32

// again makes jobs due at the next take, after a round that failed.
func (f *Finished) again(jobs []string) {
	f.mu.Lock()
	for _, job := range jobs {
		f.counts[job] = math.MaxInt32
	}
	f.mu.Unlock()
	signal(f.changed)
}

// pruner is the actor that keeps each job's history within its limits,
// for one term. What it finished is counted by Finished; the jobs it judges
// by are the leader's (job).
type pruner struct {
	*base
	// job is the term's job of that name (nil: not in the config) and
	// whether the term has taken the config yet (syncJobs).
	job func(name string) (j *config.Job, synced bool)
	// noteRemoved hands jobs whose runs ended to the removed jobs'
	// keeper (removed.go).
	noteRemoved func(jobs ...string)
	// stretches are the jobs' pruned stretches the term read or wrote
	// (prunecover.go).
	stretches map[string]stretchesOf
}

// Run keeps each job's history at history_limit records. A job is trimmed
// after every tenth of its limit in finished runs, so pruning costs a small
// share of a write per run.
func (p *pruner) Run(ctx context.Context) error {
	for {
		looked := p.d.Clock.Now()
		if err := p.round(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.d.Finished.changed:
		}
		if !p.pause(ctx, looked.Add(pruneGap)) {
			return nil
		}
	}
}

// pruneJobs deletes, for each job, its oldest records beyond its limits:
// history_limit records of runs that executed, skipped_history_limit of
// runs that never started (skipped, missed: those with an unstarted
// marker), so that a flood of skips cannot push real history out. A record
// of a tick an assignment still names is kept (prunespare.go); the ticks
// of those deleted are in the job's pruned stretches first (prunecover.go). Keys are
// read (keys only) a batch of jobs at a time and deleted as key ranges
// (prunespans.go), up to maxOpsPerTxn operations a transaction.
func (p *pruner) pruneJobs(ctx context.Context, jobs []string) error {
	history := func(job string) [2]clientv3.Op {
		return [2]clientv3.Op{
			clientv3.OpGet(p.d.Keys.JobRuns(job), clientv3.WithPrefix(), clientv3.WithKeysOnly(),
				clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend)),
			clientv3.OpGet(p.d.Keys.Unstarted(job), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		}
	}
	var hs []historyOf
	err := p.readJobs(ctx, jobs, "history", history, func(job string, records, unstartedMarks []*mvccpb.KeyValue) error {
		h := historyOf{job: job, records: records, ticks: p.d.Chunks.Job(job)}
		if h.old, h.oldTicks = p.beyondLimits(job, records, unstartedMarks, h.ticks); len(h.old)+len(h.oldTicks) > 0 {
			hs = append(hs, h)
		}
		return nil
	})
	if err != nil || len(hs) == 0 {
		return err
	}
	if err := p.spareAssigned(ctx, hs); err != nil {
		return err
	}
	if err := p.coverPruned(ctx, hs); err != nil {
		return err
	}
	// Every stretch is written before any record goes; the deletes of
	// distinct jobs' spans are independent, sent inFlight at once.
	var spans []span
	for _, h := range hs {
		spans = append(spans, spansOf(h.records, h.old)...)
	}
	perTxn := (maxOpsPerTxn - 1) / 3 // a span: a compare and up to two deletes; the fence
	err = eachBatchInFlight(ctx, len(spans), perTxn, func(ctx context.Context, _, lo, hi int) error {
		return p.deleteSpans(ctx, spans[lo:hi])
	})
	if err != nil {
		return err
	}
	return p.takeOutTicks(ctx, hs)
}

// beyondLimits are job's records to delete, by key, and its ticks to take
// out of chunk records: the oldest written (records, as read, sorted by
// ModRevision; a chunk record's ticks by its create revision) beyond each
// limit, those of runs that never started with their markers. A tick in a
// chunk record is one more unstarted record.
func (p *pruner) beyondLimits(job string, records, unstartedMarks []*mvccpb.KeyValue, ticks []shed.Tick) (map[string]oldRecord, []shed.Tick) {
	executedLimit, unstartedLimit := p.limits(job)
	marks := map[string]*mvccpb.KeyValue{}
	for _, kv := range unstartedMarks {
		marks[p.d.Keys.RecordRun(string(kv.Key))] = kv
	}
	var executed []*mvccpb.KeyValue
	var unstarted []unstartedOf
	for _, kv := range records {
		if mark := marks[p.d.Keys.RecordRun(string(kv.Key))]; mark != nil {
			unstarted = append(unstarted, unstartedOf{rev: kv.ModRevision, kv: kv, mark: mark})
		} else {
			executed = append(executed, kv)
		}
	}
	for i := range ticks {
		unstarted = append(unstarted, unstartedOf{rev: ticks[i].Created, tick: &ticks[i]})
	}
	slices.SortStableFunc(unstarted, func(a, b unstartedOf) int { return cmp.Compare(a.rev, b.rev) })
	old := map[string]oldRecord{}
	for _, kv := range executed[:max(0, len(executed)-executedLimit)] {
		old[string(kv.Key)] = oldRecord{}
	}
	var oldTicks []shed.Tick
	for _, u := range unstarted[:max(0, len(unstarted)-unstartedLimit)] {
		if u.tick != nil {
			oldTicks = append(oldTicks, *u.tick)
		} else {
			old[string(u.kv.Key)] = oldRecord{mark: u.mark}
		}
	}
	return old, oldTicks
}

// unstartedOf is a record of a run that never started, with its marker,
// or a tick in a chunk record, and the revision it was written at.
type unstartedOf struct {
	rev      int64
	kv, mark *mvccpb.KeyValue
	tick     *shed.Tick
}

// round trims the history of the jobs that finished enough runs since
// their last round. Not before the term has taken the config (syncJobs):
// until then every job looks removed, and a job removed gets the default
// limits, so a new leader pruned a job with history_limit 100000 to 100
// records and its skips to 20 (the fault suite saw the oldest skipped ticks
// of five jobs lose their records after a failover).
func (p *pruner) round(ctx context.Context) error {
	if _, synced := p.job(""); !synced {
		return nil // the counts stay for the next round
	}
	threshold := func(job string) int {
		j, _ := p.job(job)
		if j == nil {
			return 1 // removed: trimmed to the defaults at once
		}
		return max(1, j.HistoryLimit/10)
	}
	due := p.d.Finished.take(threshold)
	if len(due) == 0 {
		return nil
	}
	p.noteRemoved(due...) // a run of a removed job ended: it has records to keep
	err := p.pruneJobs(ctx, due)
	if err == nil {
		err = p.pruneFanIns(ctx, due)
	}
	if err != nil {
		if err == errNotLeader || ctx.Err() != nil {
			return err
		}
		p.d.Log.Warn("pruning history failed; will try again", "jobs", len(due), "err", err)
		p.d.Finished.again(due)
	}
	return nil
}

// limits are the job's history limits: of records of runs that executed,
// and of runs that never started. A job gone from the config, or a limit
// of 0 (an entry from an older replica), gets the defaults.
func (p *pruner) limits(job string) (executed, unstarted int) {
	executed, unstarted = config.DefaultHistoryLimit, config.DefaultSkippedHistoryLimit
	if j, _ := p.job(job); j != nil {
		if j.HistoryLimit > 0 {
			executed = j.HistoryLimit
		}
		if j.SkippedHistoryLimit > 0 {
			unstarted = j.SkippedHistoryLimit
		}
	}
	return executed, unstarted
}

// seenKey is a key as a read saw it.
type seenKey struct {
	key string
	rev int64 // ModRevision
}

// deleteUnchanged deletes the keys that still have the revision they were
// read at, in one fenced transaction; when one changed meanwhile (a retried
// run's final record replaced its earlier one at the same key), each key
// alone. A record written after the read is never deleted for being old.
func (b *base) deleteUnchanged(ctx context.Context, keys []seenKey) error {
	if len(keys) == 0 {
		return nil
	}
	del := func(keys []seenKey) (bool, error) {
		cmps := []clientv3.Cmp{b.fence}
		ops := make([]clientv3.Op, len(keys))
		for i, k := range keys {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k.key), "=", k.rev))
			ops[i] = clientv3.OpDelete(k.key)
		}
		tr, err := b.d.Client.Txn(ctx).If(cmps...).Then(ops...).Else(clientv3.OpGet(b.term.Key)).Commit()
		if err != nil {
			return false, fmt.Errorf("leader: prune history: %w", err)
		}
		if tr.Succeeded {
			return true, nil
		}
		if b.fenceGone(tr) {
			return false, errNotLeader
		}
		return false, nil
	}
	ok, err := del(keys)
	if ok || err != nil || len(keys) == 1 {
		return err
	}
	for _, k := range keys {
		if _, err := del([]seenKey{k}); err != nil {
			return err
		}
	}
	return nil
}
