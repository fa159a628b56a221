package leader

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/etcdsched/scheduler/config"
)

// sameJob: a changed job is replanned at once.
func sameJob(a, b *config.Job) bool {
	return encodeJob(a) == encodeJob(b)
}

func encodeJob(j *config.Job) string {
	b, err := json.Marshal(j)
	if err != nil {
		panic(fmt.Sprintf("leader: encode job: %v", err))
	}
	return string(b)
}

// signal wakes the reader of ch, coalescing.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

type wake struct {
	at  time.Time
	job string
	gen uint64
}

type wakeHeap []wake

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h wakeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)        { *h = append(*h, x.(wake)) }
func (h *wakeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
