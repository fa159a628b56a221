package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The lean floor measures the run protocol docs/protocol.md designs
// before anyone builds it: bare clients, one per replica and through its
// proxies as the floor's, doing exactly the fast path's transactions for N
// runs an instant among W workers (leanDriver). Like the floor it is a lower
// bound: nothing watches, no target is called, no record is pruned, and
// every compare succeeds. Beside it: today's floor at batches of the claim
// chunk's size on the same cluster, and the burst scenario's bare
// reference at the same N when it ran too.

// leanStep is one N: runs an instant, for the step's duration.
type leanStep struct {
	RunsPerInstant int `json:"runs_per_instant"`
	// History: records each job held from the step's start, kept so
	// (leanDriver.prune); RecordsHeld: the records etcd held at its end.
	History int `json:"history_per_job"`
	// Slot: each run held a slot of its own, as the protocol's do; false:
	// the chunk's marker alone (leanDriver.slot). Watched: each worker's
	// client followed leanWatched, as a replica does; EventsPerWatcher:
	// the events each client was delivered a run.
	Slot             bool    `json:"slot_a_run"`
	Watched          bool    `json:"watched"`
	EventsPerWatcher float64 `json:"events_per_watcher_per_run,omitempty"`
	RecordsHeld      int64   `json:"records_held"`
	Workers          int     `json:"workers"`
	Seconds          float64 `json:"seconds"`
	Runs             int64   `json:"runs"`
	RunsPerSec       float64 `json:"runs_per_s"`
	Failed           int64   `json:"failed_txns"`
	Errors           int64   `json:"errors"`
	AuthorizeTxns    int64   `json:"authorize_txns"`
	Revisions        int64   `json:"revisions"`
	RevsPerRun       float64 `json:"revisions_per_run"`
	// MVCC: the members' etcd_mvcc_* deltas, per member (as the burst's).
	MVCC           map[string]float64 `json:"mvcc_per_member"`
	IndexOpsPerRun float64            `json:"index_ops_per_run"`
	Wire           *wireCost          `json:"wire_per_run,omitempty"`
	Predicted      leanCost           `json:"predicted_per_run"`
	EtcdCPUPerRun  float64            `json:"etcd_cpu_ms_per_run"`
	// EtcdCPUAboveIdle: the same less the members' idle use (leanResult's
	// EtcdIdleCores), which weighs on a paced step the more the smaller N.
	EtcdCPUAboveIdle float64            `json:"etcd_cpu_ms_per_run_above_idle"`
	CPU              map[string]float64 `json:"cpu_cores"`
}

type leanResult struct {
	Workers      int `json:"workers"`
	CursorWindow int `json:"cursor_window"`
	Chunk        int `json:"chunk"`
	ReleaseBatch int `json:"release_batch"`
	// EtcdIdleCores: the members' CPU, in cores, over leanIdle before the
	// steps, the replicas idle and the bench doing nothing.
	EtcdIdleCores float64    `json:"etcd_idle_cores"`
	Steps         []leanStep `json:"steps"`
	// Floor: today's protocol's floor at batches of Chunk, same cluster.
	Floor *floorStep `json:"floor,omitempty"`
}

// leanCheck says whether n runs an instant fit the plan's transactions
// among w workers.
func leanCheck(n, w int) error {
	if w <= 0 {
		return fmt.Errorf("leanfloor: %d workers: need at least one replica", w)
	}
	most := leanMaxChunks * leanChunk * w
	if n <= 0 || n > most {
		return fmt.Errorf("leanfloor: %d runs per instant: give 1 to %d with %d workers (a worker's cleanup holds at most %d chunks of %d)", n, most, w, leanMaxChunks, leanChunk)
	}
	return nil
}

// leanShape is what a step's runs do beside the protocol's transactions.
type leanShape struct {
	slot  bool // a slot a run (the protocol's), or the chunk's marker alone
	watch bool // each worker's client follows leanWatched
}

func (s leanShape) String() string {
	out := "a slot a run"
	if !s.slot {
		out = "no slot (the chunk's marker the only hold)"
	}
	if s.watch {
		out += ", each worker watching assignments, markers and cursors"
	}
	return out
}

// leanShapes are the steps' shapes, each slot mode with each watch mode.
func leanShapes(slots, watches []bool) []leanShape {
	var out []leanShape
	for _, w := range watches {
		for _, s := range slots {
			out = append(out, leanShape{slot: s, watch: w})
		}
	}
	return out
}

func leanFloor(ctx context.Context, e *env, steps, histories []int, shapes []leanShape, d time.Duration) (leanResult, error) {
	w := len(e.c.Replicas)
	res := leanResult{Workers: w, CursorWindow: leanWindow, Chunk: leanChunk, ReleaseBatch: leanRelease}
	for _, n := range steps {
		if err := leanCheck(n, w); err != nil {
			return res, err
		}
	}
	var err error
	if res.EtcdIdleCores, err = etcdIdle(ctx, e, leanIdle); err != nil {
		return res, err
	}
	logf("leanfloor: etcd idle: %.3f cores", res.EtcdIdleCores)
	for _, h := range histories {
		for _, n := range steps {
			for _, shape := range shapes {
				logf("leanfloor: %d runs an instant, %d workers, %d records a job held, %s, for %s", n, w, h, shape, d)
				st, err := leanStepRun(ctx, e, n, h, shape, d)
				if err != nil {
					return res, err
				}
				st.EtcdCPUAboveIdle = aboveIdle(st.CPU["etcd"], res.EtcdIdleCores, st.Seconds, st.Runs)
				logf("leanfloor: %.0f runs/s, etcd %.3f ms, %.2f index ops (predicted %.2f), %.3f revisions, %.2f events a watcher per run; %d records held; %d failed, %d errors; a run: %s",
					st.RunsPerSec, st.EtcdCPUPerRun, st.IndexOpsPerRun, st.Predicted.IndexOps, st.RevsPerRun, st.EventsPerWatcher, st.RecordsHeld, st.Failed, st.Errors, st.Wire)
				res.Steps = append(res.Steps, st)
				if err := e.compact(ctx); err != nil {
					return res, err
				}
			}
		}
	}
	logf("leanfloor: today's floor, batches of %d, for %s", leanChunk, d)
	fl, err := floorStepRun(ctx, e, leanChunk, 0, d)
	if err != nil {
		return res, fmt.Errorf("today's floor: %w", err)
	}
	res.Floor = &fl
	return res, e.compact(ctx)
}

func leanStepRun(ctx context.Context, e *env, n, history int, shape leanShape, d time.Duration) (leanStep, error) {
	st := leanStep{RunsPerInstant: n, Workers: len(e.c.Replicas), History: history, Slot: shape.slot, Watched: shape.watch,
		Predicted: leanPredict(n, len(e.c.Replicas), history, shape.slot)}
	clis, err := e.proxyClients()
	defer closeAll(clis)
	if err != nil {
		return st, err
	}
	// The fence: a key the "leader" created, as its election key.
	fr, err := e.cli.Put(ctx, leanPrefix+"fence", "leader")
	if err != nil {
		return st, err
	}
	fence := clientv3.Compare(clientv3.CreateRevision(leanPrefix+"fence"), "=", fr.Header.Revision)
	leases, err := grantLeases(ctx, clis)
	defer revokeLeases(ctx, clis, leases)
	if err != nil {
		return st, err
	}
	drv, err := newLeanDriver(clis, leases, fence, n, history, shape.slot, time.Now().UTC().Truncate(time.Second))
	if err != nil {
		return st, err
	}
	if err := drv.seed(ctx, e.cli); err != nil {
		return st, err
	}
	// The seeding's writes, and the compaction of the step before, are
	// not the step's: each kept etcd busy into the window (a step after
	// one with a history cost 0.38-0.41 ms a run, the first 0.33).
	e.settle(ctx, "leanfloor")
	var watchers *leanWatchers
	if shape.watch {
		at, err := e.cli.Get(ctx, leanPrefix+"fence")
		if err != nil {
			return st, err
		}
		watchers = watchLean(ctx, clis, at.Header.Revision)
	}
	err = st.measure(ctx, e, drv, d)
	if events := watchers.stop(); shape.watch && st.Runs > 0 {
		st.EventsPerWatcher = float64(events) / float64(len(clis)) / float64(st.Runs)
	}
	if err != nil {
		return st, err
	}
	held, err := e.cli.Get(ctx, leanPrefix+"runs/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return st, err
	}
	st.RecordsHeld = held.Count
	_, err = e.cli.Delete(ctx, leanPrefix, clientv3.WithPrefix())
	return st, err
}

// measure runs drv for d and fills in what the window cost: CPU, etcd's
// counters and wire, a run.
func (st *leanStep) measure(ctx context.Context, e *env, drv *leanDriver, d time.Duration) error {
	pids := e.pids()
	c0, err := e.burstCounters(ctx, nil)
	if err != nil {
		return err
	}
	mark0, start := markCPU(pids), time.Now()
	stop, cancel := context.WithTimeout(ctx, d)
	if e.profileDir != "" { // -pprof: etcd's CPU over -pprof-seconds of the window, as the burst's
		atStart, wait := profileAtStart(func() {
			saveEtcdProfiles(ctx, e, filepath.Join(e.profileDir, "profiles"), fmt.Sprintf("leanfloor-%d-history%d-%s", st.RunsPerInstant, st.History, start.Format("150405")))
		})
		atStart()
		defer wait()
	}
	drv.run(ctx, stop)
	cancel()
	elapsed := time.Since(start)
	mark1 := markCPU(pids)
	c1, err := e.burstCounters(ctx, nil)
	if err != nil {
		return err
	}
	st.Seconds, st.CPU = elapsed.Seconds(), mark0.cores(mark1, elapsed)
	st.Runs, st.Failed, st.Errors, st.AuthorizeTxns = drv.runs.Load(), drv.failed.Load(), drv.errs.Load(), drv.authTxns.Load()
	st.RunsPerSec = float64(st.Runs) / st.Seconds
	st.Revisions = int64(c1["revision"] - c0["revision"])
	st.MVCC = mvccPerMember(c0, c1, len(e.c.Members))
	if st.Runs > 0 {
		st.EtcdCPUPerRun = st.CPU["etcd"] * st.Seconds * 1000 / float64(st.Runs)
		st.RevsPerRun = float64(st.Revisions) / float64(st.Runs)
		st.IndexOpsPerRun = indexOps(st.MVCC) / float64(st.Runs)
		st.Wire = wireOf(outcomesDelta(c0, c1), len(e.c.Members), float64(st.Runs))
	}
	return nil
}

// leanIdle: how long etcd's idle CPU is measured before the steps.
const leanIdle = 3 * time.Second

// etcdIdle is the members' CPU in cores over d while the bench does
// nothing.
func etcdIdle(ctx context.Context, e *env, d time.Duration) (float64, error) {
	pids := e.pids()
	mark0, start := markCPU(pids), time.Now()
	if err := sleepUntil(ctx, start.Add(d)); err != nil {
		return 0, err
	}
	return mark0.cores(markCPU(pids), time.Since(start))["etcd"], nil
}

// aboveIdle is the ms of etcd CPU per run beyond its idle use: cores used
// over secs, less idle cores, for runs.
func aboveIdle(cores, idle, secs float64, runs int64) float64 {
	if runs <= 0 {
		return 0
	}
	return max(0, cores-idle) * secs * 1000 / float64(runs)
}

// mvccPerMember is each etcd_mvcc_* counter's change from c0 to c1,
// divided by the members (every member applies every write), named
// without the prefix (range_total, ...), as the burst's.
func mvccPerMember(c0, c1 map[string]float64, members int) map[string]float64 {
	out := map[string]float64{}
	for _, k := range []string{mvccRange, mvccPut, mvccDelete, mvccTxn} {
		out[strings.TrimPrefix(k, "etcd_mvcc_")] = (c1[k] - c0[k]) / float64(max(1, members))
	}
	return out
}

// indexOps is the index operations of mvccPerMember's figures: ranges
// (each compare and each read), puts and deletes.
func indexOps(m map[string]float64) float64 {
	return m["range_total"] + m["put_total"] + m["delete_total"]
}

// grantLeases grants each client a lease, as each worker's session.
func grantLeases(ctx context.Context, clis []*clientv3.Client) ([]clientv3.LeaseID, error) {
	var out []clientv3.LeaseID
	for _, cli := range clis {
		l, err := cli.Grant(ctx, 300)
		if err != nil {
			return out, err
		}
		out = append(out, l.ID)
	}
	return out, nil
}

func revokeLeases(ctx context.Context, clis []*clientv3.Client, leases []clientv3.LeaseID) {
	for i, id := range leases {
		_, _ = clis[i].Revoke(context.WithoutCancel(ctx), id)
	}
}
