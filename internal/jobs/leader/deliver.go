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

// deliverer is the actor that delivers the outbox for one term. Its state
// is its own goroutine's (Run): no lock.
type deliverer struct {
	*base
	sender  *notify.Sender
	results chan delivered
	wg      sync.WaitGroup
	state   map[string]*attempt
	done    map[string]int64 // deleted by this leader, at this revision: the view may lag
	busy    map[string]int   // sink -> requests in flight
}

func newDeliverer(b *base) *deliverer {
	return &deliverer{base: b, results: make(chan delivered), state: map[string]*attempt{}, done: map[string]int64{}, busy: map[string]int{}}
}

// Run delivers the outbox until ctx ends or the term is over; it returns
// once its requests have.
func (dl *deliverer) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer dl.wg.Wait()
	defer cancel()
	dl.sender = dl.d.Sender
	if dl.sender == nil {
		dl.sender = notify.NewSender(deliverTimeout)
	}
	timer := dl.d.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		changed := dl.d.Outbox.Changed()
		now := dl.d.Clock.Now()
		wake, err := dl.look(ctx, now)
		if err != nil {
			return err
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
		case r := <-dl.results:
			if err := dl.settle(r); err != nil {
				return err
			}
		}
	}
}

// look goes over the outbox once: it drops what is too old, sends what is
// due where its sink has room, forgets what left the outbox, and returns
// when the next retry is due (zero: none).
func (dl *deliverer) look(ctx context.Context, now time.Time) (wake time.Time, err error) {
	cfg := dl.d.Config()
	maxAge := cfg.Notify.MaxAge.D()
	if maxAge <= 0 {
		maxAge = config.DefaultNotifyMaxAge
	}
	live := map[string]bool{}
	for _, w := range dl.d.Outbox.List() {
		live[w.Key] = true
		if dl.done[w.Key] == w.ModRev {
			continue
		}
		st := dl.state[w.Key]
		if st == nil {
			st = &attempt{}
			dl.state[w.Key] = st
		}
		if st.inFlight {
			continue
		}
		if now.Sub(w.CreatedAt) > maxAge {
			if err := dl.dropNotification(ctx, w, st, maxAge); err != nil {
				return time.Time{}, err
			}
			dl.done[w.Key] = w.ModRev
			continue
		}
		if now.Before(st.next) {
			if wake.IsZero() || st.next.Before(wake) {
				wake = st.next
			}
			continue
		}
		if dl.busy[w.Sink] >= deliverPerSink {
			continue // a result frees a slot and wakes the loop
		}
		dl.send(ctx, cfg.Sink(w.Sink), w, st)
	}
	dl.forget(live)
	return wake, nil
}

// send posts w in a goroutine of its own, whose result Run settles.
func (dl *deliverer) send(ctx context.Context, sink *config.Sink, w *outbox.Waiting, st *attempt) {
	st.inFlight = true
	dl.busy[w.Sink]++
	dl.wg.Add(1)
	go func() {
		defer dl.wg.Done()
		r := delivered{w: w, err: dl.post(ctx, dl.sender, sink, w)}
		select {
		case dl.results <- r:
		case <-ctx.Done():
		}
	}()
}

// forget drops the state of notifications no longer in the outbox.
func (dl *deliverer) forget(live map[string]bool) {
	for k := range dl.state {
		if !live[k] && !dl.state[k].inFlight {
			delete(dl.state, k)
		}
	}
	for k := range dl.done {
		if !live[k] {
			delete(dl.done, k)
		}
	}
}

// settle takes the result of one request: delivered, gone meanwhile, or
// to retry after a backoff. errNotLeader ends the term's delivery.
func (dl *deliverer) settle(r delivered) error {
	dl.busy[r.w.Sink]--
	st := dl.state[r.w.Key]
	st.inFlight = false
	switch {
	case r.err == nil:
		dl.done[r.w.Key] = r.w.ModRev
		dl.d.Metrics.Notifications.WithLabelValues(r.w.Sink, "delivered").Inc()
		dl.d.Log.Debug("notification delivered", "sink", r.w.Sink, "id", r.w.ID, "job", r.w.Record.Job, "run_id", r.w.Record.RunID)
	case errors.Is(r.err, errNotLeader):
		return errNotLeader
	case errors.Is(r.err, errGone):
		dl.done[r.w.Key] = r.w.ModRev // rewritten or deleted meanwhile
	default:
		st.tries++
		st.lastErr = r.err
		st.next = dl.d.Clock.Now().Add(deliverRetry.Delay(st.tries))
		dl.d.Metrics.Notifications.WithLabelValues(r.w.Sink, "retried").Inc()
		dl.d.Log.Debug("notification not delivered; will retry", "sink", r.w.Sink, "id", r.w.ID, "tries", st.tries, "err", r.err)
	}
	return nil
}

// errGone: the notification's key changed since it was read.
var errGone = errors.New("leader: notification gone")

var errNoSink = errors.New("sink not in the leader's configuration")

// post delivers w to sink and deletes it once the sink took it.
func (dl *deliverer) post(ctx context.Context, sender *notify.Sender, sink *config.Sink, w *outbox.Waiting) error {
	if sink == nil {
		return errNoSink
	}
	if err := sender.Post(ctx, sink, w.Notification); err != nil {
		return err
	}
	return dl.deleteNotification(ctx, w)
}

// deleteNotification deletes w if it is still as read, fenced by the term.
func (dl *deliverer) deleteNotification(ctx context.Context, w *outbox.Waiting) error {
	resp, err := dl.d.Client.Txn(ctx).If(
		dl.fence,
		clientv3.Compare(clientv3.ModRevision(w.Key), "=", w.ModRev),
	).Then(clientv3.OpDelete(w.Key)).Else(clientv3.OpGet(dl.term.Key)).Commit()
	switch {
	case err != nil:
		return err // delivered but not deleted: sent again, with the same id
	case resp.Succeeded:
		return nil
	case dl.fenceGone(resp):
		return errNotLeader
	default:
		return errGone
	}
}

// dropNotification gives up on w: older than max_age.
func (dl *deliverer) dropNotification(ctx context.Context, w *outbox.Waiting, st *attempt, maxAge time.Duration) error {
	err := dl.deleteNotification(ctx, w)
	switch {
	case errors.Is(err, errNotLeader):
		return err
	case errors.Is(err, errGone), err == nil:
	default:
		return nil // tried again at the next look
	}
	if err == nil {
		dl.d.Metrics.Notifications.WithLabelValues(w.Sink, "dropped").Inc()
		dl.d.Log.Warn("notification dropped: not delivered within notify.max_age", "sink", w.Sink, "id", w.ID,
			"job", w.Record.Job, "run_id", w.Record.RunID, "max_age", maxAge, "tries", st.tries, "last_err", st.lastErr)
	}
	return nil
}
