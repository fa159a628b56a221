package main

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// refQueue is a reference process's one queue of timers, as the peer's
// (dapr/kit's events/queue under go-etcd-cron): one goroutine and one
// timer for every job of the process. A due job is handed to trigger in a
// goroutine of its own; the job comes back to the queue, due a second
// later (period), when its trigger returns, so a job's triggers never overlap and a
// late tick still runs (at least once, as the peer).
type refQueue struct {
	period time.Duration // between a job's ticks
	jobs   refHeap
	back   chan *refJob
	wg     sync.WaitGroup
}

func newRefQueue(jobs []*refJob, first time.Time, period time.Duration) *refQueue {
	q := &refQueue{period: period, back: make(chan *refJob, len(jobs))}
	for _, j := range jobs {
		j.next = first
		q.jobs = append(q.jobs, j)
	}
	heap.Init(&q.jobs)
	return q
}

// run fires due jobs until ctx ends, then waits for the triggers going.
func (q *refQueue) run(ctx context.Context, trigger func(j *refJob, tick time.Time)) {
	defer q.wg.Wait()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		for len(q.jobs) > 0 && !q.jobs[0].next.After(time.Now()) {
			j := heap.Pop(&q.jobs).(*refJob)
			q.wg.Add(1)
			go func(tick time.Time) {
				defer q.wg.Done()
				trigger(j, tick)
				j.next = tick.Add(q.period)
				q.back <- j // buffered for every job: never blocks
			}(j.next)
		}
		if len(q.jobs) > 0 {
			t.Reset(time.Until(q.jobs[0].next))
		}
		select {
		case <-ctx.Done():
			return
		case j := <-q.back:
			heap.Push(&q.jobs, j)
		case <-t.C:
		}
	}
}

// refHeap orders jobs by their next tick.
type refHeap []*refJob

func (h refHeap) Len() int           { return len(h) }
func (h refHeap) Less(i, k int) bool { return h[i].next.Before(h[k].next) }
func (h refHeap) Swap(i, k int)      { h[i], h[k] = h[k], h[i] }
func (h *refHeap) Push(x any)        { *h = append(*h, x.(*refJob)) }
func (h *refHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	*h = old[:len(old)-1]
	return j
}
