package worker

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/session"
)

// A lean run takes its place under max_parallel before its claim is sent
// (reserve, claimLater) and gives it back when it ends or is refused. With
// no place free it waits (awaitPlace) until one frees, or until its tick
// is shedAfter late: then what is late is shed and the rest wait again.

// woke says why awaitPlace returned.
type woke int

const (
	placeFreed woke = iota // a place freed: try again
	becameLate             // shedAfter passed the instant: shed what is late
	waitEnded              // ctx or the session ended
)

// shedTimer fires shedAfter past at; none (nil, a no-op stop) when that
// has passed already.
func shedTimer(clock clockwork.Clock, at time.Time) (<-chan time.Time, func()) {
	d := at.Add(shedAfter).Sub(clock.Now())
	if d <= 0 {
		return nil, func() {}
	}
	t := clock.NewTimer(d + time.Millisecond)
	return t.Chan(), func() { t.Stop() }
}

// awaitPlace waits for freed (a place freed), late or the end of ctx or
// the session, whichever comes first.
func awaitPlace(ctx context.Context, sess *session.Session, freed <-chan struct{}, late <-chan time.Time) woke {
	select {
	case <-ctx.Done():
		return waitEnded
	case <-sess.Done():
		return waitEnded
	case <-late:
		return becameLate
	case <-freed:
		return placeFreed
	}
}

// reserve waits for room under max_parallel and counts up to maxChunk of
// jobs' runs as active, in order. It returns none, alive, when st becomes
// shedAfter late while it waits (the caller sheds what is late and asks
// again), and none, not alive, when ctx or the session ends first.
func (a *assignedRunner) reserve(ctx context.Context, sess *session.Session, st *assign.Stored, jobs []assign.Job) ([]assign.Job, bool) {
	var late <-chan time.Time // armed at the first wait: a chunk with room takes no timer
	armed := false
	for {
		n, freed := a.core.takePlaces(min(maxChunk, len(jobs)), func(i int) string { return st.RunID(jobs[i].Name) })
		if n > 0 {
			return jobs[:n], true
		}
		if !armed {
			armed = true
			var stop func()
			late, stop = shedTimer(a.d.Clock, st.At)
			defer stop()
		}
		switch awaitPlace(ctx, sess, freed, late) {
		case waitEnded:
			return nil, false
		case becameLate:
			return nil, true
		}
	}
}
