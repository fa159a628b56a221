package jobs_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Two triggers with one idempotency key, at once, 50 times over: each time
// exactly one creates the run and both name it; a trigger with the key
// after the run finished (it is in history) creates nothing either.
func TestIdempotentTriggers(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	const tries = 50
	job := httpJob("sync", "0 0 1 1 *", w.url(""))
	job.MaxConcurrency = tries // every run may start: only the keys decide
	cfg := newConfig(job)
	n := etcd.leading("a", cfg)
	ctx := t.Context()
	for i := range tries {
		key := "k-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		var wg sync.WaitGroup
		var ids [2]string
		var dups [2]bool
		var errs [2]error
		for k := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ids[k], dups[k], errs[k] = n.engine.Trigger(ctx, "sync", jobs.TriggerRequest{IdempotencyKey: key})
			}()
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("try %d: %v, %v", i, errs[0], errs[1])
		}
		if ids[0] != ids[1] || ids[0] != runs.IdempotentID("sync", key) {
			t.Fatalf("try %d: run ids %q and %q, want both %q", i, ids[0], ids[1], runs.IdempotentID("sync", key))
		}
		if dups[0] == dups[1] {
			t.Fatalf("try %d: duplicate %v and %v, want exactly one trigger to create the run", i, dups[0], dups[1])
		}
	}
	poll.For(t, 60*time.Second, "every run recorded", func() bool { return len(records(t, n.client, "sync")) == tries })
	for id, r := range records(t, n.client, "sync") {
		if r.Outcome != runs.Succeeded {
			t.Errorf("%s: %s", id, r.Outcome)
		}
	}
	if got := len(w.finished("sync")); got != tries {
		t.Errorf("the target ran %d times for %d keys", got, tries)
	}
	id, dup, err := n.engine.Trigger(ctx, "sync", jobs.TriggerRequest{IdempotencyKey: "k-a"})
	if err != nil || !dup || id != runs.IdempotentID("sync", "k-a") {
		t.Errorf("a trigger of a recorded run: %q duplicate=%v err=%v; want the same run, duplicate", id, dup, err)
	}
	if got := len(records(t, n.client, "sync")); got != tries {
		t.Errorf("%d records after a repeated trigger, want %d", got, tries)
	}
}

// An input of 64 KiB (the most docs/api.md#limits-and-timeouts allows) reaches an HTTP
// target as its request body and an exec target as SCHEDULER_INPUT, byte
// for byte, and the record keeps it.
func TestInputReachesTargets(t *testing.T) {
	pad := 64<<10 - len(`{"data":""}`)
	input := []byte(`{"data":"` + strings.Repeat("i", pad) + `"}`)
	if len(input) != 64<<10 {
		t.Fatalf("input is %d bytes", len(input))
	}
	var mu sync.Mutex
	var body []byte
	var contentType string
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		body, contentType = b, r.Header.Get("Content-Type")
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	out := filepath.Join(t.TempDir(), "input")
	hj := httpJob("hook", "0 0 1 1 *", srv.URL)
	hj.HTTP.Method = "POST"
	hj.HTTP.Body = `{"default":true}`
	ej := config.Job{Name: "cmd", Schedule: "0 0 1 1 *", Exec: &config.Exec{
		Command: []string{"sh", "-c", `printf %s "$SCHEDULER_INPUT" > "$OUT"`}, Env: map[string]string{"OUT": out}}}
	etcd := startEtcd(t)
	n := etcd.leading("a", newConfig(hj, ej))

	for _, job := range []string{"hook", "cmd"} {
		id, _, err := n.engine.Trigger(t.Context(), job, jobs.TriggerRequest{Input: input})
		if err != nil {
			t.Fatal(err)
		}
		rec := awaitRecord(t, n.client, job, id, nil)
		if rec.Outcome != runs.Succeeded {
			t.Fatalf("%s: %s %s", job, rec.Outcome, rec.Error)
		}
		if !bytes.Equal(rec.Input, input) {
			t.Errorf("%s: the record's input is %d bytes, want the %d given", job, len(rec.Input), len(input))
		}
	}
	mu.Lock()
	if !bytes.Equal(body, input) || contentType != "application/json" {
		t.Errorf("the HTTP target got %d bytes (%s), want the %d-byte input as application/json", len(body), contentType, len(input))
	}
	mu.Unlock()
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, input) {
		t.Errorf("the exec target got %d bytes of SCHEDULER_INPUT (err %v), want %d", len(got), err, len(input))
	}
}

// Run records page from newest to oldest with the cursor each page ends
// on, without a gap or a repeat; job listings page by name.
func TestPaging(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	cfg := newConfig(httpJob("page", "0 0 1 1 *", w.url("")),
		httpJob("b-job", "0 0 1 1 *", w.url("")), httpJob("a-job", "0 0 1 1 *", w.url("")))
	n := etcd.leading("a", cfg)
	const total = 7
	for range total {
		n.trigger(t, "page", "")
	}
	poll.For(t, 30*time.Second, "every run recorded", func() bool { return len(records(t, n.client, "page")) == total })
	all, next, err := n.engine.Runs(t.Context(), "page", jobs.Page{Limit: 100})
	if err != nil || next != "" || len(all) != total {
		t.Fatalf("one page of 100: %d runs, next %q, err %v", len(all), next, err)
	}
	var paged []string
	cursor := ""
	for pages := 0; ; pages++ {
		list, next, err := n.engine.Runs(t.Context(), "page", jobs.Page{Limit: 3, After: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list {
			paged = append(paged, r.RunID)
		}
		if next == "" {
			break
		}
		if pages > total {
			t.Fatal("paging does not end")
		}
		cursor = next
	}
	for i, r := range all {
		if i >= len(paged) || paged[i] != r.RunID {
			t.Fatalf("pages of 3 gave %v, one page gave the runs in another order or not all", paged)
		}
	}
	if len(paged) != total {
		t.Fatalf("pages of 3 gave %d runs, want %d", len(paged), total)
	}
	if _, _, err := n.engine.Runs(t.Context(), "page", jobs.Page{Limit: 3, After: "page@nope"}); err == nil {
		t.Error("a cursor naming no run was accepted")
	}

	first, next, err := n.engine.Jobs(t.Context(), jobs.Page{Limit: 2})
	if err != nil || len(first) != 2 || first[0].Name != "a-job" || first[1].Name != "b-job" || next != "b-job" {
		t.Fatalf("first page of jobs: %v next %q err %v", names(first), next, err)
	}
	rest, next, err := n.engine.Jobs(t.Context(), jobs.Page{Limit: 2, After: next})
	if err != nil || len(rest) != 1 || rest[0].Name != "page" || next != "" {
		t.Fatalf("second page of jobs: %v next %q err %v", names(rest), next, err)
	}
}

func names(list []jobs.JobStatus) []string {
	var out []string
	for _, j := range list {
		out = append(out, j.Name)
	}
	return out
}
