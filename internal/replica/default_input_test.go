package replica

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// scheduledRun waits for a finished run of job that a tick started (not a
// trigger) and returns it.
func (r *testReplica) scheduledRun(job string, within time.Duration) client.Run {
	r.t.Helper()
	var got client.Run
	poll.Until(r.t, within, "a scheduled run of "+job+" finished", func() (bool, string) {
		list, err := r.api.Runs(context.Background(), job, 50, "")
		if err != nil {
			return false, err.Error()
		}
		for _, run := range list {
			if run.Trigger == "schedule" && run.Outcome != "skipped" && run.Outcome != "missed" {
				got = run
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d runs, none scheduled and executed", len(list))
	})
	return got
}

// A job's default input: reaches the target of its scheduled runs too
// (docs/api.md: "used by its scheduled runs and by triggers without
// one"), as SCHEDULER_INPUT of an exec target and as the JSON body of an
// HTTP target in place of http.body, and is in the run's record.
func TestScheduledRunsGetDefaultInput(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	var types []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		mu.Lock()
		bodies, types = append(bodies, string(b)), append(types, req.Header.Get("Content-Type"))
		mu.Unlock()
	}))
	t.Cleanup(target.Close)

	dir := t.TempDir()
	path := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(path, []byte(etcdtest.Config(newEtcd(t), "/default-input/", `jobs:
  - name: exec-ticks
    schedule: "@every 1s"
    catch_up: none
    input: {customer_id: c-1001, tier: gold}
    exec:
      command: ["sh", "-c", "printf '%s' \"$SCHEDULER_INPUT\""]
  - name: http-ticks
    schedule: "@every 1s"
    catch_up: none
    input: {customer_id: c-2002}
    http:
      method: POST
      url: `+target.URL+`/hook
      body: "not this"
`)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startReplica(t, "d1", path, noWatch)

	const execInput = `{"customer_id": "c-1001", "tier": "gold"}`
	run := r.scheduledRun("exec-ticks", 60*time.Second)
	if run.Outcome != "succeeded" || !sameJSON(run.Input, []byte(execInput)) || !sameJSON([]byte(run.Output), []byte(execInput)) {
		t.Errorf("scheduled run %s: outcome %q, input %s, output %q; want succeeded, and the default %s recorded and in SCHEDULER_INPUT",
			run.RunID, run.Outcome, run.Input, run.Output, execInput)
	}

	const httpInput = `{"customer_id": "c-2002"}`
	run = r.scheduledRun("http-ticks", 60*time.Second)
	if run.Outcome != "succeeded" || !sameJSON(run.Input, []byte(httpInput)) {
		t.Errorf("scheduled run %s: outcome %q, input %s; want succeeded with the default %s recorded", run.RunID, run.Outcome, run.Input, httpInput)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) == 0 || !sameJSON([]byte(bodies[0]), []byte(httpInput)) || types[0] != "application/json" {
		t.Errorf("the HTTP target got bodies %q with Content-Type %q; want %s as application/json", bodies, types, httpInput)
	}
}
