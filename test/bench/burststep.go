package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

// burstSide is one engine's figures at one step of the burst scenario:
// ours (the replicas) or the reference (bare processes), measured the same
// way over a window of whole seconds.
type burstSide struct {
	Engine  string  `json:"engine"` // "ours" or "reference"
	Jobs    int     `json:"jobs"`
	Procs   int     `json:"processes"` // replicas, or reference processes
	Seconds float64 `json:"seconds"`
	// Due: ticks due in the window (jobs x its whole seconds); Delivered:
	// those that reached the witness before the grace after the window
	// ended; Missed the rest; Duplicates: arrivals of a tick already
	// delivered.
	Due           int     `json:"ticks_due"`
	Delivered     int     `json:"ticks_delivered"`
	DeliveredFrac float64 `json:"delivered_fraction"`
	Missed        int     `json:"ticks_missed"`
	Duplicates    int     `json:"duplicates"`
	// Skipped and MissedRecorded: ours only, the deltas of
	// scheduler_runs_skipped_total over the window (all reasons; reason
	// "missed"): ticks the scheduler recorded as not run.
	Skipped        float64 `json:"skipped_recorded"`
	MissedRecorded float64 `json:"missed_recorded"`
	// Records: the undelivered ticks' records by outcome, "pending" for a
	// tick without one queued as the grace ended, "none" for one with neither,
	// "pruned" for one its job's history pruned (burstrecords.go); nil
	// past maxRecordLookups.
	Records map[string]int `json:"undelivered_records,omitempty"`
	// NoRecord names the first of those with no record (run ids).
	NoRecord []string `json:"no_record,omitempty"`
	// undelivered and queued: ours' ticks to look up once the step's jobs
	// are removed (burstOurs), and the run ids queued as the grace ended.
	undelivered []undelivered
	queued      map[string]bool
	// SeededRecords: ours' records written before the step, its jobs'
	// histories full (bursthistory.go).
	SeededRecords int `json:"seeded_records,omitempty"`
	// RecordsHeld: ours' records in etcd as the window ends; with full
	// histories about jobs × history_limit while the prune keeps up.
	RecordsHeld int64 `json:"records_held,omitempty"`
	// Runs: witness arrivals of the step's jobs within the window.
	Runs int `json:"runs"`
	// ShardRuns: of Runs, those of the sharded job (-burst-shards).
	ShardRuns  int     `json:"shard_runs,omitempty"`
	RunsPerSec float64 `json:"runs_per_s"`
	Lateness   dist    `json:"lateness"` // of the delivered ticks: arrival - due
	// SlowFsyncs and SlowCommits: the members' WAL fsyncs and backend
	// commits over 64 ms in the window, summed over the members.
	SlowFsyncs  float64 `json:"wal_fsyncs_over_64ms"`
	SlowCommits float64 `json:"backend_commits_over_64ms"`
	// StalledFsyncs: of SlowFsyncs, those over 1.024 s.
	StalledFsyncs float64 `json:"wal_fsyncs_over_1s"`
	// StartMarks: ours' start mark commits in the window (startmarks.go).
	StartMarks *markWait `json:"start_marks,omitempty"`
	// PerSecond: the figures of each due second of the window.
	PerSecond []secondFigures `json:"per_second,omitempty"`
	// CPU by group in cores ("etcd", "procs", "bench", "other", "steal");
	// the per-run figures are ms of CPU per run in the window.
	CPU           map[string]float64 `json:"cpu_cores"`
	EtcdCPUPerRun float64            `json:"etcd_cpu_ms_per_run"`
	ProcCPUPerRun float64            `json:"procs_cpu_ms_per_run"`
	Revisions     int64              `json:"revisions"`
	RevsPerRun    float64            `json:"revisions_per_run"`
	// MVCC: the members' etcd_mvcc_* deltas, summed over the members and
	// divided by their number (every member applies every write).
	MVCC           map[string]float64 `json:"mvcc_per_member"`
	IndexOpsPerRun float64            `json:"index_ops_per_run"`
	// Wire: what etcd writes and moves a run besides (wire.go).
	Wire *wireCost `json:"wire_per_run,omitempty"`
	// EventsCounted: the replicas export scheduler_watch_events_total
	// (not before it was added, nor the reference).
	EventsCounted   bool    `json:"events_counted"`
	WatchEvents     float64 `json:"watch_events"`
	EventsPerProcRn float64 `json:"events_per_replica_per_run"`
	// EventsByKind: events per replica per run by the kind of their key
	// (keys.Layout.Kind), the kinds with any.
	EventsByKind map[string]float64 `json:"events_by_kind,omitempty"`
}

// cpuPerRun is etcd's and the processes' CPU per run, in ms.
func (s burstSide) cpuPerRun() float64 { return s.EtcdCPUPerRun + s.ProcCPUPerRun }

// held: the step's ticks reached the target (>= 98%) with p99 < 1 s.
func (s burstSide) held() bool {
	return s.Due > 0 && s.DeliveredFrac >= burstHeldDelivered && s.Lateness.N > 0 && s.Lateness.P99 < burstHeldP99Ms
}

// unaccounted: ticks due that neither reached the target nor have a
// record, counted from the lookups when they were made (a tick pruned by
// its job's history is accounted: burstrecords.go), else estimated from
// the skipped counter's change over the window.
func (s burstSide) unaccounted() float64 {
	if s.Records != nil {
		return float64(s.Records["none"] + s.Records["unreadable"])
	}
	return max(0, float64(s.Due-s.Delivered)-s.Skipped)
}

// unaccountedBy says what unaccounted counted from.
func (s burstSide) unaccountedBy() string {
	if s.Records != nil {
		return "by the records looked up"
	}
	return "by the skipped counter"
}

const (
	burstHeldDelivered = 0.98
	burstHeldP99Ms     = 1000
)

// burstWindow is where a side is measured: its processes and the metric
// endpoints of its replicas (none for the reference).
type burstWindow struct {
	// atStart, when set, is called as the window opens (after the
	// counters' first read): the profiles start there.
	atStart    func()
	procs      []int
	replicaURL []string
	jobPrefix  string
	shardJob   string // the sharded job beside them, if any
	window     time.Duration
	grace      time.Duration
}

// measureBurst measures side over a window of whole seconds, then waits
// the grace for late arrivals of its ticks and tallies the witness.
func measureBurst(ctx context.Context, e *env, side *burstSide, w burstWindow) error {
	secs := max(1, int(w.window/time.Second))
	t0 := time.Now().Truncate(time.Second).Add(4 * time.Second)
	t1 := t0.Add(time.Duration(secs) * time.Second)
	// The counters are read before the window (rendering the metrics of
	// thousands of jobs takes a while) and as it ends, so that the reads
	// are not in the CPU figures; perWindow scales their changes to the
	// window.
	if err := sleepUntil(ctx, t0.Add(-3*time.Second)); err != nil {
		return err
	}
	before, err := e.burstCounters(ctx, w.replicaURL)
	if err != nil {
		return err
	}
	pids := map[string][]int{"bench": {os.Getpid()}, "procs": w.procs}
	for _, m := range e.c.Members {
		pids["etcd"] = append(pids["etcd"], m.Pid())
	}
	if err := sleepUntil(ctx, t0); err != nil {
		return err
	}
	mark0, start := markCPU(pids), time.Now()
	if w.atStart != nil {
		w.atStart()
	}
	if err := sleepUntil(ctx, t1); err != nil {
		return err
	}
	mark1, end := markCPU(pids), time.Now()
	after, err := e.burstCounters(ctx, w.replicaURL)
	if err != nil {
		return err
	}
	if side.Engine == "ours" {
		if side.RecordsHeld, err = e.recordsHeld(ctx); err != nil {
			return err
		}
	}
	if err := sleepUntil(ctx, t1.Add(w.grace)); err != nil {
		return err
	}
	side.Seconds = float64(secs)
	side.CPU = mark0.cores(mark1, end.Sub(start))
	tl := tallyBurst(e.w.Runs(), w.jobPrefix, side.Jobs, t0, t1, t1.Add(w.grace))
	tl.countShards(e.w.Runs(), w.shardJob, t0, t1)
	side.apply(tl, perWindow(before, after, side.Seconds), len(e.c.Members))
	side.PerSecond = timeline(tl.bySecond, side.Jobs, t0, t1)
	if side.Engine == "ours" && side.Missed > 0 {
		side.undelivered = undeliveredTicks(w.jobPrefix, side.Jobs, t0, t1, tl.seen)
		side.queued, err = e.queuedRuns(ctx)
	}
	return err
}

// perWindow is each counter's change from before to after, scaled to the
// window: the counters are read a second before it starts and as it ends,
// and their "time" (when each read was made) says over how long they
// changed.
func perWindow(before, after map[string]float64, window float64) map[string]float64 {
	span := after["time"] - before["time"]
	out := map[string]float64{}
	for k, v := range after {
		if k != "time" && span > 0 {
			out[k] = (v - before[k]) * window / span
		}
	}
	return out
}

// burstCounters reads etcd's revision, the members' index counters and the
// replicas' watch and skip counters.
func (e *env) burstCounters(ctx context.Context, replicas []string) (map[string]float64, error) {
	start := time.Now()
	rev, err := e.revision(ctx)
	if err != nil {
		return nil, err
	}
	m, err := scrape(ctx, e.memberMetricURLs(), append([]string{mvccRange, mvccPut, mvccDelete, mvccTxn, walFsyncs, walFsyncsFast, walFsyncsSecond, diskCommits, diskCommitsFast}, wireNames...)...)
	if err != nil {
		return nil, err
	}
	r, err := scrape(ctx, replicas, append([]string{watchEvents, runsSkipped, runsMissed, startMarkBuckets}, eventKinds()...)...)
	if err != nil {
		return nil, err
	}
	for k, v := range r {
		m[k] = v
	}
	m["revision"] = float64(rev)
	// The reads took a while: they are taken as made halfway.
	m["time"] = float64(start.Add(time.Since(start)/2).UnixNano()) / 1e9
	return m, nil
}

// apply turns the tally and the counters' deltas into the side's figures.
func (s *burstSide) apply(tl burstTally, d map[string]float64, members int) {
	s.Due, s.Delivered, s.Duplicates, s.Runs, s.ShardRuns = tl.due, tl.delivered, tl.duplicates, tl.runs, tl.shardRuns
	s.Missed = s.Due - s.Delivered
	if s.Due > 0 {
		s.DeliveredFrac = float64(s.Delivered) / float64(s.Due)
	}
	s.Lateness = distOf(tl.lateness)
	s.RunsPerSec = float64(s.Runs) / s.Seconds
	s.Skipped, s.MissedRecorded = d[runsSkipped], d[runsMissed]
	s.Revisions = int64(d["revision"])
	s.SlowFsyncs, s.SlowCommits = max(0, d[walFsyncs]-d[walFsyncsFast]), max(0, d[diskCommits]-d[diskCommitsFast])
	s.StalledFsyncs = max(0, d[walFsyncs]-d[walFsyncsSecond])
	s.StartMarks = startMarkWait(d)
	s.WatchEvents, s.EventsCounted = d[watchEvents]
	s.MVCC = map[string]float64{}
	for _, k := range []string{mvccRange, mvccPut, mvccDelete, mvccTxn} {
		s.MVCC[strings.TrimPrefix(k, "etcd_mvcc_")] = d[k] / float64(members)
	}
	if s.Runs == 0 {
		return
	}
	runs := float64(s.Runs)
	s.EtcdCPUPerRun = s.CPU["etcd"] * s.Seconds * 1000 / runs
	s.ProcCPUPerRun = s.CPU["procs"] * s.Seconds * 1000 / runs
	s.RevsPerRun = float64(s.Revisions) / runs
	s.IndexOpsPerRun = (d[mvccRange] + d[mvccPut] + d[mvccDelete]) / float64(members) / runs
	s.Wire = wireOf(d, members, runs)
	if s.Procs > 0 && s.EventsCounted {
		s.EventsPerProcRn = s.WatchEvents / float64(s.Procs) / runs
		s.EventsByKind = eventsByKind(d, float64(s.Procs)*runs)
	}
}

// burstTally is what the witness saw of a step's ticks.
type burstTally struct {
	due, delivered, duplicates, runs int
	lateness                         []time.Duration
	bySecond                         map[int64][]time.Duration // lateness by due second (bursttimeline.go)
	shardRuns                        int
	seen                             map[string]bool // the ticks delivered, by tickKey
}

// countShards adds the shard runs of job (if any) that arrived in
// [from, to) to the runs: a shard run costs what a run costs.
func (t *burstTally) countShards(all []cluster.Run, job string, from, to time.Time) {
	if job == "" {
		return
	}
	for _, r := range all {
		if r.Job == job && !r.Start.Before(from) && r.Start.Before(to) {
			t.runs++
			t.shardRuns++
		}
	}
}

// tallyBurst counts, for the jobs named jobPrefix + index (jobs of them,
// every one due each whole second), the ticks due in [from, to), those of
// them that arrived before until (once each; a second arrival is a
// duplicate), their lateness, and every arrival in [from, to).
func tallyBurst(all []cluster.Run, jobPrefix string, jobs int, from, to, until time.Time) burstTally {
	t := burstTally{due: jobs * len(dueSeconds(from, to)), bySecond: map[int64][]time.Duration{}}
	seen := map[string]bool{}
	t.seen = seen
	for _, r := range all {
		if !strings.HasPrefix(r.Job, jobPrefix) {
			continue
		}
		if !r.Start.Before(from) && r.Start.Before(to) {
			t.runs++
		}
		if r.ScheduledAt.Before(from) || !r.ScheduledAt.Before(to) || !r.Start.Before(until) {
			continue
		}
		key := tickKey(r.Job, r.ScheduledAt)
		if seen[key] {
			t.duplicates++
			continue
		}
		seen[key] = true
		t.delivered++
		late, sec := r.Start.Sub(r.ScheduledAt), r.ScheduledAt.Unix()
		t.lateness = append(t.lateness, late)
		t.bySecond[sec] = append(t.bySecond[sec], late)
	}
	return t
}

// dueSeconds are the whole seconds in [from, to): when a step's jobs
// are due.
func dueSeconds(from, to time.Time) []time.Time {
	var out []time.Time
	for s := from.Truncate(time.Second); s.Before(to); s = s.Add(time.Second) {
		if !s.Before(from) {
			out = append(out, s)
		}
	}
	return out
}

// tickKey names a job's tick due at at in a tally's set of ticks.
func tickKey(job string, at time.Time) string { return job + "@" + at.Format(time.RFC3339Nano) }

func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// describe is the side's one-line summary for the progress log.
func (s burstSide) describe() string {
	return fmt.Sprintf("%s %d jobs: %.0f runs/s, delivered %s, lateness %s%s, missed %d (recorded skipped %.0f)%s, cpu ms/run etcd %.3f + procs %.3f, revs/run %.3f, index ops/run %.2f, events/replica/run %s%s, etcd disk over 64 ms: %.0f fsyncs (over 1 s: %.0f), %.0f commits%s; a run: %s",
		s.Engine, s.Jobs, s.RunsPerSec, pct(s.DeliveredFrac), s.Lateness, markNote(s.StartMarks), s.Missed, s.Skipped, recordsNote(s.Records, s.NoRecord), s.EtcdCPUPerRun, s.ProcCPUPerRun, s.RevsPerRun, s.IndexOpsPerRun, events(s), kindsOf(s.EventsByKind), s.SlowFsyncs, s.StalledFsyncs, s.SlowCommits, heldNote(s.RecordsHeld), s.Wire)
}

// heldNote says how many records ours held as its window ended.
func heldNote(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d records held", n)
}

// settle waits until etcd and the replicas are quiet (under quietCores
// together over a second) before a side starts, or a minute has passed:
// the end of the side before (its last runs, the removal of its jobs:
// before c7b6228 the leader rewrote every assignment ahead once a removed
// job) kept etcd near a core busy for 16-53 s after ours at 1,000-2,000
// jobs, 3-5 s since, and a window that began then charged it to the next
// side (the reference's etcd 0.92 ms a run at 1,000 jobs against 0.21
// alone). scenario names it in the log.
func (e *env) settle(ctx context.Context, scenario string) {
	const quietCores = 0.1
	start := time.Now()
	for time.Since(start) < time.Minute {
		pids := e.pids()
		delete(pids, "bench")
		m0, t0 := markCPU(pids), time.Now()
		if err := sleepUntil(ctx, t0.Add(time.Second)); err != nil {
			return
		}
		busy := 0.0
		for group, c := range m0.cores(markCPU(pids), time.Since(t0)) {
			if group == "etcd" || group == "replicas" {
				busy += c
			}
		}
		if busy < quietCores {
			logf("%s: quiet after %s", scenario, time.Since(start).Round(time.Second))
			return
		}
	}
	logf("%s: etcd and the replicas still busy after a minute; going on", scenario)
}
