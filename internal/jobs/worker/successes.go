package worker

import (
	"bytes"
	"context"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/overdue"
)

// successEvery is how often at most this worker puts one job's last
// success (keys.LastSuccess), and how far behind the stored one may be.
const successEvery = 10 * time.Second

// successTick is the least time between two looks for successes due:
// a look goes over every job that succeeded here lately.
const successTick = time.Second

// successesPerTxn is the most deferred successes one transaction puts,
// each a nested transaction (etcd's --max-txn-ops is 128 by default).
const successesPerTxn = 100

// successes puts a job's last success at most once per successEvery from
// this worker (docs/protocol.md#last-successes): the first success of a
// job in that time is put by its run's release, as every success's was;
// the later ones wait, the newest replacing the older, and the newest is
// put successEvery after it ended, unless a later success's release put
// one first (the job's first here once the time since the last put is
// over). So the stored success is never more than successEvery behind the
// newest, and a job succeeding here every few seconds costs one put in
// successEvery, whichever of the workers its ticks go to (rendezvous by
// run id). A waiting success is put only while the key was last written
// before its run's release (its revision), or since by a success that
// ended before it: another worker's later success, put since, stays. The
// drain puts what waits; a worker killed loses it, and the stored success
// is then the one before it, at most successEvery older. Releases whose
// writes nest the put (a sharded tick's fan-in), those of a job with
// overdue_after (its overdue gauge clears on the put, its notifications
// name the last success) and those while a member reads successes under
// jobs/ put every success (execute.go).
type successes struct {
	d Deps

	mu      sync.Mutex
	jobs    map[string]*jobSuccess
	waiting int // jobs with a success waiting
	// wake is signalled when a success starts waiting with none before:
	// Run, with nothing to put, may be asleep for successEvery.
	wake chan struct{}
}

// jobSuccess is one job's: when this worker last put its success, and
// the success waiting to be put.
type jobSuccess struct {
	put     time.Time
	waiting *waitingSuccess
}

type waitingSuccess struct {
	key, value string
	rev        int64     // its run's release: the put compares the key older
	due        time.Time // successEvery after it waited
}

func newSuccesses(d Deps) *successes {
	return &successes{d: d, jobs: map[string]*jobSuccess{}, wake: make(chan struct{}, 1)}
}

// take decides the last success among ops, a release's writes for a
// succeeded run of job at now: kept in ops when its time since the last
// put is over (a waiting one is then superseded), or taken out and
// returned to wait (keep it with wait once the release applied).
func (s *successes) take(job, key string, ops []clientv3.Op, now time.Time) ([]clientv3.Op, *clientv3.Op) {
	at := -1
	for i, op := range ops {
		if op.IsPut() && bytes.Equal(op.KeyBytes(), []byte(key)) {
			at = i
			break
		}
	}
	if at < 0 {
		return ops, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	js := s.jobs[job]
	if js == nil || now.Sub(js.put) >= successEvery {
		if js != nil && js.waiting != nil { // superseded by this put
			s.waiting--
		}
		s.jobs[job] = &jobSuccess{put: now}
		return ops, nil
	}
	op := ops[at]
	rest := make([]clientv3.Op, 0, len(ops)-1)
	return append(append(rest, ops[:at]...), ops[at+1:]...), &op
}

// wait keeps op, taken out of a release that applied at rev, for
// successEvery, unless a later success of the job is put first. A release
// read back (rev 0) leaves its success to the job's next.
func (s *successes) wait(job string, op *clientv3.Op, rev int64) {
	if rev == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	js := s.jobs[job]
	if js == nil { // forgotten meanwhile: its time since the last put was over
		js = &jobSuccess{}
		s.jobs[job] = js
	}
	if js.waiting != nil && js.waiting.rev > rev {
		return // a later one waits
	}
	if js.waiting == nil {
		s.waiting++
	}
	due := s.d.Clock.Now().Add(successEvery)
	js.waiting = &waitingSuccess{key: string(op.KeyBytes()), value: string(op.ValueBytes()), rev: rev, due: due}
	if s.waiting == 1 {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// due takes the successes waiting past now (every one with all), and
// forgets the jobs with nothing waiting whose time is over. next is the
// earliest due of those left (zero: none).
func (s *successes) due(now time.Time, all bool) (due []*waitingSuccess, next time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for job, js := range s.jobs {
		w := js.waiting
		switch {
		case w != nil && (all || !now.Before(w.due)):
			due = append(due, w)
			js.waiting, js.put = nil, now
			s.waiting--
		case w != nil:
			if next.IsZero() || w.due.Before(next) {
				next = w.due
			}
		case now.Sub(js.put) >= successEvery:
			delete(s.jobs, job)
		}
	}
	return due, next
}

// Run puts the waiting successes as they come due, until ctx ends. A put
// it took out is finished when ctx ends meanwhile (bounded by a session
// TTL), and what still waits is left to the drain's flush.
func (s *successes) Run(ctx context.Context) {
	timer := s.d.Clock.NewTimer(successEvery)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-timer.Chan():
		}
		if ctx.Err() != nil {
			return
		}
		due, next := s.due(s.d.Clock.Now(), false)
		if len(due) > 0 {
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.d.Config().Cluster.SessionTTL.D())
			s.put(pctx, due)
			cancel()
		}
		wait := successEvery
		if !next.IsZero() {
			wait = min(max(next.Sub(s.d.Clock.Now()), successTick), successEvery)
		}
		timer.Reset(wait)
	}
}

// flush puts every waiting success: the drain's, once the runs ended.
func (s *successes) flush(ctx context.Context) {
	due, _ := s.due(s.d.Clock.Now(), true)
	s.put(ctx, due)
}

// put writes due, each only where its key was last written before its
// run's release, or since by a success that ended before it (another
// worker's, that waited too and was put late): a put refused reads the key
// in the same transaction, and one that holds an older success is put
// over once, compared on that read. A key gone (its job removed) is not
// put again. What etcd does not take is lost, not retried: the job's next
// success is put in its place.
func (s *successes) put(ctx context.Context, due []*waitingSuccess) {
	for len(due) > 0 {
		batch := due[:min(len(due), successesPerTxn)]
		due = due[len(batch):]
		ops := make([]clientv3.Op, len(batch))
		for i, w := range batch {
			ops[i] = clientv3.OpTxn([]clientv3.Cmp{
				clientv3.Compare(clientv3.ModRevision(w.key), "<", w.rev),
				clientv3.Compare(clientv3.CreateRevision(w.key), ">", 0),
			}, []clientv3.Op{clientv3.OpPut(w.key, w.value)}, []clientv3.Op{clientv3.OpGet(w.key)})
		}
		resp, err := s.d.Client.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			s.d.Log.Warn("putting jobs' last successes failed; their next successes will be", "jobs", len(batch), "err", err)
			continue
		}
		s.putOverOlder(ctx, batch, resp.Responses)
	}
}

// putOverOlder puts each of batch whose put was refused over the success
// its key held then, if that one ended before it.
func (s *successes) putOverOlder(ctx context.Context, batch []*waitingSuccess, answers []*etcdserverpb.ResponseOp) {
	var ops []clientv3.Op
	for i, a := range answers {
		t := a.GetResponseTxn()
		if t == nil || t.Succeeded || len(t.Responses) == 0 {
			continue
		}
		kvs := t.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 || !endedBefore(kvs[0].Value, batch[i].value) {
			continue
		}
		ops = append(ops, clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(batch[i].key), "=", kvs[0].ModRevision)},
			[]clientv3.Op{clientv3.OpPut(batch[i].key, batch[i].value)}, nil))
	}
	if len(ops) == 0 {
		return
	}
	if _, err := s.d.Client.Txn(ctx).Then(ops...).Commit(); err != nil {
		s.d.Log.Warn("putting jobs' last successes over older ones failed; their next successes will be", "jobs", len(ops), "err", err)
	}
}

// endedBefore reports whether the success stored ended before ours; a
// value it cannot read is taken for newer.
func endedBefore(stored []byte, ours string) bool {
	a, ok := overdue.Decode[overdue.Succeeded](stored)
	b, ok2 := overdue.Decode[overdue.Succeeded]([]byte(ours))
	return ok && ok2 && a.EndedAt.Before(b.EndedAt)
}
