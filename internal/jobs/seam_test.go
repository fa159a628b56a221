package jobs_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A simple job runs every tick beside a job whose runs wait for a limit:
// one replica, a job "hog" with one run (or one tick's shards) executing
// for as long as the test lasts and a new tick every second that waits
// for the limit that row names, and a job "tick" every second. The worker
// has exactly one place more than hog's executing runs take. A run that
// waits holds no place (docs/design-admission.md), so that place is
// tick's at every tick. On the lean path, a run of hog refused before its
// instant because its slot was taken kept its place until the instant,
// tick's run of the same assignment waited for a place, and every other
// tick of tick was recorded missed (1s late, shed).
func TestASimpleJobRunsEveryTickBesideAJobWhoseRunsWait(t *testing.T) {
	t.Parallel()
	rows := []struct {
		name   string
		hog    func(j *config.Job, cfg *config.Config)
		places int // places hog's executing runs take
	}{
		{"slot", func(j *config.Job, _ *config.Config) {}, 1},
		{"key", func(j *config.Job, _ *config.Config) { j.ConcurrencyKey = "k" }, 1},
		{"resource", func(j *config.Job, cfg *config.Config) {
			cfg.Resources = append(cfg.Resources, config.Resource{Name: "one", Limit: 1})
			j.Resources = []string{"one"}
			j.MaxConcurrency = 2
		}, 1},
		{"rate", func(j *config.Job, _ *config.Config) {
			j.Rate = &config.Rate{Count: 1, Per: config.Duration(time.Hour)}
			j.MaxConcurrency = 2
		}, 1},
		{"shard", func(j *config.Job, _ *config.Config) { j.Shards = 2 }, 2},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			etcd := startEtcd(t)
			w := startWitness(t)
			hog := httpJob("hog", "@every 1s", w.url("sleep=5m"))
			hog.Overlap = config.OverlapQueue
			hog.QueueLimit = 3
			hog.StartingDeadline = config.Duration(5 * time.Minute) // waiting runs stay waiting
			cfg := newConfig()
			row.hog(&hog, cfg)
			jobs := newConfig(hog, httpJob("tick", "@every 1s", w.url(""))).Jobs
			cfg.Jobs = jobs
			cfg.Worker.MaxParallel = row.places + 1
			n := etcd.leading("a", cfg)

			poll.For(t, 30*time.Second, "hog's runs executing", func() bool { return w.maxConcurrent("hog") >= row.places })
			from := time.Now().Add(time.Second).Truncate(time.Second)
			const ticks = 6
			poll.Until(t, 60*time.Second, fmt.Sprintf("%d ticks of tick recorded after %s", ticks, from.Format(time.TimeOnly)), func() (bool, string) {
				got := ticksAfter(t, n, "tick", from)
				return len(got) >= ticks, fmt.Sprintf("%d recorded", len(got))
			})
			got := ticksAfter(t, n, "tick", from)
			for i, r := range got {
				if r.Outcome != runs.Succeeded {
					t.Errorf("%s: %s (%s)", r.RunID, r.Outcome, r.Error)
				}
				if i > 0 && r.ScheduledAt.Sub(got[i-1].ScheduledAt) != time.Second {
					t.Errorf("no record between %s and %s", got[i-1].RunID, r.RunID)
				}
			}
			if done := w.finished("hog"); len(done) > 0 {
				t.Fatalf("a run of hog ended (%v): the test did not hold its places", done[0].End)
			}
			if waiting(t, n, "hog") == 0 {
				t.Error("no run of hog waits: the test did not try what it is for")
			}
		})
	}
}

// ticksAfter are job's records of ticks scheduled after from, in time
// order.
func ticksAfter(t *testing.T, n *node, job string, from time.Time) []runs.Record {
	t.Helper()
	var out []runs.Record
	for _, r := range records(t, n.client, job) {
		if !r.ScheduledAt.Before(from) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ScheduledAt.Before(out[j].ScheduledAt) })
	return out
}

// A replica killed with runs claimed ahead of their instant started none
// of them: they are late, not lost (docs/protocol.md, "Start marks").
// Three replicas, 30 jobs every second, no retries; a replica that is not
// the leader is killed 150ms before a whole second, after its claims of
// that second's runs (a quarter second ahead). Every record lost names a
// run scheduled before the kill; the second after the kill runs whole,
// the killed replica's share of it on the replicas that stay (taken over
// from it a Backup late). Without start marks that share was recorded
// lost. The jobs catch up all their ticks: under catch_up latest a
// take-over that comes more than a second late (a loaded machine: the
// backups take up their own runs of that second first) is rightly shed
// for the job's next tick (docs/protocol.md, "Shedding"), which is not
// what this test asks about; nor is a take-over a whole second late that
// finds its slot held by the job's next tick, claimed ahead, and is skipped
// for the overlap (CI, 2026-12-01: take-overs 1.0 s late): the jobs have
// two slots.
func TestAKilledReplicasClaimedAheadRunsAreLateNotLost(t *testing.T) {
	t.Parallel()
	etcd := startEtcd(t)
	w := startWitness(t)
	jobs := everySecond(w, 30)
	for i := range jobs {
		jobs[i].CatchUp = config.CatchUpAll
		jobs[i].MaxConcurrency = 2
	}
	cfg := newConfig(jobs...)
	nodes := etcd.nodes(cfg, "a", "b", "c")
	leader := leaderOf(t, nodes)
	victim, next, share, killedAt := killBeforeInstant(t, except(nodes, leader))

	awaitRecordsAt(t, leader, jobs, next, 90*time.Second, "the tick after the kill")
	// The leader resolves what the victim left once its lease is gone:
	// wait for that, so its records count too.
	layout := keys.New(testPrefix)
	poll.Until(t, 90*time.Second, victim.id+"'s member key, assignments and markers gone", func() (bool, string) {
		n := 0
		for _, p := range []string{layout.Member(victim.id), layout.ReplicaAssignments(victim.id), layout.Claimed() + victim.id + "."} {
			resp, err := leader.client.Get(t.Context(), p, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return false, err.Error()
			}
			n += int(resp.Count)
		}
		return n == 0, fmt.Sprintf("%d keys", n)
	})
	for _, j := range jobs {
		for _, r := range records(t, leader.client, j.Name) {
			if r.Outcome == runs.Lost && r.ScheduledAt.After(killedAt) {
				t.Errorf("%s recorded lost, scheduled %s after its holder was killed: it cannot have started (%s)",
					r.RunID, r.ScheduledAt.Sub(killedAt), r.Error)
			}
		}
		r := records(t, leader.client, j.Name)[runs.ID(j.Name, next)]
		if r.Outcome != runs.Succeeded {
			t.Errorf("%s: %s (%s)", r.RunID, r.Outcome, r.Error)
		}
		if share[j.Name] {
			t.Logf("%s: %s by %s, %s after its instant", r.RunID, r.Outcome, r.Holder, r.StartedAt.Sub(next))
			if r.Holder == victim.id {
				t.Errorf("%s recorded by %s, which was killed before its instant", r.RunID, victim.id)
			}
		}
	}
	if len(share) == 0 {
		t.Errorf("%s had no run of %s when it was killed, and the test tried nothing", victim.id, next.Format(time.TimeOnly))
	}
}

// killBeforeInstant kills one of victims 150ms before an instant it has
// runs assigned at, and returns it, the instant, its jobs then and when
// it was killed. A kill that comes at or after the instant (the test's
// machine stalled; CI, 2026-12-01, found the share recorded lost, which is
// what a kill after its marks leaves) proves nothing about runs claimed
// ahead, so the next victim is tried; the runs such a kill leaves are its
// own second's, scheduled before it.
func killBeforeInstant(t *testing.T, victims []*node) (*node, time.Time, map[string]bool, time.Time) {
	t.Helper()
	for _, victim := range victims {
		next := assignedAhead(t, victim)
		share := assignedAt(t, victim, next)                        // before the wait: nothing but the kill in its last 150ms
		<-time.After(time.Until(next.Add(-150 * time.Millisecond))) // the fault's instant, not a wait for a condition
		killedAt := time.Now()
		victim.crash()
		if killedAt.Before(next) {
			return victim, next, share, killedAt
		}
		t.Logf("%s was killed %s after its instant %s, not before it: trying the next replica", victim.id, killedAt.Sub(next), next.Format(time.TimeOnly))
	}
	t.Fatal("every kill came after its instant: the machine stalled each time")
	return nil, time.Time{}, nil, time.Time{}
}

// assignedAt is the jobs of n's assignments at the instant at.
func assignedAt(t *testing.T, n *node, at time.Time) map[string]bool {
	t.Helper()
	layout := keys.New(testPrefix)
	resp, err := n.client.Get(t.Context(), layout.ReplicaAssignments(n.id), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]bool{}
	for _, kv := range resp.Kvs {
		a, err := assign.Decode(layout, string(kv.Key), kv.Value)
		if err != nil || !a.At.Equal(at) {
			continue
		}
		for _, j := range a.Jobs {
			jobs[j.Name] = true
		}
	}
	return jobs
}

// assignedAhead is the instant of n's earliest assignment due 2s or more
// from now, once there is one. The first ticks of a new cluster take the
// queue path (written before every replica was a member).
func assignedAhead(t *testing.T, n *node) time.Time {
	t.Helper()
	var next time.Time
	poll.Until(t, 60*time.Second, "an assignment of "+n.id+" 2s ahead", func() (bool, string) {
		next = time.Time{}
		resp, err := n.client.Get(t.Context(), keys.New(testPrefix).ReplicaAssignments(n.id), clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return false, err.Error()
		}
		for _, kv := range resp.Kvs {
			_, at, _, ok := keys.New(testPrefix).ParseAssignment(string(kv.Key))
			if ok && time.Until(at) > 2*time.Second && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
		return !next.IsZero(), fmt.Sprintf("%d assignments", len(resp.Kvs))
	})
	return next
}

// A replica that stops starts nothing after it says so: three replicas,
// 30 jobs every second; a replica that is not the leader stops (a graceful
// shutdown, as on SIGTERM) 150ms before a whole second whose runs it has
// claimed ahead. It hands them, not started, to a replica that stays, and
// no run of that second or later reaches the target from it; every tick
// of that second succeeds. Without the hand-off it started them at the
// second, after its log said it had stopped claiming.
func TestAStoppingReplicaStartsNothingAfterItStops(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	jobs := everySecond(w, 30)
	nodes := etcd.nodes(newConfig(jobs...), "a", "b", "c")
	leader := leaderOf(t, nodes)
	victim := except(nodes, leader)[0]
	next := assignedAhead(t, victim)
	<-time.After(time.Until(next.Add(-150 * time.Millisecond))) // the stop's instant, not a wait for a condition
	victim.stop(10 * time.Second)

	awaitRecordsAt(t, leader, jobs, next, 60*time.Second, "the second after the stop")
	for _, j := range jobs {
		if r := records(t, leader.client, j.Name)[runs.ID(j.Name, next)]; r.Outcome != runs.Succeeded {
			t.Errorf("%s: %s (%s)", r.RunID, r.Outcome, r.Error)
		}
		for _, h := range w.finished(j.Name) {
			if h.Holder == victim.id && !h.Scheduled.Before(next) {
				t.Errorf("%s reached the target from %s at %s, after it stopped at %s",
					h.RunID, victim.id, h.Start.Format(time.TimeOnly+".000"), next.Add(-150*time.Millisecond).Format(time.TimeOnly+".000"))
			}
		}
	}
}

// everySecond is n jobs every second, targets at w.
func everySecond(w *witness, n int) []config.Job {
	var jobs []config.Job
	for i := range n {
		jobs = append(jobs, httpJob(fmt.Sprintf("j%02d", i), "@every 1s", w.url("")))
	}
	return jobs
}

// awaitRecordsAt waits until each of jobs has its record of the tick at
// at, read through n's client.
func awaitRecordsAt(t *testing.T, n *node, jobs []config.Job, at time.Time, within time.Duration, what string) {
	t.Helper()
	poll.Until(t, within, "every job's record of "+what, func() (bool, string) {
		missing := 0
		for _, j := range jobs {
			if _, ok := records(t, n.client, j.Name)[runs.ID(j.Name, at)]; !ok {
				missing++
			}
		}
		return missing == 0, fmt.Sprintf("%d missing", missing)
	})
}
