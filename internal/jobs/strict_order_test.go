package jobs_test

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/logtest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Strict fair order (docs/design-admission.md#fair-order): among runs waiting for the same
// limit, the one due first starts first, whichever replica holds it and
// however long they all waited. One limit of each kind (a job's slot, a
// concurrency key's, a resource shared by two jobs, a rate window) gets
// eight waiters, triggered a moment apart through three replicas in turn,
// each waiting far longer than the two seconds fair order used to last;
// every limit must admit them in the order they were triggered.
//
// Before, a run that had waited 2s stopped yielding to its elders, and
// the waiters of a key started as 1,2,3,6,5,4 (issue 25).
func TestWaitersStartInDueOrderOnEveryKindOfLimit(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	const waiters = 8
	job := func(name, sleep string) config.Job {
		j := httpJob(name, "@manually", w.url("sleep="+sleep))
		j.Overlap = config.OverlapQueue
		j.QueueLimit = waiters + 2
		j.StartingDeadline = config.Duration(2 * time.Minute)
		return j
	}
	slot := job("slot", "700ms")
	keyed := job("keyed", "700ms")
	keyed.ConcurrencyKey = "{{ .Input.k }}"
	resA, resB := job("res-a", "700ms"), job("res-b", "700ms")
	for _, j := range []*config.Job{&resA, &resB} {
		j.MaxConcurrency = waiters
		j.Resources = []string{"one"}
	}
	rated := job("rated", "50ms")
	rated.MaxConcurrency = waiters
	rated.Rate = &config.Rate{Count: 1, Per: config.Duration(500 * time.Millisecond)}
	cfg := newConfig(slot, keyed, resA, resB, rated)
	cfg.Resources = []config.Resource{{Name: "one", Limit: 1}}
	var logs logtest.Sink // warnings: which claims were given back
	var nodes []*node
	for _, id := range []string{"a", "b", "c"} {
		log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		nodes = append(nodes, startNodeWith(t, etcd.Endpoints(), id, cfg, timing{Log: log}))
	}
	leaderOf(t, nodes)

	limits := map[string][]string{ // limit -> the jobs whose runs wait for it
		"job slot": {"slot"}, "concurrency key": {"keyed"}, "resource": {"res-a", "res-b"}, "rate window": {"rated"},
	}
	var wg sync.WaitGroup
	order := map[string][]string{} // limit -> run ids, in trigger order
	var mu sync.Mutex
	for limit, jobNames := range limits {
		wg.Go(func() {
			ids := triggerInTurn(t, nodes, w, jobNames, waiters)
			mu.Lock()
			order[limit] = ids
			mu.Unlock()
		})
	}
	wg.Wait()
	for limit, jobNames := range limits {
		want := order[limit]
		// A run lost with its holder's session (a CI machine starved one
		// past its TTL) ends without reaching the witness, or without
		// finishing there.
		var failed map[string]runs.Outcome
		if !poll.Within(2*time.Minute, func() bool {
			failed = notSucceeded(nodes[0], want)
			started := startsOf(w, jobNames)
			return !slices.ContainsFunc(want, func(id string) bool { return failed[id] == "" && !slices.Contains(started, id) })
		}) {
			logWaiters(t, nodes, want, &logs)
			t.Fatalf("%s: of %d waiters %d finished, %d ended otherwise, within 2m0s", limit, len(want), len(startsOf(w, jobNames)), len(failed))
		}
		// A claim given back (its round trip so slow that the run would
		// begin too long after its rate stamp) is pending again only once
		// the give-back is applied; a younger waiter may take the window's
		// next place before then (docs/design-admission.md#fair-order).
		// The others keep their order.
		back := givenBack(&logs, want)
		for id, o := range failed {
			back[id] = true
			t.Logf("%s: %s ended %s", limit, id, o)
		}
		got, want := without(startsOf(w, jobNames), back), without(want, back)
		if len(back) > 0 {
			t.Logf("%s: %d runs given back or not succeeded, left out of the order: %v", limit, len(back), back)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: started in the order\n  %v\nwant the order they were triggered in\n  %v", limit, got, want)
			for _, name := range jobNames {
				for _, h := range w.finished(name) {
					t.Logf("%s attempt %d on %s: token %d, due %s, reached the witness %s", h.RunID, h.Attempt, h.Holder, h.Token, h.Scheduled.Format("05.000"), h.Start.Format("05.000"))
				}
			}
		}
	}
}

// triggerInTurn triggers n runs of jobNames (in turn), each through the
// next node, and returns their run ids in that order. The first takes the
// limit; the rest wait.
func triggerInTurn(t *testing.T, nodes []*node, w *witness, jobNames []string, n int) []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ids []string
	for i := range n {
		name := jobNames[i%len(jobNames)]
		input := fmt.Sprintf(`{"k":"z","n":%d}`, i+1)
		id, _, err := nodes[i%len(nodes)].engine.Trigger(ctx, name, jobs.TriggerRequest{Input: []byte(input)})
		if err != nil {
			t.Errorf("trigger %s #%d: %v", name, i+1, err)
			return nil
		}
		ids = append(ids, id)
		// The next trigger comes once every replica's view holds this one
		// (or it ran): "due first" is among runs the replicas can see.
		// (Called from the test's own goroutines: an error, not a Fatal.)
		if !poll.Within(30*time.Second, func() bool { return seenByAll(nodes, w, id) }) {
			t.Errorf("trigger %s #%d: not seen by every replica within 30s", name, i+1)
			return nil
		}
	}
	return ids
}

// seenByAll reports whether every node's queue view has runID, or the
// witness has seen it already.
func seenByAll(nodes []*node, w *witness, runID string) bool {
	if w.holderOf(runID) != "" {
		return true
	}
	for _, n := range nodes {
		if !slices.ContainsFunc(n.engine.Pending(), func(r jobs.RunStatus) bool { return r.RunID == runID }) {
			return false
		}
	}
	return true
}

// startsOf are the run ids of jobNames' requests at the witness, in the
// order they were admitted: by fencing token, the revision of the claim
// that took the limit. (Arrival at the witness can lag a claim by seconds
// on a starved machine, and a claim given back, one that would begin too
// long after its rate stamp, never reaches the witness.)
func startsOf(w *witness, jobNames []string) []string {
	var hits []hit
	for _, name := range jobNames {
		hits = append(hits, w.finished(name)...)
	}
	slices.SortFunc(hits, func(x, y hit) int { return cmp.Compare(x.Token, y.Token) })
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.RunID
	}
	return ids
}

// givenBack are those of ids whose claim logs say was given back.
func givenBack(logs *logtest.Sink, ids []string) map[string]bool {
	out := map[string]bool{}
	for _, r := range logs.Records() {
		id := fmt.Sprint(r["run_id"])
		if strings.HasPrefix(fmt.Sprint(r["msg"]), "run given back") && slices.Contains(ids, id) {
			out[id] = true
		}
	}
	return out
}

// without is ids less those in drop, in order.
func without(ids []string, drop map[string]bool) []string {
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return drop[id] })
}

// logWaiters logs, for a test that timed out, where each of ids stands on
// every node (its queue entry, or none) and the nodes' warnings.
func logWaiters(t *testing.T, nodes []*node, ids []string, logs *logtest.Sink) {
	t.Helper()
	for _, n := range nodes {
		for _, r := range n.engine.Pending() {
			if slices.Contains(ids, r.RunID) {
				t.Logf("%s sees %s: %s, attempt %d, holder %q, scheduled %s", n.id, r.RunID, r.State, r.Attempt, r.Holder, r.ScheduledAt.Format("05.000"))
			}
		}
	}
	for _, r := range logs.Records() {
		t.Logf("log: %v", r)
	}
}

// notSucceeded are those of ids that n reads as finished with an outcome
// other than succeeded, with it.
func notSucceeded(n *node, ids []string) map[string]runs.Outcome {
	out := map[string]runs.Outcome{}
	for _, id := range ids {
		st, err := n.engine.FindRun(context.Background(), id)
		if err == nil && st.State == "finished" && st.Outcome != runs.Succeeded {
			out[id] = st.Outcome
		}
	}
	return out
}
