package leader

import (
	"slices"
	"sync"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/rendezvous"
	"github.com/etcdsched/scheduler/internal/runs"
)

// windowWorkers is how many workers a window's ticks of one instant go
// to, and the fewest an instant's go to. A worker's round at an instant
// (its claims, start marks, releases and cleanups, each a group commit)
// costs about the same for 200 runs as for 330, and a window's transaction
// takes an assignment a worker and instant (windowCost): an instant spread
// over every worker of five cost each run half as many revisions again as
// over three (0.100 a run against 0.068 at 1,000 jobs), and in smaller
// assignments more claims, markers and cleanups; over five, a batch of ten
// instants left 77 jobs a window and 15 runs an assignment, over three 97
// and 32 (docs/performance.md, "Replicas, 5 ÷ 3").
const windowWorkers = 3

// leanWin is a window of items, one transaction's, and the workers its
// ticks go to.
type leanWin struct {
	items   []leanItem
	workers tickWorkers
}

// splitLean takes out of due the jobs whose ticks this pass assigns, in
// windows of one transaction each; none while a member runs an older
// protocol.
func (l *leader) splitLean(due []*config.Job, now time.Time) (windows []leanWin, rest []*config.Job) {
	if l.d.Workers == nil || l.store == nil {
		return nil, due
	}
	live, ok := l.d.Workers.Lean()
	if !ok {
		return nil, due
	}
	cfg := l.d.Config()
	sets := newInstantSets(live, instantWorkersFor(cfg))
	var cur leanWin
	var cost *windowCost
	batch := leanWindowBatch()
	for _, j := range due {
		it, ok := l.leanItem(cfg, j, now, batch)
		if !ok {
			rest = append(rest, j)
			continue
		}
		if cost == nil || !cost.add(it) {
			if len(cur.items) > 0 {
				windows = append(windows, cur)
			}
			cur = leanWin{workers: tickWorkers{sets, len(windows)}}
			cost = newWindowCost(cur.workers)
			cost.add(it)
		}
		cur.items = append(cur.items, it)
	}
	if len(cur.items) > 0 {
		windows = append(windows, cur)
	}
	return windows, rest
}

// instantWorkersFor is how many workers an instant's ticks go to under
// cfg: windowWorkers, or as many as hold every job's run in half their
// places (worker.max_parallel) when that is more, so that jobs due
// together that run long are not held to three replicas' places.
func instantWorkersFor(cfg *config.Config) int {
	per := max(1, cfg.Worker.MaxParallel/2)
	return max(windowWorkers, (len(cfg.Jobs)+per-1)/per)
}

// instantSets are each instant's workers: the k live workers rendezvous
// ranks first for it, so that every window, pass and leader gives an
// instant the same ones, and the instants take turns over the workers.
// A pass's windows share one and are authorized at once (pass.go):
// splitLean's costing has computed every instant of theirs by then, so
// they only read it, but the lock does not rest on that.
type instantSets struct {
	all  []string
	k    int
	mu   sync.Mutex
	byAt map[int64][]string // as computed
}

func newInstantSets(all []string, k int) *instantSets {
	return &instantSets{all: all, k: k, byAt: map[int64][]string{}}
}

// among is s over those of its workers in live: s when all are, nil when
// none is.
func (s *instantSets) among(live []string) *instantSets {
	kept := slices.DeleteFunc(slices.Clone(s.all), func(w string) bool { return !slices.Contains(live, w) })
	switch len(kept) {
	case len(s.all):
		return s
	case 0:
		return nil
	}
	return newInstantSets(kept, s.k)
}

// at is the workers of at's ticks, ranked for it (the windows' turns
// start at its first).
func (s *instantSets) at(at time.Time) []string {
	if len(s.all) <= windowWorkers {
		return s.all
	}
	n := at.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	ws, ok := s.byAt[n]
	if !ok {
		ws = rendezvous.Top(s.all, at.UTC().Format(runs.TimeFormat), s.k)
		s.byAt[n] = ws
	}
	return ws
}

// tickWorkers gives a window's ticks their workers: of an instant's, the
// windowWorkers at the window's turn (the windows of a pass take turns
// over them when they are more), and of those the one rendezvous ranks
// first for the run.
type tickWorkers struct {
	sets *instantSets
	turn int // the window's place in its pass
}

// slot is where job's tick at at goes.
func (w tickWorkers) slot(job string, at time.Time) leanSlot {
	ws := w.sets.at(at)
	id := runs.ID(job, at)
	if len(ws) <= windowWorkers {
		return leanSlot{rendezvous.Pick(ws, id), at}
	}
	var sub [windowWorkers]string
	for i := range sub {
		sub[i] = ws[(w.turn*windowWorkers+i)%len(ws)]
	}
	return leanSlot{rendezvous.Pick(sub[:], id), at}
}

// leanWindow is what Authorize writes for items: their cursors, and their
// ticks given by rendezvous over workers, a job's at one instant in one
// assignment, up to leanJobsPerAssignment jobs each, named after its
// first job.
func leanWindow(items []leanItem, workers tickWorkers) assign.Window {
	byName := map[string]assign.Job{}
	grouped := map[leanSlot][]string{}
	var order []leanSlot
	var w assign.Window
	for _, it := range items {
		w.Cursors = append(w.Cursors, assign.Cursor{Job: it.job.Name, Last: it.known, Next: it.plan.Cursor, With: it.specOp})
		byName[it.job.Name] = assign.Job{Name: it.job.Name, SpecRef: it.specRef}
		for _, t := range it.plan.Ticks {
			s := workers.slot(it.job.Name, t.At)
			if grouped[s] == nil {
				order = append(order, s)
			}
			grouped[s] = append(grouped[s], it.job.Name)
		}
	}
	for _, s := range order {
		names := grouped[s]
		slices.Sort(names)
		for len(names) > 0 {
			n := names[:min(len(names), leanJobsPerAssignment)]
			names = names[len(n):]
			a := assign.Assignment{Worker: s.worker, At: s.at, Group: n[0]}
			for _, name := range n {
				a.Jobs = append(a.Jobs, byName[name])
			}
			w.Assignments = append(w.Assignments, a)
		}
	}
	return w
}

// leanSlot is a worker at an instant: the runs of one assignment, or of
// several when they are more than leanJobsPerAssignment.
type leanSlot struct {
	worker string
	at     time.Time
}

// windowCost is what a window's items take of one transaction, counted as
// leanWindow will write them: a cursor (a compare and a put) and its spec
// a job, and an assignment (a compare and a put) for every
// leanJobsPerAssignment runs of one worker at one instant. Counting an
// assignment a tick instead cut a window of jobs ticking every second,
// assigned several ticks at a time, to about 20 jobs, so each assignment held
// a handful of runs and a worker's claims took as few.
type windowCost struct {
	workers tickWorkers
	runs    map[leanSlot]int
	cost    int
}

func newWindowCost(workers tickWorkers) *windowCost {
	return &windowCost{workers: workers, runs: map[leanSlot]int{}}
}

// add counts it in when the window can take it (leanWindowCost), and
// reports whether it did. An empty window takes any item: Authorize
// refuses one too large for a transaction before it writes anything.
func (c *windowCost) add(it leanItem) bool {
	slots := make([]leanSlot, len(it.plan.Ticks))
	n := 1 + len(it.specOp)
	for i, t := range it.plan.Ticks {
		slots[i] = c.workers.slot(it.job.Name, t.At)
		if c.runs[slots[i]]%leanJobsPerAssignment == 0 {
			n++
		}
	}
	if c.cost > 0 && c.cost+n > leanWindowCost {
		return false
	}
	for _, s := range slots {
		c.runs[s]++
	}
	c.cost += n
	return true
}
