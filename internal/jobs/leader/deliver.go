package leader

import (
	"context"
	"errors"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/backoff"
	"github.com/etcdsched/scheduler/internal/jobs/outbox"
	"github.com/etcdsched/scheduler/internal/notify"
)

// Delivery of the outbox (docs/notify.md#notify): every notification is POSTed
// until its sink answers 2xx, then deleted by a write fenced by the term;
// one older than notify.max_age is deleted unsent and counted dropped. A
// new leader finds in etcd whatever the old one had not deleted, so each
// notification reaches its sink at least once; without faults, once.

const (
	// deliverPerSink bounds the requests in flight to one sink: a sink that
	// hangs holds its own slots only, never another sink's.
	deliverPerSink = 4
	// deliverTimeout bounds one request.
	deliverTimeout = 10 * time.Second
)

// deliverRetry spaces one notification's tries: 250ms passes over a sink's
// restart, 30s bounds how late a sink that was down for long hears of its
// runs; a fifth of each delay is random, so the notifications that failed
// together (a sink that was down) do not all arrive again at once.
var deliverRetry = backoff.Policy{Min: 250 * time.Millisecond, Max: 30 * time.Second, Jitter: 0.2}

// attempt is what the leader knows of one notification's delivery in this
// term.
type attempt struct {
	tries    int
	next     time.Time
	inFlight bool
	lastErr  error
}

// delivered is the outcome of one request.
type delivered struct {
	w   *outbox.Waiting
	err error // nil: the sink answered 2xx and the key is deleted
}

func (l *leader) deliver(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	sender := l.d.Sender
	if sender == nil {
		sender = notify.NewSender(deliverTimeout)
	}
	results := make(chan delivered)
	state := map[string]*attempt{}
	done := map[string]int64{} // deleted by this leader, at this revision: the view may lag
	busy := map[string]int{}   // sink -> requests in flight
	timer := l.d.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		changed := l.d.Outbox.Changed()
		cfg := l.d.Config()
		maxAge := cfg.Notify.MaxAge.D()
		if maxAge <= 0 {
			maxAge = config.DefaultNotifyMaxAge
		}
		now := l.d.Clock.Now()
		wake := time.Time{}
		live := map[string]bool{}
		for _, w := range l.d.Outbox.List() {
			live[w.Key] = true
			if done[w.Key] == w.ModRev {
				continue
			}
			st := state[w.Key]
			if st == nil {
				st = &attempt{}
				state[w.Key] = st
			}
			if st.inFlight {
				continue
			}
			if now.Sub(w.CreatedAt) > maxAge {
				if err := l.dropNotification(ctx, w, st, maxAge); err != nil {
					return err
				}
				done[w.Key] = w.ModRev
				continue
			}
			if now.Before(st.next) {
				if wake.IsZero() || st.next.Before(wake) {
					wake = st.next
				}
				continue
			}
			if busy[w.Sink] >= deliverPerSink {
				continue // a result frees a slot and wakes the loop
			}
			sink := cfg.Sink(w.Sink)
			st.inFlight = true
			busy[w.Sink]++
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := delivered{w: w, err: l.post(ctx, sender, sink, w)}
				select {
				case results <- r:
				case <-ctx.Done():
				}
			}()
		}
		for k := range state {
			if !live[k] && !state[k].inFlight {
				delete(state, k)
			}
		}
		for k := range done {
			if !live[k] {
				delete(done, k)
			}
		}
		timer.Reset(time.Hour)
		if !wake.IsZero() {
			timer.Reset(max(wake.Sub(now), time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-timer.Chan():
		case r := <-results:
			busy[r.w.Sink]--
			st := state[r.w.Key]
			st.inFlight = false
			switch {
			case r.err == nil:
				done[r.w.Key] = r.w.ModRev
				l.d.Metrics.Notifications.WithLabelValues(r.w.Sink, "delivered").Inc()
				l.d.Log.Debug("notification delivered", "sink", r.w.Sink, "id", r.w.ID, "job", r.w.Record.Job, "run_id", r.w.Record.RunID)
			case errors.Is(r.err, errNotLeader):
				return errNotLeader
			case errors.Is(r.err, errGone):
				done[r.w.Key] = r.w.ModRev // rewritten or deleted meanwhile
			default:
				st.tries++
				st.lastErr = r.err
				st.next = l.d.Clock.Now().Add(deliverRetry.Delay(st.tries))
				l.d.Metrics.Notifications.WithLabelValues(r.w.Sink, "retried").Inc()
				l.d.Log.Debug("notification not delivered; will retry", "sink", r.w.Sink, "id", r.w.ID, "tries", st.tries, "err", r.err)
			}
		}
	}
}

// errGone: the notification's key changed since it was read.
var errGone = errors.New("leader: notification gone")

var errNoSink = errors.New("sink not in the leader's configuration")

// post delivers w to sink and deletes it once the sink took it.
func (l *leader) post(ctx context.Context, sender *notify.Sender, sink *config.Sink, w *outbox.Waiting) error {
	if sink == nil {
		return errNoSink
	}
	if err := sender.Post(ctx, sink, w.Notification); err != nil {
		return err
	}
	return l.deleteNotification(ctx, w)
}

// deleteNotification deletes w if it is still as read, fenced by the term.
func (l *leader) deleteNotification(ctx context.Context, w *outbox.Waiting) error {
	resp, err := l.d.Client.Txn(ctx).If(
		l.fence,
		clientv3.Compare(clientv3.ModRevision(w.Key), "=", w.ModRev),
	).Then(clientv3.OpDelete(w.Key)).Else(clientv3.OpGet(l.term.Key)).Commit()
	switch {
	case err != nil:
		return err // delivered but not deleted: sent again, with the same id
	case resp.Succeeded:
		return nil
	case l.fenceGone(resp):
		return errNotLeader
	default:
		return errGone
	}
}

// dropNotification gives up on w: older than max_age.
func (l *leader) dropNotification(ctx context.Context, w *outbox.Waiting, st *attempt, maxAge time.Duration) error {
	err := l.deleteNotification(ctx, w)
	switch {
	case errors.Is(err, errNotLeader):
		return err
	case errors.Is(err, errGone), err == nil:
	default:
		return nil // tried again at the next look
	}
	if err == nil {
		l.d.Metrics.Notifications.WithLabelValues(w.Sink, "dropped").Inc()
		l.d.Log.Warn("notification dropped: not delivered within notify.max_age", "sink", w.Sink, "id", w.ID,
			"job", w.Record.Job, "run_id", w.Record.RunID, "max_age", maxAge, "tries", st.tries, "last_err", st.lastErr)
	}
	return nil
}
