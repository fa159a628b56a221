package jobs_test

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A leader that crashes (its lease left to expire, not revoked) holds the
// election for up to session_ttl; ticks due in that gap run only if they
// were materialized before it. With the lookahead the replica sets from
// the session TTL (session_ttl + 2s), every tick of a job @every 200ms due
// from a second before the crash to ttl+2s after it runs exactly once (but
// a run the crashed replica had itself claimed: lost with it, recorded).
// The control runs the same crash with the old 2s lookahead, which loses
// the ticks due between 2s after the crash and the new leader's first
// pass: so the test tells the two apart.
func TestLeaderCrashMissesNoTick(t *testing.T) {
	const ttl = 5 * time.Second
	for _, c := range []struct {
		name      string
		lookahead time.Duration // zero: the replica's own, from session_ttl
		control   bool
	}{
		{name: "lookahead from session_ttl"},
		{name: "control: 2s lookahead", lookahead: 2 * time.Second, control: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			etcd := startEtcd(t)
			w := startWitness(t)
			job := httpJob("tick", "@every 200ms", w.url(""))
			// Room for every tick at once: a tick late behind a busy
			// machine or a dead worker must not cost the next one its
			// slot (overlap; worker tests cover that). This test is about
			// which ticks get materialized.
			job.MaxConcurrency = 10
			cfg := newConfig(job)
			cfg.Cluster.SessionTTL = config.Duration(ttl)
			cfg.Cluster.LeaseMargin = config.Duration(time.Second)
			nodes := etcd.nodesWith(cfg, timing{Lookahead: c.lookahead}, "a", "b", "c")
			old := leaderOf(t, nodes)
			poll.For(t, 60*time.Second, "runs under way", func() bool { return len(w.finished("tick")) >= 10 })
			// The ticks must be materialized ahead of the crash: the
			// leader's cursor (its last tick authorized) past the next
			// second.
			poll.For(t, 30*time.Second, "ticks materialized ahead", func() bool {
				return cursor(t, old.client, "tick").After(time.Now().Add(time.Second))
			})

			term, err := old.Elector.Leadership()
			if err != nil {
				t.Fatalf("the leader's term ended before its crash: %v", err)
			}
			last := cursor(t, old.client, "tick")
			crashAt := time.Now()
			old.crash()
			stopped, ahead := time.Since(crashAt), last.Sub(crashAt)
			survivors := except(nodes, old)
			from, to := crashAt.Add(-time.Second), crashAt.Add(ttl+2*time.Second)
			// Every tick of the window has come due, and a backup worker
			// had its turn at the last of them. Meanwhile the test notes
			// when etcd dropped the crashed leader's lease and when it saw
			// a survivor lead (no sooner than crash returned: stopped).
			var leaseGone, tookOver time.Duration
			poll.For(t, 60*time.Second, "the window's ticks due", func() bool {
				since := time.Since(crashAt)
				if leaseGone == 0 && !leaseHeld(t, survivors[0].client, term.Lease) {
					leaseGone = since
				}
				if tookOver == 0 && len(leaders(survivors)) > 0 {
					tookOver = since
				}
				return time.Since(to) > 2*time.Second
			})

			count := map[string]int{}
			var maxLate time.Duration
			for _, h := range w.finished("tick") {
				count[h.RunID]++
				if h.Scheduled.After(crashAt) && !h.Scheduled.After(to) {
					maxLate = max(maxLate, h.Start.Sub(h.Scheduled))
				}
			}
			recs := records(t, survivors[0].client, "tick")
			lost, withHolder := 0, 0
			first := from.Truncate(200 * time.Millisecond).Add(200 * time.Millisecond)
			for tick := first; !tick.After(to); tick = tick.Add(200 * time.Millisecond) {
				id := runs.ID("tick", tick)
				switch n := count[id]; {
				case n == 1:
				case n == 0 && recs[id].Outcome == runs.Lost && recs[id].Holder == old.id:
					// Claimed by the crashed replica itself: lost with it
					// and recorded so (docs/design.md#the-safety-rules, rule 7), not the leader's.
					withHolder++
				case n == 0:
					lost++
					if !c.control {
						rec, ok := recs[id]
						why := "no record"
						if ok {
							why = fmt.Sprintf("recorded %s: %s", rec.Outcome, rec.Error)
						}
						t.Errorf("tick %s (crash %+.1fs) did not run: %s", tick.Format("15:04:05.000"), tick.Sub(crashAt).Seconds(), why)
					}
				default:
					t.Errorf("tick %s ran %d times", tick.Format("15:04:05.000"), n)
				}
			}
			t.Logf("ticks in [crash-1s, crash+ttl+2s]: %d lost, %d lost with the crashed holder; max lateness after the crash %s; "+
				"ticks were materialized %s ahead at the crash; seen from %s after it (its stop returned), its lease was gone %s and a survivor led %s after it",
				lost, withHolder, maxLate.Round(time.Millisecond), ahead.Round(time.Millisecond), stopped.Round(time.Millisecond),
				leaseGone.Round(time.Millisecond), tookOver.Round(time.Millisecond))
			if withHolder > 2 {
				t.Errorf("%d runs lost with the crashed replica; it can hold only those it had claimed when it crashed", withHolder)
			}
			if c.control && lost == 0 {
				t.Errorf("the 2s lookahead lost no tick to a %s leader gap: the test does not tell", ttl)
			}
		})
	}
}

// leaseHeld reports whether etcd still holds lease.
func leaseHeld(t *testing.T, cli *clientv3.Client, lease clientv3.LeaseID) bool {
	t.Helper()
	resp, err := cli.TimeToLive(t.Context(), lease)
	if err != nil {
		t.Fatalf("reading the crashed leader's lease: %v", err)
	}
	return resp.TTL >= 0
}
