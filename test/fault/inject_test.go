package fault

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/test/cluster"
)

type faultKind string

const (
	killLeader      faultKind = "kill-leader"      // SIGKILL the leader replica, restart it
	stopLeader      faultKind = "stop-leader"      // SIGSTOP the leader for 2×TTL
	stopWorker      faultKind = "stop-worker"      // SIGSTOP a replica holding a slot for 2×TTL
	partition       faultKind = "partition"        // pause a slot holder's proxies for 2×TTL
	partitionLeader faultKind = "partition-leader" // the same for the leader
	killEtcdMember  faultKind = "kill-etcd-member" // SIGKILL a follower member, restart it
	killEtcdLeader  faultKind = "kill-etcd-leader" // SIGKILL the raft leader, restart it
	etcdDown        faultKind = "etcd-down"        // SIGKILL every member for 2×TTL
	slowLink        faultKind = "slow-link"        // TTL/8 each way on a replica's etcd traffic
)

// injected is one fault as it happened.
type injected struct {
	kind     faultKind
	target   string
	start    time.Time
	end      time.Time     // healed
	leader   bool          // scheduling had to move or wait: a failover window
	failover time.Duration // leader faults: to the new leader's first tick write
}

// failover measures from t0 to the first tick written by a leader other
// than old, as the witness's own watch saw it.
func (r *runner) failover(t0 time.Time, old string) time.Duration {
	obs := r.w.Observer()
	var took time.Duration
	r.waitFor(60*time.Second, "a new leader to write ticks", func() bool {
		for _, lc := range obs.Leaders() {
			if lc.At.After(t0) && lc.ID != "" && lc.ID != old {
				if at := obs.FirstCursorWriteAfter(lc.At); !at.IsZero() {
					took = at.Sub(t0)
					return true
				}
			}
		}
		return false
	})
	return took
}

// killAndRestart SIGKILLs the leader l, waits for the next one's first
// tick and starts l again: the kill's window, for the checker, runs to
// then.
func (r *runner) killAndRestart(f *injected, l *cluster.Replica, must func(error)) {
	f.target, f.leader, f.start = l.ID, true, time.Now()
	must(l.Kill())
	f.failover = r.failover(f.start, l.ID)
	must(l.Start())
	r.kills = append(r.kills, Kill{Holder: l.ID, Window: Window{f.start, time.Now()}})
}

func (r *runner) inject(kind faultKind) injected {
	r.t.Helper()
	ttl := r.sc.ttl
	f := injected{kind: kind}
	must := func(err error) {
		r.t.Helper()
		if err != nil {
			r.t.Fatalf("%s: %v", kind, err)
		}
	}
	switch kind {
	case killLeader:
		r.killAndRestart(&f, r.leader(), must)
	case stopLeader:
		l := r.leader()
		f.target, f.leader, f.start = l.ID, true, time.Now()
		must(l.Stop())
		f.failover = r.failover(f.start, l.ID)
		r.hold(time.Until(f.start.Add(2 * ttl)))
		must(l.Cont())
		r.freezes = append(r.freezes, Freeze{Holder: l.ID, Window: Window{f.start, time.Now()}})
	case stopWorker:
		h, _ := r.holder()
		f.target, f.start = h.ID, time.Now()
		must(h.Stop())
		r.hold(2 * ttl)
		must(h.Cont())
		r.freezes = append(r.freezes, Freeze{Holder: h.ID, Window: Window{f.start, time.Now()}})
	case partition, partitionLeader:
		l := r.leader()
		h := l
		if kind == partition {
			h, l = r.holder()
		}
		f.target, f.leader, f.start = h.ID, h == l, time.Now()
		h.PauseProxy()
		r.hold(2 * ttl)
		h.ResumeProxy()
	case slowLink:
		h := r.c.Replicas[r.rng.IntN(len(r.c.Replicas))]
		f.target, f.start = h.ID, time.Now()
		h.DelayProxy(ttl/8, ttl/8)
		r.hold(2 * ttl)
		h.DelayProxy(0, 0)
	case killEtcdMember, killEtcdLeader:
		ctx, cancel := r.ctx(30 * time.Second)
		el, err := r.c.EtcdLeader(ctx)
		cancel()
		must(err)
		m := el
		if kind == killEtcdMember {
			others := slices.DeleteFunc(slices.Clone(r.c.Members), func(x *cluster.Member) bool { return x == el })
			m = others[r.rng.IntN(len(others))]
		}
		f.target, f.leader, f.start = m.Name, kind == killEtcdLeader, time.Now()
		must(m.Kill())
		r.hold(ttl)
		must(m.Restart())
		ctx, cancel = r.ctx(60 * time.Second)
		must(m.WaitHealthy(ctx))
		cancel()
	case etcdDown:
		f.target, f.leader, f.start = "all members", true, time.Now()
		must(r.c.KillEtcd())
		r.checkNotReady(f.start)
		r.hold(time.Until(f.start.Add(2 * ttl)))
		// The store is down until the members restart: from then on a
		// quorum may serve (and runs may rightly start) before the last
		// member answers the health check below.
		restarting := time.Now()
		ctx, cancel := r.ctx(90 * time.Second)
		must(r.c.StartEtcd(ctx))
		cancel()
		up := time.Now()
		r.etcdDown = append(r.etcdDown, Window{f.start, restarting})
		ctx, cancel = r.ctx(60 * time.Second)
		run, err := r.w.WaitRun(ctx, func(x *cluster.Run) bool { return x.Start.After(up) && !x.Rejected })
		cancel()
		if err != nil {
			r.problems = append(r.problems, fmt.Sprintf("etcd down: no run started within 60s of etcd's return at %s", up.Format("15:04:05.000")))
		} else {
			r.resumes = append(r.resumes, run.Start.Sub(up))
		}
	default:
		if !r.injectEdge(&f, must) && !r.injectRoll(&f, must) && !r.injectReload(&f, must) {
			r.t.Fatalf("unknown fault %q", kind)
		}
	}
	f.end = time.Now()
	return f
}

// checkNotReady: with the store down every replica keeps running and
// answers /readyz with 503 within the session's TTL (plus slack for a slow
// machine).
func (r *runner) checkNotReady(since time.Time) {
	deadline := since.Add(r.sc.ttl + 10*time.Second)
	for _, rep := range r.c.Replicas {
		var err error
		if !poll.Within(time.Until(deadline), func() bool {
			ctx, cancel := r.ctx(3 * time.Second)
			err = rep.API.Ready(ctx)
			cancel()
			e, ok := client.AsError(err)
			return ok && e.Status == http.StatusServiceUnavailable
		}) {
			got := "200 OK"
			if err != nil {
				got = err.Error()
			}
			r.problems = append(r.problems, fmt.Sprintf("etcd down: %s /readyz answered %s %s after every member was killed; want 503",
				rep.ID, got, time.Since(since).Round(time.Millisecond)))
		}
		if !rep.Running() {
			r.problems = append(r.problems, fmt.Sprintf("etcd down: replica %s exited", rep.ID))
		}
	}
}
