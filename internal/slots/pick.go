package slots

import (
	"math/rand/v2"

	"go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/etcdsched/scheduler/internal/keys"
)

// freeSet is the free indexes of a job and of each of its resources.
type freeSet struct {
	job   string // the slot group: the job, or "<job>/<key>"
	keyed bool
	limit int
	slots []int
	caps  []int
	res   [][]int
	names []string
}

// pick is one index per group: the job slot, then each resource's.
type pick struct {
	slot int
	res  []int
}

func (f freeSet) pick() (pick, error) {
	if len(f.slots) == 0 {
		limit := LimitJob
		if f.keyed {
			limit = LimitKey
		}
		return pick{}, &FullError{Limit: limit, Name: f.job, Slots: f.limit}
	}
	p := pick{slot: f.slots[rand.IntN(len(f.slots))], res: make([]int, len(f.res))}
	for i, free := range f.res {
		if len(free) == 0 {
			return pick{}, &FullError{Limit: LimitResource, Name: f.names[i], Slots: f.caps[i]}
		}
		p.res[i] = free[rand.IntN(len(free))]
	}
	return p, nil
}

func (p pick) keys(l keys.Layout, req Request) []string {
	ks := []string{l.Slot(req.group(), p.slot)}
	for i, r := range req.Resources {
		ks = append(ks, l.ResourceSlot(r.Name, p.res[i]))
	}
	return ks
}

func (p pick) resources(req Request) []HeldResource {
	var held []HeldResource
	for i, r := range req.Resources {
		held = append(held, HeldResource{Name: r.Name, Index: p.res[i]})
	}
	return held
}

func (s *Semaphore) freeFromView(req Request) freeSet {
	f := freeSet{job: req.group(), keyed: req.Key != "", limit: req.MaxConcurrency, slots: s.free(JobSlot, req.group(), req.MaxConcurrency)}
	for _, r := range req.Resources {
		f.res = append(f.res, s.free(ResourceSlot, r.Name, r.Limit))
		f.names = append(f.names, r.Name)
		f.caps = append(f.caps, r.Limit)
	}
	return f
}

// freeFromRead computes the free indexes from the keys the failed claim
// read: the job's first, then each resource's.
func (s *Semaphore) freeFromRead(req Request, ranges []*etcdserverpb.ResponseOp) freeSet {
	free := func(r *etcdserverpb.ResponseOp, kind Kind, name string, limit int) []int {
		taken := map[int]bool{}
		for _, kv := range r.GetResponseRange().Kvs {
			// A job's prefix also holds its keyed slots' keys.
			if k, n, i, ok := parseKey(s.layout, string(kv.Key)); ok && k == kind && n == name {
				taken[i] = true
			}
		}
		var out []int
		for i := range limit {
			if !taken[i] {
				out = append(out, i)
			}
		}
		return out
	}
	f := freeSet{job: req.group(), keyed: req.Key != "", limit: req.MaxConcurrency, slots: free(ranges[0], JobSlot, req.group(), req.MaxConcurrency)}
	for i, r := range req.Resources {
		f.res = append(f.res, free(ranges[i+1], ResourceSlot, r.Name, r.Limit))
		f.names = append(f.names, r.Name)
		f.caps = append(f.caps, r.Limit)
	}
	return f
}
