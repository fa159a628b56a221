package leader

import (
	"slices"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/rendezvous"
	"github.com/etcdsched/scheduler/internal/runs"
)

// windowWorkers is the most workers one window's ticks go to. A window's
// transaction takes an assignment a worker and instant (windowCost): spread
// over five workers, a batch of ten instants left 77 jobs a window and 15
// runs an assignment, and the batch was cut to 5 s, so the cursors were
// written twice as often and every replica decoded twice the cursor events
// it does at three; an instant's work in smaller assignments cost each run
// more claims, markers and cleanups (docs/performance.md, "Replicas, 5 ÷
// 3"). Over three, a window holds 97 jobs and 32 runs an assignment, and
// the windows take turns over the workers (leader.windowTurn), so each
// worker gets its share of an instant's runs, in bigger assignments.
const windowWorkers = 3

// leanWin is a window of items, one transaction's, and the workers its
// ticks go to.
type leanWin struct {
	items   []leanItem
	workers []string
}

// splitLean takes out of due the jobs whose ticks this pass assigns, in
// windows of one transaction each; none while a member runs an older
// protocol.
func (l *leader) splitLean(due []*config.Job, now time.Time) (windows []leanWin, rest []*config.Job) {
	if l.d.Workers == nil || l.store == nil {
		return nil, due
	}
	workers, ok := l.d.Workers.Lean()
	if !ok {
		return nil, due
	}
	cfg := l.d.Config()
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
			cur = leanWin{workers: l.nextWindowWorkers(workers)}
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

// nextWindowWorkers is the workers of the next window: all of them up to
// windowWorkers, else the windowWorkers after the last window's, in the
// order of workers (its rendezvous gives each tick of the window one).
func (l *leader) nextWindowWorkers(workers []string) []string {
	if len(workers) <= windowWorkers {
		return workers
	}
	out := make([]string, windowWorkers)
	for i := range out {
		out[i] = workers[(l.windowTurn+i)%len(workers)]
	}
	l.windowTurn = (l.windowTurn + windowWorkers) % len(workers)
	return out
}

// leanWindow is what Authorize writes for items: their cursors, and their
// ticks given by rendezvous over workers, a job's at one instant in one
// assignment, up to leanJobsPerAssignment jobs each, named after its
// first job.
func leanWindow(items []leanItem, workers []string) assign.Window {
	byName := map[string]assign.Job{}
	grouped := map[leanSlot][]string{}
	var order []leanSlot
	var w assign.Window
	for _, it := range items {
		w.Cursors = append(w.Cursors, assign.Cursor{Job: it.job.Name, Last: it.known, Next: it.plan.Cursor, With: it.specOp})
		byName[it.job.Name] = assign.Job{Name: it.job.Name, SpecRef: it.specRef}
		for _, t := range it.plan.Ticks {
			s := leanSlotOf(workers, it.job.Name, t.At)
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

// leanSlotOf is where job's tick at at goes: its worker by rendezvous.
func leanSlotOf(workers []string, job string, at time.Time) leanSlot {
	return leanSlot{rendezvous.Pick(workers, runs.ID(job, at)), at}
}

// windowCost is what a window's items take of one transaction, counted as
// leanWindow will write them: a cursor (a compare and a put) and its spec
// a job, and an assignment (a compare and a put) for every
// leanJobsPerAssignment runs of one worker at one instant. Counting an
// assignment a tick instead cut a window of jobs ticking every second,
// assigned several ticks at a time, to about 20 jobs, so each assignment held
// a handful of runs and a worker's claims took as few.
type windowCost struct {
	workers []string
	runs    map[leanSlot]int
	cost    int
}

func newWindowCost(workers []string) *windowCost {
	return &windowCost{workers: workers, runs: map[leanSlot]int{}}
}

// add counts it in when the window can take it (leanWindowCost), and
// reports whether it did. An empty window takes any item: Authorize
// refuses one too large for a transaction before it writes anything.
func (c *windowCost) add(it leanItem) bool {
	slots := make([]leanSlot, len(it.plan.Ticks))
	n := 1 + len(it.specOp)
	for i, t := range it.plan.Ticks {
		slots[i] = leanSlotOf(c.workers, it.job.Name, t.At)
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
