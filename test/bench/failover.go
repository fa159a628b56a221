package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/test/cluster"
)

const (
	failoverJobs  = 10
	failoverEvery = 100 * time.Millisecond
)

// handover is one leader change forced by a signal.
type handover struct {
	Signal string `json:"signal"`
	Leader string `json:"old_leader"`
	New    string `json:"new_leader"`
	// ElectedMs: signal -> the observer sees another replica's election
	// key lead. FirstTickMs: signal -> the new leader's first cursor write
	// (it materializes ticks). FirstRunMs: signal -> the witness receives
	// the first run of a tick the old leader had not materialized.
	ElectedMs   float64 `json:"elected_ms"`
	FirstTickMs float64 `json:"first_tick_ms"`
	FirstRunMs  float64 `json:"first_new_leader_run_ms"`
	// MaxGapMs: the longest time without any run start around the change;
	// GapBeforeMs the same over the 5 s before it (the reference).
	MaxGapMs    float64 `json:"max_gap_ms"`
	GapBeforeMs float64 `json:"max_gap_before_ms"`
	MaxLateMs   float64 `json:"max_lateness_ms"`
	// Expected and Missed count ticks in [signal-2s, signal+12s) and those
	// the witness never received.
	Expected int `json:"ticks_expected"`
	Missed   int `json:"ticks_missed"`
	// BehindSignalled counts the missed ticks recorded skipped whose job's
	// slot the signalled replica held when it got the signal: after
	// SIGKILL its lease keeps those slots until it expires (docs/design.md#the-safety-rules: nobody can tell a dead holder from a frozen one), so overlap: skip
	// skips the job's ticks meanwhile. They are not lost to the election
	// gap; Missed less these is what the leader's crash cost.
	BehindSignalled int `json:"ticks_skipped_behind_signalled_holder"`
	// InFlight counts the missed ticks recorded lost that the signalled
	// replica was running when it got the signal (its slot, scheduled
	// before the signal): a SIGKILL ends a run mid-call whatever engine
	// runs it, and with no retries the tick is lost to the kill, not to
	// the failover. A lost tick scheduled after the signal is counted:
	// its holder was dead at its instant and cannot have started it.
	InFlight int `json:"ticks_lost_in_flight"`
}

type failoverResult struct {
	SessionTTL string   `json:"session_ttl"`
	Jobs       int      `json:"jobs"`
	Every      string   `json:"every"`
	Kill       handover `json:"sigkill"`
	Term       handover `json:"sigterm"`
}

// failover kills the leader, then terminates the next one, while ten jobs
// run every 100ms.
func failover(ctx context.Context, e *env) (report, error) {
	res := failoverResult{SessionTTL: e.settings.SessionTTL.String(), Jobs: failoverJobs, Every: failoverEvery.String()}
	jobs := make([]jobSpec, failoverJobs)
	for i := range jobs {
		jobs[i] = jobSpec{Name: fmt.Sprintf("fo-%02d", i), Schedule: "@every " + failoverEvery.String(), SkippedHistory: 500}
	}
	if err := e.reload(ctx, jobs); err != nil {
		return report{}, err
	}
	defer func() {
		if err := e.reload(ctx, nil); err == nil {
			e.drain(ctx)
		}
	}()
	time.Sleep(8 * time.Second) // the reference window is the 5 s before the signal
	var err error
	logf("failover: SIGKILL of the leader")
	if res.Kill, err = forceHandover(ctx, e, "SIGKILL"); err != nil {
		return report{}, err
	}
	logf("failover: SIGKILL: %+v", res.Kill)
	logf("failover: SIGTERM of the leader")
	if res.Term, err = forceHandover(ctx, e, "SIGTERM"); err != nil {
		return report{}, err
	}
	logf("failover: SIGTERM: %+v", res.Term)
	ttl := e.settings.SessionTTL
	k, t := res.Kill, res.Term
	rows := []row{
		{Scenario: "failover", Figure: "SIGKILL: signal -> new leader's first tick written", Value: fmt.Sprintf("%.0f ms", k.FirstTickMs),
			Reference: fmt.Sprintf("session_ttl %s; elected after %.0f ms", ttl, k.ElectedMs)},
		{Scenario: "failover", Figure: "SIGKILL: first run of a new-leader tick; longest gap between run starts", Value: fmt.Sprintf("%.0f ms; gap %.0f ms", k.FirstRunMs, k.MaxGapMs),
			Reference: fmt.Sprintf("gap before the kill %.0f ms; lookahead 2s hides a short outage", k.GapBeforeMs)},
		{Scenario: "failover", Figure: "SIGKILL: ticks missed; max lateness", Value: fmt.Sprintf("%d of %d (%d skipped behind the killed replica's slots, %d lost in flight); %.0f ms", k.Missed, k.Expected, k.BehindSignalled, k.InFlight, k.MaxLateMs),
			Reference: "its lease holds its slots until it expires"},
		{Scenario: "failover", Figure: "SIGTERM: signal -> new leader's first tick written", Value: fmt.Sprintf("%.0f ms", t.FirstTickMs),
			Reference: fmt.Sprintf("elected after %.0f ms", t.ElectedMs)},
		{Scenario: "failover", Figure: "SIGTERM: longest gap between run starts; ticks missed", Value: fmt.Sprintf("%.0f ms; %d of %d missed", t.MaxGapMs, t.Missed, t.Expected),
			Reference: fmt.Sprintf("gap before the signal %.0f ms", t.GapBeforeMs)},
	}
	return report{Scenario: "failover", Data: res, Rows: rows}, nil
}

func forceHandover(ctx context.Context, e *env, sig string) (handover, error) {
	h := handover{Signal: sig}
	old, err := e.leader(ctx)
	if err != nil {
		return h, err
	}
	h.Leader = old.ID
	obs, err := e.observe()
	if err != nil {
		return h, err
	}
	at := time.Now()
	switch sig {
	case "SIGKILL":
		err = old.Kill()
	default:
		done := make(chan error, 1)
		go func() { done <- old.Term(30 * time.Second) }()
		defer func() { <-done }()
	}
	if err != nil {
		return h, err
	}
	held, err := slotsHeldBy(ctx, e.cli, old.ID)
	if err != nil {
		return h, err
	}
	// The old leader's cursors: ticks after them are the new leader's
	// (exact after SIGKILL; after SIGTERM the old leader may still write
	// for the moment it takes to resign).
	cursors, err := readCursors(ctx, e.cli)
	if err != nil {
		return h, err
	}

	elected, firstTick, err := h.waitNewLeader(obs, old.ID, at)
	if err != nil {
		return h, err
	}
	// Let the ticks of the window run.
	if wait := time.Until(at.Add(14 * time.Second)); wait > 0 {
		time.Sleep(wait)
	}
	h.ElectedMs = ms(elected.Sub(at))
	h.FirstTickMs = ms(firstTick.Sub(at))
	seen := h.measureStarts(e.w.Runs(), at, cursors)
	if err := h.accountMissed(ctx, e.cli, at, seen, held, firstTick); err != nil {
		return h, err
	}
	return h, restart(ctx, old, sig)
}

// waitNewLeader waits up to 30s for a leader other than old elected after
// at, and then for its first tick; it returns when each happened.
func (h *handover) waitNewLeader(obs *cluster.Observer, old string, at time.Time) (elected, firstTick time.Time, err error) {
	deadline := time.Now().Add(30 * time.Second)
	for elected.IsZero() && time.Now().Before(deadline) {
		for _, lc := range obs.Leaders() {
			if lc.At.After(at) && lc.ID != "" && lc.ID != old {
				elected, h.New = lc.At, lc.ID
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if elected.IsZero() {
		return elected, firstTick, fmt.Errorf("bench: no new leader within 30s of %s", h.Signal)
	}
	for firstTick.IsZero() && time.Now().Before(deadline) {
		firstTick = obs.FirstCursorWriteAfter(elected)
		time.Sleep(10 * time.Millisecond)
	}
	return elected, firstTick, nil
}

// measureStarts reads the failover jobs' run starts around the signal at:
// the gaps, the worst lateness, the first run of a tick after the old
// leader's cursors. It returns the run ids the witness saw.
func (h *handover) measureStarts(all []cluster.Run, at time.Time, cursors map[string]time.Time) map[string]bool {
	var starts []time.Time
	seen := map[string]bool{}
	var firstRun time.Time
	for _, r := range all {
		if !strings.HasPrefix(r.Job, "fo-") {
			continue
		}
		seen[r.RunID] = true
		if r.Start.After(at.Add(-6*time.Second)) && r.Start.Before(at.Add(12*time.Second)) {
			starts = append(starts, r.Start)
		}
		if r.Start.After(at) && r.ScheduledAt.After(cursors[r.Job]) && (firstRun.IsZero() || r.Start.Before(firstRun)) {
			firstRun = r.Start
		}
		if r.Start.After(at) && r.Start.Before(at.Add(12*time.Second)) {
			h.MaxLateMs = max(h.MaxLateMs, ms(r.Start.Sub(r.ScheduledAt)))
		}
	}
	if !firstRun.IsZero() {
		h.FirstRunMs = ms(firstRun.Sub(at))
	}
	h.MaxGapMs = maxGap(starts, at.Add(-time.Second), at.Add(12*time.Second))
	h.GapBeforeMs = maxGap(starts, at.Add(-6*time.Second), at.Add(-time.Second))
	return seen
}

// accountMissed counts the ticks due in [at-2s, at+12s) and those the
// witness did not see, each by what its record says; held are the jobs
// whose slots the signalled replica held.
func (h *handover) accountMissed(ctx context.Context, cli *clientv3.Client, at time.Time, seen, held map[string]bool, firstTick time.Time) error {
	var err error
	why := map[string]int{} // missed ticks by what their record says
	var when []string       // and when each was due, from the signal
	for i := range failoverJobs {
		job := fmt.Sprintf("fo-%02d", i)
		var recs map[string]runs.Record
		for t := at.Add(-2 * time.Second).Truncate(failoverEvery).Add(failoverEvery); t.Before(at.Add(12 * time.Second)); t = t.Add(failoverEvery) {
			h.Expected++
			id := runs.ID(job, t)
			if seen[id] {
				continue
			}
			h.Missed++
			when = append(when, fmt.Sprintf("%s %+dms", job, t.Sub(at).Milliseconds()))
			if recs == nil {
				if recs, err = readRecords(ctx, cli, job); err != nil {
					return err
				}
			}
			rec, ok := recs[id]
			switch {
			case !ok:
				why["no record"]++
			case held[job] && rec.Outcome == runs.Skipped:
				h.BehindSignalled++
				why["skipped behind the signalled replica's slot"]++
			case held[job] && rec.Outcome == runs.Lost && !rec.ScheduledAt.After(at):
				h.InFlight++
				why["lost in flight: the signalled replica was running it"]++
			default:
				why[fmt.Sprintf("%s: %.60s", rec.Outcome, rec.Error)]++
			}
		}
	}
	if len(why) > 0 {
		logf("failover: %s: missed ticks by their record: %v; due (from the signal; new leader's first tick %+dms): %v",
			h.Signal, why, firstTick.Sub(at).Milliseconds(), when)
	}
	return nil
}

// restart brings the signalled old leader back for what follows, once a
// SIGTERM let it exit.
func restart(ctx context.Context, old *cluster.Replica, sig string) error {
	if sig != "SIGKILL" {
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		for old.Running() && waitCtx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
	}
	if err := old.Start(); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := old.WaitReady(rctx); err != nil {
		return err
	}
	time.Sleep(3 * time.Second)
	return nil
}

// maxGap is the longest interval without a start within [from, to).
func maxGap(starts []time.Time, from, to time.Time) float64 {
	prev := from
	var gap time.Duration
	for _, s := range sortedTimes(starts) {
		if s.Before(from) || !s.Before(to) {
			continue
		}
		gap = max(gap, s.Sub(prev))
		prev = s
	}
	return ms(max(gap, to.Sub(prev)))
}

func readCursors(ctx context.Context, cli *clientv3.Client) (map[string]time.Time, error) {
	resp, err := cli.Get(ctx, layout.Jobs(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	for _, kv := range resp.Kvs {
		if job, ok := layout.CursorJob(string(kv.Key)); ok {
			if t, err := time.Parse(runs.TimeFormat, string(kv.Value)); err == nil {
				out[job] = t
			}
		}
	}
	return out, nil
}

func sortedTimes(ts []time.Time) []time.Time {
	out := slices.Clone(ts)
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// slotsHeldBy is the jobs whose slots holder holds.
func slotsHeldBy(ctx context.Context, cli *clientv3.Client, holder string) (map[string]bool, error) {
	resp, err := cli.Get(ctx, layout.Slots(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, kv := range resp.Kvs {
		var v slots.Value
		resource, name, _, ok := layout.ParseSlot(string(kv.Key))
		if ok && !resource && json.Unmarshal(kv.Value, &v) == nil && v.Holder == holder {
			job, _ := keys.SplitSlotGroup(name)
			out[job] = true
		}
	}
	return out, nil
}

// readRecords is job's run records by run id.
func readRecords(ctx context.Context, cli *clientv3.Client, job string) (map[string]runs.Record, error) {
	resp, err := cli.Get(ctx, layout.JobRuns(job), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := map[string]runs.Record{}
	for _, kv := range resp.Kvs {
		if r, err := runs.DecodeRecord(kv.Value); err == nil {
			out[r.RunID] = r
		}
	}
	return out, nil
}
