package slots

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/session"
)

// witness replays every change of the slot keys revision by revision, as an
// observer independent of the semaphore would, and records each violation.
type witness struct {
	prefix  string
	limits  map[group]int
	held    map[string]int64 // key -> create revision
	counts  map[group]int
	maxSeen map[group]int
	creates map[string][]int64 // key -> create revisions in order
	owner   map[group]map[int64]string
	errs    []string
	events  int
}

func newWitness(prefix string, limits map[group]int) *witness {
	return &witness{
		prefix: prefix, limits: limits,
		held: map[string]int64{}, counts: map[group]int{}, maxSeen: map[group]int{},
		creates: map[string][]int64{}, owner: map[group]map[int64]string{},
	}
}

func (w *witness) failf(format string, args ...any) {
	if len(w.errs) < 20 {
		w.errs = append(w.errs, fmt.Sprintf(format, args...))
	}
}

// apply takes the events of one watch response; counts are checked at each
// revision boundary, after all of that revision's events.
func (w *witness) apply(events []*clientv3.Event) {
	for i, ev := range events {
		w.event(ev)
		if i == len(events)-1 || events[i+1].Kv.ModRevision != ev.Kv.ModRevision {
			w.check(ev.Kv.ModRevision)
		}
	}
}

func (w *witness) event(ev *clientv3.Event) {
	w.events++
	k := string(ev.Kv.Key)
	kind, name, _, ok := parseKey(keys.New(w.prefix), k)
	if !ok {
		return
	}
	g := group{kind, name}
	if ev.Type == clientv3.EventTypeDelete {
		if _, ok := w.held[k]; ok {
			delete(w.held, k)
			w.counts[g]--
		}
		return
	}
	if ev.Kv.Version != 1 {
		w.failf("revision %d: %s overwritten while held (version %d)", ev.Kv.ModRevision, k, ev.Kv.Version)
	}
	if _, ok := w.held[k]; ok {
		w.failf("revision %d: %s created while held", ev.Kv.ModRevision, k)
	} else {
		w.counts[g]++
	}
	token := ev.Kv.CreateRevision
	w.held[k] = token
	if prev := w.creates[k]; len(prev) > 0 && prev[len(prev)-1] >= token {
		w.failf("%s: token %d after %d", k, token, prev[len(prev)-1])
	}
	w.creates[k] = append(w.creates[k], token)
	if w.owner[g] == nil {
		w.owner[g] = map[int64]string{}
	}
	if other, dup := w.owner[g][token]; dup {
		w.failf("token %d given to both %s and %s", token, other, k)
	}
	w.owner[g][token] = k
}

func (w *witness) check(rev int64) {
	for g, n := range w.counts {
		if n > w.limits[g] {
			w.failf("revision %d: %d keys of %s held, limit %d", rev, n, g.name, w.limits[g])
		}
		w.maxSeen[g] = max(w.maxSeen[g], n)
	}
}

type claimed struct {
	key   string
	token int64
}

// Thirty replicas, each with its own client, session and view, claim and
// release as fast as they can for 20 seconds: two jobs of 3 slots and a
// 2-slot resource that half of each job's claims take as well. The
// witness never sees more keys than the limit at any revision, tokens are
// unique and increasing, and every replica gets slots.
func TestHammerNeverExceedsLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("20s hammer")
	}
	const (
		workers  = 30
		duration = 20 * time.Second
	)
	cluster := etcdtest.Start(t)
	observer := cluster.Client()
	setup, cancelSetup := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancelSetup()

	hammer, other, shared := group{JobSlot, "hammer"}, group{JobSlot, "other"}, group{ResourceSlot, "shared"}
	w := newWitness(testPrefix, map[group]int{hammer: 3, other: 3, shared: 2})
	start, err := observer.Get(setup, "x")
	if err != nil {
		t.Fatal(err)
	}
	sentinel := testLayout.Record("hammer", "hammer-done") // inside the watched range, not a slot key
	watch := observer.Watch(setup, testLayout.Resources(), clientv3.WithRange(clientv3.GetPrefixRangeEnd(testLayout.Slots())), clientv3.WithRev(start.Header.Revision+1))
	witnessDone := make(chan error, 1)
	go func() {
		for resp := range watch {
			if err := resp.Err(); err != nil {
				witnessDone <- err
				return
			}
			w.apply(resp.Events)
			for _, ev := range resp.Events {
				if string(ev.Kv.Key) == sentinel {
					witnessDone <- nil
					return
				}
			}
		}
		witnessDone <- errors.New("witness watch closed")
	}()

	reqs := make([]Request, workers)
	sems := make([]*Semaphore, workers)
	sessions := make([]*session.Session, workers)
	for i := range workers {
		cli := cluster.Client()
		sems[i] = startSemaphore(t, cli)
		sessions[i] = newSession(t, cli, 5*time.Second, time.Second)
		switch i % 3 {
		case 0:
			reqs[i] = Request{Job: "hammer", MaxConcurrency: 3}
		case 1:
			reqs[i] = Request{Job: "hammer", MaxConcurrency: 3, Resources: []Resource{{"shared", 2}}}
		case 2:
			reqs[i] = Request{Job: "other", MaxConcurrency: 3}
			if i%2 == 0 {
				reqs[i].Resources = []Resource{{"shared", 2}}
			}
		}
	}

	var (
		mu         sync.Mutex
		got        = make([][]claimed, workers)
		unexpected []error
		lostSess   int
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		unexpected = append(unexpected, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			sess, sem, req := sessions[i], sems[i], reqs[i]
			for n := 0; ctx.Err() == nil; n++ {
				if sess.Err() != nil {
					mu.Lock()
					lostSess++
					mu.Unlock()
					next, err := session.New(ctx, sem.client, session.Options{TTL: 5 * time.Second, Margin: time.Second})
					if err != nil {
						continue
					}
					defer next.Orphan()
					sess = next
				}
				req.Value = Value{RunID: fmt.Sprintf("%s@w%d-%d", req.Job, i, n), Holder: fmt.Sprintf("w%d", i)}
				changed := sem.Changed()
				h, err := sem.Claim(ctx, sess, req)
				switch {
				case errors.Is(err, ErrFull):
					select {
					case <-changed:
					case <-ctx.Done():
					}
					continue
				case err != nil:
					if ctx.Err() == nil && sess.Err() == nil {
						fail(fmt.Errorf("worker %d claim: %w", i, err))
					}
					continue
				}
				mu.Lock()
				got[i] = append(got[i], claimed{h.Key(), h.Token})
				mu.Unlock()
				time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // the run's work
				rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = sem.Release(rctx, h)
				rcancel()
				if err != nil && !(errors.Is(err, ErrNotOwner) && sess.Err() != nil) {
					fail(fmt.Errorf("worker %d release: %w", i, err))
				}
			}
		})
	}
	wg.Wait()
	if _, err := observer.Put(setup, sentinel, "done"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-witnessDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-setup.Done():
		t.Fatal("witness did not catch up")
	}

	for _, e := range w.errs {
		t.Error(e)
	}
	for _, err := range unexpected[:min(len(unexpected), 10)] {
		t.Error(err)
	}
	total, counts := 0, make([]int, workers)
	for i, claims := range got {
		counts[i] = len(claims)
		total += len(claims)
		if len(claims) == 0 {
			t.Errorf("worker %d (%s) never got a slot", i, reqs[i].Job)
		}
		for _, c := range claims {
			if !slices.Contains(w.creates[c.key], c.token) {
				t.Errorf("worker %d holds %s with token %d that the witness never saw created", i, c.key, c.token)
			}
		}
	}
	// The witness must have seen the limits reached, or it proved nothing.
	for g, limit := range w.limits {
		if w.maxSeen[g] != limit {
			t.Errorf("%s: at most %d held at once, never the limit %d", g.name, w.maxSeen[g], limit)
		}
	}
	t.Logf("%d claims in %s (%.0f/s), per worker min %d max %d; witness applied %d events; sessions replaced %d; max held: hammer %d, other %d, shared %d",
		total, duration, float64(total)/duration.Seconds(), slices.Min(counts), slices.Max(counts), w.events, lostSess,
		w.maxSeen[hammer], w.maxSeen[other], w.maxSeen[shared])
}
