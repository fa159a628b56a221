package target

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
)

// A shard run tells its target which shard of how many it is: one header
// for HTTP, two variables for exec; an unsharded run says nothing of shards.
func TestShardFields(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("X-Scheduler-Shard"))
		mu.Unlock()
	})
	run := testRun()
	run.Shard, run.Shards = 3, 8
	for _, r := range []Run{run, testRun()} {
		if res := testExecutor(t).Execute(t.Context(), httpJob(srv.URL), r); res.Outcome != runs.Succeeded {
			t.Fatalf("http: %+v", res)
		}
	}
	mu.Lock()
	if len(got) != 2 || got[0] != "3/8" || got[1] != "" {
		t.Errorf("X-Scheduler-Shard of a shard run and an unsharded one = %q, want [3/8 \"\"]", got)
	}
	mu.Unlock()

	res := testExecutor(t).Execute(t.Context(), execJob(20*time.Second, 0, "env"), run)
	if !strings.Contains(res.Output, "SCHEDULER_SHARD_INDEX=3\n") || !strings.Contains(res.Output, "SCHEDULER_SHARD_COUNT=8\n") {
		t.Errorf("exec env of shard 3/8:\n%s\nwant SCHEDULER_SHARD_INDEX=3 and SCHEDULER_SHARD_COUNT=8", res.Output)
	}
	res = testExecutor(t).Execute(t.Context(), execJob(20*time.Second, 0, "env"), testRun())
	if strings.Contains(res.Output, "SCHEDULER_SHARD") {
		t.Errorf("exec env of an unsharded run names shards:\n%s", res.Output)
	}
}
