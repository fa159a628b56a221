package main

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// leanSetup is a driver of n runs an instant among three workers, each
// job holding history records, each run a slot if slot, each worker with
// its own client of one embedded member, and a fourth client to look.
func leanSetup(t *testing.T, ctx context.Context, n, history int, slot bool) (*leanDriver, *etcdtest.Cluster, *clientv3.Client) {
	t.Helper()
	c := etcdtest.Start(t)
	admin := c.Client()
	clis := []*clientv3.Client{c.Client(), c.Client(), c.Client()}
	fr, err := admin.Put(ctx, leanPrefix+"fence", "leader")
	if err != nil {
		t.Fatal(err)
	}
	leases, err := grantLeases(ctx, clis)
	if err != nil {
		t.Fatal(err)
	}
	fence := clientv3.Compare(clientv3.CreateRevision(leanPrefix+"fence"), "=", fr.Header.Revision)
	d, err := newLeanDriver(clis, leases, fence, n, history, slot, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return d, c, admin
}

// leanCount is how many keys are under the lean prefix's sub.
func leanCount(t *testing.T, ctx context.Context, cli *clientv3.Client, sub string) int64 {
	t.Helper()
	resp, err := cli.Get(ctx, leanPrefix+sub, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// The driver does exactly the plan's transactions, with a slot a run and
// without: etcd's index counters and revision move by what leanInstantCost
// predicts, every run leaves one record, and no slot, assignment or marker
// is left.
func TestLeanDriverDoesThePlannedTransactions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n, instants = 250, 3 // 84, 83, 83 runs a worker: chunks of 40, 40 and a few
	for _, slot := range []bool{true, false} {
		t.Run(leanShape{slot: slot}.String(), func(t *testing.T) {
			d, c, admin := leanSetup(t, ctx, n, 0, slot)
			leanDrive(t, ctx, d, c, admin, instants)
			if got := leanCount(t, ctx, admin, "runs/"); got != n*instants {
				t.Errorf("%d records, want one per run: %d", got, n*instants)
			}
			for _, sub := range []string{"slots/", "assign/", "claimed/"} {
				if got := leanCount(t, ctx, admin, sub); got != 0 {
					t.Errorf("%d keys left under %s, want none after every release and cleanup", got, sub)
				}
			}
		})
	}
}

// With a history, each job starts with that many records, of the ticks
// before the first instant, and keeps that many: every leanPruneEvery
// instants its releases delete its oldest, as the plan predicts.
func TestLeanDriverKeepsEachJobsHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n, history, instants = 30, 20, 2 * leanPruneEvery
	d, c, admin := leanSetup(t, ctx, n, history, true)
	if err := d.seed(ctx, admin); err != nil {
		t.Fatal(err)
	}
	if got := leanCount(t, ctx, admin, "runs/"); got != n*history {
		t.Fatalf("%d records seeded, want %d a job: %d", got, history, n*history)
	}
	leanDrive(t, ctx, d, c, admin, instants)
	if got := leanCount(t, ctx, admin, "runs/"); got != n*history {
		t.Errorf("%d records after %d instants, want the history kept: %d", got, instants, n*history)
	}
	for j := range n {
		resp, err := admin.Get(ctx, leanPrefix+"runs/"+leanJobName(j)+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1))
		if err != nil {
			t.Fatal(err)
		}
		// The seeded twenty went, ten a prune; the oldest kept is instant 0's.
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Key) != d.recordKey(j, 0) {
			t.Fatalf("%s's oldest record: %q, want %q", leanJobName(j), resp.Kvs, d.recordKey(j, 0))
		}
	}
}

// leanDrive runs instants of d, each authorized and every worker's
// assignment claimed, released and cleaned up, and checks that etcd's
// index counters and revision moved as leanInstantCost predicts and that
// every run was released.
func leanDrive(t *testing.T, ctx context.Context, d *leanDriver, c *etcdtest.Cluster, admin *clientv3.Client, instants int) {
	t.Helper()
	metrics := []string{c.Endpoints()[0] + "/metrics"}
	r0, err := admin.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	c0, err := scrape(ctx, metrics, mvccRange, mvccPut, mvccDelete, mvccTxn)
	if err != nil {
		t.Fatal(err)
	}
	var want leanCost
	for i := range int64(instants) {
		rev, ok := d.authorize(ctx, i)
		if !ok {
			t.Fatalf("instant %d: the authorization failed (%d failed, %d errors)", i, d.failed.Load(), d.errs.Load())
		}
		for w := range d.clis {
			d.instant(ctx, ctx, w, leanAssignment{instant: i, rev: rev})
		}
		ic := leanInstantCost(d.n, len(d.clis), d.history, i, d.slot)
		want.IndexOps, want.Revisions = want.IndexOps+ic.IndexOps, want.Revisions+ic.Revisions
	}
	c1, err := scrape(ctx, metrics, mvccRange, mvccPut, mvccDelete, mvccTxn)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := admin.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if d.failed.Load() != 0 || d.errs.Load() != 0 || d.runs.Load() != int64(d.n*instants) {
		t.Fatalf("%d runs released, %d failed transactions, %d errors; want %d runs, none failed", d.runs.Load(), d.failed.Load(), d.errs.Load(), d.n*instants)
	}
	if got := indexOps(mvccPerMember(c0, c1, 1)); got != want.IndexOps {
		t.Errorf("etcd counted %.0f index operations, the plan predicts %.0f", got, want.IndexOps)
	}
	if got := r1.Header.Revision - r0.Header.Revision; float64(got) != want.Revisions {
		t.Errorf("%d revisions, the plan predicts %.0f", got, want.Revisions)
	}
}

// run stops when its window ends, finishing the chunks in flight: no slot
// is left claimed, and nothing failed. The window ends as the first chunk
// is released, while the instant's other chunks are in flight.
func TestLeanDriverRunStopsWithEverySlotReleased(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, _, admin := leanSetup(t, ctx, 600, 0, true) // 200 a worker: 5 chunks, 4 in flight
	stop, end := context.WithCancel(ctx)
	defer end()
	done := make(chan struct{})
	go func() {
		defer close(done)
		poll.Within(30*time.Second, func() bool { return d.runs.Load() > 0 })
		end()
	}()
	d.run(ctx, stop)
	<-done
	if d.failed.Load() != 0 || d.errs.Load() != 0 || d.runs.Load() == 0 {
		t.Fatalf("%d runs released, %d failed transactions, %d errors; want some runs, none failed", d.runs.Load(), d.failed.Load(), d.errs.Load())
	}
	if got := leanCount(t, ctx, admin, "slots/"); got != 0 {
		t.Errorf("%d slots left after the window, want every claimed run released", got)
	}
	if got := leanCount(t, ctx, admin, "runs/"); got != d.runs.Load() {
		t.Errorf("%d records for %d runs released", got, d.runs.Load())
	}
}

// A step's watchers are delivered what a replica's watches would be: each
// worker's client, every assignment's and claim marker's put and delete,
// and every cursor's put; and stop ends their goroutines.
func TestLeanWatchersSeeAssignmentsMarkersAndCursors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n, instants = 250, 3
	d, c, admin := leanSetup(t, ctx, n, 0, true)
	at, err := admin.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	lw := watchLean(ctx, d.clis, at.Header.Revision)
	leanDrive(t, ctx, d, c, admin, instants)
	var want int64
	for i := range int64(instants) {
		chunks := 0
		for _, js := range d.jobs {
			chunks += len(leanChunks(js, leanChunk))
		}
		want += int64(2*len(d.jobs) + 2*chunks + len(leanCursorsDue(n, i, leanWindow)))
	}
	want *= int64(len(d.clis))
	if !poll.Within(30*time.Second, func() bool { return lw.events.Load() >= want }) {
		t.Fatalf("%d events delivered, want %d", lw.events.Load(), want)
	}
	if got := lw.stop(); got != want {
		t.Errorf("%d events delivered, want %d", got, want)
	}
}
