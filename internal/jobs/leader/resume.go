package leader

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/pause"
)

// A pause with an until ends by itself (docs/design-leader.md#a-pause-ends-at-its-until). Every replica
// counts the job resumed once the clock passes until (pause.View), so
// none depends on this write to stop treating it as paused; the leader
// then ends the pause in etcd, fenced and only if the marker is still the
// one it read, so that the marker says what is true and a pause made
// again meanwhile is not lost: it deletes the marker, or writes
// pause.Resumed where the file says paused.

// resumeExpired ends each pause at its until while the term lasts.
func (l *leader) resumeExpired(ctx context.Context) error {
	timer := l.d.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	retry := roundRetry.Start()
	for {
		changed := l.d.Paused.Changed()
		next, err := l.resumeRound(ctx)
		if err != nil {
			if err == errNotLeader || ctx.Err() != nil {
				return err
			}
			next = l.d.Clock.Now().Add(retry.Next())
			l.d.Log.Warn("ending expired pauses failed; will try again", "err", err, "at", next)
		} else {
			retry.Reset()
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(next.Sub(l.d.Clock.Now()), 0)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-timer.Chan():
		}
	}
}

// resumeRound ends the pauses whose until has passed and returns the next
// until to come (zero: none).
func (l *leader) resumeRound(ctx context.Context) (time.Time, error) {
	now := l.d.Clock.Now()
	var next time.Time
	for _, p := range l.d.Paused.Expiring() {
		if now.Before(p.Until) {
			if next.IsZero() || p.Until.Before(next) {
				next = p.Until
			}
			continue
		}
		key := l.d.Keys.Paused(p.Job)
		end := clientv3.OpDelete(key)
		if j := l.d.Config().Job(p.Job); j != nil && j.Paused {
			end = clientv3.OpPut(key, pause.Resumed)
		}
		ok, err := l.fenced(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", p.Rev)}, end)
		if err != nil {
			return next, err
		}
		if ok {
			l.d.Log.Info("pause ended at its until: job resumed", "job", p.Job, "until", p.Until)
		}
	}
	return next, nil
}
