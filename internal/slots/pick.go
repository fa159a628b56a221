package slots

import (
	"fmt"
	"math/rand/v2"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

// freeSet is the free indexes of a job and of each of its resources.
type freeSet struct {
	job   string
	slots []int
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
		return pick{}, fmt.Errorf("job %s: %w", f.job, ErrFull)
	}
	p := pick{slot: f.slots[rand.IntN(len(f.slots))], res: make([]int, len(f.res))}
	for i, free := range f.res {
		if len(free) == 0 {
			return pick{}, fmt.Errorf("resource %s: %w", f.names[i], ErrFull)
		}
		p.res[i] = free[rand.IntN(len(free))]
	}
	return p, nil
}

func (p pick) keys(prefix string, req Request) []string {
	keys := []string{SlotKey(prefix, req.Job, p.slot)}
	for i, r := range req.Resources {
		keys = append(keys, ResourceKey(prefix, r.Name, p.res[i]))
	}
	return keys
}

func (p pick) resources(req Request) []HeldResource {
	var held []HeldResource
	for i, r := range req.Resources {
		held = append(held, HeldResource{Name: r.Name, Index: p.res[i]})
	}
	return held
}

func (s *Semaphore) freeFromView(req Request) freeSet {
	f := freeSet{job: req.Job, slots: s.free(JobSlot, req.Job, req.MaxConcurrency)}
	for _, r := range req.Resources {
		f.res = append(f.res, s.free(ResourceSlot, r.Name, r.Limit))
		f.names = append(f.names, r.Name)
	}
	return f.only(req.Index)
}

// freeFromRead computes the free indexes from the keys the failed claim
// read: the job's first, then each resource's.
func (s *Semaphore) freeFromRead(req Request, ranges []*etcdserverpb.ResponseOp) freeSet {
	free := func(r *etcdserverpb.ResponseOp, limit int) []int {
		taken := map[int]bool{}
		for _, kv := range r.GetResponseRange().Kvs {
			if _, _, i, ok := ParseKey(s.prefix, string(kv.Key)); ok {
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
	f := freeSet{job: req.Job, slots: free(ranges[0], req.MaxConcurrency)}
	for i, r := range req.Resources {
		f.res = append(f.res, free(ranges[i+1], r.Limit))
		f.names = append(f.names, r.Name)
	}
	return f.only(req.Index)
}

func (f freeSet) only(index *int) freeSet {
	if index == nil {
		return f
	}
	slots := f.slots
	f.slots = nil
	for _, i := range slots {
		if i == *index {
			f.slots = []int{i}
		}
	}
	return f
}
