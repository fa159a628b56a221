package slots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/keys"
)

// maxInWindow is the most starts found in any interval [a, a+per).
func maxInWindow(starts []time.Time, per time.Duration) (int, time.Time) {
	sorted := slices.Clone(starts)
	slices.SortFunc(sorted, func(a, b time.Time) int { return a.Compare(b) })
	best, at := 0, time.Time{}
	j := 0
	for i := range sorted {
		for sorted[i].Sub(sorted[j]) >= per {
			j++
		}
		if n := i - j + 1; n > best {
			best, at = n, sorted[j]
		}
	}
	return best, at
}

// Six claimers on two semaphores (two views, as two replicas have), each
// taking a place in one window of 5 per second and no slot limit worth
// the name, for 3s: the starts, recorded on the test's own clock when each
// claimer begins its run, never number more than 5 in any second, and the
// window is not starved either (it admits close to its rate).
func TestRateWindowBoundsStartsInAnyInterval(t *testing.T) {
	cluster := etcdtest.Start(t)
	sems := []*Semaphore{startSemaphore(t, cluster.Client()), startSemaphore(t, etcdtest.NewClient(t, cluster.Endpoints()))}
	rate := Rate{Scope: keys.RateResource, Name: "api", Count: 5, Per: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var (
		mu     sync.Mutex
		starts []time.Time
		wg     sync.WaitGroup
	)
	for c := range 6 {
		sem := sems[c%2]
		sess := newSession(t, sem.client, 5*time.Second, time.Second)
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				start := time.Now()
				changed := sem.Changed()
				h, err := sem.Claim(ctx, sess, Request{
					Job: fmt.Sprintf("j%d", c), MaxConcurrency: 1, Rates: []Rate{rate}, Start: start,
					Value: Value{RunID: fmt.Sprintf("j%d@%d", c, n), Holder: "h"},
				})
				var full *FullError
				switch {
				case errors.As(err, &full) && full.Limit == LimitRate:
					wait := time.NewTimer(time.Until(full.Until))
					select {
					case <-ctx.Done():
					case <-changed:
					case <-wait.C:
					}
					wait.Stop()
					continue
				case errors.Is(err, ErrFull): // our own release not seen yet
					select {
					case <-ctx.Done():
					case <-changed:
					}
					continue
				case err != nil:
					if ctx.Err() == nil {
						t.Errorf("claim: %v", err)
					}
					return
				}
				// The run begins now; a worker gives up a run it would
				// begin later than MaxStartLatency after its stamp.
				if now := time.Now(); now.Sub(start) <= MaxStartLatency {
					mu.Lock()
					starts = append(starts, now)
					mu.Unlock()
				}
				if err := sem.Release(context.Background(), h); err != nil {
					t.Errorf("release: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	most, at := maxInWindow(starts, rate.Per)
	t.Logf("%d starts in 3s; at most %d in any %s (from %s)", len(starts), most, rate.Per, at.Format("15:04:05.000"))
	if most > rate.Count {
		t.Errorf("%d starts in the %s from %s: the window admits %d", most, rate.Per, at.Format("15:04:05.000"), rate.Count)
	}
	if len(starts) < 10 {
		t.Errorf("only %d starts in 3s: the window starves", len(starts))
	}
}

// GET /api/v1/slots shows a keyed slot with its key, and a window with
// its places in use and the oldest start still counted.
func TestListShowsKeysAndWindows(t *testing.T) {
	cluster := etcdtest.Start(t)
	sem := startSemaphore(t, cluster.Client())
	sess := newSession(t, sem.client, 5*time.Second, time.Second)
	rate := Rate{Scope: keys.RateJob, Name: "sync", Count: 3, Per: time.Minute}
	start := time.Now().UTC()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := sem.Claim(ctx, sess, Request{Job: "sync", Key: "c-1", MaxConcurrency: 1, Rates: []Rate{rate}, Start: start,
		Value: Value{RunID: "sync@1", Holder: "h"}})
	if err != nil {
		t.Fatal(err)
	}
	if h.Key() != testLayout.SlotOf("sync", "c-1", 0) {
		t.Errorf("slot key %s", h.Key())
	}
	var list []Info
	poll := time.NewTimer(10 * time.Second)
	defer poll.Stop()
	for {
		changed := sem.Changed()
		if list = sem.viewList(); len(list) == 1 && len(sem.Windows([]Rate{rate}, start)) == 1 && sem.Windows([]Rate{rate}, start)[0].InUse == 1 {
			break
		}
		select {
		case <-changed:
		case <-poll.C:
			t.Fatalf("view never showed the claim: %+v", sem.viewList())
		}
	}
	if list[0].Job != "sync" || list[0].ConcurrencyKey != "c-1" {
		t.Errorf("listed %+v, want job sync key c-1", list[0])
	}
	w := sem.Windows([]Rate{rate}, start)[0]
	if w.Window != "job/sync" || w.Count != 3 || w.Per != "1m" || !w.Oldest.Equal(start) {
		t.Errorf("window %+v", w)
	}
	b, err := json.Marshal(Info{Window: &w})
	if err != nil || !strings.Contains(string(b), `"window":"job/sync"`) || strings.Contains(string(b), "run_id") {
		t.Errorf("window row %s (%v)", b, err)
	}
	// A second claim of the same key is refused by the key's limit.
	_, err = sem.Claim(ctx, sess, Request{Job: "sync", Key: "c-1", MaxConcurrency: 1, Rates: []Rate{rate}, Start: start,
		Value: Value{RunID: "sync@2", Holder: "h"}})
	var full *FullError
	if !errors.As(err, &full) || full.Limit != LimitKey {
		t.Errorf("second claim of key c-1: %v, want a full key", err)
	}
}
