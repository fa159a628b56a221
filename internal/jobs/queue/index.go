package queue

// index holds the view's entries by job and by the resources their specs
// name: what a worker's fair order, queue position and overlap look at.
// Every one of those questions is about runs that can share a limit with
// one run (its job's slots, its key's, its window, a resource it names),
// and the queue holds the leader's lookahead of every job (seven seconds
// of ticks at the default session_ttl: 7,000 entries at 1,000 runs/s).
// Scanning all of it on every claim was a quarter of a replica's CPU at
// that rate; the index makes each question cost the entries it is about.
type index struct {
	jobs      map[string]map[string]*Item // job -> key -> entry
	resources map[string]map[string]*Item // resource name -> key -> entry
}

func newIndex() index {
	return index{jobs: map[string]map[string]*Item{}, resources: map[string]map[string]*Item{}}
}

func (x index) add(q *Item) {
	addTo(x.jobs, q.Job, q)
	for _, r := range q.Resources {
		addTo(x.resources, r.Name, q)
	}
}

// remove drops q, as it was added (an entry's resources are those of the
// item that was added: a replaced item is removed before its successor is
// added).
func (x index) remove(q *Item) {
	if q == nil {
		return
	}
	removeFrom(x.jobs, q.Job, q.Key)
	for _, r := range q.Resources {
		removeFrom(x.resources, r.Name, q.Key)
	}
}

func addTo(m map[string]map[string]*Item, name string, q *Item) {
	set := m[name]
	if set == nil {
		set = map[string]*Item{}
		m[name] = set
	}
	set[q.Key] = q
}

func removeFrom(m map[string]map[string]*Item, name, key string) {
	if set := m[name]; set != nil {
		delete(set, key)
		if len(set) == 0 {
			delete(m, name)
		}
	}
}

// EachRelated calls visit, once each, for every entry that may need a
// limit in common with e: the entries of e's job and those naming one of
// e's resources (e itself included, when the view holds it). visit runs
// under the view's lock and must not call the view.
func (v *View) EachRelated(e *Entry, visit func(*Item)) {
	v.entries.With(func(func(string) (*Item, bool), func(string, *Item)) { v.eachRelatedLocked(e, visit) })
}

func (v *View) eachRelatedLocked(e *Entry, visit func(*Item)) {
	for _, q := range v.index.jobs[e.Job] {
		visit(q)
	}
	var seen map[string]bool // entries of other jobs met through an earlier resource
	for i, r := range e.Resources {
		for key, q := range v.index.resources[r.Name] {
			if q.Job == e.Job || seen[key] {
				continue
			}
			if i < len(e.Resources)-1 {
				if seen == nil {
					seen = map[string]bool{}
				}
				seen[key] = true
			}
			visit(q)
		}
	}
}

// ListJob returns the entries of job matching keep, oldest scheduled
// first.
func (v *View) ListJob(job string, keep func(*Item) bool) []*Item {
	var out []*Item
	v.entries.With(func(func(string) (*Item, bool), func(string, *Item)) { out = filter(v.index.jobs[job], keep) })
	sortQueued(out)
	return out
}
