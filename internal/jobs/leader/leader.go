// Package leader is the leader's work, done only while this replica leads
// and only through writes fenced by its term (docs/design.md#the-safety-rules, rule 1): turning each
// job's ticks into queue entries exactly once (rule 2), recording runs
// whose holder died (rule 7) and pruning history. The leader never executes
// a run.
package leader

import (
	"container/heap"
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/election"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/jobs/outbox"
	"github.com/etcdsched/scheduler/internal/jobs/overdue"
	"github.com/etcdsched/scheduler/internal/jobs/pause"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/jobs/shed"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/slots"
)

var (
	errNotLeader   = errors.New("leader: not leader")
	errCursorMoved = errors.New("leader: cursor moved")
)

// materializeParallelism bounds the jobs one leader pass works on at once:
// enough to keep etcd busy when many jobs share a tick, few enough not to
// swamp it.
const materializeParallelism = 32

// SlotView is what the leader needs of the slots (slots.Semaphore): the
// read of a job's held slots and its decoding (the overdue judge's, in a
// read of its own), a slot key's token in the view (the reaper's lookup),
// and when the view changes.
type SlotView interface {
	HeldOfOp(job string) clientv3.Op
	Decode(kvs []*mvccpb.KeyValue) []slots.Info
	Token(key string) (token int64, ok bool)
	Changed() <-chan struct{}
}

// Deps is what the leader works with. Every field is required but Clock,
// Log, Lookahead, SpecGrace and Workers.
type Deps struct {
	Client *clientv3.Client
	Keys   keys.Layout
	// Config is the current configuration; ConfigChanged signals (and
	// coalesces) its changes.
	Config        func() *config.Config
	ConfigChanged <-chan struct{}
	Queue         *queue.View
	Specs         *queue.Specs // the copy of specs/ the queue view resolves entries from
	Paused        *pause.View
	Slots         SlotView
	Finished      *Finished
	Chunks        *shed.Index // chunk records by job, pruned as records (prunechunks.go)
	// Outbox is the notifications waiting for delivery; Sender POSTs them
	// (nil: the default sender).
	Outbox *outbox.View
	Sender *notify.Sender
	// Overdue is the jobs' overdue states and last successes; nil: no
	// tick is judged overdue (overdue.go).
	Overdue *overdue.View
	// Last reads the jobs' last successes, which a notification names;
	// nil: one is made from Client, Keys, Overdue and Clock (defaults).
	Last    *overdue.Last
	Metrics *metrics.Set
	Clock   clockwork.Clock
	Log     *slog.Logger
	// Lookahead: ticks are materialized up to this long before they are
	// due (within the per-job and overall bounds, lookahead.go), so a
	// worker can claim and start the target on time, and, when it is
	// longer than the session TTL, keeps starting runs on time while a
	// dead leader's lease still holds the election.
	Lookahead time.Duration
	// SpecGrace is how long a spec no entry refers to stays before it is
	// deleted (default specGrace).
	SpecGrace time.Duration
	// Workers is the members' view for the lean run protocol
	// (assigned.go, resolve.go); nil: every tick takes the queue path and
	// no assignment is resolved.
	Workers *Workers
	// Assign writes the lean protocol's transactions, the store the
	// replica's worker claims through; nil: one is made from Client.
	Assign *assign.Store
}

// Run does the leader's work for one term while ctx lives: it materializes
// ticks, records runs whose holder died, prunes history (and a removed
// job's after removed_history_ttl), delivers notifications and ends pauses
// at their until. Every write it
// makes carries the term's fence, so a deposed leader's writes fail (docs/design.md#the-safety-rules,
// rule 1). It returns nil when ctx ends or a write finds the fence gone,
// and an error when the work cannot go on.
func Run(ctx context.Context, d Deps, term election.Leadership) error {
	if err := d.check(term); err != nil {
		return err
	}
	l := newLeader(d, term)
	if d.Workers != nil && l.store == nil {
		return errors.New("leader: the lean run protocol needs an etcd client")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	select {
	case <-d.Queue.Ready():
	case <-ctx.Done():
		return nil
	}
	if err := l.ticks.loadCursors(ctx); err != nil {
		return err
	}
	if err := l.ticks.initCursors(ctx); err != nil {
		if errors.Is(err, errNotLeader) || ctx.Err() != nil {
			return nil
		}
		return err
	}
	// The config first: the term's parts judge jobs by it (prune's limits).
	pausedChanged := l.d.Paused.Changed() // before the look, so no change falls between
	l.syncJobs()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel(nil)
	// The term's actors, each with its own state and goroutine; the
	// passes that materialize ticks are this goroutine's (loop).
	actors := []func(context.Context) error{
		newReaper(l.base).Run, // runs whose holder died (reap.go)
		l.pruner.Run,          // history within its limits (prune.go)
		(&specCollector{base: l.base, book: l.book}).Run, // unused specs (specs.go)
		newDeliverer(l.base).Run,                         // the outbox (deliver.go)
		(&resumer{base: l.base}).Run,                     // pauses ended at their until (resume.go)
		l.removed.Run,                                    // removed jobs' history (removed.go)
		l.resolver.Run,                                   // dead workers' assignments (resolve.go)
		newJudge(l.base).Run,                             // overdue ticks (overdue.go)
	}
	for _, f := range actors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
				cancel(err)
			}
		}()
	}
	err := l.loop(ctx, pausedChanged)
	if cause := context.Cause(ctx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	if errors.Is(err, errNotLeader) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

type leader struct {
	*base

	// specEntries: what lean passes need of each job's spec (specref.go).
	specEntries specEntries

	mu    sync.Mutex
	jobs  map[string]*config.Job
	gen   map[string]uint64 // bumped when a job changes; stale heap items are dropped
	wakes wakeHeap
	// book is what the passes and the spec collector know together of
	// the term's specs (specbook.go).
	book *specBook
	// assigns are the term's assignments as the withdrawals and the
	// resolver share them (withdraw_assigned.go).
	assigns *assignments
	// cursors are the jobs' cursors and counts of scheduled runs as this
	// term knows them (cursorbook.go).
	cursors *cursorBook
	// store writes the lean protocol's transactions (nil without a
	// client).
	store *assign.Store
	// paused is each job's pause state as last looked at; sweep the jobs
	// whose materialized ticks must be withdrawn first (withdraw.go), and
	// gone the removed jobs whose ticks are still to withdraw, by the
	// generation of their wake.
	paused map[string]bool
	sweep  map[string]bool
	gone   map[string]uint64
	// failures counts each job's failed passes in a row, for the backoff
	// of its next look (retry.go).
	failures *passFailures
	// The actors the leader wires that it, or its tests, reach after
	// Run started them: syncJobs notes the removed keeper the jobs that
	// left the config or came back (removed.go).
	removed    *removedKeeper
	pruner     *pruner
	resolver   *resolver
	withdrawer *withdrawer
	ticks      *tickWriter
	// maxQueued is the queue's size beyond which jobs are planned
	// NearLookahead ahead only (lookahead.go; a field for the tests).
	maxQueued int
	// born is when the term began: in its first lookahead lean jobs are
	// assigned a batch further (leanHorizon).
	born time.Time
}

func newLeader(d Deps, term election.Leadership) *leader {
	l := &leader{base: &base{d: d, term: term, fence: term.Fence()}, cursors: newCursorBook(d.Keys), gen: map[string]uint64{},
		book:   newSpecBook(d.Keys),
		paused: map[string]bool{}, sweep: map[string]bool{}, gone: map[string]uint64{}, maxQueued: maxQueued,
		failures: newPassFailures(d.Clock), born: d.Clock.Now()}
	l.removed = newRemovedKeeper(l.base, l.withJobs)
	l.pruner = &pruner{base: l.base, job: l.job, noteRemoved: l.removed.noteRemoved}
	l.store = d.Assign
	if l.store == nil && d.Client != nil {
		// Errors only for a missing client, prefix or clock.
		l.store, _ = assign.New(d.Client, d.Keys, d.Clock, assign.Options{})
	}
	l.assigns = &assignments{base: l.base, snap: &assignSnap{}}
	l.resolver = &resolver{base: l.base, assigns: l.assigns}
	if l.store != nil {
		l.resolver.txns = l.store.Resolver()
	}
	l.withdrawer = &withdrawer{base: l.base, cursors: l.cursors, assigns: l.assigns}
	l.ticks = &tickWriter{base: l.base, cursors: l.cursors, book: l.book}
	return l
}

// syncJobs takes the current config: new and changed jobs are planned at
// once, removed ones stop being scheduled (their runs in flight finish).
// Ticks materialized ahead are withdrawn where the change says so: a
// changed job's not yet due, a removed or paused job's all (withdraw.go).
func (l *leader) syncJobs() {
	cfg := l.d.Config()
	now := l.d.Clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	first := l.jobs == nil // the term's first look: nothing changed, all is new
	var noted []string     // for the removed jobs' keeper
	next := make(map[string]*config.Job, len(cfg.Jobs))
	for i := range cfg.Jobs {
		j := &cfg.Jobs[i]
		next[j.Name] = j
		old, ok := l.jobs[j.Name]
		if ok && sameJob(old, j) {
			continue
		}
		paused := l.d.Paused.Is(j.Name, j.Paused)
		_, back := l.gone[j.Name] // removed and back again: its old ticks are of the old spec
		if ok || back || paused {
			l.sweep[j.Name] = true
		}
		delete(l.gone, j.Name)
		l.paused[j.Name] = paused
		l.gen[j.Name]++
		heap.Push(&l.wakes, wake{at: now, job: j.Name, gen: l.gen[j.Name]})
	}
	for name := range l.jobs {
		if _, ok := next[name]; !ok {
			l.gen[name]++
			l.goneLocked(name, now)
			noted = append(noted, name)
		}
	}
	for name := range next {
		if _, ok := l.jobs[name]; !ok && !first {
			noted = append(noted, name) // back, perhaps: its marker goes
		}
	}
	l.removed.note(noted...)
	l.jobs = next
	if first {
		l.goneAheadLocked(next, now)
	}
}

// goneAheadLocked takes for removed, at a term's first look, the jobs not
// in next that another replica's term (or none) left ticks ahead of: its
// queue entries, or its cursor past now (assigned ticks, which workers
// would run with the spec they name, for up to a lookahead and a batch).
func (l *leader) goneAheadLocked(next map[string]*config.Job, now time.Time) {
	var names []string
	if l.d.Queue != nil {
		for _, q := range l.d.Queue.List(func(q *queue.Item) bool { return next[q.Job] == nil && withdrawable(q.Entry) }) {
			names = append(names, q.Job)
		}
	}
	if l.cursors != nil {
		for _, name := range l.cursors.ahead(now) {
			if next[name] == nil {
				names = append(names, name)
			}
		}
	}
	for _, name := range names {
		if _, ok := l.gone[name]; !ok {
			l.gen[name]++
			l.goneLocked(name, now)
		}
	}
}

// job is the term's job of that name (nil: not in the config), and
// whether the term has taken the config yet (syncJobs).
func (l *leader) job(name string) (j *config.Job, synced bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.jobs[name], l.jobs != nil
}

// withJobs runs f with the term's jobs (nil: the config not taken yet)
// under the leader's lock.
func (l *leader) withJobs(f func(jobs map[string]*config.Job)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l.jobs)
}

// goneLocked schedules the withdrawal of a removed job's ticks.
func (l *leader) goneLocked(name string, now time.Time) {
	l.gone[name] = l.gen[name]
	delete(l.sweep, name)
	delete(l.paused, name)
	heap.Push(&l.wakes, wake{at: now, job: name, gen: l.gen[name]})
}

// syncPaused looks at the pause state: a job paused since the last look is
// swept (its materialized ticks withdrawn) and a resumed one planned at
// once, so its next tick is materialized without waiting for its wake.
func (l *leader) syncPaused() {
	now := l.d.Clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, j := range l.jobs {
		p := l.d.Paused.Is(name, j.Paused)
		if p == l.paused[name] {
			continue
		}
		l.paused[name] = p
		if p {
			l.sweep[name] = true
		}
		l.gen[name]++
		heap.Push(&l.wakes, wake{at: now, job: name, gen: l.gen[name]})
	}
}

// loop materializes ticks as they come due and follows config and pause
// changes until ctx ends. pausedChanged was taken before the term's first
// look at the config (Run), so no pause falls between.
func (l *leader) loop(ctx context.Context, pausedChanged <-chan struct{}) error {
	timer := l.d.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	first := true
	for {
		l.mu.Lock()
		wait := time.Hour
		if len(l.wakes) > 0 {
			wait = max(l.wakes[0].at.Sub(l.d.Clock.Now()), 0)
		}
		l.mu.Unlock()
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-l.d.ConfigChanged:
			l.syncJobs()
			continue
		case <-pausedChanged:
			pausedChanged = l.d.Paused.Changed()
			l.syncPaused()
			continue
		case <-timer.Chan():
		}
		if err := l.pass(ctx); err != nil {
			return err
		}
		if first {
			// The term's start read every job's cursor and planned every
			// job: at 100,000 jobs, garbage the runtime kept resident
			// (leader RSS 250-351 MiB, 216-254 returned). Returned once
			// a term, as after a config parse (docs/performance.md,
			// "Rules the figures set"); one forced GC.
			first = false
			debug.FreeOSMemory()
		}
	}
}
