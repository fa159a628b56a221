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

// resumer is the actor that ends pauses at their until for one term; it
// keeps no state of its own: the pause view says what is paused.
type resumer struct {
	*base
}

// Run ends each pause at its until while the term lasts.
func (r *resumer) Run(ctx context.Context) error {
	timer := r.d.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	retry := roundRetry.Start()
	for {
		changed := r.d.Paused.Changed()
		next, err := r.round(ctx)
		if err != nil {
			if err == errNotLeader || ctx.Err() != nil {
				return err
			}
			next = r.d.Clock.Now().Add(retry.Next())
			r.d.Log.Warn("ending expired pauses failed; will try again", "err", err, "at", next)
		} else {
			retry.Reset()
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(next.Sub(r.d.Clock.Now()), 0)
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

// round ends the pauses whose until has passed and returns the next
// until to come (zero: none).
func (r *resumer) round(ctx context.Context) (time.Time, error) {
	now := r.d.Clock.Now()
	var next time.Time
	for _, p := range r.d.Paused.Expiring() {
		if now.Before(p.Until) {
			if next.IsZero() || p.Until.Before(next) {
				next = p.Until
			}
			continue
		}
		key := r.d.Keys.Paused(p.Job)
		end := clientv3.OpDelete(key)
		if j := r.d.Config().Job(p.Job); j != nil && j.Paused {
			end = clientv3.OpPut(key, pause.Resumed)
		}
		ok, err := r.fenced(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", p.Rev)}, end)
		if err != nil {
			return next, err
		}
		if ok {
			r.d.Log.Info("pause ended at its until: job resumed", "job", p.Job, "until", p.Until)
		}
	}
	return next, nil
}
