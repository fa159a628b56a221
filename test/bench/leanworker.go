package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/runs"
)

// leanPrefix holds the lean floor's keys, beside the floor's.
const leanPrefix = "/bench/leanfloor/"

// leanInFlight: chunks of one assignment a worker has in flight at once
// (claimed, being released).
const leanInFlight = 4

// leanDriver is one step of the lean floor: a leader (the first client)
// authorizing an instant a second, and a worker per client claiming,
// releasing and cleaning up its assignment of each instant, with exactly
// the transactions of docs/protocol.md's fast path. Nothing watches: the
// leader hands each worker its assignment's revision over a channel.
type leanDriver struct {
	clis      []*clientv3.Client
	leases    []clientv3.LeaseID
	fence     clientv3.Cmp
	n         int
	jobs      [][]int   // per worker
	chunks    [][][]int // per worker
	first     time.Time // instant 0
	cursorRev []int64   // the leader's: each cursor's ModRevision as last written
	slotVal   string
	recordVal string
	// history: records each job holds before the step (seed), kept at
	// that many to history+leanPruneEvery during it (prunes).
	history int
	// slot: each run claims and releases a slot of its own, as the
	// protocol does; without, the chunk's marker is the only hold, and the
	// step measures what the slot's four operations a run cost etcd.
	slot bool

	runs, failed, errs, authTxns atomic.Int64
}

// leanAssignment is what a worker would learn from its assignment's watch
// event: the instant and the assignment's CreateRevision.
type leanAssignment struct {
	instant int64
	rev     int64
}

// newLeanDriver validates the step: every worker's cleanup must fit one
// transaction.
func newLeanDriver(clis []*clientv3.Client, leases []clientv3.LeaseID, fence clientv3.Cmp, n, history int, slot bool, first time.Time) (*leanDriver, error) {
	if len(clis) == 0 || len(leases) != len(clis) {
		return nil, fmt.Errorf("leanfloor: %d clients and %d leases: want one lease per client, at least one", len(clis), len(leases))
	}
	if history < 0 || history > leanMaxSeed {
		return nil, fmt.Errorf("leanfloor: a history of %d records a job: give 0 to %d (one transaction seeds a job's)", history, leanMaxSeed)
	}
	d := &leanDriver{clis: clis, leases: leases, fence: fence, n: n, history: history, slot: slot, first: first,
		jobs: leanAssign(n, len(clis)), cursorRev: make([]int64, n),
		slotVal: strings.Repeat("s", floorSlotBytes), recordVal: strings.Repeat("c", floorRecordBytes)}
	for w, js := range d.jobs {
		d.chunks = append(d.chunks, leanChunks(js, leanChunk))
		if len(d.chunks[w]) > leanMaxChunks {
			return nil, fmt.Errorf("leanfloor: %d runs per instant give worker %d %d claim chunks; a cleanup holds at most %d: use at most %d runs per instant",
				n, w+1, len(d.chunks[w]), leanMaxChunks, leanMaxChunks*leanChunk*len(clis))
		}
	}
	return d, nil
}

// run drives the step until stop ends: the leader and the workers, each
// in a goroutine it waits for. Chunks in flight when stop ends are
// finished under ctx, so no run is left claimed and unreleased.
func (d *leanDriver) run(ctx, stop context.Context) {
	chans := make([]chan leanAssignment, len(d.clis))
	var wg sync.WaitGroup
	for w := range d.clis {
		chans[w] = make(chan leanAssignment, 16)
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.work(ctx, stop, w, chans[w])
		}()
	}
	d.lead(stop, chans)
	wg.Wait()
}

// lead authorizes an instant a second until stop ends, then closes the
// workers' channels.
func (d *leanDriver) lead(stop context.Context, out []chan leanAssignment) {
	defer func() {
		for _, ch := range out {
			close(ch)
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := int64(0); ; i++ {
		rev, ok := d.authorize(stop, i)
		if !ok {
			return
		}
		for w, ch := range out {
			if len(d.jobs[w]) == 0 {
				continue
			}
			select {
			case ch <- leanAssignment{instant: i, rev: rev}:
			case <-stop.Done():
				return
			}
		}
		select {
		case <-tick.C:
		case <-stop.Done():
			return
		}
	}
}

// authorize writes instant i's assignments and the cursors due, fenced,
// in as few transactions as the compares allow; it returns the revision
// of the first, which holds the assignments.
func (d *leanDriver) authorize(ctx context.Context, i int64) (int64, bool) {
	stamp := d.stamp(i)
	cursor := d.stamp(i + leanWindow - 1) // the window's last tick
	assignments := 0
	for _, js := range d.jobs {
		if len(js) > 0 {
			assignments++
		}
	}
	var first int64
	for g, grp := range leanAuthorizeGroups(leanCursorsDue(d.n, i, leanWindow), assignments, leanMaxCmps) {
		cmps := []clientv3.Cmp{d.fence}
		var ops []clientv3.Op
		for w, js := range d.jobs {
			if g == 0 && len(js) > 0 {
				k := d.assignKey(w, stamp)
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
				ops = append(ops, clientv3.OpPut(k, leanNames(js)))
			}
		}
		for _, j := range grp {
			k := leanPrefix + "jobs/" + leanJobName(j) + "/cursor"
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", d.cursorRev[j]))
			ops = append(ops, clientv3.OpPut(k, cursor))
		}
		resp, ok := d.commit(ctx, d.clis[0], cmps, ops)
		if !ok {
			return 0, false
		}
		d.authTxns.Add(1)
		for _, j := range grp {
			d.cursorRev[j] = resp.Header.Revision
		}
		if g == 0 {
			first = resp.Header.Revision
		}
	}
	return first, true
}

// work runs each assignment handed to worker w, one instant after another
// (a job's slot of one instant is released before its next is claimed).
func (d *leanDriver) work(ctx, stop context.Context, w int, in <-chan leanAssignment) {
	for a := range in {
		if stop.Err() != nil {
			continue // drain: the window is over
		}
		d.instant(ctx, stop, w, a)
	}
}

// instant claims and releases the assignment's chunks, a few in flight,
// then, when every run of it was released, deletes the assignment and its
// markers.
func (d *leanDriver) instant(ctx, stop context.Context, w int, a leanAssignment) {
	chunks := d.chunks[w]
	markerRevs := make([]int64, len(chunks))
	sem := make(chan struct{}, leanInFlight)
	var wg sync.WaitGroup
	var done atomic.Int64
	for c, jobs := range chunks {
		if stop.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if rev, ok := d.chunk(ctx, w, c, jobs, a); ok {
				markerRevs[c] = rev
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if int(done.Load()) == len(chunks) {
		d.cleanup(ctx, w, a, markerRevs)
	}
}

// chunk claims a chunk's runs in one transaction and releases them K a
// commit; it returns the claim's revision (the marker's and the token).
func (d *leanDriver) chunk(ctx context.Context, w, c int, jobs []int, a leanAssignment) (int64, bool) {
	stamp := d.stamp(a.instant)
	then := []clientv3.Op{clientv3.OpPut(d.markerKey(w, stamp, c), leanNames(jobs))}
	slots, records := make([]string, len(jobs)), make([]string, len(jobs))
	for k, j := range jobs {
		name := leanJobName(j)
		slots[k] = leanPrefix + "slots/" + name + "/0"
		records[k] = d.recordKey(j, a.instant)
		then = append(then, d.claimRun(w, records[k], slots[k], name))
	}
	assign := clientv3.Compare(clientv3.CreateRevision(d.assignKey(w, stamp)), "=", a.rev)
	resp, ok := d.commit(ctx, d.clis[w], []clientv3.Cmp{assign}, then)
	if !ok {
		return 0, false
	}
	token := resp.Header.Revision
	for lo := 0; lo < len(jobs); lo += leanRelease {
		var rel []clientv3.Op
		for k := lo; k < min(lo+leanRelease, len(jobs)); k++ {
			rel = append(rel, d.releaseRun(records[k], slots[k], token, d.prune(jobs[k], a.instant)))
		}
		if _, ok := d.commit(ctx, d.clis[w], nil, rel); !ok {
			return 0, false
		}
		d.runs.Add(int64(len(rel)))
	}
	return token, true
}

// claimRun is a run's part of its chunk's claim: the record absent and
// nobody of the job waiting, and with a slot, the slot free and put under
// the worker's lease.
func (d *leanDriver) claimRun(w int, record, slot, job string) clientv3.Op {
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(record), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(leanPrefix+"queue/"+job+"/"), "=", 0).WithPrefix(),
	}
	if !d.slot {
		return clientv3.OpTxn(cmps, nil, nil)
	}
	cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(slot), "=", 0))
	return clientv3.OpTxn(cmps,
		[]clientv3.Op{clientv3.OpPut(slot, d.slotVal, clientv3.WithLease(d.leases[w]))},
		[]clientv3.Op{clientv3.OpGet(slot)})
}

// releaseRun is a run's part of a release commit: its record (and the
// prune when due), and with a slot, the slot's delete if it still holds
// the claim's token.
func (d *leanDriver) releaseRun(record, slot string, token int64, prune []clientv3.Op) clientv3.Op {
	ops := append([]clientv3.Op{clientv3.OpPut(record, d.recordVal)}, prune...)
	if !d.slot {
		return clientv3.OpTxn(nil, ops, nil)
	}
	return clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(slot), "=", token)},
		append([]clientv3.Op{clientv3.OpDelete(slot)}, ops...), nil)
}

// cleanup deletes an assignment all of whose runs were released, and its
// markers, if each is as written.
func (d *leanDriver) cleanup(ctx context.Context, w int, a leanAssignment, markerRevs []int64) {
	stamp := d.stamp(a.instant)
	k := d.assignKey(w, stamp)
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", a.rev)}
	ops := []clientv3.Op{clientv3.OpDelete(k)}
	for c, rev := range markerRevs {
		m := d.markerKey(w, stamp, c)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(m), "=", rev))
		ops = append(ops, clientv3.OpDelete(m))
	}
	d.commit(ctx, d.clis[w], cmps, ops)
}

// commit sends one transaction; false when etcd refused it or its
// compares, or any nested transaction's, failed (counted: nothing here
// conflicts, so a failure is a defect of the bench).
func (d *leanDriver) commit(ctx context.Context, cli *clientv3.Client, cmps []clientv3.Cmp, ops []clientv3.Op) (*clientv3.TxnResponse, bool) {
	resp, err := cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		if ctx.Err() == nil {
			d.errs.Add(1)
		}
		return nil, false
	}
	if !resp.Succeeded {
		d.failed.Add(1)
		return nil, false
	}
	for _, r := range resp.Responses {
		if t := r.GetResponseTxn(); t != nil && !t.GetSucceeded() {
			d.failed.Add(1)
			return nil, false
		}
	}
	return resp, true
}

func (d *leanDriver) stamp(i int64) string {
	return d.first.Add(time.Duration(i) * time.Second).UTC().Format(runs.TimeFormat)
}

func (d *leanDriver) assignKey(w int, stamp string) string {
	return fmt.Sprintf("%sassign/replica-%d/%s", leanPrefix, w+1, stamp)
}

func (d *leanDriver) markerKey(w int, stamp string, c int) string {
	return fmt.Sprintf("%sclaimed/replica-%d/%s/%d", leanPrefix, w+1, stamp, c)
}

// leanPruneEvery: instants between two prunes of a job's history, as the
// leader prunes a job every tenth of its history_limit in runs.
const leanPruneEvery = 10

// leanMaxSeed bounds the history seeded: a job's in one transaction.
const leanMaxSeed = 120

// recordKey is the record of job j's tick at instant i (negative: seeded
// before the step); run ids of whole seconds sort in time order.
func (d *leanDriver) recordKey(j int, i int64) string {
	name := leanJobName(j)
	return leanPrefix + "runs/" + name + "/" + runs.ID(name, d.first.Add(time.Duration(i)*time.Second))
}

// prune is what job j's release at instant i deletes to keep its history
// at d.history records: with a history, every leanPruneEvery instants its
// oldest leanPruneEvery, as one range (the fewest operations a prune can
// take; the engine's leader reads the history first and compares the
// range, leader/prune.go).
func (d *leanDriver) prune(j int, i int64) []clientv3.Op {
	if d.history == 0 || (i+1)%leanPruneEvery != 0 {
		return nil
	}
	from := i + 1 - leanPruneEvery - int64(d.history)
	return []clientv3.Op{clientv3.OpDelete(d.recordKey(j, from), clientv3.WithRange(d.recordKey(j, from+leanPruneEvery)))}
}

// seed writes each job's history: d.history records of the ticks before
// instant 0, a job a transaction, as a cluster that has run a while holds.
func (d *leanDriver) seed(ctx context.Context, cli *clientv3.Client) error {
	if d.history == 0 {
		return nil
	}
	return seedJobs(ctx, cli, d.n, leanJobName, func(j int) []clientv3.Op {
		ops := make([]clientv3.Op, 0, d.history)
		for i := -int64(d.history); i < 0; i++ {
			ops = append(ops, clientv3.OpPut(d.recordKey(j, i), d.recordVal))
		}
		return ops
	})
}
