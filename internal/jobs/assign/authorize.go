package assign

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Cursor moves one job's cursor over a window: Last is the cursor as last
// written (zero: the job has none yet), Next the last tick the window
// authorizes.
type Cursor struct {
	Job  string
	Last time.Time
	Next time.Time
	// With are writes that go in the transaction that moves the cursor
	// (the job's spec, when its leader has not written it yet).
	With []clientv3.Op
}

// Window is what one Authorize writes: the jobs' cursors and the
// assignments of their ticks in (Last, Next].
type Window struct {
	Cursors     []Cursor
	Assignments []Assignment
}

// Part is one transaction of a window: jobs whose cursors it moves and the
// assignments it puts.
type Part struct {
	Jobs        []string
	Assignments []string // keys
	Applied     bool
}

// Authorize writes the window: If(fence, each cursor as last written, no
// assignment at each key) Then(put the assignments and the cursors). Two
// leaders, or one leader twice, cannot authorize an instant twice: the
// second finds a cursor moved or an assignment present and writes nothing.
//
// A window too large for one transaction (etcd's --max-txn-ops bounds the
// compares and the operations) is split deterministically: the jobs that
// share an assignment, with their cursors and assignments, go together
// (a cursor moved without its assignment would lose a tick); such groups
// are packed in the window's order of cursors. A group that alone exceeds
// the limit is ErrTooLarge before anything is written. The parts are
// committed in order; the first that fails stops the rest (ErrConflict, or
// ErrNotLeader when the fence failed), and the parts returned say which
// were applied.
func (s *Store) Authorize(ctx context.Context, fence clientv3.Cmp, w Window) ([]Part, error) {
	groups, err := s.groups(w)
	if err != nil {
		return nil, err
	}
	parts := s.pack(groups)
	for i := range parts {
		if err := s.authorizePart(ctx, fence, &parts[i].part, parts[i].cmps, parts[i].ops); err != nil {
			return partsOf(parts), err
		}
	}
	return partsOf(parts), nil
}

// txnPart is a part with its compares and writes.
type txnPart struct {
	part Part
	cmps []clientv3.Cmp
	ops  []clientv3.Op
}

func partsOf(ps []txnPart) []Part {
	out := make([]Part, len(ps))
	for i := range ps {
		out[i] = ps[i].part
	}
	return out
}

func (s *Store) authorizePart(ctx context.Context, fence clientv3.Cmp, p *Part, cmps []clientv3.Cmp, ops []clientv3.Op) error {
	resp, err := s.kv.Txn(ctx).If(append([]clientv3.Cmp{fence}, cmps...)...).Then(ops...).
		Else(clientv3.OpGet(string(fence.KeyBytes()), clientv3.WithKeysOnly())).Commit()
	if err != nil {
		return fmt.Errorf("assign: authorize jobs %v: %w", p.Jobs, err)
	}
	if resp.Succeeded {
		p.Applied = true
		return nil
	}
	if !fenceHolds(fence, resp.Responses[0].GetResponseRange().Kvs) {
		return fmt.Errorf("assign: authorize jobs %v: %w", p.Jobs, ErrNotLeader)
	}
	return fmt.Errorf("assign: authorize jobs %v: a cursor moved or an assignment exists: %w", p.Jobs, ErrConflict)
}

// group is jobs linked by the assignments naming them.
type group struct {
	jobs        []string
	cursors     []clientv3.Cmp
	assignCmps  []clientv3.Cmp
	ops         []clientv3.Op
	assignments []string
}

// cost is what the group takes of a transaction's --max-txn-ops: its
// compares, or its writes when those are more.
func (g *group) cost() int { return max(len(g.cursors)+len(g.assignCmps), len(g.ops)) }

// groups checks the window and splits it into the groups that must be
// written together, in the order of the window's cursors.
func (s *Store) groups(w Window) ([]*group, error) {
	root, err := link(w)
	if err != nil {
		return nil, err
	}
	byRoot := map[int]*group{}
	var out []*group
	for i, c := range w.Cursors {
		g := byRoot[root(i)]
		if g == nil {
			g = &group{}
			byRoot[root(i)] = g
			out = append(out, g)
		}
		key := s.keys.Cursor(c.Job)
		g.jobs = append(g.jobs, c.Job)
		// The cursor keeps today's value (queue.EncodeCursor), so a leader of
		// either protocol reads what the other wrote (docs/protocol.md,
		// "Mixed versions"); absent when Last is zero, as the leader compares it.
		g.cursors = append(g.cursors, queue.CursorIs(key, c.Last, !c.Last.IsZero()))
		g.ops = append(g.ops, clientv3.OpPut(key, queue.EncodeCursor(c.Next)))
		g.ops = append(g.ops, c.With...)
	}
	for i := range w.Assignments {
		a := &w.Assignments[i]
		g := byRoot[root(cursorOf(w, a.Jobs[0].Name))]
		key := a.Key(s.keys)
		g.assignments = append(g.assignments, key)
		g.assignCmps = append(g.assignCmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
		g.ops = append(g.ops, clientv3.OpPut(key, a.Encode()))
	}
	for _, g := range out {
		if 1+g.cost() > s.maxOps {
			return nil, fmt.Errorf("assign: window: jobs %v share assignments needing %d compares with the fence, over etcd's --max-txn-ops %d: assign them to fewer workers or split the window: %w", g.jobs, 1+g.cost(), s.maxOps, ErrTooLarge)
		}
	}
	return out, nil
}

// cursorOf is the index of job's cursor in the window, -1 if none.
func cursorOf(w Window, job string) int {
	for i, c := range w.Cursors {
		if c.Job == job {
			return i
		}
	}
	return -1
}

// link checks the window and links the cursors of jobs named by one
// assignment: root(i) is the same for cursors that must be written
// together.
func link(w Window) (root func(int) int, err error) {
	index := make(map[string]int, len(w.Cursors))
	parent := make([]int, len(w.Cursors))
	for i, c := range w.Cursors {
		if _, dup := index[c.Job]; c.Job == "" || !c.Next.After(c.Last) || dup {
			return nil, fmt.Errorf("assign: window: job %q must be named once, with its next cursor %s after its last %s", c.Job, c.Next.UTC().Format(runs.TimeFormat), c.Last.UTC().Format(runs.TimeFormat))
		}
		index[c.Job], parent[i] = i, i
	}
	root = func(i int) int {
		for parent[i] != i {
			i = parent[i]
		}
		return i
	}
	for i := range w.Assignments {
		a := &w.Assignments[i]
		if err := a.Validate(); err != nil {
			return nil, err
		}
		for _, j := range a.Jobs {
			c, ok := index[j.Name]
			if !ok || !a.At.After(w.Cursors[c].Last) || a.At.After(w.Cursors[c].Next) {
				return nil, fmt.Errorf("assign: window: assignment of worker %s at %s names job %q whose cursor does not move over that instant in this window", a.Worker, a.At.UTC().Format(runs.TimeFormat), j.Name)
			}
			parent[root(c)] = root(index[a.Jobs[0].Name])
		}
	}
	return root, nil
}

// pack puts groups into parts in order, each under the limit (the fence is
// one compare more; the writes are as many as the other compares).
func (s *Store) pack(groups []*group) []txnPart {
	var parts []txnPart
	var cur *txnPart
	for _, g := range groups {
		if cur == nil || 1+len(cur.cmps)+g.cost() > s.maxOps || len(cur.ops)+len(g.ops) > s.maxOps {
			parts = append(parts, txnPart{})
			cur = &parts[len(parts)-1]
		}
		cur.part.Jobs = append(cur.part.Jobs, g.jobs...)
		cur.part.Assignments = append(cur.part.Assignments, g.assignments...)
		cur.cmps = append(append(cur.cmps, g.cursors...), g.assignCmps...)
		cur.ops = append(cur.ops, g.ops...)
	}
	return parts
}
