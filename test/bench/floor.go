package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The floor scenario asks what etcd must spend on a run whatever the
// engine around it does: the fewest transactions and keys docs/design.md#the-safety-rules
// allows a scheduled run, sent by bare clients with nothing else to do,
// batched as group commit batches them. If that costs etcd more CPU per
// run than a raw transaction, no engine that keeps the rules meets
// "etcd CPU per completed run <= 1.0 x a raw transaction's".
//
// A run is three transactions, each with exactly its rule's compares:
//
//   - tick (rules 1, 2): If(the fence, the cursor as last written, no queue
//     entry, no record) Then(put the pending entry, put the cursor);
//   - claim (rule 3): If(the entry as written, the slot key free)
//     Then(put the slot key under the session lease, rewrite the entry as
//     running): the running entry is what makes rule 7's "lost" decidable
//     (docs/design.md#claim-marks-the-entry-running-instead-of-deleting-it);
//     deleting the entry instead costs the same;
//   - release (rule 4): If(the slot key's CreateRevision is the token)
//     Then(delete it, put the record, delete the entry).
//
// Left out, so that the floor is a lower bound: the fence is one compare
// per tick transaction (the leader's batches share it too), no record is
// pruned (history_limit deletes one per run in a steady state), no target
// is called, nothing watches (unless the step says so), and the values
// have the sizes of the engine's lean forms (docs/design-specs.md, "Queue entries
// name their spec").
const (
	floorPendingBytes = 136 // a lean pending entry (TestEntryAndRecordBytes)
	floorRunningBytes = 166 // a lean running entry
	floorRecordBytes  = 225 // a compact record
	floorSlotBytes    = 120 // {run_id, holder, started_at, scheduled_at}
	floorPrefix       = "/bench/floor/"
)

// floorStep is one batch size: K runs' ticks in one transaction, then their
// claims in one, then their releases in one, each run a nested transaction
// with its own compares (K = 1: plain transactions).
type floorStep struct {
	Batch       int     `json:"batch"`
	Watchers    int     `json:"watchers"`
	Clients     int     `json:"clients"`
	InFlight    int     `json:"batches_in_flight_per_client"`
	Seconds     float64 `json:"seconds"`
	Runs        int64   `json:"runs"`
	RunsPerSec  float64 `json:"runs_per_s"`
	Revisions   int64   `json:"revisions"`
	Failed      int64   `json:"failed_runs"`
	Errors      int64   `json:"errors"`
	WatchEvents int64   `json:"watch_events,omitempty"`
	// IndexOpsPerRun: etcd_mvcc range+put+delete per member, per run.
	IndexOpsPerRun float64 `json:"index_ops_per_run"`
	// EtcdCPUPerRun: the three members' CPU time per run, in ms.
	EtcdCPUPerRun float64            `json:"etcd_cpu_ms_per_run"`
	CPU           map[string]float64 `json:"cpu_cores"`
}

type floorResult struct {
	Limit limitResult `json:"limit"`
	Steps []floorStep `json:"steps"`
}

// floorSteps: each batch size alone, then the largest with one prefix
// watcher per client, as each replica watches the queue. 64 is the
// committer's largest batch; 120 is about the largest etcd's default
// --max-txn-ops (128) lets a tick batch carry (its 120 members plus a
// member's 3 compares along the path), to show where batching levels off.
var floorSteps = []struct{ batch, watchers int }{{1, 0}, {8, 0}, {64, 0}, {120, 0}, {120, 3}}

func floor(ctx context.Context, e *env, limit limitResult, d time.Duration) (floorResult, error) {
	res := floorResult{Limit: limit}
	for _, s := range floorSteps {
		logf("floor: batches of %d, %d watchers, for %s", s.batch, s.watchers, d)
		st, err := floorStepRun(ctx, e, s.batch, s.watchers, d)
		if err != nil {
			return res, err
		}
		logf("floor: %.0f runs/s, etcd %.3f ms per run", st.RunsPerSec, st.EtcdCPUPerRun)
		res.Steps = append(res.Steps, st)
		if err := e.compact(ctx); err != nil {
			return res, err
		}
	}
	return res, nil
}

func floorStepRun(ctx context.Context, e *env, batch, watchers int, d time.Duration) (floorStep, error) {
	// About as many runs in flight per client as the limit has
	// transactions (32), but at least two batches, so a client is never
	// idle waiting for its one answer.
	st := floorStep{Batch: batch, Watchers: watchers, Clients: len(e.c.Replicas), InFlight: max(2, 32/batch)}
	clis, err := e.proxyClients()
	defer closeAll(clis)
	if err != nil {
		return st, err
	}
	fence, err := putFloorFence(ctx, e)
	if err != nil {
		return st, err
	}
	leases, err := grantLeases(ctx, clis)
	defer revokeLeases(ctx, clis, leases)
	if err != nil {
		return st, err
	}

	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	events, watchWait := watchFloor(runCtx, clis[:min(watchers, len(clis))])
	pids := e.pids()
	c0, err := e.burstCounters(ctx, nil)
	if err != nil {
		return st, err
	}
	mark0 := markCPU(pids)
	rev0, err := e.revision(ctx)
	if err != nil {
		return st, err
	}
	start := time.Now()
	st.Runs, st.Failed, st.Errors = runFloorWorkers(runCtx, clis, leases, fence, batch, st.InFlight)
	elapsed := time.Since(start)
	mark1 := markCPU(pids)
	rev1, err := e.revision(ctx)
	cancel()
	watchWait()
	if err != nil {
		return st, err
	}
	c1, err := e.burstCounters(ctx, nil)
	if err != nil {
		return st, err
	}
	st.CPU = mark0.cores(mark1, elapsed)
	st.Seconds = elapsed.Seconds()
	st.RunsPerSec = float64(st.Runs) / st.Seconds
	st.Revisions = rev1 - rev0
	st.WatchEvents = events.Load()
	if st.Runs > 0 {
		st.EtcdCPUPerRun = st.CPU["etcd"] * st.Seconds * 1000 / float64(st.Runs)
		st.IndexOpsPerRun = indexOps(mvccPerMember(c0, c1, len(e.c.Members))) / float64(st.Runs)
	}
	_, err = e.cli.Delete(ctx, floorPrefix, clientv3.WithPrefix())
	return st, err
}

// putFloorFence puts the fence, a key the "leader" created, and gives the
// comparison every tick makes against it.
func putFloorFence(ctx context.Context, e *env) (clientv3.Cmp, error) {
	fenceKey := floorPrefix + "fence"
	fr, err := e.cli.Put(ctx, fenceKey, "leader")
	if err != nil {
		return clientv3.Cmp{}, err
	}
	return clientv3.Compare(clientv3.CreateRevision(fenceKey), "=", fr.Header.Revision), nil
}

// watchFloor watches the floor's prefix through each client until ctx
// ends, counting the events; wait returns once every watch has ended.
func watchFloor(ctx context.Context, clis []*clientv3.Client) (events *atomic.Int64, wait func()) {
	events = new(atomic.Int64)
	var wg sync.WaitGroup
	for _, cli := range clis {
		wch := cli.Watch(ctx, floorPrefix, clientv3.WithPrefix())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for resp := range wch {
				events.Add(int64(len(resp.Events)))
			}
		}()
	}
	return events, wg.Wait
}

// runFloorWorkers runs inFlight workers on each client until ctx ends and
// gives the runs completed, the runs failed and the errors.
func runFloorWorkers(ctx context.Context, clis []*clientv3.Client, leases []clientv3.LeaseID, fence clientv3.Cmp, batch, inFlight int) (runs, failed, errs int64) {
	var r, f, e atomic.Int64
	var wg sync.WaitGroup
	for ci, cli := range clis {
		for g := range inFlight {
			w := floorWorker{cli: cli, lease: leases[ci], fence: fence, batch: batch, name: fmt.Sprintf("%d-%d", ci, g)}
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.run(ctx, &r, &f, &e)
			}()
		}
	}
	wg.Wait()
	return r.Load(), f.Load(), e.Load()
}

// floorWorker drives the runs of batch jobs of its own, one tick after
// another: tick all, claim all, release all.
type floorWorker struct {
	cli   *clientv3.Client
	lease clientv3.LeaseID
	fence clientv3.Cmp
	batch int
	name  string
}

func (w floorWorker) run(ctx context.Context, runs, failed, errs *atomic.Int64) {
	pending := strings.Repeat("p", floorPendingBytes)
	running := strings.Repeat("r", floorRunningBytes)
	record := strings.Repeat("c", floorRecordBytes)
	slotVal := strings.Repeat("s", floorSlotBytes)
	cursorRev := make([]int64, w.batch) // the cursor's ModRevision as last written; 0: absent
	for n := 0; ctx.Err() == nil; n++ {
		ticks := make([]clientv3.Op, w.batch)
		entry, slot, rec := make([]string, w.batch), make([]string, w.batch), make([]string, w.batch)
		for k := range w.batch {
			job := fmt.Sprintf("%s-%d", w.name, k)
			entry[k] = fmt.Sprintf("%squeue/%s/%d", floorPrefix, job, n)
			slot[k] = fmt.Sprintf("%sslots/%s/0", floorPrefix, job)
			rec[k] = fmt.Sprintf("%sruns/%s/%d", floorPrefix, job, n)
			cursor := floorPrefix + "jobs/" + job + "/cursor"
			ticks[k] = clientv3.OpTxn(
				[]clientv3.Cmp{
					clientv3.Compare(clientv3.ModRevision(cursor), "=", cursorRev[k]),
					clientv3.Compare(clientv3.CreateRevision(entry[k]), "=", 0),
					clientv3.Compare(clientv3.CreateRevision(rec[k]), "=", 0),
				},
				[]clientv3.Op{clientv3.OpPut(entry[k], pending), clientv3.OpPut(cursor, fmt.Sprint(n))}, nil)
		}
		tickRev, ok := w.commit(ctx, []clientv3.Cmp{w.fence}, ticks, errs, failed)
		if !ok {
			return
		}
		claims := make([]clientv3.Op, w.batch)
		for k := range w.batch {
			cursorRev[k] = tickRev
			claims[k] = clientv3.OpTxn(
				[]clientv3.Cmp{
					clientv3.Compare(clientv3.ModRevision(entry[k]), "=", tickRev),
					clientv3.Compare(clientv3.CreateRevision(slot[k]), "=", 0),
				},
				[]clientv3.Op{clientv3.OpPut(slot[k], slotVal, clientv3.WithLease(w.lease)), clientv3.OpPut(entry[k], running)}, nil)
		}
		token, ok := w.commit(ctx, nil, claims, errs, failed)
		if !ok {
			return
		}
		releases := make([]clientv3.Op, w.batch)
		for k := range w.batch {
			releases[k] = clientv3.OpTxn(
				[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(slot[k]), "=", token)},
				[]clientv3.Op{clientv3.OpDelete(slot[k]), clientv3.OpPut(rec[k], record), clientv3.OpDelete(entry[k])}, nil)
		}
		if _, ok := w.commit(ctx, nil, releases, errs, failed); !ok {
			return
		}
		runs.Add(int64(w.batch))
	}
}

// commit sends members as one transaction: alone, a member is the
// transaction itself (with extra's compares added); batched, each member is
// a nested transaction and extra guards them all. It returns the commit's
// revision; false when etcd refused it or any member's compares failed
// (counted: a floor run never conflicts, so a failure is a defect, and the
// worker stops rather than measure runs that did not happen).
func (w floorWorker) commit(ctx context.Context, extra []clientv3.Cmp, members []clientv3.Op, errs, failed *atomic.Int64) (int64, bool) {
	var resp *clientv3.TxnResponse
	var err error
	if len(members) == 1 {
		cmps, thens, _ := members[0].Txn()
		resp, err = w.cli.Txn(ctx).If(append(append([]clientv3.Cmp{}, extra...), cmps...)...).Then(thens...).Commit()
		if err == nil && !resp.Succeeded {
			failed.Add(1)
			return 0, false
		}
	} else {
		resp, err = w.cli.Txn(ctx).If(extra...).Then(members...).Commit()
		if err == nil {
			if !resp.Succeeded {
				failed.Add(int64(len(members)))
				return 0, false
			}
			for _, r := range resp.Responses {
				if !r.GetResponseTxn().GetSucceeded() {
					failed.Add(1)
					return 0, false
				}
			}
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			errs.Add(1)
		}
		return 0, false
	}
	return resp.Header.Revision, true
}

func (r floorResult) rows() []row {
	var out []row
	for _, s := range r.Steps {
		watch := "nothing watching"
		if s.Watchers > 0 {
			watch = fmt.Sprintf("%d prefix watchers (%d events)", s.Watchers, s.WatchEvents)
		}
		ref := fmt.Sprintf("%d revisions for %d runs; %d failed, %d errors; cores: etcd %.2f, bench %.2f, %s",
			s.Revisions, s.Runs, s.Failed, s.Errors, s.CPU["etcd"], s.CPU["bench"], hostNote(s.CPU))
		if r.Limit.EtcdCPUPerTxn > 0 && r.Limit.TxnPerSec > 0 {
			ref = fmt.Sprintf("%.2f x a raw txn's etcd CPU (%.3f ms); %.2f runs per raw txn/s (%.0f); ",
				s.EtcdCPUPerRun/r.Limit.EtcdCPUPerTxn, r.Limit.EtcdCPUPerTxn, s.RunsPerSec/r.Limit.TxnPerSec, r.Limit.TxnPerSec) + ref
		}
		out = append(out, row{Scenario: "floor",
			Figure: fmt.Sprintf("SPEC's fewest writes per run, batches of %d, %s: runs/s; etcd CPU per run", s.Batch, watch),
			Value:  fmt.Sprintf("%.0f runs/s; %.3f ms", s.RunsPerSec, s.EtcdCPUPerRun), Reference: ref})
	}
	return out
}
