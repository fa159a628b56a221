package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// The reference's queue fires every job at each of its ticks, in order,
// and never runs two triggers of one job at once: a slow trigger makes its
// job's next tick late, not skipped.
func TestRefQueueFiresEveryTickOfEveryJobOnce(t *testing.T) {
	const period = 100 * time.Millisecond
	var jobs []*refJob
	for i := range 5 {
		jobs = append(jobs, &refJob{name: fmt.Sprintf("j%d", i)})
	}
	first := time.Now().Add(period)
	var mu sync.Mutex
	ticks := map[string][]time.Time{}
	running := map[string]bool{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		newRefQueue(jobs, first, period).run(ctx, func(j *refJob, tick time.Time) {
			mu.Lock()
			if running[j.name] {
				t.Errorf("job %s: two triggers at once", j.name)
			}
			running[j.name] = true
			ticks[j.name] = append(ticks[j.name], tick)
			n := len(ticks[j.name])
			mu.Unlock()
			if j.name == "j0" && n == 1 {
				time.Sleep(2 * period) // a slow trigger: j0's next ticks come late
			}
			mu.Lock()
			running[j.name] = false
			mu.Unlock()
		})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		enough := true
		for _, j := range jobs {
			enough = enough && len(ticks[j.name]) >= 4
		}
		mu.Unlock()
		if enough {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every job fired 4 ticks within 30 s: %v", ticks)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	for _, j := range jobs {
		for i, tick := range ticks[j.name][:4] {
			if want := first.Add(time.Duration(i) * period); !tick.Equal(want) {
				t.Errorf("job %s trigger %d: tick %v, want %v (each tick once, none skipped)", j.name, i+1, tick, want)
			}
		}
	}
}
