package fault

// Limits are a job's history limits as its replicas read them:
// history_limit records of runs that executed, skipped_history_limit of
// runs that never started (skipped, missed, with no attempt before: those
// with an unstarted marker, RecordEvent.Unstarted).
type Limits struct{ Executed, Unstarted int }

// heldRecord is a record in etcd at some revision of the replay: the
// revision it was last written at and which limit it counts against.
type heldRecord struct {
	rev       int64
	unstarted bool
}

// Property: a record is deleted only beyond its job's limit
// (docs/design-leader.md#history): once a transaction's deletes are done,
// every record it deleted still has at least its limit of records of its
// kind, of its job, written as late or later. History keeps the records
// written last; a delete of one of them, or of a record of a job whose
// limits the checker does not know, loses a tick's only account. Replayed
// from h.RecordLog, every write of every record in revision order.
func checkPruned(h *History, r *Report) {
	live := map[string]map[string]heldRecord{} // job -> run id -> as last written
	log := h.RecordLog
	for i := 0; i < len(log); {
		rev := log[i].Rev
		var deleted []gone
		for ; i < len(log) && log[i].Rev == rev; i++ {
			e := log[i]
			if live[e.Job] == nil {
				live[e.Job] = map[string]heldRecord{}
			}
			if e.Delete {
				if held, ok := live[e.Job][e.RunID]; ok {
					deleted = append(deleted, gone{e.Job, e.RunID, held})
					delete(live[e.Job], e.RunID)
				}
				continue
			}
			live[e.Job][e.RunID] = heldRecord{rev: rev, unstarted: e.Unstarted}
		}
		for _, d := range deleted {
			r.Pruned++
			checkDelete(h, live[d.job], d, rev, r)
		}
	}
}

// gone is a record deleted, as it was last written.
type gone struct {
	job, id string
	held    heldRecord
}

// checkDelete checks d, deleted at rev, against its job's records left
// then (kept).
func checkDelete(h *History, kept map[string]heldRecord, d gone, rev int64, r *Report) {
	lim, ok := h.Limits[d.job]
	if !ok {
		r.violate("pruned: %s's record %s deleted at revision %d, a job of no known limits", d.job, d.id, rev)
		return
	}
	limit, kind := lim.Executed, "history_limit"
	if d.held.unstarted {
		limit, kind = lim.Unstarted, "skipped_history_limit"
	}
	// As late or later: a chunk's records share a revision, and the
	// prune's sort by revision keeps some of them, not all.
	later := 0
	for _, o := range kept {
		if o.unstarted == d.held.unstarted && o.rev >= d.held.rev {
			later++
		}
	}
	if later < limit {
		r.violate("pruned: %s's record %s (written at revision %d) deleted at revision %d with %d of its kind as late or later kept, under %s %d",
			d.job, d.id, d.held.rev, rev, later, kind, limit)
	}
}
