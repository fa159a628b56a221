package worker

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
)

// Take-over (docs/protocol.md): a replica killed keeps its member key, and
// the leader counts it alive, until its lease expires, a session TTL
// later; the runs assigned to it would wait that long, and miss their
// starting deadline. So a backup takes over a peer's assignment nobody has
// claimed from by its backup's turn (the instant, then Backup per rank
// among the live replicas but the assignment's), as the queue path's
// backups claim a run its first worker let pass. The take-over is one
// compared transaction (assign.Store.Steal): a wrong suspicion of a live,
// slow worker costs it the assignment, never a second run.
//
// A backup takes over only while it has room: no assignment of its own is
// due and not taken up or still claiming, and max_parallel has a place. A cluster that is
// behind everywhere gains nothing from moving work between replicas.

// PeerAssignments is the view of the other replicas' assignments
// (keys.Assignments) a backup takes over from.
func (w *Worker) PeerAssignments() mirror.Handler { return w.runner.mover.peers }

// PeerMarkers is the view of claim markers (keys.Claimed): an assignment
// a chunk claimed from is not taken over.
func (w *Worker) PeerMarkers() mirror.Handler { return w.runner.mover.peers.Markers() }

// takeOverRecheck is how soon a worker with no room for a take-over
// looks at its peers' assignments again, if nothing wakes it sooner.
const takeOverRecheck = 50 * time.Millisecond

// dispatchTakeOvers takes over, each in a goroutine of its own that the
// drain waits for, the peer assignments whose turn has come, if this
// worker has room; it notes when the next turn comes.
func (m *mover) dispatchTakeOvers(ctx context.Context) {
	if m.d.Assign == nil {
		return
	}
	now := m.d.Clock.Now()
	if m.busy() {
		// Its own runs first. Looked at again when a place frees or a
		// claim is sent (both wake the loop), and a recheck later at the
		// latest: a turn left in the past would spin the loop (a fifth of
		// a replica's CPU at twice the ceiling went to it).
		m.setTakeOverAt(now.Add(takeOverRecheck))
		return
	}
	if own := m.view.next(); !own.IsZero() && !own.After(now) {
		return // its own assignments first: taken up in this wake of the loop
	}
	due, next, late := m.peers.due(now, m.d.Backup+m.rtt.backupWait(), m.takeOverTurn)
	m.setTakeOverAt(next)
	for _, owner := range late {
		m.suspectPeer(owner)
	}
	for _, p := range due {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.takeOverAssignment(ctx, p)
		}()
	}
}

// takeOverTurn is when this replica may take p over: Backup (and twice
// the claim round trip) after its instant (or its arrival, if later) per
// place in the rendezvous order of the live replicas but p's own. While
// p's worker is silent (peerView.due: no claim of it seen since it was
// to claim p), its replica suspect (it let an assignment pass: see
// members) or gone (its member key deleted: its lease ended, and the
// leader resolves what the backups leave) the first backup's turn is a
// fifth of Backup after the instant: long enough for a live worker's
// claim, which it sends a claim lead before, to be seen here first. A
// worker killed between two ticks of a job @every 100ms had both taken
// over together a Backup after the first: the second, refused its slot
// behind the first, then found it claimed ahead by the tick after, and
// was skipped (test/bench's failover step, 1-2 of 1,400).
func (m *mover) takeOverTurn(p *peerAssignment, silent bool) time.Time {
	owner, now := p.owner, m.d.Clock.Now()
	place := time.Duration(m.members.rankWithout(m.d.ID, owner, p.key, now))
	step := m.d.Backup + m.rtt.backupWait()
	if silent || m.members.suspect(owner, now) || m.members.gone(m.d.ID, owner) {
		return p.from.Add(step/5 + place*step)
	}
	return p.from.Add((place + 1) * step)
}

// takeOverAssignment moves p to this replica's current incarnation; its own view
// then takes it up as any assignment of its own. An incarnation not yet
// on its member key (a next session waiting out the lease of the one
// before) takes nothing over: the move would fail its compare.
func (m *mover) takeOverAssignment(ctx context.Context, p peerAssignment) {
	sess, err := m.d.Sessions.Current(ctx)
	if err != nil {
		return
	}
	me := keys.Incarnation(m.d.ID, int64(sess.Lease()))
	asg, err := assign.Decode(m.d.Keys, p.key, p.value)
	if err != nil || p.worker == me || !m.registered(me) {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, m.d.Config().Cluster.SessionTTL.D())
	defer cancel()
	steal := m.d.Assign.Steal
	if p.ahead {
		steal = m.d.Assign.StealAhead
	}
	st, err := steal(wctx, asg, p.modRevision, me)
	switch {
	case errors.Is(err, assign.ErrConflict):
		m.d.Log.Debug("an assignment taken up elsewhere first", "assignment", p.key)
	case err != nil:
		m.d.Log.Warn("taking over a peer's assignment failed; its worker or the leader settles it", "assignment", p.key, "err", err)
	default:
		m.d.Log.Info("took over an assignment its worker had not claimed from by its backup's turn",
			"from", p.worker, "due", asg.At, "runs", len(asg.Jobs), "assignment", st.Key(m.d.Keys))
	}
}

// suspectPeer passes over replica owner, which let an assignment pass a
// backup's turn unclaimed, for a session TTL: its next assignments are
// taken over at their due time (see members).
func (m *mover) suspectPeer(owner string) {
	now := m.d.Clock.Now()
	ttl := m.d.Config().Cluster.SessionTTL.D()
	if m.members.suspectFor(owner, now, now.Add(ttl)) {
		m.peers.rejudge(owner)
		m.d.Log.Info("a member let an assignment pass: its next ones are taken over at their due time until it shows life or a session TTL passes",
			"member", owner, "for", ttl)
	}
}

// registered reports whether the members' view lists incarnation me (true
// without a view of peers: the take-over's compare decides).
func (m *mover) registered(me string) bool {
	if m.d.Peers == nil {
		return true
	}
	lean, _ := m.d.Peers.Lean()
	_, found := slices.BinarySearch(lean, me)
	return found
}
