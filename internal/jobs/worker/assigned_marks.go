package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
)

// One start mark transaction an instant (docs/protocol.md, "Start
// marks"). The chunks a worker claimed ahead for one instant each mark
// their start at it; sent one by one they queued in etcd behind each
// other, and the last of a replica's five answered 15-20 ms after the
// first (test/bench's burst at 500 jobs). A chunk claimed ahead joins its
// instant's group when its claim answers; at the instant, the first of the
// group's goroutines to ask sends the marks of every member whose session
// lives, in one transaction (assign.Claimer.StartChunks), and each member
// takes its own outcome. A member that joins after its group was sent
// forms a new group. What a mark compares, and so which runs may start,
// is the same alone or in a group.

// startMarks are a worker's groups of marks not sent yet, by instant.
type startMarks struct {
	claimer func() *assign.Claimer
	clock   clockwork.Clock
	log     *slog.Logger
	waited  prometheus.Observer // from the instant to each transaction's answer

	mu     sync.Mutex
	groups map[time.Time]*markGroup
	warned time.Time // the newest instant whose slow marks were warned of
}

type markGroup struct {
	at      time.Time
	members []*markTicket
}

// markTicket is one chunk's place in its group.
type markTicket struct {
	r      *claimRound
	chunk  int
	marker int // the chunk's index in r.markers
	jobs   []string

	group *markGroup    // nil once sent or left; guarded by startMarks.mu
	done  chan struct{} // closed when rev and err are set
	rev   int64
	err   error
}

func newStartMarks(claimer func() *assign.Claimer, clock clockwork.Clock, log *slog.Logger, waited prometheus.Observer) *startMarks {
	return &startMarks{claimer: claimer, clock: clock, log: log, waited: waited, groups: map[time.Time]*markGroup{}}
}

// join adds chunk of r, claimed ahead with jobs, to the group of r's
// instant.
func (m *startMarks) join(r *claimRound, chunk, marker int, jobs []string) *markTicket {
	t := &markTicket{r: r, chunk: chunk, marker: marker, jobs: jobs, done: make(chan struct{})}
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[r.st.At]
	if g == nil {
		g = &markGroup{at: r.st.At}
		m.groups[r.st.At] = g
	}
	g.members = append(g.members, t)
	t.group = g
	return t
}

// leave takes t out of its group unsent; false when it was sent already
// (its outcome is then on its way).
func (m *startMarks) leave(t *markTicket) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := t.group
	if g == nil {
		return false
	}
	t.group = nil
	for i, o := range g.members {
		if o == t {
			g.members = append(g.members[:i], g.members[i+1:]...)
			break
		}
	}
	if len(g.members) == 0 && m.groups[g.at] == g {
		delete(m.groups, g.at)
	}
	return true
}

// mark writes t's start mark, its instant come: with its group's, when
// t's goroutine is the first of them to ask; else it waits for the answer
// of the one that was.
func (m *startMarks) mark(ctx context.Context, t *markTicket) (int64, error) {
	if batch := m.take(t); batch != nil {
		m.send(ctx, batch)
	}
	select {
	case <-t.done:
		return t.rev, t.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// take is t's group's members whose sessions live, when t's group is
// still to be sent (nil otherwise); members whose session ended are
// dropped unsent: their goroutines do not start their runs.
func (m *startMarks) take(t *markTicket) []*markTicket {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := t.group
	if g == nil {
		return nil
	}
	if m.groups[g.at] == g {
		delete(m.groups, g.at)
	}
	var batch []*markTicket
	for _, o := range g.members {
		o.group = nil
		if o == t || o.r.sess.Err() == nil {
			batch = append(batch, o)
		} else {
			o.err = o.r.sess.Err()
			close(o.done)
		}
	}
	return batch
}

// send writes batch's marks, in transactions of at most
// assign.MaxStarts, and hands each its outcome.
func (m *startMarks) send(ctx context.Context, batch []*markTicket) {
	for len(batch) > 0 {
		n := min(len(batch), assign.MaxStarts)
		starts := make([]assign.Start, n)
		for i, t := range batch[:n] {
			starts[i] = t.start()
		}
		at, sent := batch[0].r.st.At, m.clock.Now()
		revs, errs := m.claimer().StartChunks(ctx, starts)
		answered := m.clock.Now()
		m.observe(at, sent, answered, n)
		for i, t := range batch[:n] {
			t.rev, t.err = revs[i], errs[i]
			close(t.done)
		}
		batch = batch[n:]
	}
}

// start is t's mark as it is to be sent now: its marker's revision is the
// one its claim (or its last mark) left.
func (t *markTicket) start() assign.Start {
	return assign.Start{Assignment: t.r.stored().Assignment, Chunk: t.chunk, Rev: t.r.markerRevision(t.marker), Jobs: t.jobs}
}

// slowMarks is how long after their instant start marks may answer before
// the worker warns: an instant's runs that late find the next second's
// ticks of their jobs due (with overlap: skip, those skip).
const slowMarks = time.Second

// observe counts a mark transaction of n marks for instant at, sent and
// answered then, and warns when etcd took over slowMarks to answer: once
// an instant (past capacity an instant's marks go in tens of
// transactions, as their claims answer).
func (m *startMarks) observe(at, sent, answered time.Time, n int) {
	waited := answered.Sub(at)
	m.waited.Observe(waited.Seconds())
	if waited > slowMarks {
		if m.firstSlow(at) {
			m.log.Warn("runs claimed ahead started late: etcd was slow to commit their start marks", "due", at, "waited", waited, "chunks", n)
		}
		return
	}
	m.log.Debug("start marks written", "due", at, "chunks", n, "sent_after", sent.Sub(at), "took", answered.Sub(sent))
}

// firstSlow reports whether at is newer than every instant warned of.
func (m *startMarks) firstSlow(at time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !at.After(m.warned) {
		return false
	}
	m.warned = at
	return true
}
